#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for a
# bounded time, starting from the shipped definitions and golden files
# (schema parser and decoder) and from a few patches of real segment images
# (segment opener).
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 60
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
bash scripts/install-deps.sh >&2
dir=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHMBUS_BUILD_FUZZERS=ON \
  -DSHMBUS_BUILD_TESTS=OFF -DSHMBUS_BUILD_BENCHMARKS=OFF -DSHMBUS_BUILD_TOOLS=OFF >&2
cmake --build "$dir" --target fuzz_schema_parser fuzz_schema_decoder fuzz_segment_open >&2

corpus="$dir/corpus"
mkdir -p "$corpus/parser" "$corpus/decoder" "$corpus/open"
cp runtime/msg/*/*.msg tests/msg/*/*.msg "$corpus/parser/"
# Decoder seeds: a selector byte, then the golden Imu bytes.
printf '\x00' > "$corpus/decoder/imu.bin"
xxd -r -p tests/golden/sensor_msgs_Imu.hex >> "$corpus/decoder/imu.bin"

# Segment seeds: channel / registry selector, then (offset, xor) patches of
# the header fields (capacity, max_message_size, offsets; registry capacity).
printf '\x00' > "$corpus/open/channel.bin"
printf '\x00\x2c\x01\xff' > "$corpus/open/max_size.bin"
printf '\x00\x50\x01\x40\x58\x01\x08' > "$corpus/open/offsets.bin"
printf '\x01\x40\x00\x03' > "$corpus/open/registry.bin"
printf '\x02\x80\x01' > "$corpus/open/truncated.bin"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for target in schema_parser schema_decoder segment_open; do
  log="$dir/fuzz_$target.log"
  echo "fuzz_$target: ${seconds}s"
  rc=0
  "$dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$corpus/${target#*_}" > "$log" 2>&1 || rc=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)' "$log" || true
  if [ "$rc" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz_$target failed (exit $rc); the reproducer is in $dir/" >&2
    exit 1
  fi
done
