#!/usr/bin/env bash
# The layout check fails on each kind of fault it knows: a copy of runtime/
# and the architecture page, the build's target graph pointed at the copy,
# then one fault of each kind planted in the copy.
#   check_layout_finds_faults.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs" "$tmp/build"
cp -r "$src/runtime" "$tmp/"
cp "$src/docs/architecture.md" "$tmp/docs/"
sed "s#$src/#$tmp/#g" "$build/layout-targets.txt" > "$tmp/build/layout-targets.txt"
check() { SHMBUS_LAYOUT_ROOT=$tmp python3 "$src/scripts/check-layout.py" "$tmp/build"; }

check > "$tmp/clean.txt" || { echo "FAIL: the unchanged copy has faults:"; cat "$tmp/clean.txt"; exit 1; }

# A library including a header of one it does not link, and a climb out of
# its folder; a core library linking a daemon one; a library linking the
# command-line one; a wrong arrow drawn.
sed -i '0,/^#include "shmbus\/node.hpp"/s//&\n#include "shmbus\/mcap.hpp"\n#include "..\/..\/core\/src\/ring.hpp"/' \
  "$tmp/runtime/node/src/node.cpp"
sed -i -E 's#^(shmbus_schema\|[^|]*\|[^|]*\|)#\1shmbus_bridge,#' "$tmp/build/layout-targets.txt"
sed -i -E 's#^(shmbus_record\|[^|]*\|[^|]*\|)#\1shmbus_cli,#' "$tmp/build/layout-targets.txt"
sed -i 's/^  mcap --> core$/  mcap --> node/' "$tmp/docs/architecture.md"
rc=0
check > "$tmp/faults.txt" || rc=$?
cat "$tmp/faults.txt"
[ "$rc" = 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
for want in "runtime/node/src/node.cpp: includes shmbus/mcap.hpp of shmbus_mcap, which shmbus_node does not link" \
            "runtime/node/src/node.cpp: includes ../../core/src/ring.hpp by a relative path out of its folder" \
            "shmbus_schema (runtime/) links shmbus_bridge of the higher folder daemon/" \
            "shmbus_record is a library and links shmbus_cli" \
            "docs/architecture.md: the drawing lacks mcap --> core" \
            "docs/architecture.md: the drawing has mcap --> node"; do
  grep -qF "$want" "$tmp/faults.txt" || { echo "FAIL: no line: $want"; exit 1; }
done
echo "PASS: every planted fault reported"
