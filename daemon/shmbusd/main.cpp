// shmbusd: the monitoring daemon. Everything is in the library (daemon.hpp).
#include "daemon.hpp"

int main(int argc, char** argv) { return shmbus::daemon::daemon_main(argc, argv); }
