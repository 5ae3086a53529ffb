#!/usr/bin/env bash
# Step replay against timed replay, on the pipeline example: a live run is
# recorded, then replayed with m1 and m2 live, (1) timed at the recorded
# spacing, (2) timed as fast as the player goes, (3) in module-dependency
# order (play --step). For each: how many c5 frames equal the recording's
# (aligned), the wall time, frames per second and time per frame.
#   tests/bench/bench_replay.sh BUILD_DIR [--smoke]
set -euo pipefail
dir=${1:?give the build directory}
frames=300
rate=100
[ "${2:-}" = "--smoke" ] && frames=40
tool="$dir/tools/shmtool"
pipeline="$dir/examples/shmbus-example-pipeline"
work=$(mktemp -d)
pids=()
rec=""
cleanup() {
  [ -n "$rec" ] && { kill "$rec" 2>/dev/null || true; }
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in $(ls "$work"/domains 2>/dev/null); do "$tool" clean --domain "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
  return 0
}
trap cleanup EXIT
mkdir -p "$work/domains"

domain() { local d="bench-replay-$$-$1"; touch "$work/domains/$d"; echo "$d"; }
start() { "$@" >/dev/null 2>&1 & pids+=($!); }
wait_subscribed() {  # DOMAIN CHANNEL N
  for _ in $(seq 1 400); do
    n=$("$tool" info "$2" --domain "$1" 2>/dev/null | sed -n 's/^read by *//p' | tr ',' '\n' | grep -vc -e '^ *-$' -e shmtool || true)
    [ "${n:-0}" -ge "$3" ] && return 0
    sleep 0.05
  done
  echo "bench_replay: $2 has no $3 reading modules in $1" >&2; exit 1
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
equal_c5() { "$tool" bag diff "$work/live.mcap" "$1" --channel /pipeline/c5 --json | sed -n 's/^  "equal": \([0-9]*\).*/\1/p'; }
now() { date +%s.%N; }

# 1. The live run.
d=$(domain live)
"$tool" record --all -o "$work/live.mcap" --domain "$d" > "$work/record.log" 2>&1 & rec=$!
until grep -q recording "$work/record.log"; do sleep 0.02; done
for m in m1 m2 m3; do SHMBUS_DOMAIN=$d start "$pipeline" --module $m --rate $rate; done
for c in /pipeline/c1 /pipeline/c3 /pipeline/c4 /pipeline/c6; do wait_subscribed "$d" $c 1; done
SHMBUS_DOMAIN=$d "$pipeline" --module sensors --rate $rate --count $frames >/dev/null
sleep 1.2
kill -INT $rec; wait $rec
stop_all

# 2. Timed replays: the recorded inputs at their spacing (x1) and as fast
# as the player goes, m1 and m2 live, c5 recorded again.
timed() {  # NAME RATE
  local d; d=$(domain "$1")
  "$tool" record /pipeline/c5 -o "$work/$1.mcap" --domain "$d" > "$work/$1.log" 2>&1 & local r=$!
  rec=$r
  until grep -q recording "$work/$1.log"; do sleep 0.02; done
  for m in m1 m2; do SHMBUS_DOMAIN=$d start "$pipeline" --module $m; done
  wait_subscribed "$d" /pipeline/c1 1; wait_subscribed "$d" /pipeline/c4 1; wait_subscribed "$d" /pipeline/c6 1
  local t0; t0=$(now)
  "$tool" play "$work/live.mcap" --domain "$d" --rate "$2" --exclude /pipeline/c3 --exclude /pipeline/c5 >/dev/null
  local t1; t1=$(now)
  sleep 0.5
  kill -INT $r; wait $r
  stop_all
  echo "$(equal_c5 "$work/$1.mcap") $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
read -r timed1_equal timed1_s < <(timed timed_x1 1)
read -r timedf_equal timedf_s < <(timed timed_fast 1000)

# 3. Step replay.
d=$(domain step)
for m in m1 m2; do SHMBUS_DOMAIN=$d start "$pipeline" --module $m; done
for c in /pipeline/c1 /pipeline/c4 /pipeline/c6; do wait_subscribed "$d" $c 1; done
t0=$(now)
# A frame a live module did not answer in time (a loaded machine) is a
# figure, not a failure of the benchmark: play says which, and the row
# counts what aligned.
step_rc=0
"$tool" play "$work/live.mcap" --step --modules m1,m2 -o "$work/step.mcap" --domain "$d" > "$work/step.log" 2>&1 || step_rc=$?
t1=$(now)
if [ "$step_rc" -ne 0 ]; then
  echo "bench_replay: play --step exited $step_rc:" >&2
  tail -5 "$work/step.log" >&2
  [ -s "$work/step.mcap" ] || exit 1
fi
stop_all
step_equal=$(equal_c5 "$work/step.mcap")
step_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

printf 'replay of the pipeline example (%d frames recorded at %d Hz; m1 and m2 live)\n' "$frames" "$rate"
printf '  %-22s %18s %10s %10s %14s\n' MODE "ALIGNED C5 FRAMES" "WALL" "FRAMES/S" "PER FRAME"
row() {
  awk -v m="$1" -v e="$2" -v n="$frames" -v s="$3" \
    'BEGIN { printf "  %-22s %12s/%-5s %9.3fs %10.0f %12.1fus\n", m, e, n, s, n / s, s * 1e6 / n }'
}
row "timed x1" "$timed1_equal" "$timed1_s"
row "timed as fast (x1000)" "$timedf_equal" "$timedf_s"
row "step (play --step)" "$step_equal" "$step_s"
echo "  (step wall time includes loading the recording and starting the player; $(sed -n 's/.*replayed .* in \([0-9.]* s\) (\([0-9]*\) frames\/s).*/frames loop: \1, \2 frames\/s/p' "$work/step.log"))"
