#!/usr/bin/env bash
# Builds shmbus and runs its test suite (installs the Debian packages first).
#   scripts/test.sh                      the whole suite, normal build
#   scripts/test.sh --sanitize address   the whole suite under ASan+UBSan
#   scripts/test.sh --sanitize thread    concurrency and multi-process tests under TSan
#   scripts/test.sh --arch aarch64       cross-built for aarch64; the runtime, node, service,
#                                        concurrency and multi-process tests under qemu-aarch64
set -euo pipefail
cd "$(dirname "$0")/.."

labels=()
targets=()
if [ "${1:-}" = "--sanitize" ] && [ "${2:-}" = "thread" ]; then
  labels=(-L 'concurrency|multiprocess')
  # Only what those tests run is built (tests/CMakeLists.txt).
  targets=(--target shmbus_concurrency_suite)
fi
if [ "${1:-}" = "--arch" ]; then
  # The "portable" tests (tests/CMakeLists.txt), and what they start. Not
  # those over iceoryx: the RouDi here is the build machine's x86-64 one
  # (Debian's iceoryx package installs for one architecture), and emulated
  # arm64 processes beside a native RouDi are no configuration a robot runs.
  # Emulation checks behaviour, not speed: the time-list soak runs 10 s.
  labels=(-L portable -E Iceoryx)
  targets=(--target shmbus_portable_suite)
  export SHMBUS_TIME_LIST_SOAK_S=${SHMBUS_TIME_LIST_SOAK_S:-10}
  # Tests that measure page faults, residency or CPU time skip: under
  # emulation those are qemu's (tests/support/sanitizers.hpp).
  export SHMBUS_TEST_EMULATED=qemu-aarch64
  # The programs the tests start read it: a stall bound for an emulator.
  export SHMBUS_CONFIG=$PWD/tests/support/emulated.toml
fi
dir=$(bash scripts/build.sh "$@" "${targets[@]}")
if [ "${1:-}" = "--sanitize" ]; then
  # The package test rebuilds shmbus without sanitizers, and timing accuracy
  # is a property of the plain build: both run in the plain suite.
  labels+=(-LE 'package|timing')
  # The soaks run alone (RUN_SERIAL); the plain suite runs them whole (60 s
  # of chaos, 30 s of the time list), a sanitizer stage for 30 s and 10 s:
  # the same kills, stops and restarts, fewer of them.
  export SHMBUS_SOAK_SECONDS=${SHMBUS_SOAK_SECONDS:-30}
  export SHMBUS_TIME_LIST_SOAK_S=${SHMBUS_TIME_LIST_SOAK_S:-10}
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}
cd "$dir"
ctest --output-on-failure -j "$(nproc)" "${labels[@]}"
