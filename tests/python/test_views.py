"""A 640x480x3 image published by a C++ process, read in Python as a NumPy
view of the ring (no copy), and the overwrite check when the publisher laps
a view held too long."""

import os
import subprocess

import numpy as np
import pytest

import shmbus
from conftest import wait_until

PUBLISHER = os.environ.get("SHMBUS_TEST_IMAGE_PUBLISHER", "image_publisher")


def expected(seq: int) -> np.ndarray:
    y, x, c = np.meshgrid(np.arange(480), np.arange(640), np.arange(3), indexing="ij")
    return ((y + 2 * x + 3 * c + seq) % 256).astype(np.uint8)


def channel_mapping(channel_file_part: str) -> list[tuple[int, int]]:
    ranges = []
    with open("/proc/self/maps") as f:
        for line in f:
            if channel_file_part in line:
                lo, hi = line.split()[0].split("-")
                ranges.append((int(lo, 16), int(hi, 16)))
    return ranges


class ImagePublisher:
    def __init__(self, channel: str):
        self.p = subprocess.Popen([PUBLISHER, channel], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def publish(self, n: int) -> int:
        self.p.stdin.write(f"{n}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line.startswith("published "), line
        return int(line.split()[1])

    def close(self) -> None:
        self.p.stdin.close()
        assert self.p.wait(timeout=30) == 0


def test_an_image_from_cpp_is_a_numpy_view_inside_the_channels_mapping_and_an_overwrite_is_caught():
    sub = shmbus.Subscriber("/py/image", "shmbus_msgs/Image")
    pub = ImagePublisher("/py/image")
    try:
        assert pub.publish(1) == 1
        view = sub.read(view=True, timeout=10)
        assert view is not None
        with view as msg:
            a = shmbus.image_array(msg)
            assert a.shape == (480, 640, 3) and a.dtype == np.uint8
            assert not a.flags.writeable and not a.flags.owndata
            # The pixels lie in the channel's shared memory: no copy was made.
            mapped = channel_mapping(f"shmbus.{os.environ['SHMBUS_DOMAIN']}.c.py.image")
            assert mapped, "the channel is not mapped"
            address = a.__array_interface__["data"][0]
            assert any(lo <= address and address + a.nbytes <= hi for lo, hi in mapped), (hex(address), mapped)
            assert address == view.address + msg.type.size
            assert msg.header.seq == 0
            assert np.array_equal(a, expected(0))
            assert view.valid()
        # Held too long: the publisher laps the 4-slot ring.
        view = sub.read(view=True, timeout=10)
        assert view is None  # nothing new yet
        pub.publish(1)
        view = sub.read(view=True, timeout=10)
        assert view is not None and view.message.header.seq == 1
        with pytest.raises(shmbus.OverwrittenError, match="overwritten"):
            with view as msg:
                assert np.array_equal(shmbus.image_array(msg), expected(1))
                pub.publish(4)
                assert not view.valid()
        # A copy taken after the lap is intact: frame 2, the oldest the
        # 4-slot ring still holds of frames 0-5.
        copy = sub.read(timeout=10)
        assert copy is not None and copy.header.seq == 2 and copy.info.sequence == 2
        assert np.array_equal(shmbus.image_array(copy), expected(2))
    finally:
        pub.close()


def test_an_in_place_node_callback_gets_the_view_and_hears_of_an_overwrite():
    node = shmbus.Node("py_viewer")
    seen = []
    overwritten = []
    pub = ImagePublisher("/py/image_node")

    def on_image(msg):
        a = shmbus.image_array(msg)
        seen.append((msg.header.seq, not a.flags.writeable, int(a[10, 20, 1])))
        if len(seen) == 1:
            pub.publish(5)  # laps the ring while this callback reads
        node.stop()

    sub = node.subscribe("/py/image_node", "shmbus_msgs/Image", on_image, in_place=True,
                         wait_for_channel=True, on_overwritten=lambda info: overwritten.append(info.sequence))
    try:
        pub.publish(1)
        node.spin()
        assert seen[0][:2] == (0, True)
        assert seen[0][2] == 10 + 2 * 20 + 3  # read before the lap
        assert overwritten == [0] and sub.overwritten == 1
    finally:
        pub.close()
