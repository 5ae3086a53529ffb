#!/usr/bin/env bash
# Builds the libFuzzer targets (in build-asan: clang, ASan+UBSan) and runs each for a
# bounded time, starting from the shipped definitions and golden files
# (schema parser and decoder), a message of each generated ROS 2 test type
# (slot views), a few patches of real segment images
# (segment opener), the hostile frames the bridge must refuse (bridge
# session, JSON/CBOR parsers) and small recordings of each compression
# (MCAP reader, lineage and recover), the configuration file with every
# program's section, requests to shmbusd's HTTP listener, and rosbag2's
# storage (a metadata.yaml, a sqlite3 file, a per-message zstd frame).
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 60
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, not '$seconds'" >&2; exit 2 ;; esac
# The targets live in the ASan+UBSan tree (clang; scripts/build.sh): after
# `scripts/test.sh --sanitize address` they are built already.
targets=(schema_parser schema_decoder slot_view segment_open json_input bridge_session mcap_reader config daemon_http
  cdr_fastcdr rosbag2)
target_args=()
for t in "${targets[@]}"; do target_args+=(--target "fuzz_$t"); done
dir=$(bash scripts/build.sh --sanitize address "${target_args[@]}")

corpus="$dir/corpus"
rm -rf "$corpus"
mkdir -p "$corpus/parser" "$corpus/decoder" "$corpus/view" "$corpus/open" "$corpus/input" "$corpus/session" "$corpus/reader" "$corpus/config" \
  "$corpus/http" "$corpus/cdr" "$corpus/rosbag2"
