"""The Python package's figures, against Python's own transports in the
same run:

  ping-pong: a 64-byte round trip between two processes, callback to
  publish (a shmbus Node on each side), against a multiprocessing Pipe and
  a Unix socket pair (each side a blocking recv then send);
  image: a 6 MiB rgb8 image delivered to a Python Node in place (publish
  stamp to callback), against a C++ Node's in-place delivery of the same
  image in the same run (shmbus_bench_node's in-place row, when given);
  ROS 2 messages: sensor_msgs/Image (640x480 rgb8, 6 MiB) and PointCloud2
  (10,000 points) made from NumPy and published, against the C++ publish
  of the same bytes made beforehand; an image read in place.

  PYTHONPATH=build/python python3 tests/bench/bench_python.py [--count N] [--frames N] [--messages N] [--repeat R]
      [--cpp-image-node build/tests/bench/shmbus-bench-image-node]
"""

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

import shmbus

SIZE = 64


def p50_us(samples):
    return statistics.median(samples) / 1000.0


def pong_shmbus(count):
    node = shmbus.Node("pong")
    out = node.publisher("/bench/pong", shmbus.MessageType.bytes())
    seen = [0]

    def on_ping(msg):
        out.publish(msg.raw)
        seen[0] += 1
        if seen[0] == count:
            node.stop()

    node.subscribe("/bench/ping", shmbus.MessageType.bytes(), on_ping)
    node.spin()


def ping_shmbus(count):
    node = shmbus.Node("ping")
    out = node.publisher("/bench/ping", shmbus.MessageType.bytes())
    ponger = mp.get_context("spawn").Process(target=pong_shmbus, args=(count,))
    ponger.start()
    payload = bytes(SIZE)
    rtts = []
    sent = [0]

    def on_pong(msg):
        rtts.append(time.perf_counter_ns() - sent[0])
        if len(rtts) == count:
            node.stop()
            return
        sent[0] = time.perf_counter_ns()
        out.publish(payload)

    node.subscribe("/bench/pong", shmbus.MessageType.bytes(), on_pong)
    deadline = time.monotonic() + 20
    while not any(c.get("name") == "/bench/ping" and c.get("subscribers") for c in shmbus.channels()):
        if time.monotonic() > deadline:
            raise SystemExit("bench_python: the ponger did not subscribe within 20 s")
        time.sleep(0.01)
    sent[0] = time.perf_counter_ns()
    out.publish(payload)
    node.spin()
    ponger.join(30)
    return rtts[100:]


def pong_pipe(conn, count):
    for _ in range(count):
        conn.send_bytes(conn.recv_bytes())


def pong_socket(s, count):
    for _ in range(count):
        s.sendall(recv_exactly(s))


def recv_exactly(s):
    data = b""
    while len(data) < SIZE:
        data += s.recv(SIZE - len(data))
    return data


def round_trips(pong, end, send, recv, count):
    """Round trips of SIZE bytes to a forked process running pong(other
    end, count): each a blocking send, then a blocking receive."""
    p = mp.get_context("fork").Process(target=pong, args=(end, count))
    p.start()
    payload = bytes(SIZE)
    rtts = []
    for _ in range(count):
        t = time.perf_counter_ns()
        send(payload)
        recv()
        rtts.append(time.perf_counter_ns() - t)
    p.join()
    return rtts[100:]


def ping_pipe(count):
    a, b = mp.Pipe()
    return round_trips(pong_pipe, b, a.send_bytes, a.recv_bytes, count)


def ping_socket(count):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return round_trips(pong_socket, b, a.sendall, lambda: recv_exactly(a), count)


def image_publisher(frames, channel):
    pub = shmbus.Publisher(channel, "shmbus_msgs/Image")
    h, w = 1024, 2048  # 6 MiB of rgb8
    while not any(c.get("name") == channel and c.get("subscribers") for c in shmbus.channels()):
        time.sleep(0.01)
    for i in range(frames):
        with pub.loan(h * w * 3) as m:
            m.height, m.width, m.step, m.encoding = h, w, w * 3, "rgb8"
            m.header.seq = i
            m.raw[-1] = i % 256  # touch the last page
        time.sleep(0.01)


def image_delivery(frames, cpp_program):
    """p50 of publish -> callback for 6 MiB images, in one run: a Python
    Node, then the C++ Node (cpp_program), both in place, each alone with
    the same publisher (three processes on two cores would make the second
    subscriber wait for a CPU)."""
    node = shmbus.Node("viewer")
    delays = []

    def on_image(msg):
        a = shmbus.image_array(msg)
        _ = a[-1, -1, -1]  # the pixels' last byte, as the C++ side reads
        delays.append(time.monotonic_ns() - msg.info.publish_time_ns)
        if len(delays) == frames:
            node.stop()

    node.subscribe("/bench/image/py", "shmbus_msgs/Image", on_image, in_place=True)
    p = mp.get_context("spawn").Process(target=image_publisher, args=(frames, "/bench/image/py"))
    p.start()
    node.spin()
    p.join(30)
    cpp_p50 = None
    if cpp_program:
        cpp = subprocess.Popen([cpp_program, "/bench/image/cpp", str(frames)], stdout=subprocess.PIPE, text=True)
        assert cpp.stdout.readline().strip() == "ready"
        p = mp.get_context("spawn").Process(target=image_publisher, args=(frames, "/bench/image/cpp"))
        p.start()
        out = cpp.communicate(timeout=60)[0]
        p.join(30)
        cpp_p50 = int(out.split()[-1]) / 1000.0
    return p50_us(delays[10:]), cpp_p50


