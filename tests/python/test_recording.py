"""A recording made by `shmtool record` of the pipeline example, read in
Python: counts equal `bag info`, the graph equals `bag graph --json`; and
a recording written in Python read back by shmtool."""

import json
import os
import signal
import subprocess
import tempfile

import numpy as np
import pytest

import shmbus
import shmbus.record
from conftest import SHMTOOL, shmtool, subscribers, wait_until

PIPELINE = os.environ.get("SHMBUS_EXAMPLE_PIPELINE", "shmbus-example-pipeline")
FRAMES = 40


@pytest.fixture(scope="module")
def recording():
    path = os.path.join(tempfile.mkdtemp(prefix="shmbus-py-rec-"), "pipeline.mcap")
    recorder = subprocess.Popen([SHMTOOL, "record", "--all", "-o", path], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    modules = []
    try:
        assert "recording" in recorder.stdout.readline()
        for m in ("m1", "m2"):
            modules.append(subprocess.Popen([PIPELINE, "--module", m, "--rate", "100"]))
        for c in ("/pipeline/c1", "/pipeline/c2", "/pipeline/c3", "/pipeline/c4", "/pipeline/c6"):
            wait_until(lambda: subscribers(c) >= 2, 30, f"{c}'s readers")
        modules.append(subprocess.Popen([PIPELINE, "--module", "m3", "--rate", "20"]))
        sensors = subprocess.run([PIPELINE, "--module", "sensors", "--rate", "100", "--count", str(FRAMES)],
                                 timeout=60)
        assert sensors.returncode == 0
        wait_until(lambda: any(c.get("name") == "/pipeline/c5" and c.get("messages", 0) >= FRAMES
                               for c in shmbus.channels()), 30, "m2's last frame")
    finally:
        for m in modules:
            m.send_signal(signal.SIGINT)
            m.wait(timeout=30)
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    yield path
    os.unlink(path)
    os.rmdir(os.path.dirname(path))


def test_the_readers_counts_equal_bag_info(recording):
    info = json.loads(shmtool("bag", "info", recording, "--json").stdout)
    want = {c["name"]: c["messages"] for c in info["channels"] if c["name"] != "/shmbus/provenance"}
    reader = shmbus.record.Reader(recording)
    assert {n: c.messages for n, c in reader.channels.items()} == want
    counted = {}
    last = 0
    for r in reader:
        counted[r.channel] = counted.get(r.channel, 0) + 1
        assert r.log_time >= last
        last = r.log_time
        assert r.message.type == reader.channels[r.channel].type
    assert counted == want
    assert want["/pipeline/c1"] == FRAMES


def test_the_graph_equals_bag_graph_json_and_messages_carry_provenance(recording):
    r = shmtool("bag", "graph", recording, "--json")
    assert r.returncode == 0, r.stderr
    reader = shmbus.record.Reader(recording, channels=["/pipeline/c5"])
    assert reader.graph() == json.loads(r.stdout)
    frames = list(reader)
    assert len(frames) == FRAMES and {f.channel for f in frames} == {"/pipeline/c5"}
    p = frames[-1].provenance
    assert p is not None and p["node"] == "m2" and p["inputs"], p


def test_filters_by_time_keep_the_window(recording):
    everything = [r.log_time for r in shmbus.record.Reader(recording)]
    lo, hi = everything[len(everything) // 4], everything[3 * len(everything) // 4]
    window = [r.log_time for r in shmbus.record.Reader(recording, start=lo, end=hi)]
    assert window == [t for t in everything if lo <= t < hi]


@pytest.mark.parametrize("compression", ["zstd", "lz4", "none"])
def test_a_recording_written_in_python_reads_back_in_python_and_in_shmtool(compression, tmp_path):
    path = str(tmp_path / f"w_{compression}.mcap")
    imu = shmbus.message_type("shmbus_msgs/Imu")
    with shmbus.record.Writer(path, compression) as w:
        for i in range(100):
            w.write("/py/imu", imu.new(header={"seq": i}, orientation=[i, 0, 0, 1]), log_time=1_000_000 + i)
    back = list(shmbus.record.Reader(path))
    assert [r.message.header.seq for r in back] == list(range(100))
    assert back[7].message.orientation.tolist() == [7.0, 0.0, 0.0, 1.0]
    info = json.loads(shmtool("bag", "info", path, "--json").stdout)
    assert info["channels"][0]["messages"] == 100 and info["channels"][0]["type"] == "shmbus_msgs/Imu"
