"""Actions from Python (shmbus.rclpy.action): ROS 2's Fibonacci tutorial
server and client in rclpy's form (tests/python/rclpy_tutorials) against
each other and against the C++ tutorial programs (examples/rclcpp), as real
processes; and an ActionClient here: feedback in order, results exact,
cancel mid-goal, three goals at once, a server SIGKILLed mid-goal."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

import shmbus
import shmbus.rclpy as rclpy
from shmbus.rclpy.action import ActionClient
from shmbus.rclpy.node import Node
from conftest import SOURCE_DIR, wait_until

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rclpy_tutorials")
CPP_SERVER = os.environ.get("SHMBUS_EXAMPLE_FIBONACCI_SERVER")
CPP_CLIENT = os.environ.get("SHMBUS_EXAMPLE_FIBONACCI_CLIENT")
# action_tutorials_interfaces/action/Fibonacci, as the C++ examples have it.
MSG_PATH = os.path.join(SOURCE_DIR, "examples", "rclcpp", "action")
os.environ["SHMBUS_MSG_PATH"] = MSG_PATH


def fibonacci(n):
    s = [0, 1]
    while len(s) < n:
        s.append(s[-1] + s[-2])
    return s[:n]


@pytest.fixture()
def env():
    return dict(os.environ, PYTHONUNBUFFERED="1")


def python_server(env, period="0.02"):
    return subprocess.Popen([sys.executable, os.path.join(HERE, "fibonacci_action_server.py"), period], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def cpp_server(env, period_ms="20"):
    return subprocess.Popen([CPP_SERVER, period_ms], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def stop(p):
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    return out


def feedback_lines(out, pattern):
    return [[int(v) for v in re.findall(r"-?\d+", m)] for m in re.findall(pattern, out)]


def test_python_client_and_python_server_as_the_tutorials_write_them(env):
    server = python_server(env)
    try:
        client = subprocess.run([sys.executable, os.path.join(HERE, "fibonacci_action_client.py"), "9"], env=env,
                                capture_output=True, text=True, timeout=60)
    finally:
        out = stop(server)
    log = client.stdout + client.stderr
    assert client.returncode == 0, log
    assert "Goal accepted :)" in log
    assert feedback_lines(log, r"Received feedback: \[([^\]]*)\]") == [fibonacci(n) for n in range(3, 11)], log
    assert feedback_lines(log, r"Result: \[([^\]]*)\]") == [fibonacci(10)], log
    assert "Executing goal..." in out


def test_python_client_and_cpp_server(env):
    server = cpp_server(env)
    try:
        client = subprocess.run([sys.executable, os.path.join(HERE, "fibonacci_action_client.py"), "7"], env=env,
                                capture_output=True, text=True, timeout=60)
    finally:
        stop(server)
    log = client.stdout + client.stderr
    assert client.returncode == 0, log
    assert feedback_lines(log, r"Received feedback: \[([^\]]*)\]") == [fibonacci(n) for n in range(3, 9)], log


def test_cpp_client_and_python_server(env):
    server = python_server(env)
    try:
        client = subprocess.run([CPP_CLIENT, "8"], env=env, capture_output=True, text=True, timeout=60)
    finally:
        stop(server)
    log = client.stdout + client.stderr
    assert client.returncode == 0, log
    seen = feedback_lines(log, r"Next number in sequence received: ([-\d ]*)\n")
    assert seen == [fibonacci(n) for n in range(3, 10)], log
    assert "Result received: " + " ".join(map(str, fibonacci(9))) + " \n" in log, log


class Recorder:
    def __init__(self):
        self.feedback = []

    def __call__(self, message):
        self.feedback.append(list(message.feedback.partial_sequence))


def spin_until(node, done, bound=20):
    deadline = time.monotonic() + bound
    while not done() and time.monotonic() < deadline:
        node.spin_once(0.01)
    return done()


def test_three_goals_at_once_and_a_cancel_mid_goal_from_an_action_client_here(env):
    server = cpp_server(env, "10")
    node = Node("py_action_client")
    try:
        Fibonacci = shmbus.action_type("action_tutorials_interfaces/action/Fibonacci")
        client = ActionClient(node, Fibonacci, "fibonacci")
        assert client.wait_for_server(timeout_sec=20)
        recorders = [Recorder() for _ in range(3)]
        futures = [client.send_goal_async(Fibonacci.Goal(order=o), feedback_callback=r)
                   for o, r in zip((4, 7, 10), recorders)]
        assert spin_until(node, lambda: all(f.done() for f in futures))
        handles = [f.result() for f in futures]
        assert all(h.accepted for h in handles)
        results = [h.get_result_async() for h in handles]
        assert spin_until(node, lambda: all(r.done() for r in results))
        for order, r, rec in zip((4, 7, 10), results, recorders):
            assert r.result().status == 4  # SUCCEEDED
            assert list(r.result().result.sequence) == fibonacci(order + 1)
            assert rec.feedback == [fibonacci(n) for n in range(3, order + 2)]

        long = Recorder()
        f = client.send_goal_async(Fibonacci.Goal(order=40), feedback_callback=long)
        assert spin_until(node, lambda: f.done() and len(long.feedback) >= 3)
        cancel = f.result().cancel_goal_async()
        outcome = f.result().get_result_async()
        assert spin_until(node, lambda: cancel.done() and outcome.done())
        assert cancel.result().return_code == 0 and len(cancel.result().goals_canceling) == 1
        assert outcome.result().status == 5  # CANCELED
        got = list(outcome.result().result.sequence)
        assert got == fibonacci(len(got)) and len(got) < 41
    finally:
        node.close()
        stop(server)


def test_a_server_killed_mid_goal_ends_the_goal_aborted(env):
    server = cpp_server(env, "50")
    node = Node("py_orphan")
    try:
        Fibonacci = shmbus.action_type("action_tutorials_interfaces/Fibonacci")
        client = ActionClient(node, Fibonacci, "fibonacci")
        assert client.wait_for_server(timeout_sec=20)
        rec = Recorder()
        f = client.send_goal_async(Fibonacci.Goal(order=1000), feedback_callback=rec)
        assert spin_until(node, lambda: f.done() and rec.feedback)
        outcome = f.result().get_result_async()
        server.kill()
        server.wait(10)
        assert spin_until(node, outcome.done)
        assert outcome.result().status == 6  # ABORTED
    finally:
        node.close()


def test_goals_rejected_by_the_goal_callback_and_a_python_server_here():
    from shmbus.rclpy.action import ActionServer, GoalResponse
    Fibonacci = shmbus.action_type("action_tutorials_interfaces/Fibonacci")
    node = Node("py_both")
    try:
        def execute(handle):
            handle.succeed()
            return Fibonacci.Result(sequence=[handle.request.order])

        ActionServer(node, Fibonacci, "/py/act", execute,
                     goal_callback=lambda goal: GoalResponse.ACCEPT if goal.order >= 0 else GoalResponse.REJECT)
        client = ActionClient(node, Fibonacci, "/py/act")
        rejected = client.send_goal_async(Fibonacci.Goal(order=-1))
        accepted = client.send_goal_async(Fibonacci.Goal(order=5))
        assert spin_until(node, lambda: rejected.done() and accepted.done())
        assert not rejected.result().accepted and accepted.result().accepted
        r = accepted.result().get_result_async()
        assert spin_until(node, r.done)
        assert r.result().status == 4 and list(r.result().result.sequence) == [5]
    finally:
        node.close()


def test_a_goal_that_cannot_end_as_its_callback_says_ends_aborted_and_one_without_a_state_too(capfd):
    from shmbus.rclpy.action import ActionServer
    Fibonacci = shmbus.action_type("action_tutorials_interfaces/Fibonacci")
    node = Node("py_bad_ends")
    try:
        def execute(handle):
            if handle.request.order == 1:
                handle.canceled()  # no cancel was asked: rclpy refuses it
            return Fibonacci.Result(sequence=[1])  # order 2: no state set at all

        ActionServer(node, Fibonacci, "/py/bad", execute)
        client = ActionClient(node, Fibonacci, "/py/bad")
        futures = [client.send_goal_async(Fibonacci.Goal(order=o)) for o in (1, 2)]
        assert spin_until(node, lambda: all(f.done() for f in futures))
        results = [f.result().get_result_async() for f in futures]
        assert spin_until(node, lambda: all(r.done() for r in results))
        assert [r.result().status for r in results] == [6, 6]  # ABORTED, both
    finally:
        node.close()
    err = capfd.readouterr().err
    assert "could not end canceled (it was not asked to cancel, or had ended); it is aborted" in err
    assert "the execute callback set no state" in err
