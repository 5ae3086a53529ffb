#!/usr/bin/env bash
# Configures and builds shmbus.
#   scripts/build.sh [--sanitize address|thread] [--release] [--arch aarch64] [--target T ...]
# Build trees: build/ (default), build-release/, build-asan/ (clang, with the
# fuzzers), build-tsan/, build-aarch64/ (cross-compiled with Debian's
# crossbuild-essential-arm64 and arm64 libraries; no benchmarks, no Python).
# --target builds only T (and what it needs); SHMBUS_WERROR=ON in the
# environment makes warnings errors, SHMBUS_LINE_TABLES_ONLY=ON keeps line
# tables only as debug information (-g1: a third less build time) (CI).
# Unset, a tree keeps what it was configured with (both OFF in a new one):
# a later run (scripts/bench.sh) does not rebuild a CI tree with other flags.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
arch=""
build_type=RelWithDebInfo
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize="${2:?--sanitize needs address or thread}"; shift 2 ;;
    --release) build_type=Release; shift ;;
    --arch) arch="${2:?--arch needs aarch64}"; shift 2 ;;
    --target) targets+=(--target "${2:?--target needs a target name}"); shift 2 ;;
    *) echo "build.sh: unknown option '$1'; use --sanitize address|thread, --release, --arch aarch64 or --target T" >&2; exit 2 ;;
  esac
done

case "$sanitize" in
  "") dir=build; [ "$build_type" = Release ] && dir=build-release ;;
  address) dir=build-asan ;;
  thread) dir=build-tsan ;;
  *) echo "build.sh: --sanitize takes 'address' or 'thread', not '$sanitize'" >&2; exit 2 ;;
esac

# Benchmarks measure the plain and Release builds; sanitizer builds skip them.
benchmarks=ON
[ -n "$sanitize" ] && benchmarks=OFF
cross=()
deps_args=()
case "$arch" in
  "") ;;
  aarch64)
    [ -z "$sanitize" ] || { echo "build.sh: --arch aarch64 builds without sanitizers" >&2; exit 2; }
    dir=build-aarch64
    benchmarks=OFF
    deps_args=(--arch aarch64)
    cross=(-DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" -DSHMBUS_BUILD_PYTHON=OFF) ;;
  *) echo "build.sh: --arch takes 'aarch64', not '$arch'" >&2; exit 2 ;;
esac
# The ASan+UBSan tree is clang's and holds the libFuzzer targets too
# (scripts/fuzz.sh runs them): one sanitizer build serves the suite and the
# fuzzers, and clang builds it in about two thirds of GCC's time.
# The ThreadSanitizer tree is clang's as well (CI's stage: 397 s, against
# 467 s with GCC's).
compiler=()
fuzzers=OFF
if [ -n "$sanitize" ]; then
  # C too: the gateway's generated Cyclone types are C, and the fuzzers'
  # coverage flags are clang's.
  compiler=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  [ "$sanitize" = address ] && fuzzers=ON
  # A tree GCC built before is configured anew.
  if [ -f "$dir/CMakeCache.txt" ] && { ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++$' "$dir/CMakeCache.txt" ||
    ! grep -q '^CMAKE_C_COMPILER:[A-Z]*=.*clang$' "$dir/CMakeCache.txt"; }; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
fi

bash scripts/install-deps.sh "${deps_args[@]}" >&2
# Debian's ccache, when installed, caches every compile: CI's clean clones
# then reuse what this machine compiled before (the cache is keyed by the
# preprocessed source and flags, not by the clone's path: base_dir).
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Configured as the Debian packages are (prefix /usr: the configuration
# and units then go to /etc and /lib/systemd/system): the package test
# packs this very tree (tests/package/deb.sh).
cmake -S . -B "$dir" -G Ninja "${compiler[@]}" "${cross[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE="$build_type" -DSHMBUS_SANITIZE="$sanitize" \
  -DSHMBUS_BUILD_BENCHMARKS="$benchmarks" -DSHMBUS_BUILD_FUZZERS="$fuzzers" ${SHMBUS_WERROR:+-DSHMBUS_WERROR="$SHMBUS_WERROR"} \
  ${SHMBUS_LINE_TABLES_ONLY:+-DSHMBUS_LINE_TABLES_ONLY="$SHMBUS_LINE_TABLES_ONLY"} \
  -DCMAKE_INSTALL_PREFIX=/usr >&2
cmake --build "$dir" -j "$(nproc)" "${targets[@]}" >&2
echo "$dir"
