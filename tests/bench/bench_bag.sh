#!/usr/bin/env bash
# The bag file operations on a large recording: bag filter, merge, export
# --encoding cdr and doctor, each timed with its peak RSS (/usr/bin/time),
# against `cat FILE > /dev/null` as the floor in the same run. The file is
# built from a real recording (64 KiB raw messages at 1 kHz, recorded by
# shmtool record, uncompressed) merged with itself up to the size asked:
# 1 GiB by default, 64 MiB with --smoke. Every figure is MB/s of the input
# (10^6 bytes) and the ratio to cat's; the files are in page cache (cat
# reads them first), so the figures are the tools' own cost.
#   tests/bench/bench_bag.sh BUILD_DIR [--smoke]
set -euo pipefail
dir=${1:?give the build directory}
copies=16  # of the 64 MiB base: 1 GiB
[ "${2:-}" = "--smoke" ] && copies=1
tool="$dir/tools/shmtool"
work=$(mktemp -d)
domain="bench-bag-$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$tool" clean --domain "$domain" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
printf '[defaults]\nmax_message_size = 65536\ncapacity = 256\n' > "$work/bench.toml"
export SHMBUS_CONFIG="$work/bench.toml"

# The base: 1024 messages of 64 KiB, recorded.
"$tool" --domain "$domain" record -o "$work/base.mcap" /bench/raw --compression none >/dev/null 2>&1 &
rec=$!
pids+=("$rec")
for _ in $(seq 200); do "$tool" --domain "$domain" info /bench/raw >/dev/null 2>&1 && break; sleep 0.05; done
"$tool" --domain "$domain" pub /bench/raw --raw-size 65536 --rate 1000 --count 1024 0102030405060708 >/dev/null
sleep 0.5
kill -INT "$rec"
wait "$rec" || true
pids=()

# Two halves, merged into the file measured (the merge is measured too).
half=()
for h in a b; do
  inputs=()
  for _ in $(seq $(( (copies + 1) / 2 ))); do inputs+=("$work/base.mcap"); done
  "$tool" bag merge "${inputs[@]}" -o "$work/$h.mcap" --compression none -q >/dev/null
  half+=("$work/$h.mcap")
done

measure() {  # NAME INPUT_BYTES COMMAND...
  local name=$1 bytes=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  read -r secs kib < "$work/time"
  awk -v n="$name" -v b="$bytes" -v s="$secs" -v k="$kib" -v floor="${floor:-0}" 'BEGIN {
    mbs = s > 0 ? b / 1e6 / s : 0
    ratio = floor > 0 ? mbs / floor : 1
    printf "%-28s %8.1f MB/s  %6.2fx cat  peak RSS %7.1f MiB  (%.2f s)\n", n, mbs, ratio, k / 1024, s
  }'
  if [ -z "${floor:-}" ]; then floor=$(awk -v b="$bytes" -v s="$secs" 'BEGIN { print (s > 0 ? b / 1e6 / s : 0) }'); fi
}

big="$work/big.mcap"
"$tool" bag merge "${half[@]}" -o "$big" --compression none -q >/dev/null  # in page cache, as the others
size=$(stat -c %s "$big")
echo "bench_bag: a recording of $(( size / 1048576 )) MiB ($("$tool" bag info "$big" --json | sed -n 's/^  "messages": \([0-9]*\).*/\1/p') messages of 64 KiB, uncompressed), in page cache"
cat "$big" > /dev/null
# An untimed first copy: the first large write of a run pays for the file
# system's allocation (measured: about 2x slower), whichever tool makes it.
"$tool" bag filter "$big" -o "$work/warm.mcap" -q >/dev/null
rm -f "$work/warm.mcap"
sync  # no writeback of the files made above during the measurements
floor=""
measure "cat FILE > /dev/null" "$size" sh -c "cat '$big' > /dev/null"
measure "bag filter (all channels)" "$size" "$tool" bag filter "$big" -o "$work/filtered.mcap" --channels '/bench/*' -q
rm -f "$work/filtered.mcap"
sync
measure "bag merge (two halves)" "$size" "$tool" bag merge "${half[@]}" -o "$work/merged.mcap" -q
rm -f "$work/merged.mcap"
sync
measure "bag export --encoding cdr" "$size" "$tool" bag export "$big" -o "$work/cdr.mcap" --encoding cdr -q
rm -f "$work/cdr.mcap"
sync
measure "bag doctor" "$size" "$tool" bag doctor "$big"
