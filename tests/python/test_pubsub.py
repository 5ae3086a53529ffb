"""Python and C++ on one channel, both ways, at 1 kHz for 5 s: every message,
in order, field-exact."""

import json
import os
import subprocess
import tempfile
import threading

import numpy as np
import pytest

import shmbus
from shmbus import _shmbus
from conftest import SHMTOOL, SOURCE_DIR, shmtool, subscribers, wait_until

COUNT = 5000


def imu_fields(i: int) -> dict:
    return {
        "header": {"stamp_ns": 1_000_000 * i + 7, "seq": i, "frame_id": f"imu{i % 10}"},
        "orientation": [i * 0.5, -i, i + 0.25, 1.0],
        "angular_velocity": [1e-3 * i, 2.0, -3.5],
        "linear_acceleration": [9.81, i * 0.125, -i * 0.0625],
    }


def test_a_python_publisher_reaches_a_cpp_subscriber_message_for_message():
    imu = shmbus.message_type("shmbus_msgs/Imu")
    node = shmbus.Node("py_talker")
    pub = node.publisher("/py/to_cpp", imu)
    with tempfile.TemporaryFile("w+") as out:
        echo = subprocess.Popen([SHMTOOL, "echo", "/py/to_cpp", "--json", "-n", str(COUNT)], stdout=out,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: subscribers("/py/to_cpp") == 1, 20, "shmtool echo to subscribe")
            sent = []

            def tick():
                i = len(sent)
                assert pub.publish(imu_fields(i))
                sent.append(i)
                if len(sent) == COUNT:
                    node.stop()

            node.every(0.001, tick)
            node.spin()
            assert echo.wait(timeout=60) == 0, echo.stderr.read()
        finally:
            echo.kill()
        out.seek(0)
        lines = out.read().splitlines()
    assert len(lines) == COUNT
    for i, line in enumerate(lines):
        m = json.loads(line)
        assert m["sequence"] == i and m["lost_before"] == 0
        assert m["node"] == "py_talker"
        d = m["data"]
        want = imu_fields(i)
        assert d["header"] == want["header"]
        assert d["orientation"] == want["orientation"]
        assert d["angular_velocity"] == want["angular_velocity"]
        assert d["linear_acceleration"] == want["linear_acceleration"]
        assert d["orientation_covariance"] == [0.0] * 9


