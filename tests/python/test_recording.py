"""A recording made by `shmtool record` of the pipeline example, read in
Python: counts equal `bag info`, the graph equals `bag graph --json`; and
a recording written in Python read back by shmtool."""

import json
import os
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

import shmbus
import shmbus.record
from conftest import SHMTOOL, SOURCE_DIR, shmtool, subscribers, wait_until

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


def test_python_exports_a_recording_as_ros2_cdr_and_imports_it_back_every_field_exact(tmp_path):
    # The record library's export and import, from Python: the CDR copy is
    # what rosbag2 writes (profile ros2), and imports to the same messages.
    path, cdr, back = (str(tmp_path / n) for n in ("py.mcap", "cdr.mcap", "back.mcap"))
    cloud = shmbus.message_type("sensor_msgs/PointCloud2")
    sent = [cloud.new(header={"frame_id": f"lidar_{i}"}, width=i, fields=[{"name": "x", "datatype": 7, "count": 1}],
                      data=list(range(i * 4))) for i in range(5)]
    with shmbus.record.Writer(path) as w:
        for i, m in enumerate(sent):
            w.write("/py/points", m, log_time=1_000 + i)
        w.write("/py/raw", shmbus.MessageType.bytes().decode(b"\x01\x02\x03"), log_time=2_000)
    exported = shmbus.record.export(path, cdr, encoding="cdr")
    assert (exported["messages"], exported["channels"], exported["left_out"]) == (6, 2, [])
    info = json.loads(shmtool("bag", "info", cdr, "--json").stdout)
    assert info["profile"] == "ros2" and info["library"] == "shmbus record export"
    assert sorted(c["type"] for c in info["channels"]) == ["sensor_msgs/msg/PointCloud2", "shmbus/msg/Bytes"]
    imported = shmbus.record.import_ros2(cdr, back)
    assert (imported["messages"], imported["left_out"]) == (6, [])
    got = [r for r in shmbus.record.Reader(back) if r.channel == "/py/points"]
    assert [r.message.to_dict() for r in got] == [m.to_dict() for m in sent]
    assert [r.log_time for r in got] == [1_000 + i for i in range(5)]
    with pytest.raises(shmbus.InvalidArgumentError, match="neither json nor cdr"):
        shmbus.record.export(path, str(tmp_path / "x.mcap"), encoding="yaml")


def test_a_rosbag2_recording_plays_to_a_python_subscriber_every_field_exact(tmp_path):
    # Written without shmbus, as rosbag2 writes one (tests/js/ros2_bag_write.mjs:
    # @mcap/core, zstd chunks, the .msg files as definitions, Foxglove's CDR),
    # imported, then played to Python subscribers of ROS 2's shipped types.
    rosbag = str(tmp_path / "rosbag2.mcap")
    imported = str(tmp_path / "imported.mcap")
    texts = ["hello", "x" * 3000, "tab\tand \"quotes\""]
    clouds = [{"header": {"stamp": {"sec": i, "nanosec": 7}, "frame_id": f"lidar_{i}"}, "height": 1, "width": 2 * i,
               "fields": [{"name": n, "offset": 4 * k, "datatype": 7, "count": 1} for k, n in enumerate("xyz"[:i + 1])],
               "is_bigendian": False, "point_step": 12, "row_step": 24 * i,
               "data": [(k * 5 + i) % 256 for k in range(24 * i)], "is_dense": i != 1} for i in range(3)]
    spec = {"out": rosbag, "msg_roots": [os.path.join(SOURCE_DIR, "runtime", "msg")], "topics": [
        {"topic": "/rosbag2/chatter", "type": "std_msgs/msg/String",
         "messages": [{"log_time": str(10**9 + i * 10**6), "data": {"data": t}} for i, t in enumerate(texts)]},
        {"topic": "/rosbag2/points", "type": "sensor_msgs/msg/PointCloud2",
         "messages": [{"log_time": str(10**9 + i * 10**6 + 1), "data": c} for i, c in enumerate(clouds)]}]}
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    js = os.path.join(SOURCE_DIR, "tests", "js")
    written = subprocess.run(["node", os.path.join(js, "ros2_bag_write.mjs"), str(spec_file)], cwd=js,
                             capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["messages"] == 6
    assert "wrote 6 messages on 2 channels" in shmtool("bag", "import", rosbag, "-o", imported).stdout

    chatter = shmbus.Subscriber("/rosbag2/chatter", "std_msgs/msg/String")
    points = shmbus.Subscriber("/rosbag2/points", "sensor_msgs/msg/PointCloud2")
    assert shmtool("play", imported, "--wait-for-subscribers").returncode == 0
    got_texts, got_clouds = [], []
    deadline = time.monotonic() + 10
    while (len(got_texts) < 3 or len(got_clouds) < 3) and time.monotonic() < deadline:
        for sub, got in ((chatter, got_texts), (points, got_clouds)):
            m = sub.take()
            if m is not None:
                got.append(m)
        time.sleep(0.001)
    assert [m.data for m in got_texts] == texts
    assert [m.to_dict() for m in got_clouds] == clouds
    # Fields where they lie: str, NumPy views of the points, message views.
    m = got_clouds[2]
    assert (m.header.frame_id, m.header.stamp.sec, m.fields[2].name) == ("lidar_2", 2, "z")
    assert isinstance(m.data, np.ndarray) and m.data.tolist() == clouds[2]["data"]
