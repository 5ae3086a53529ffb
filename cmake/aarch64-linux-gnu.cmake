# Cross-compiling for aarch64 (ARMv8-A, as Jetson Orin, Raspberry Pi 5 and
# Graviton run) with Debian's crossbuild-essential-arm64 and the arm64
# libraries installed through multiarch (scripts/install-deps.sh --arch
# aarch64). Programs the build runs (shmbus-msggen) and the tests run under
# qemu-aarch64 (Debian's qemu-user; registered with binfmt_misc, so test
# programs that start other programs start them as they would on ARM).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64)
# The arm64 libraries' .pc files, not the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# GCC notes on aarch64 that std::pair<double, double> is passed as C++14
# passed it (GCC 10.1's ABI fix): nothing to act on in a project built whole.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
