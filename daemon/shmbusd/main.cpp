// shmbusd: the monitoring daemon. Everything is in the library (daemon.hpp).
#include "shmbus/daemon/daemon.hpp"

int main(int argc, char** argv) { return shmbus::daemon::daemon_main(argc, argv); }
