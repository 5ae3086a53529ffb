"""Scripts in the form of ROS 2's rclpy tutorials (tests/python/
rclpy_tutorials: a publisher class with a timer, a subscriber with a
lambda, an old-school ``while rclpy.ok()`` loop, a service and an async
client, a point cloud publisher), written against rclpy's API only and run
with their imports changed to shmbus.rclpy's, as real processes. Every
message and response is checked; SIGTERM ends each cleanly (exit 0, its
endpoints gone from the channel)."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import shmbus
from shmbus import point_cloud2
from conftest import shmtool, wait_until

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rclpy_tutorials")


@pytest.fixture()
def ros_env(tmp_path):
    # example_interfaces/srv/AddTwoInts as ROS 2 defines it, where
    # SHMBUS_MSG_PATH finds it (ROS 2's own packages are not installed here).
    srv = tmp_path / "example_interfaces" / "srv"
    srv.mkdir(parents=True)
    (srv / "AddTwoInts.srv").write_text("int64 a\nint64 b\n---\nint64 sum\n")
    return dict(os.environ, SHMBUS_MSG_PATH=str(tmp_path), PYTHONUNBUFFERED="1")


def start(script: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, os.path.join(HERE, script), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def stop(p: subprocess.Popen) -> str:
    """SIGTERM, as systemd stops a service: the script must end by itself."""
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    return out


def endpoints(channel: str) -> tuple[int, int]:
    """Live publishers and subscribers."""
    for c in shmbus.channels():
        if c.get("name") == channel:
            return c.get("publishers", 0), c.get("subscribers", 0)
    return 0, 0


def test_publisher_and_two_subscribers_as_the_tutorials_write_them(ros_env):
    lam = start("subscriber_lambda.py", ros_env)
    old = start("subscriber_old_school.py", ros_env)
    wait_until(lambda: endpoints("/topic")[1] == 2, 30, "two subscribers on /topic")
    pub = start("publisher_member_function.py", ros_env)
    wait_until(lambda: _published("/topic") >= 20, 60, "20 messages published")
    out_pub = stop(pub)
    time.sleep(0.3)  # the subscribers drain what is in the ring
    out_lam, out_old = stop(lam), stop(old)
    sent = re.findall(r'Publishing: "(Hello World: \d+)"', out_pub)
    assert len(sent) >= 20 and sent == [f"Hello World: {i}" for i in range(len(sent))]
    for out in (out_lam, out_old):
        heard = re.findall(r'I heard: "(Hello World: \d+)"', out)
        assert heard == sent, out  # every message, in order, field-exact
    # SIGTERM ended them cleanly: their endpoints left the channel.
    assert endpoints("/topic") == (0, 0)
    info = json.loads(shmtool("info", "/topic", "--json").stdout)
    dead = [e for e in info["publishers"] + info["subscribers"] if not e.get("alive", True)]
    assert dead == [], dead  # none left behind as a killed process leaves its own


def _published(channel: str) -> int:
    for c in shmbus.channels():
        if c.get("name") == channel:
            return c.get("messages", 0)
    return 0


def test_a_service_and_an_async_client(ros_env):
    server = start("service_member_function.py", ros_env)
    try:
        for a, b in ((2, 3), (-7, 1000000000000), (0, 0)):
            client = subprocess.run([sys.executable, os.path.join(HERE, "client_member_function.py"), str(a), str(b)],
                                    env=ros_env, capture_output=True, text=True, timeout=60)
            assert client.returncode == 0, client.stdout + client.stderr
            assert f"Result of add_two_ints: for {a} + {b} = {a + b}" in client.stderr
    finally:
        out = stop(server)
    assert out.count("Incoming request") == 3, out


def test_a_point_cloud_publisher_at_30_hz(ros_env):
    sub = shmbus.Subscriber("/pcd", wait_for_channel=True)
    pcd = start("pcd_publisher.py", ros_env)
    try:
        clouds = []
        deadline = time.monotonic() + 60
        while len(clouds) < 30 and time.monotonic() < deadline:
            m = sub.read(timeout=1.0)
            if m is not None:
                clouds.append(m)
    finally:
        stop(pcd)
    assert len(clouds) == 30
    expected = np.random.default_rng(7).random((10000, 3)).astype(np.float32)
    for m in clouds:
        points = point_cloud2.read_points(m)
        assert m.header.frame_id == "map" and m.width == 10000 and m.point_step == 12
        assert [f.name for f in m.fields] == ["x", "y", "z"] and {f.datatype for f in m.fields} == {7}
        x = points["x"]
        assert np.all(x == x[0])  # the frame number
        assert np.array_equal(points["y"], expected[:, 1]) and np.array_equal(points["z"], expected[:, 2])
        assert m.header.stamp.sec > 1_600_000_000  # the node's clock: wall time
    frames = [int(point_cloud2.read_points(m)["x"][0]) for m in clouds]
    assert frames == list(range(frames[0], frames[0] + 30))  # none lost
    # The rate the stamps say (not a nominal one): the timer's 30 Hz, which a
    # busy machine may stretch but a message that takes 100 ms to build would
    # cut to 10 Hz.
    stamps = [m.info.publish_time_ns for m in clouds]
    assert (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9) > 15


def test_sigterm_ends_a_plain_node_spin_its_finally_runs_and_its_endpoints_leave():
    code = ("import shmbus\n"
            "node = shmbus.Node('terminated')\n"
            "node.subscribe('/py/term', 'std_msgs/String', lambda m: None)\n"
            "pub = node.publisher('/py/term', 'std_msgs/String')\n"
            "print('ready', flush=True)\n"
            "try:\n"
            "    node.spin()\n"
            "finally:\n"
            "    print('finally ran', flush=True)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and "finally ran" in out, out + err
    info = json.loads(shmtool("info", "/py/term", "--json").stdout)
    assert info["publishers"] + info["subscribers"] == [] or all(
        e.get("alive", True) for e in info["publishers"] + info["subscribers"]), info


def test_a_node_with_a_parameter_and_rclpys_logger_conditions(ros_env):
    p = start("param_member_function.py", ros_env)
    time.sleep(1.5)
    out = stop(p)
    assert out.count("Hello world!") >= 3, out
    assert out.count("said once") == 1, out


def test_rclpys_graph_calls_rate_and_a_call_async_done_callback(ros_env):
    import shmbus.rclpy as rclpy
    from shmbus.rclpy.node import Node
    from shmbus.ros.std_msgs.msg import String

    with rclpy.init():
        node = Node("graph", namespace="robot")
        node.create_publisher(String, "status", 10)
        node.create_subscription(String, "status", lambda msg: None, 10)
        assert (node.count_publishers("status"), node.count_subscribers("status")) == (1, 1)
        assert ("/robot/status", ["std_msgs/msg/String"]) in node.get_topic_names_and_types()
        rate = node.create_rate(50)
        start = time.monotonic()
        for _ in range(5):
            rate.sleep()
        assert time.monotonic() - start >= 0.08  # five periods of 20 ms, at least the last four waited
        srv = shmbus.service_type("example_interfaces/srv/AddTwoInts", [os.path.dirname(os.path.dirname(
            ros_env["SHMBUS_MSG_PATH"] + "/example_interfaces/srv"))])
        node.create_service(srv, "add", lambda req, rsp: setattr(rsp, "sum", req.a + req.b) or rsp)
        client = node.create_client(srv, "add")
        assert client.wait_for_service(timeout_sec=5.0)
        done = []
        future = client.call_async(srv.Request(a=20, b=22))
        future.add_done_callback(lambda f: done.append(f.result().sum))
        rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
        assert future.done() and future.result().sum == 42 and done == [42]
        node.destroy_node()
    assert not rclpy.ok()


def test_rclpys_keywords_that_mean_nothing_here_are_said_once(capfd):
    node = shmbus.Node("py_keywords")
    node.create_subscription("std_msgs/String", "/py/kw", lambda m: None, 10, callback_group=object())
    node.create_subscription("std_msgs/String", "/py/kw2", lambda m: None, 10, callback_group=object())
    node.create_timer(1.0, lambda: None, callback_group=None, autostart=True)
    err = capfd.readouterr().err
    assert err.count("callback_group=") == 1 and "one at a time" in err, err
    assert err.count("autostart=") == 1, err
    from shmbus.rclpy.qos import qos_profile_sensor_data
    node.create_subscription("std_msgs/String", "/py/kw3", lambda m: None, qos_profile_sensor_data)
    node.create_subscription("std_msgs/String", "/py/kw4", lambda m: None, qos_profile_sensor_data)
    assert capfd.readouterr().err.count("reliability=BEST_EFFORT is accepted") == 1
    with pytest.raises(TypeError, match="callbak"):
        node.create_timer(1.0, lambda: None, callbak=None)
    node.close()
