#!/usr/bin/env bash
# Builds shmbus (Release) and runs the benchmarks: the micro-benchmarks and
# `shmbus-bench peers` (two processes, shmbus vs iceoryx, Boost message_queue,
# a Unix socket, floor and spsc; and the Node API's dispatch; a point cloud
# built in a loan and read in place, against iceoryx's loan), the Node
# executor's timers and idle CPU, the monitor's scale, the synchronizer
# policies on simulated sensor streams, the recorder and player, and step
# replay against timed replay (tests/bench/bench_replay.sh), the bag file
# operations on a 1 GiB recording (tests/bench/bench_bag.sh), and the
# WebSocket bridge against a plain WebSocket server, and the DDS gateway
# between two network namespaces against ddsperf (root; skipped otherwise),
# then fan-out to 1-8 subscriber processes against iceoryx, services and
# actions against the same done by hand, small messages
# in the slot header's line (shmbus_source, 16 and 24 B),
# and last the cache-miss view (peers --counters: hardware counters per
# message for floor, spsc and shmbus; software events where there is no PMU).
#   scripts/bench.sh            full runs (peers: medians of 5 interleaved
#                               runs per row; about eight minutes)
#   scripts/bench.sh --smoke    tiny runs: does every benchmark work? (CI;
#                               in the default build, which the tests built;
#                               peers twice, so the medians are exercised)
#   scripts/bench.sh --json     the peers table as one JSON object
set -euo pipefail
cd "$(dirname "$0")/.."
peers_args=()
repeat=5
micro_args=(--benchmark_min_time=0.2)
scale_args=(--browsers 0,1,10)
scale_ring_args=(--channels 1000,10000 --capacity 16 --max-message-size 4096)
scale_big_args=(--channels 50000)
sync_args=()
node_args=()
record_args=()
bridge_args=()
gateway_args=()
fanout_args=(--repeat 3)
fanout_spin_args=(--subscribers 1,2,4,8 --sizes 64 --modes block --repeat 3)
camera_args=(--sizes 64,1048576,4194304,8388608 --repeat 3 --messages 300)
camera_paced_args=(--sizes 64,1048576,8388608 --repeat 3 --messages 200)
fanin_args=(--publishers 1,2,4 --repeat 3)
cloud_args=(--sizes 65536,1048576,4194304,16777216 --modes poll --rounds 20000 --warmup 2000)
services_args=(--clients 1,4,16 --repeat 3 --calls 20000)
actions_args=(--repeat 5)
python_args=(--repeat 3)
build_args=(--release)
json=0
for a in "$@"; do
  case "$a" in
    --smoke) peers_args+=(--smoke); repeat=2; micro_args=(--benchmark_min_time=0.01); scale_args=(--channels 200); scale_ring_args=(--channels 200 --capacity 16 --max-message-size 4096); scale_big_args=(); sync_args=(--seconds 30); node_args=(--smoke); record_args=(--smoke); bridge_args=(--smoke); gateway_args=(--smoke); fanout_args=(--smoke --subscribers 1,2 --sizes 64,65536); fanout_spin_args=(--smoke --subscribers 2 --sizes 64 --modes block); camera_args=(--smoke --sizes 64,4194304 --modes block); camera_paced_args=(--smoke --sizes 64,1048576); fanin_args=(--smoke --publishers 1,2 --modes block); cloud_args=(--smoke --sizes 65536,16777216 --modes poll); services_args=(--smoke); actions_args=(--smoke); python_args=(--count 500 --frames 20 --repeat 1); build_args=() ;;
    --json) peers_args+=(--json); json=1 ;;
    *) echo "bench.sh: unknown option '$a'; use --smoke or --json" >&2; exit 2 ;;
  esac
