#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for a
# bounded time, starting from the shipped definitions and golden files.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 60
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
bash scripts/install-deps.sh >&2
dir=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHMBUS_BUILD_FUZZERS=ON \
  -DSHMBUS_BUILD_TESTS=OFF -DSHMBUS_BUILD_BENCHMARKS=OFF -DSHMBUS_BUILD_TOOLS=OFF >&2
cmake --build "$dir" --target fuzz_schema_parser fuzz_schema_decoder >&2

corpus="$dir/corpus"
mkdir -p "$corpus/parser" "$corpus/decoder"
cp runtime/msg/*/*.msg tests/msg/*/*.msg "$corpus/parser/"
# Decoder seeds: a selector byte, then the golden Imu bytes.
printf '\x00' > "$corpus/decoder/imu.bin"
xxd -r -p tests/golden/sensor_msgs_Imu.hex >> "$corpus/decoder/imu.bin"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for target in parser decoder; do
  log="$dir/fuzz_schema_$target.log"
  echo "fuzz_schema_$target: ${seconds}s"
  rc=0
  "$dir/tests/fuzz/fuzz_schema_$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$corpus/$target" > "$log" 2>&1 || rc=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)' "$log" || true
  if [ "$rc" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz_schema_$target failed (exit $rc); the reproducer is in $dir/" >&2
    exit 1
  fi
done
