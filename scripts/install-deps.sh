#!/usr/bin/env bash
# Installs every Debian 12 package that shmbus needs to build, test and
# benchmark, and the npm clients its tests drive (tests/js). Idempotent:
# packages already present are left alone, and apt and npm are only asked
# when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                            # compiler cache (scripts/build.sh): CI's clean clones reuse this machine's compiles
  libfastcdr-dev                    # rmw_fastrtps's CDR: the reference the CDR codec is tested against
  python3-rosidl python3-empy ros2-test-interface-files   # ROS 2's own .msg parser, its naming rules (rosidl_pycommon needs empy) and test definitions (tests)
  libboost-dev                      # Boost.Interprocess (header-only)
  libfmt-dev                        # text
  libcli11-dev                      # command lines
  libtomlplusplus-dev               # configuration
  nlohmann-json3-dev                # JSON
  libsystemd-dev                    # sd_notify for shmbusd
  libssl-dev openssl                # the bridge's wss:// and https:// (openssl: test certificates)
  cyclonedds-dev cyclonedds-tools   # the gateway's DDS (idlc at build time; ddsperf, the benchmark's floor)
  iproute2                          # ip netns: the gateway's two-host tests and benchmark
  libspdlog-dev                     # shmbusd's log
  prometheus prometheus-alertmanager   # promtool and a real Alertmanager for the daemon's tests
  systemd                           # systemd-analyze verify of config/shmbusd.service
  libgtest-dev libgmock-dev         # tests
  libbenchmark-dev                  # micro-benchmarks
  iceoryx libiceoryx-posh-dev libiceoryx-hoofs-dev   # benchmark peer (iox-roudi)
  clang libclang-rt-14-dev xxd      # libFuzzer targets (scripts/fuzz.sh)
  clang-format clang-tidy-22        # scripts/lint.sh (clang-tidy 22 skips system headers: 3x faster than 14)
  lintian dpkg-dev                  # the Debian package test (tests/package/deb.sh)
  libzstd-dev liblz4-dev zlib1g-dev # MCAP chunk compression and CRC combining (shmbus::record)
  libseccomp-dev                    # tests: a peer run under a filter that denies membarrier
  libsqlite3-dev libyaml-cpp-dev    # rosbag2's sqlite3 files and bag folders' metadata.yaml (shmbus::rosbag2)
  python3-zstandard                 # the tests' rosbag2 bags compressed as rosbag2 compresses them
  libisal-dev                       # MCAP CRC-32 at memory speed (ISA-L, shmbus::record)
  graphviz                          # dot: the module graphs of shmtool bag graph --dot (tests, README)
  help2man                          # the man pages, generated from the programs' --help at build time
  chromium                          # the browser tests (headless, driven by puppeteer-core from tests/js)
  python3-dev pybind11-dev python3-numpy   # the Python package (runtime/python)
  python3-pytest mypy               # its tests (tests/python, run by ctest; mypy checks the typed stubs)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# Node.js and npm run the clients from other ecosystems the tests drive
# (tests/js). A machine may have them from elsewhere (NodeSource's nodejs
# carries npm): only when a command is absent are Debian's packages asked.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: not root and no sudo: run as root, or install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --arch aarch64: what the cross build and its tests need besides
# (scripts/test.sh --arch aarch64): the cross compiler, the arm64 builds of
# the libraries through multiarch, and qemu-aarch64 registered with
# binfmt_misc so that arm64 programs (the tests, and the peers they start)
# run as they are. Asked only when something is missing.
if [ "${1:-}" = "--arch" ]; then
  [ "${2:-}" = aarch64 ] || { echo "install-deps: --arch takes aarch64, not '${2:-}'" >&2; exit 2; }
  arm=(crossbuild-essential-arm64 qemu-user qemu-user-binfmt)
  # Not libisal-dev nor libyaml-cpp-dev: each installs for one architecture
  # at a time, and would replace the build machine's (the cross build
  # computes CRCs with zlib, and refuses rosbag2 bag folders).
  for p in libboost-dev libfmt-dev libtomlplusplus-dev libiceoryx-posh-dev libiceoryx-hoofs-dev libgtest-dev \
           libgmock-dev libzstd-dev liblz4-dev zlib1g-dev libspdlog-dev libssl-dev libsystemd-dev \
           cyclonedds-dev libsqlite3-dev; do
    arm+=("$p:arm64")
  done
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  arm_missing=()
  for p in "${arm[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || arm_missing+=("$p")
  done
  if [ ${#arm_missing[@]} -ne 0 ]; then
    echo "install-deps: installing ${arm_missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    dpkg --print-foreign-architectures | grep -qx arm64 || "${sudo_cmd[@]}" dpkg --add-architecture arm64
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${arm_missing[@]}"
  fi
  # binfmt_misc: mounted where systemd did not (containers), then the
  # handler Debian's qemu-user-binfmt ships.
  if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    "${sudo_cmd[@]}" mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
      { echo "install-deps: cannot mount binfmt_misc: arm64 programs cannot run here (qemu-aarch64)" >&2; exit 1; }
  fi
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    "${sudo_cmd[@]}" /lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-aarch64.conf ||
      { echo "install-deps: cannot register qemu-aarch64 with binfmt_misc" >&2; exit 1; }
  fi
fi

# The npm packages of tests/js, exactly as its lock file says, into
# tests/js/node_modules (project-local; again only when the lock changed).
js="$(dirname "$0")/../tests/js"
if [ ! -f "$js/node_modules/.package-lock.json" ] || [ "$js/package-lock.json" -nt "$js/node_modules/.package-lock.json" ]; then
  echo "install-deps: npm ci in tests/js"
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
fi