def test_a_cpp_publisher_reaches_a_python_node_callback_message_for_message():
    node = shmbus.Node("py_listener")
    got = []

    def on_imu(msg):
        got.append((msg.info.sequence, msg.info.lost_before, msg.header.seq, msg.header.stamp_ns,
                    msg.orientation.tolist(), msg.linear_acceleration.copy(), msg.info.publish_wall_ns))
        if len(got) == COUNT:
            node.stop()

    sub = node.subscribe("/py/from_cpp", "shmbus_msgs/Imu", on_imu)
    pub = subprocess.Popen([SHMTOOL, "pub", "/py/from_cpp", '{"orientation": [1, 2.5, -3, 4], '
                            '"linear_acceleration": [0.125, 0, 9.75]}', "--rate", "1000", "--count", str(COUNT),
                            "--stamp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(60, node.stop)  # a bound, not a pace
    timer.start()
    try:
        node.spin()
    finally:
        timer.cancel()
        out, err = pub.communicate(timeout=60)
    assert pub.returncode == 0, err
    assert len(got) == COUNT, f"{len(got)} of {COUNT}; lost {sub.lost}"
    for i, (sequence, lost, seq, stamp, orientation, accel, wall) in enumerate(got):
        assert (sequence, lost, seq) == (i, 0, i)
        assert orientation == [1.0, 2.5, -3.0, 4.0]
        assert np.array_equal(accel, [0.125, 0.0, 9.75])
        # --stamp: header.stamp_ns is the wall clock just before publish.
        assert 0 < wall - stamp < 10_000_000_000
    assert sub.calls == COUNT and sub.lost == 0


def test_a_python_subscriber_of_a_python_publisher_gets_the_trailing_array_and_strings():
    img = shmbus.message_type("shmbus_msgs/Image")
    pub = shmbus.Publisher("/py/small_image", img)
    sub = shmbus.Subscriber("/py/small_image")  # any type: the channel's schema gives the fields
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert pub.publish(shmbus.image_message(pixels, "rgb8", header={"frame_id": "cam", "seq": 9}))
    m = sub.read(timeout=5)
    assert m is not None and m.type == img
    assert (m.height, m.width, m.step, m.encoding, m.header.frame_id, m.header.seq) == (2, 3, 9, "rgb8", "cam", 9)
    assert np.array_equal(shmbus.image_array(m), pixels)
    assert m.to_dict()["data"] == pixels.reshape(-1).tolist()
    assert sub.take() is None


def test_ros2s_own_image_travels_and_its_pixels_are_a_view_of_the_message():
    img = shmbus.message_type("sensor_msgs/msg/Image")  # shipped, ROS 2's fields
    assert img.name == "sensor_msgs/Image"
    pub = shmbus.Publisher("/py/ros2_image", img)
    sub = shmbus.Subscriber("/py/ros2_image")
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    stamp = {"sec": 17, "nanosec": 250}
    assert pub.publish(shmbus.image_message(pixels, "bgr8", type="sensor_msgs/Image",
                                            header={"stamp": stamp, "frame_id": "camera_optical"}))
    m = sub.read(timeout=5)
    assert m is not None and m.type == img
    assert (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id) == (17, 250, "camera_optical")
    assert (m.height, m.width, m.step, m.encoding) == (4, 5, 15, "bgr8")
    a = shmbus.image_array(m)
    assert np.array_equal(a, pixels) and np.shares_memory(a, m.raw)
    with pytest.raises(shmbus.InvalidArgumentError, match="image_array needs a sensor_msgs/Image"):
        shmbus.image_array(shmbus.message_type("std_msgs/String").new(data="x"))


def test_ros2_types_with_strings_and_sequences_travel_as_str_numpy_views_and_message_views():
    # ROS 2's interface language (tests/msg_ros2, share layout): a
    # PointCloud2-shaped message, strings in its header and in a sequence of
    # messages, the points a NumPy view of the message's bytes.
    root = os.path.join(SOURCE_DIR, "tests", "msg_ros2")
    cloud = shmbus.message_type("ros2_test_msgs/msg/PointCloud", msg_path=[root])
    pub = shmbus.Publisher("/py/cloud", cloud)
    sub = shmbus.Subscriber("/py/cloud", cloud)
    points = np.arange(64, dtype=np.uint8)
    fields = [{"name": n, "offset": 4 * i, "datatype": 7, "count": 1} for i, n in enumerate("xyzi")]
    assert pub.publish({"header": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": "lidar_top"}, "height": 1,
                        "width": 4, "fields": fields, "point_step": 16, "row_step": 64, "data": points,
                        "is_dense": True})
    m = sub.read(timeout=5)
    assert m is not None
    assert (m.header.frame_id, m.header.stamp.sec, m.width, m.is_dense) == ("lidar_top", 3, 4, True)
    assert [f.name for f in m.fields] == ["x", "y", "z", "i"] and m.fields[3].offset == 12
    assert isinstance(m.data, np.ndarray) and np.shares_memory(m.data, m.raw)
    assert np.array_equal(m.data, points)
    assert m.fields[0].FLOAT32 == 7  # the element type's constants
    # The same bytes as shmtool's JSON codec makes of the same message.
    assert m.to_dict()["fields"] == fields and m.to_dict()["data"] == points.tolist()


def test_fields_named_type_info_and_raw_win_over_the_messages_own_attributes(tmp_path):
    # As visualization_msgs/Marker has a `type` and nav_msgs/OccupancyGrid
    # an `info`: the field is read and written; msg._type, msg._info and
    # msg._raw stay the message's own.
    (tmp_path / "shape_msgs" / "msg").mkdir(parents=True)
    (tmp_path / "shape_msgs" / "msg" / "Shape.msg").write_text(
        "uint8 ARROW=0\nuint8 CUBE=1\nint32 type\nstring info\nuint8[] raw\n")
    shape = shmbus.message_type("shape_msgs/msg/Shape", msg_path=[str(tmp_path)])
    pub = shmbus.Publisher("/py/shape", shape)
    sub = shmbus.Subscriber("/py/shape", shape)
    made = shape.new(type=shape.constants["CUBE"], info="a cube", raw=[7, 8])
    assert (made.type, made.info, list(made.raw)) == (1, "a cube", [7, 8])
    assert made._type == shape and made._info is None and made._raw.tobytes() == bytes(made)
    made.type = 0
    assert made.type == 0 and made.to_dict()["type"] == 0
    assert pub.publish(made)
    m = sub.read(timeout=5)
    assert m is not None and (m.type, m.info, list(m.raw)) == (0, "a cube", [7, 8])
    assert m._info.sequence == 0 and m._type == shape
    # A type without such fields keeps them as the message's own.
    plain = shmbus.message_type("std_msgs/String").new(data="x")
    assert plain.type == plain._type and plain.info is None and bytes(plain.raw) == bytes(plain)


def test_a_new_fixed_layout_message_starts_from_the_definitions_defaults(tmp_path):
    # A type of fixed layout (primitives, a fixed array, one trailing
    # sequence) is made in Python, not by the JSON codec: its defaults too.
    (tmp_path / "gain_msgs" / "msg").mkdir(parents=True)
    (tmp_path / "gain_msgs" / "msg" / "Gain.msg").write_text(
        "float64 kp 1.5\nint32[3] taps [1, 2, 3]\nbool on true\nuint8 level\nfloat32[] samples\n")
    gain = shmbus.message_type("gain_msgs/msg/Gain", msg_path=[str(tmp_path)])
    assert gain.tail is not None and gain.tail.name == "samples"
    g = gain.new(level=4, samples=[0.5, 0.25])
    assert (g.kp, list(g.taps), bool(g.on), g.level, list(g.samples)) == (1.5, [1, 2, 3], True, 4, [0.5, 0.25])
    assert gain.new(kp=2.0, on=False).kp == 2.0 and not gain.new(on=False).on
    # Byte for byte what the C++ codec makes of the same fields.
    assert bytes(gain.new(level=4)) == bytes(_shmbus.encode_json(gain.schema, '{"level": 4}'))


def test_a_loan_publishes_what_was_written_into_the_ring():
    img = shmbus.message_type("shmbus_msgs/Image")
    pub = shmbus.Publisher("/py/loaned", img)
    sub = shmbus.Subscriber("/py/loaned", img)
    with pub.loan(4 * 4 * 3) as m:
        m.height, m.width, m.step, m.encoding = 4, 4, 12, "rgb8"
        shmbus.image_array(m)[:] = 200
    got = sub.read(timeout=5)
    assert got is not None and shmbus.image_array(got).sum() == 200 * 48
    try:
        with pub.loan(3) as m:
            raise RuntimeError("abandoned")
    except RuntimeError:
        pass
    assert sub.take() is None  # a loan left by an exception is discarded
    assert pub.published == 1


def test_what_a_python_callback_publishes_cites_the_message_that_triggered_it():
    node = shmbus.Node("py_stage")
    out = node.publisher("/py/prov_out", "shmbus_msgs/String")

    def stage(msg):
        out.publish({"data": msg.data.upper()})
        if msg.info.sequence == 2:
            node.stop()

    node.subscribe("/py/prov_in", "shmbus_msgs/String", stage)
    source = shmbus.Publisher("/py/prov_in", "shmbus_msgs/String")
    results = shmbus.Subscriber("/py/prov_out", "shmbus_msgs/String")
    for word in ("a", "b", "c"):
        assert source.publish({"data": word})
    node.spin()
    got = [results.take() for _ in range(3)]
    assert [m.data for m in got] == ["A", "B", "C"]
    for i, m in enumerate(got):
        assert [(p.channel_index, p.sequence) for p in m.info.inputs] == [(source.channel_index, i)]
    assert got[0].info.inputs and results.take() is None