# Named by their paths: definitions of different packages share names.
for f in runtime/msg/*/*.msg tests/msg/*/*.msg tests/msg_ros2/*/*/*; do cp "$f" "$corpus/parser/${f//\//_}"; done
# Configuration seeds: the shipped example (every key) and each section.
cp config/*.toml "$corpus/config/"
printf '[[gateway]]\nexport = ["/a/*"]\nreliability = "best_effort"\n' > "$corpus/config/gateway.toml"
printf '[[sync]]\nname = "s"\ninputs = ["/a", "/b"]\noutput = "/o"\nthreshold = "5ms"\n' > "$corpus/config/sync.toml"
printf '[bridge]\nallow = ["/a"]\nmax_clients = 4\nidle_timeout = "1s"\n' > "$corpus/config/bridge.toml"
# Decoder seeds: a selector byte, then the golden Imu bytes.
printf '\x00' > "$corpus/decoder/imu.bin"
xxd -r -p tests/golden/sensor_msgs_Imu.hex >> "$corpus/decoder/imu.bin"

# Differential CDR seeds: a selector byte, then a message after its header
# (f/Seqs with empty and one-element sequences; f/Odd; f/Empty).
printf '\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00' > "$corpus/cdr/seqs.bin"
printf '\x01\x01\x00\x00\x00\x00\x00\x00\x00\x05\x06' > "$corpus/cdr/odd.bin"
printf '\x03\x00' > "$corpus/cdr/empty.bin"

# Segment seeds: channel / registry selector, then (offset, xor) patches of
# the header fields (capacity, max_message_size, offsets; registry capacity).
printf '\x00' > "$corpus/open/channel.bin"
printf '\x00\x2c\x01\xff' > "$corpus/open/max_size.bin"
printf '\x00\x50\x01\x40\x58\x01\x08' > "$corpus/open/offsets.bin"
printf '\x01\x40\x00\x03' > "$corpus/open/registry.bin"
printf '\x02\x80\x01' > "$corpus/open/truncated.bin"

# Bridge frames: a selector byte (0/1 rosbridge text/CBOR, 2/3 Foxglove
# text/binary, 4/5 the uplink's text/CBOR), then the frame. The parsers'
# seeds are the same frames (selector 0 JSON, 1 CBOR).
deep() { printf '%*s' "$2" '' | tr ' ' "$1"; }
seed() { printf '%b' "$2" > "$corpus/session/$1"; printf '%b' "$2" > "$corpus/input/$1"; }
seed subscribe '\x00{"op":"subscribe","topic":"/chatter","throttle_rate":10,"fragment_size":1024,"id":"s"}'
seed publish '\x00{"op":"publish","topic":"/chatter","msg":{"data":"hi"}}'
seed advertise '\x00{"op":"advertise","topic":"/made","type":"shmbus_msgs/String"}'
seed call '\x00{"op":"call_service","service":"/rosapi/topics","args":{},"id":"c"}'
seed fragment '\x00{"op":"fragment","id":"f","data":"{\\"op\\":\\"set_level\\",\\"level\\":\\"info\\"}","num":0,"total":1}'
seed cbor '\xa2\x62op\x69subscribe\x65topic\x68/chatter'
seed action_goal '\x00{"op":"send_action_goal","id":"g","action":"/fib","action_type":"test_msgs/action/Fibonacci","args":{"order":3},"feedback":true}'
seed action_cancel '\x00{"op":"cancel_action_goal","id":"g","action":"/fib"}'
seed action_serve '\x00{"op":"advertise_action","action":"/fib","type":"test_msgs/action/Fibonacci"}'
seed action_result '\x00{"op":"action_result","id":"00000000-0000-0000-0000-000000000000","action":"/fib","values":{},"status":4,"result":true}'
printf '\x01' > "$corpus/session/cbor_deep"; deep $'\x81' 3000 >> "$corpus/session/cbor_deep"
{ printf '\x00{"op":"x","id":'; deep '[' 3000; deep ']' 3000; printf '}'; } > "$corpus/session/id_deep"
cp "$corpus/session/cbor_deep" "$corpus/session/id_deep" "$corpus/input/"
printf '\x02%s' '{"op":"subscribe","subscriptions":[{"id":1,"channelId":1}]}' > "$corpus/session/fox_subscribe"
printf '\x02%s' '{"op":"advertise","channels":[{"id":7,"topic":"/chatter","encoding":"json","schemaName":"shmbus_msgs/String"}]}' \
  > "$corpus/session/fox_advertise"
printf '\x03\x01\x07\x00\x00\x00%s' '{"data":"x"}' > "$corpus/session/fox_publish"
printf '\x04%s' '{"op":"publish","topic":"/chatter","msg":{"data":"from afar"}}' > "$corpus/session/uplink_publish"
# Requests to shmbusd: the page with a token in the query, the API with a
# Bearer header, a stream.
printf 'GET /?a=1&token=s3cr%%25t HTTP/1.1\r\nHost: x\r\n\r\n' > "$corpus/http/page"
printf 'GET /api/channels HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cr%%t\r\n\r\n' > "$corpus/http/bearer"
# rosbag2 seeds: a selector byte, then a metadata.yaml (0), a sqlite3 file
# with rosbag2's tables (1), a message compressed per message (2).
printf '\x00rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths:\n    - b_0.db3\n  compression_format: zstd\n  compression_mode: MESSAGE\n' \
  > "$corpus/rosbag2/metadata.bin"
/usr/bin/python3 - "$corpus/rosbag2" <<'PY'
import os, sqlite3, sys, zstandard
out = sys.argv[1]
db = os.path.join(out, "bag.db3")
con = sqlite3.connect(db)
con.executescript("""
PRAGMA page_size=512;
CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL,
  offered_qos_profiles TEXT NOT NULL);
CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL, encoding TEXT NOT NULL,
  encoded_message_definition TEXT NOT NULL, type_description_hash TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL);
INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', ''), (2, '/x', 'p/msg/X', 'cdr', '');
INSERT INTO message_definitions VALUES (1, 'p/msg/X', 'ros2msg', 'int32 a', '');
INSERT INTO messages VALUES (1, 1, 10, x'0001000006000000686f6c610000'), (2, 2, 20, x'0001000007000000');
""")
con.commit()
con.close()
with open(db, "rb") as f, open(os.path.join(out, "sqlite.bin"), "wb") as s:
    s.write(b"\x01" + f.read())
os.remove(db)
with open(os.path.join(out, "frame.bin"), "wb") as s:
    s.write(b"\x02" + zstandard.ZstdCompressor().compress(b"\x00\x01\x00\x00" + b"\x07" * 40))
PY
printf 'GET /api/events?token=%%7 HTTP/1.1\r\nHost: x\r\n\r\n' > "$corpus/http/events"
SHMBUS_FUZZ_WRITE_SEEDS="$corpus/reader" "$dir/tests/fuzz/fuzz_mcap_reader"
SHMBUS_FUZZ_WRITE_SEEDS="$corpus/view" "$dir/tests/fuzz/fuzz_slot_view"
# What the fuzzers once crashed on: run again first, every time.
cp tests/fuzz/regressions/reader/* "$corpus/reader/"
cp tests/fuzz/regressions/session/* "$corpus/session/"
cp tests/fuzz/regressions/cdr/* "$corpus/cdr/"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
declare -A corpus_of=([schema_parser]=parser [schema_decoder]=decoder [slot_view]=view [segment_open]=open [json_input]=input
  [bridge_session]=session [mcap_reader]=reader [config]=config [daemon_http]=http [cdr_fastcdr]=cdr [rosbag2]=rosbag2)
# One libFuzzer process per core at a time (each is single-threaded).
run_target() {
  local rc=0
  "$dir/tests/fuzz/fuzz_$1" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$corpus/${corpus_of[$1]}" > "$dir/fuzz_$1.log" 2>&1 || rc=$?
  echo "$rc" > "$dir/fuzz_$1.rc"
}
for target in "${targets[@]}"; do
  run_target "$target" &
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
done
wait
failed=0
for target in "${targets[@]}"; do
  log="$dir/fuzz_$target.log"
  rc=$(cat "$dir/fuzz_$target.rc")
  echo "fuzz_$target: ${seconds}s"
  # Executions per second and the coverage reached (libFuzzer's cov: and ft:).
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)' "$log" || true
  grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true
  if [ "$rc" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz_$target failed (exit $rc); the reproducer is in $dir/" >&2
    failed=1
  fi
done
exit "$failed"
