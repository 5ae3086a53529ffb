"""Typed message modules: shmbus.msg (the shipped types) and
shmbus.msggen (a user's), read and made at run time, and checked by a
type checker (Debian's mypy): a field that exists passes, a misspelled one
or a value of the wrong type is an error naming it."""

import os
import subprocess
import sys

import numpy as np

import shmbus
import shmbus.msggen
from conftest import SOURCE_DIR

TEST_MSGS = os.path.join(SOURCE_DIR, "tests", "msg")
PYTHON_DIR = os.path.dirname(os.path.dirname(shmbus.__file__))


def test_shipped_modules_are_the_shipped_types():
    from shmbus.msg import geometry_msgs, sensor_msgs, std_msgs
    assert std_msgs.Header == shmbus.message_type("std_msgs/Header")
    assert sensor_msgs.PointCloud2 == shmbus.message_type("sensor_msgs/msg/PointCloud2")
    h = std_msgs.Header(frame_id="map", stamp={"sec": 3, "nanosec": 4})
    assert (h.frame_id, h.stamp.sec, h.stamp.nanosec) == ("map", 3, 4)
    assert sensor_msgs.PointField().FLOAT32 == 7
    pub = shmbus.Publisher("/py/typed/pose", geometry_msgs.PoseStamped)
    sub = shmbus.Subscriber("/py/typed/pose", geometry_msgs.PoseStamped)
    assert pub.publish(pub.new(header={"frame_id": "odom"}, pose={"orientation": {"w": 1.0}}))
    msg = sub.read(timeout=5.0)
    assert msg.header.frame_id == "odom" and msg.pose.orientation.w == 1.0


def test_msggen_writes_a_package_that_needs_no_msg_path(tmp_path):
    out = tmp_path / "my_types"
    written = shmbus.msggen.generate(["test_msgs/Ros2Syntax", "test_msgs/WithTail"], str(out), [TEST_MSGS])
    assert sorted(os.path.basename(p) for p in written) == ["__init__.py", "test_msgs.py", "test_msgs.pyi"]
    stub = (out / "test_msgs.pyi").read_text()
    assert "class Ros2Syntax(_TypedMessage):" in stub and "    origin: _Point" in stub
    assert "    name: str" in stub and "    triple: _NDArray[_Any]" in stub and "B_MAX: _ClassVar[int]" in stub
    assert "GREETING: _ClassVar[str]" in stub and "HALF: _ClassVar[float]" in stub
    # Run where no msg_path names the definitions: the schemas are inside.
    code = ("import my_types.test_msgs as t, shmbus\n"
            "m = t.Ros2Syntax(name='robot', triple=[1, -2, 3], w=2.5)\n"
            "print(m.name, m.triple.tolist(), m.w, t.Ros2Syntax.hash == shmbus.message_type('test_msgs/Ros2Syntax', "
            f"[{TEST_MSGS!r}]).hash)\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{PYTHON_DIR}", SHMBUS_MSG_PATH="")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["robot", "[1,", "-2,", "3]", "2.5", "True"]


def test_msggen_names_a_type_it_cannot_find(tmp_path):
    r = subprocess.run([sys.executable, "-m", "shmbus.msggen", "--out", str(tmp_path), "nowhere_msgs/Nothing"],
                       env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr  # as shmtool's --type: a usage error
    assert r.stderr.startswith("shmbus.msggen: ") and "nowhere_msgs/Nothing" in r.stderr
    assert r.stderr.count("\n") == 1


GOOD = '''
import shmbus
from shmbus.msg import sensor_msgs, std_msgs
from my_types import test_msgs

sub = shmbus.Subscriber("/imu", sensor_msgs.Imu)
msg = sub.read(timeout=1.0)
if msg is not None:
    frame: str = msg.header.frame_id
    sec: int = msg.header.stamp.sec
    w: float = msg.orientation.w
    print(frame, sec, w, msg.info)
pub = shmbus.Publisher("/chatter", std_msgs.String)
text: str = pub.new(data="hi").data
node = shmbus.Node("n")
node.create_subscription(sensor_msgs.Imu, "/imu", lambda m: print(m.header.frame_id), 10)
x: float = test_msgs.Ros2Syntax().origin.x


def on_string(msg: std_msgs.String) -> None:  # a public message class as an annotation
    print(msg.data.upper())


node.create_subscription(std_msgs.String, "/chatter", on_string, 10)
made = std_msgs.String()
made.data = "assigned after it is made"
'''

BAD = '''
import shmbus
from shmbus.msg import sensor_msgs
from my_types import test_msgs

msg = shmbus.Subscriber("/imu", sensor_msgs.Imu).take()
if msg is not None:
    print(msg.header.frame_idd)
    n: str = msg.header.stamp.sec
print(test_msgs.Ros2Syntax().orgin)
shmbus.Node("n").create_subscription(sensor_msgs.Imu, "/imu", lambda m: print(m.header.frame_idd), 10)
'''


def _mypy(tmp_path, name: str, code: str) -> subprocess.CompletedProcess:
    (tmp_path / name).write_text(code)
    # The package's own implementation (_messages.py) is not under test.
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-shmbus._messages]\nignore_errors = True\n")
    env = dict(os.environ, MYPYPATH=f"{PYTHON_DIR}:{tmp_path}")
    return subprocess.run(["/usr/bin/python3", "-m", "mypy", "--strict", "--config-file", "mypy.ini",
                           "--no-incremental", "--cache-dir", os.devnull, name],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_type_checker_knows_each_field(tmp_path):
    shmbus.msggen.generate(["test_msgs/Ros2Syntax"], str(tmp_path / "my_types"), [TEST_MSGS])
    good = _mypy(tmp_path, "good.py", GOOD)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _mypy(tmp_path, "bad.py", BAD)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 4, bad.stdout
    assert 'bad.py:8: error: "Header" has no attribute "frame_idd"' in errors[0]
    assert "bad.py:9: error: Incompatible types in assignment" in errors[1]
    assert 'bad.py:10: error: "Ros2Syntax" has no attribute "orgin"' in errors[2]
    assert 'bad.py:11: error: "Header" has no attribute "frame_idd"' in errors[3]  # inside a lambda
