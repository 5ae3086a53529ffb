#!/usr/bin/env bash
# Installs every Debian 12 package that shmbus needs to build, test and
# benchmark. Idempotent: packages already present are left alone, and apt is
# only asked when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev                      # Boost.Interprocess (header-only)
  libfmt-dev                        # text
  libcli11-dev                      # command lines
  libtomlplusplus-dev               # configuration
  nlohmann-json3-dev                # JSON
  libsystemd-dev                    # sd_notify for shmbusd
  libspdlog-dev                     # shmbusd's log
  prometheus prometheus-alertmanager   # promtool and a real Alertmanager for the daemon's tests
  systemd                           # systemd-analyze verify of config/shmbusd.service
  libgtest-dev libgmock-dev         # tests
  libbenchmark-dev                  # micro-benchmarks
  iceoryx libiceoryx-posh-dev libiceoryx-hoofs-dev   # benchmark peer (iox-roudi)
  clang libclang-rt-14-dev xxd      # libFuzzer targets (scripts/fuzz.sh)
  clang-format clang-tidy           # scripts/lint.sh
  lintian dpkg-dev                  # the Debian package test (tests/package/deb.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo: run as root, or install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