def ros_messages(messages):
    """Medians (ms) of ROS 2's messages made from NumPy and published, each
    against the C++ publish of the same bytes made beforehand (the copy
    into the ring alone), in one run: sensor_msgs/Image 640x480 rgb8 and
    6 MiB, PointCloud2 of 10,000 points from a structured array; and an
    image read in place (image_array over the ring)."""
    from shmbus import point_cloud2
    out = {}
    for name, shape in (("image 640x480", (480, 640, 3)), ("image 6 MiB", (1024, 2048, 3))):
        frame = np.random.default_rng(1).integers(0, 255, shape, np.uint8)
        channel = f"/bench/ros/{shape[0]}"
        pub = shmbus.Publisher(channel, "sensor_msgs/Image", max_message_size=frame.size + 4096, capacity=4)
        made = bytes(shmbus.image_message(frame, "rgb8", type="sensor_msgs/Image", header={"frame_id": "cam"}))
        py = _steady(lambda: pub.publish(shmbus.image_message(frame, "rgb8", type="sensor_msgs/Image",
                                                                header={"frame_id": "cam"})), messages)
        cpp = _steady(lambda: pub.publish(made), messages)
        out[name] = (py, cpp)
    dtype = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])
    points = np.zeros(10000, dtype)
    fields = [{"name": n, "offset": 4 * i, "datatype": 7, "count": 1} for i, n in enumerate(dtype.names)]
    pub = shmbus.Publisher("/bench/ros/cloud", "sensor_msgs/PointCloud2", max_message_size=1 << 20, capacity=4)
    made = bytes(point_cloud2.create_cloud({"frame_id": "lidar"}, fields, points))
    py = _steady(lambda: pub.publish(point_cloud2.create_cloud({"frame_id": "lidar"}, fields, points)), messages)
    cpp = _steady(lambda: pub.publish(made), messages)
    out["cloud 10k points"] = (py, cpp)
    sub = shmbus.Subscriber("/bench/ros/480", from_first=False)
    pub = shmbus.Publisher("/bench/ros/480", "sensor_msgs/Image")
    reads = []
    for _ in range(messages):
        pub.publish(made_image := bytes(shmbus.image_message(np.zeros((480, 640, 3), np.uint8), "rgb8",
                                                             type="sensor_msgs/Image")))
        view = sub.read(view=True, timeout=1.0)
        t = time.perf_counter_ns()
        with view as img:
            shmbus.image_array(img).shape
        reads.append((time.perf_counter_ns() - t) / 1e6)
    del made_image
    out["image read in place"] = (statistics.median(reads), 0.0)
    return out


def _steady(f, messages):
    """Median ms of `messages` calls of f, after 20 unmeasured ones (the
    channel's slots and the encoder's buffer touched once)."""
    for _ in range(20):
        f()
    return statistics.median(_timed(f) for _ in range(messages))


def _timed(f):
    t = time.perf_counter_ns()
    f()
    return (time.perf_counter_ns() - t) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20000, help="round trips per transport and repeat")
    ap.add_argument("--frames", type=int, default=300, help="images per repeat")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpp-image-node", default="", help="shmbus-bench-image-node, for the C++ Node's image row")
    ap.add_argument("--messages", type=int, default=200, help="ROS 2 messages made per row and repeat")
    args = ap.parse_args()
    # One domain for the run (a process's default context reads it once);
    # the children inherit it.
    domain = f"bench_py_{os.getpid()}"
    cfg = f"/tmp/{domain}.toml"
    with open(cfg, "w") as f:
        f.write('[[channel]]\nname = "/bench/image/*"\ncapacity = 4\nmax_message_size = 6291560\n')
    os.environ["SHMBUS_DOMAIN"] = domain
    os.environ["SHMBUS_CONFIG"] = cfg
    try:
        run(args)
    finally:
        os.unlink(cfg)
        for n in os.listdir("/dev/shm"):
            if n.startswith(f"shmbus.{domain}."):
                os.unlink(os.path.join("/dev/shm", n))


def run(args):
    print(f"{'repeat':>6} {'shmbus p50':>11} {'pipe p50':>9} {'socket p50':>11} {'pipe/shmbus':>12} "
          f"{'socket/shmbus':>14} {'image py p50':>13} {'image C++ p50':>14} {'py/C++':>7}")
    for r in range(args.repeat):
        s = p50_us(ping_shmbus(args.count))
        p = p50_us(ping_pipe(args.count))
        u = p50_us(ping_socket(args.count))
        img, cpp = image_delivery(args.frames, args.cpp_image_node)
        cpp_text = f"{cpp:>12.1f}us {img / cpp:>6.2f}x" if cpp else f"{'-':>14} {'-':>7}"
        print(f"{r + 1:>6} {s:>9.1f}us {p:>7.1f}us {u:>9.1f}us {p / s:>11.2f}x {u / s:>13.2f}x {img:>11.1f}us "
              f"{cpp_text}", flush=True)
    print(f"\n{'repeat':>6} {'row':>20} {'python ms':>10} {'C++ copy ms':>12} {'py/C++':>7}")
    for r in range(args.repeat):
        for row, (py, cpp) in ros_messages(args.messages).items():
            both = f"{cpp:>12.3f} {py / cpp:>6.2f}x" if cpp else f"{'-':>12} {'-':>7}"
            print(f"{r + 1:>6} {row:>20} {py:>10.3f} {both}", flush=True)


if __name__ == "__main__":
    main()
