"""How big a channel is, said where it matters: a channel created with
other sizes than a process asks for is named in one line on stderr (both
values, the creator and the fix), a message that does not fit names where
the channel's size came from, and a Python publisher sizes the channel it
creates."""

import json
import os
import subprocess
import sys

import pytest

import shmbus
from conftest import SHMTOOL

PYTHON_DIR = os.path.dirname(os.path.dirname(shmbus.__file__))

OPEN_AND_PUBLISH = """
import shmbus
pub = shmbus.Publisher("/sizes/camera", "std_msgs/String")
print(pub.max_message_size)
pub.publish({"data": "x" * 5000})
print(pub.max_message_size)
"""


SUBSCRIBE_AND_WAIT = """
import sys
import shmbus
sub = shmbus.Subscriber("/sizes/camera", "std_msgs/String")
print("subscribed", flush=True)
sys.stdin.read()
"""


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_channel_made_before_with_other_sizes_says_so(tmp_path):
    domain = f"sizes_{os.getpid()}"
    config = tmp_path / "big.toml"
    config.write_text('[[channel]]\nname = "/sizes/*"\nmax_message_size = 1048576\n')
    plain = dict(os.environ, SHMBUS_DOMAIN=domain, SHMBUS_CONFIG="", PYTHONPATH=PYTHON_DIR)
    big = dict(plain, SHMBUS_CONFIG=str(config))
    try:
        # A subscriber started first, without the configuration, made it.
        creator = subprocess.Popen([sys.executable, "-c", SUBSCRIBE_AND_WAIT], env=plain, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert creator.stdout.readline() == "subscribed\n", creator.stderr.read()
        program = os.path.basename(sys.executable)
        r = subprocess.run([SHMTOOL, "info", "/sizes/camera", "--json"], env=plain, capture_output=True, text=True,
                           check=True, timeout=60)
        info = json.loads(r.stdout)
        assert info["creator"] == {"pid": creator.pid, "program": program} and info["sizes_from"] == ""

        r = _python(OPEN_AND_PUBLISH, big)
        assert r.returncode == 0, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith(
            f"shmbus: channel /sizes/camera exists with max_message_size 4096 (from the built-in defaults of {program} "
            f"(pid {creator.pid}), which created the channel); this process asks for max_message_size 1048576 "
            f"({config}:1:1): the channel's values hold."), lines[0]
        assert "shmtool clean" in lines[0]
        # The message is published all the same: the channel grows to hold
        # it (5008 bytes: slots of 8192).
        assert r.stdout.splitlines() == ["4096", "8192"], r.stdout

        # The fix as said: the channel's processes stopped, `shmtool clean`.
        creator.kill()
        creator.wait()
        subprocess.run([SHMTOOL, "clean"], env=plain, capture_output=True, check=True, timeout=60)
        r = _python(OPEN_AND_PUBLISH, big)
        assert (r.returncode, r.stdout, r.stderr) == (0, "1048576\n1048576\n", "")
    finally:
        if creator.poll() is None:
            creator.kill()
            creator.wait()
        subprocess.run([SHMTOOL, "clean"], env=plain, capture_output=True, timeout=60)


def test_a_python_publisher_sizes_the_channel_it_creates():
    pub = shmbus.Publisher("/sizes/own", "sensor_msgs/Image", max_message_size=1 << 20, capacity=8)
    assert pub.max_message_size == 1 << 20
    r = subprocess.run([SHMTOOL, "info", "/sizes/own", "--json"], capture_output=True, text=True, check=True,
                       timeout=60)
    info = json.loads(r.stdout)
    assert (info["capacity"], info["max_message_size"]) == (8, 1 << 20)
    assert info["creator"] == {"pid": os.getpid(), "program": os.path.basename(sys.executable)}
    assert info["sizes_from"] == "the publisher's options"
    deep = shmbus.Publisher("/sizes/deep", "std_msgs/String", depth=100)
    info = json.loads(subprocess.run([SHMTOOL, "info", "/sizes/deep", "--json"], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)
    assert info["capacity"] == 128
    deep.close()


@pytest.mark.parametrize("options, what", [
    ({"capacity": 3}, "capacity 3 is not a power of two"),
    ({"capacity": 1 << 21}, "is not a power of two up to 1048576"),
    ({"max_message_size": (1 << 30) + 1}, "max_message_size 1073741825 is over 1073741824 bytes"),
    ({"max_message_size": 0}, "max_message_size=0: give a positive number"),
    ({"max_message_size": -1}, "max_message_size=-1"),
    ({"capacity": True}, "capacity=True"),
    ({"depth": "10"}, "depth='10'"),
])
def test_bad_sizes_are_refused_naming_them(options, what):
    with pytest.raises(shmbus.InvalidArgumentError, match=what.replace("(", r"\(")):
        shmbus.Publisher("/sizes/bad", "std_msgs/String", **options)


GROWING_PUBLISHER = """
import time
import shmbus
pub = shmbus.Publisher("/sizes/growing", "std_msgs/String")
print(pub.max_message_size, flush=True)
for n in (10, 5000, 100000, 2000000):
    for k in range(3):
        pub.publish({"data": chr(97 + k) * n})
        time.sleep(0.002)
print(pub.max_message_size, flush=True)
"""


def test_a_python_subscriber_follows_a_channel_that_grows():
    # The subscriber first, as in ROS: it makes the channel at 4096 bytes,
    # and a publisher process grows it three times.
    sub = shmbus.Subscriber("/sizes/growing", "std_msgs/String")
    r = _python(GROWING_PUBLISHER, dict(os.environ, PYTHONPATH=PYTHON_DIR))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["4096", str(1 << 21)], r.stdout
    for n in (10, 5000, 100000, 2000000):
        for k in range(3):
            msg = sub.read(timeout=5.0)
            assert msg is not None, (n, k)
            assert msg.info.lost_before == 0
            assert len(msg.data) == n and msg.data[:1] == chr(97 + k) and msg.data[-1:] == chr(97 + k)
    assert sub.read() is None and sub.lost == 0
