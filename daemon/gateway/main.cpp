#include "shmbus/gateway/gateway.hpp"

int main(int argc, char** argv) { return shmbus::gateway::gateway_main(argc, argv); }
