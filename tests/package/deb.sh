#!/usr/bin/env bash
# The Debian packages end to end (ctest label "package"): build them
# (cmake --target package), install them with dpkg, use what they installed
# (shmtool, shmbusd --check-config, the unit through systemd-analyze verify,
# the shmbus user, a consumer project built against /usr), run lintian
# (errors fail), then purge them and check that nothing is left.
#   deb.sh SOURCE_DIR WORK_DIR GENERATOR [BUILD_DIR]
# BUILD_DIR: a finished build configured as the packages are
# (CMAKE_INSTALL_PREFIX=/usr, SHMBUS_SYSTEMD_UNIT_DIR=/lib/systemd/system,
# as scripts/build.sh configures build/): its binaries, the ones the other
# tests ran, are packed (cpack, stripped) instead of built again in Release.
# Needs root (dpkg -i); exits 77 (skipped) otherwise. Refuses to run where
# shmbus packages are installed already: it would remove them.
set -euo pipefail
src=$1 work=$2 generator=$3 tree=${4:-}
fail() { echo "deb.sh: $*" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
  echo "deb.sh: skipped: installing a package needs root (run scripts/test.sh as root)"
  exit 77
fi
for p in shmbus shmbus-dev python3-shmbus; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed'; then
    fail "package $p is installed on this machine; remove it first (dpkg --purge $p): this test installs and purges its own"
  fi
done

rm -rf "$work"
mkdir -p "$work"
packable() {
  [ -n "$tree" ] && [ -f "$tree/CPackConfig.cmake" ] &&
    grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$tree/CMakeCache.txt" &&
    grep -qx 'SHMBUS_SYSTEMD_UNIT_DIR:STRING=/lib/systemd/system' "$tree/CMakeCache.txt"
}
if packable; then
  out=$work/packages
  cpack -G DEB --config "$tree/CPackConfig.cmake" -B "$out" >/dev/null
  cache=$tree/CMakeCache.txt
  echo "packed the tested build $tree"
else
  out=$work/build
  cmake -S "$src" -B "$out" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DSHMBUS_SYSTEMD_UNIT_DIR=/lib/systemd/system -DSHMBUS_BUILD_TESTS=OFF -DSHMBUS_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$out" --target package >/dev/null
  cache=$out/CMakeCache.txt
fi
version=$(sed -nE 's/^CMAKE_PROJECT_VERSION:STATIC=(.*)/\1/p' "$cache")
arch=$(dpkg --print-architecture)
debs=("$out/shmbus_${version}_${arch}.deb" "$out/shmbus-dev_${version}_${arch}.deb")
# The Python package, where the build has it.
python_deb=$out/python3-shmbus_${version}_${arch}.deb
python_pkg=()
if grep -qx 'SHMBUS_BUILD_PYTHON:BOOL=ON' "$cache"; then
  debs+=("$python_deb")
  python_pkg=(python3-shmbus)
fi
for d in "${debs[@]}"; do [ -f "$d" ] || fail "cmake --target package made no $(basename "$d")"; done
echo "built: $(basename "${debs[0]}") $(basename "${debs[1]}")"

trap 'dpkg --purge shmbus shmbus-dev "${python_pkg[@]}" >/dev/null 2>&1 || true' EXIT
dpkg -i "${debs[@]}"

# What the runtime package installed works.
[ "$(shmtool --version)" = "$version" ] || fail "shmtool --version does not say $version"
[ "$(/usr/sbin/shmbusd --version)" = "$version" ] || fail "shmbusd --version does not say $version"
shmbusd --check-config /etc/shmbus/shmbus.toml | grep -q 'valid' || fail "shmbusd --check-config refused the installed file"
systemd-analyze verify /lib/systemd/system/shmbusd.service || fail "systemd-analyze verify refused the installed unit"
systemd-analyze verify /lib/systemd/system/shmbus-bridge.service || fail "systemd-analyze verify refused the bridge's unit"
[ "$(shmbus-bridge --version)" = "$version" ] || fail "shmbus-bridge --version does not say $version"
systemd-analyze verify /lib/systemd/system/shmbus-gateway.service || fail "systemd-analyze verify refused the gateway's unit"
[ "$(shmbus-gateway --version)" = "$version" ] || fail "shmbus-gateway --version does not say $version"
getent passwd shmbus >/dev/null || fail "the package did not create the shmbus user (sysusers.d)"
dpkg-query -W -f='${Conffiles}\n' shmbus | grep -q '/etc/shmbus/shmbus.toml' || fail "/etc/shmbus/shmbus.toml is not a conffile"
shmtool list --domain "deb_$$" | grep -q 'no channels' || fail "shmtool list does not run"

# The development package: a project outside the tree builds against /usr.
cmake -S "$src/tests/package/consumer" -B "$work/consumer" -G "$generator" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$work/consumer/consumer")
echo "$out"
echo "$out" | grep -Eq 'consumer: received 42 as .*"frame_id":"here".*"value":42' || fail "the consumer did not work"

# The Python package imports from Debian's path (not the build tree's) and
# lists a domain.
if [ ${#python_pkg[@]} -gt 0 ]; then
  got=$(cd / && env -u PYTHONPATH /usr/bin/python3 -B -c \
    "import shmbus, sys; print(shmbus.__file__); print(len(shmbus.channels('deb_$$')))")
  echo "$got" | grep -qx '/usr/lib/python3/dist-packages/shmbus/__init__.py' ||
    fail "python3 did not import shmbus from /usr/lib/python3/dist-packages: $got"
  echo "$got" | tail -1 | grep -qx '0' || fail "shmbus.channels() did not run: $got"
fi

# lintian: every finding is shown; errors fail.
lintian_out=$(lintian --tag-display-limit 0 "${debs[@]}" 2>&1 || true)
echo "lintian findings: $(printf '%s' "$lintian_out" | grep -c . || true)"
printf '%s\n' "$lintian_out"
if printf '%s\n' "$lintian_out" | grep -q '^E: '; then fail "lintian reports errors (above)"; fi
# Every program has its manual page (generated by help2man at build time),
# and the completion is where bash-completion looks.
if printf '%s\n' "$lintian_out" | grep -q 'no-manual-page'; then fail "a program without a manual page (above)"; fi
for page in man1/shmtool.1.gz man1/shmtool-bag.1.gz man8/shmbusd.8.gz man1/shmbus-bridge.1.gz man1/shmbus-gateway.1.gz; do
  dpkg -L shmbus | grep -qx "/usr/share/man/$page" || fail "the package lacks /usr/share/man/$page"
done
[ -f /usr/share/bash-completion/completions/shmtool ] || fail "no bash completion installed for shmtool"

# Remove, purge, and nothing is left.
files=$(dpkg -L shmbus shmbus-dev "${python_pkg[@]}" | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg -r shmbus shmbus-dev "${python_pkg[@]}" >/dev/null
[ -e /usr/bin/shmtool ] && fail "shmtool is left after dpkg -r"
[ -e /etc/shmbus/shmbus.toml ] || fail "dpkg -r removed the conffile (only purge may)"
dpkg --purge shmbus >/dev/null  # shmbus-dev has no conffiles: gone with -r
trap - EXIT
left=""
for f in $files /etc/shmbus; do [ -e "$f" ] && left="$left $f"; done
[ -z "$left" ] || fail "left after purge:$left"
echo "deb.sh: installed, used, linted, purged; $(echo "$files" | wc -l) files, none left"
