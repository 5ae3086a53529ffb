// shmbus-bridge: the WebSocket bridge. Everything is in the library (shmbus/bridge/bridge.hpp).
#include "shmbus/bridge/bridge.hpp"

int main(int argc, char** argv) { return shmbus::bridge::bridge_main(argc, argv); }