done
dir=$(bash scripts/build.sh "${build_args[@]}")
if [[ $json == 0 ]]; then
  "$dir/tests/bench/shmbus_bench_micro" "${micro_args[@]}"
  "$dir/tests/bench/shmbus_bench_scale" "${scale_args[@]}"
  "$dir/tests/bench/shmbus_bench_scale" "${scale_ring_args[@]}"
  if [[ ${#scale_big_args[@]} -gt 0 ]]; then "$dir/tests/bench/shmbus_bench_scale" "${scale_big_args[@]}"; fi
  "$dir/tests/bench/shmbus_bench_sync" "${sync_args[@]}"
  "$dir/tests/bench/shmbus-bench-node" "${node_args[@]}"
  "$dir/tests/bench/shmbus-bench-record" "${record_args[@]}"
  bash tests/bench/bench_replay.sh "$dir" "${record_args[@]}"
  bash tests/bench/bench_bag.sh "$dir" "${record_args[@]}"
  "$dir/tests/bench/shmbus-bench-bridge" "${bridge_args[@]}"
  "$dir/tests/bench/shmbus-bench-gateway" "${gateway_args[@]}"
  # The Python package: ping-pong against a Pipe and a Unix socket, a 6 MiB
  # image in place against the C++ Node.
  PYTHONPATH="$dir/python" /usr/bin/python3 tests/bench/bench_python.py "${python_args[@]}" \
    --cpp-image-node "$dir/tests/bench/shmbus-bench-image-node"
fi
"$dir/tests/bench/shmbus-bench" peers --repeat "$repeat" "${peers_args[@]}"
# --json prints the peers table alone, one JSON object.
[[ $json == 1 ]] && exit 0
# A PointCloud2-shaped message (ROS 2's fields) built in a loan and read in
# place by a Node, 64 KiB to 16 MiB, against iceoryx's loan of the size.
"$dir/tests/bench/shmbus-bench" peers --transports node_cloud,iceoryx_loan --repeat "$repeat" "${cloud_args[@]}"
# The rclcpp-shaped surface against the Node API, the same message and
# view callback run by run: 64 B and 4 KiB copied (a typed message), and a
# point cloud built in a loan and read in place.
# shellcheck disable=SC2054 # commas: shmbus-bench's list syntax, not array separators
"$dir/tests/bench/shmbus-bench" peers --transports node_typed,rclcpp --repeat "$repeat" "${peers_args[@]}"
"$dir/tests/bench/shmbus-bench" peers --transports node_cloud,rclcpp_cloud --sizes 65536,4194304 --repeat "$repeat" \
  "${peers_args[@]}"
# Fan-out: one publisher, 1-8 subscriber processes, against iceoryx.
"$dir/tests/bench/shmbus-bench-fanout" "${fanout_args[@]}"
# The same with wait_spin = 1 ms, longer than the 500 us pacing: the
# subscribers spin (yielding) instead of sleeping between messages.
"$dir/tests/bench/shmbus-bench-fanout" --wait-spin-us 1000 "${fanout_spin_args[@]}"
# Camera-sized zero copy: a loan written at its ends and read in place (the
# first and last line, or every byte), against iceoryx's loan/take and the
# copying publish.
"$dir/tests/bench/shmbus-bench-fanout" --subscribers 1 --writes loan,copy --reads ends,all "${camera_args[@]}"
# The same loan paced alike at every size (10 ms): the size's effect alone.
"$dir/tests/bench/shmbus-bench-fanout" --subscribers 1 --writes loan --reads ends --modes block --interval-us 10000 \
  "${camera_paced_args[@]}"
# Fan-in: 1, 2, 4 writer processes into one channel, against iceoryx's
# publishers on one topic and Boost message_queue.
"$dir/tests/bench/shmbus-bench-fanout" --subscribers 1 --sizes 64 --transports shmbus,iceoryx,boost_mq "${fanin_args[@]}"
# Services under load: 1, 4, 16 client processes calling one server,
# against iceoryx's request/response.
"$dir/tests/bench/shmbus-bench-services" "${services_args[@]}"
# Actions: one goal with feedback at 1 kHz, an action against two services
# and a channel doing the same by hand.
"$dir/tests/bench/shmbus-bench-actions" "${actions_args[@]}"
# Small messages: pongs that cite their ping (shmbus) against messages that
# cite nothing (shmbus_source), which at 24 bytes or less travel in the
# slot header's line.
"$dir/tests/bench/shmbus-bench" peers --transports floor,spsc,shmbus,shmbus_source --modes poll --sizes 16,24 \
  --repeat "$repeat" "${peers_args[@]}"
# The cache-miss view: hardware counters per message for the floor, the
# minimal ring and shmbus (needs a PMU; a VM often has none). Where there
# is none, the same view over software events runs its plumbing.
# shellcheck disable=SC2054 # commas: shmbus-bench's list syntax, not array separators
view=(peers --transports floor,spsc,shmbus --modes poll --sizes 64 --repeat "$repeat" "${peers_args[@]}")
"$dir/tests/bench/shmbus-bench" "${view[@]}" --counters ||
  { echo "bench.sh: no hardware counters here; the same view over software events:" >&2
    "$dir/tests/bench/shmbus-bench" "${view[@]}" --software-counters; }
