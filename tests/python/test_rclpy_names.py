"""rclpy's names on shmbus.Node: a script written as ROS 2's tutorials
write one (a publisher and a timer, a subscription with a depth, a
service and a client, get_logger) runs with only its imports changed."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

import shmbus
from shmbus import Node
from conftest import ADDER_SRV, SHMTOOL

# What would be `from std_msgs.msg import String` and
# `from example_srvs.srv import AddTwoInts` in rclpy.
String = shmbus.message_type("std_msgs/msg/String")
AddTwoInts = shmbus.service_type("example_srvs/srv/AddTwoInts", msg_path=[ADDER_SRV])


class MinimalPublisher(Node):
    def __init__(self):
        super().__init__("minimal_publisher")
        self.publisher_ = self.create_publisher(String, "topic", 10)
        timer_period = 0.01  # seconds
        self.timer = self.create_timer(timer_period, self.timer_callback)
        self.i = 0

    def timer_callback(self):
        msg = String(data="Hello World: %d" % self.i)
        self.publisher_.publish(msg)
        self.get_logger().info('Publishing: "%s"' % msg.data)
        self.i += 1


class MinimalSubscriber(Node):
    def __init__(self):
        super().__init__("minimal_subscriber")
        self.subscription = self.create_subscription(String, "topic", self.listener_callback, 10)
        self.subscription  # prevent unused variable warning
        self.heard = []

    def listener_callback(self, msg):
        self.get_logger().info('I heard: "%s"' % msg.data)
        self.heard.append(msg.data)


class MinimalService(Node):
    def __init__(self):
        super().__init__("minimal_service")
        self.srv = self.create_service(AddTwoInts, "add_two_ints", self.add_two_ints_callback)

    def add_two_ints_callback(self, request, response):
        response.sum = request.a + request.b
        self.get_logger().info("Incoming request\na: %d b: %d" % (request.a, request.b))
        return response


class MinimalClient(Node):
    def __init__(self):
        super().__init__("minimal_client")
        self.cli = self.create_client(AddTwoInts, "add_two_ints")
        while not self.cli.wait_for_service(timeout_sec=1.0):
            self.get_logger().info("service not available, waiting again...")
        self.req = AddTwoInts.Request()

    def send_request(self, a, b):
        self.req.a = a
        self.req.b = b
        return self.cli.call(self.req)


def test_a_publisher_and_a_subscription_with_depth(capfd):
    minimal_subscriber = MinimalSubscriber()  # first: it hears message 0
    minimal_publisher = MinimalPublisher()
    deadline = time.monotonic() + 60
    while len(minimal_subscriber.heard) < 20 and time.monotonic() < deadline:
        minimal_publisher.spin_once(0.05)
        minimal_subscriber.spin_once(0.05)
    heard = minimal_subscriber.heard
    assert len(heard) >= 20
    # Every message the timer published up to the last one heard, in order.
    assert heard == ["Hello World: %d" % i for i in range(len(heard))]
    assert minimal_subscriber.subscription.type == String and minimal_subscriber.subscription.channel == "/topic"
    assert minimal_publisher.publisher_.channel == "/topic"
    minimal_publisher.destroy_node()
    minimal_subscriber.destroy_node()
    err = capfd.readouterr().err
    # The node's logger writes where the C++ node writes its lines.
    assert 'shmbus: node "minimal_publisher": [INFO] Publishing: "Hello World: 0"\n' in err
    assert 'shmbus: node "minimal_subscriber": [INFO] I heard: "Hello World: 19"\n' in err


def test_a_service_and_a_client(capfd):
    minimal_service = MinimalService()
    spinner = threading.Thread(target=minimal_service.spin)
    spinner.start()
    try:
        minimal_client = MinimalClient()
        response = minimal_client.send_request(2**40, 3)
        assert response.sum == 2**40 + 3
        assert minimal_client.cli.service_is_ready() and minimal_client.cli.name == "/add_two_ints"
        assert minimal_service.srv.served == 1
    finally:
        minimal_service.stop()
        spinner.join()
    minimal_service.destroy_node()
    assert 'shmbus: node "minimal_service": [INFO] Incoming request\na: 1099511627776 b: 3\n' in capfd.readouterr().err


def test_depth_and_names_as_rclpy_takes_them():
    class QoSProfile:  # rclpy.qos.QoSProfile's one field used here
        depth = 1000

    node = Node("depths")
    pub = node.create_publisher(String, "~/deep", QoSProfile())
    assert pub.channel == "/depths/deep"
    info = json.loads(subprocess.run([SHMTOOL, "info", "/depths/deep", "--json"], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)
    assert info["capacity"] == 1024  # at least the depth, a power of two
    for bad in (0, -1, "10", None):
        with pytest.raises(shmbus.InvalidArgumentError, match="qos_profile"):
            node.create_subscription(String, "/x", print, bad)
    assert node.get_name() == "depths" and repr(node) == "<shmbus.Node depths>"
    node.destroy_node()
    assert repr(node) == "<shmbus.Node depths (closed)>"


def test_reprs_say_what_a_handle_is():
    node = Node("reprs")
    pub = node.create_publisher(String, "/py/reprs", 10)
    pub.publish({"data": "x"})
    sub = shmbus.Subscriber("/py/reprs")
    timer = node.create_timer(1.0, lambda: None)
    s = node.create_subscription(None, "/py/reprs", print)
    assert repr(pub) == "<shmbus.Publisher /py/reprs std_msgs/String published=1 dropped=0 max_message_size=4096>"
    assert repr(sub) == "<shmbus.Subscriber /py/reprs (type from the channel) received=0 lost=0>"
    assert repr(s) == "<shmbus.Subscription /py/reprs (type from the channel) calls=0 lost=0>"
    assert s.type == String  # a property, as Subscriber.type
    assert repr(timer) == "<shmbus.Timer period=1s runs=0 missed=0>"
    node.close()
    assert repr(pub) == "<shmbus.Publisher (closed)>" and repr(timer) == "<shmbus.Timer (closed)>"
    assert repr(s) == "<shmbus.Subscription (closed)>"
    sub.close()
    assert repr(sub) == "<shmbus.Subscriber (closed)>"


SPIN_IN_A_DAEMON_THREAD = """
import threading, time
import shmbus
node = shmbus.Node("daemon_spin")
node.create_timer(0.001, lambda: None)
threading.Thread(target=node.spin, daemon=True).start()
time.sleep(0.05)
raise SystemExit("the script ends while its node spins")
"""


def test_a_script_may_end_while_a_daemon_thread_spins():
    # The node is stopped as the interpreter exits, before it finalizes:
    # the spin returns instead of aborting the process from inside C++.
    python_dir = os.path.dirname(os.path.dirname(shmbus.__file__))
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", SPIN_IN_A_DAEMON_THREAD], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PYTHONPATH=python_dir))
        assert (r.returncode, r.stderr) == (1, "the script ends while its node spins\n")
