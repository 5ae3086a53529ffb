"""Services across languages: a Python server called by `shmtool service
call`, and a Python client of the C++ adder."""

import json
import os
import subprocess
import threading

import pytest

import shmbus
from conftest import ADDER_SRV, shmtool, wait_until

ADDER = os.environ.get("SHMBUS_EXAMPLE_ADDER", "shmbus-example-adder")


def test_a_python_server_answers_shmtool_service_call():
    node = shmbus.Node("py_adder")
    calls = []

    def add(req):
        calls.append((req.a, req.b, req.info.sequence))
        if req.a == 13:
            raise ValueError("thirteen is refused")
        return {"sum": req.a + req.b}

    server = shmbus.ServiceServer(node, "/py/add", "example_srvs/AddTwoInts", add, msg_path=[ADDER_SRV])
    spinner = threading.Thread(target=node.spin)
    spinner.start()
    try:
        r = shmtool("service", "call", "/py/add", '{"a": 2, "b": 40}', "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["response"] == {"sum": 42} and out["type"] == "example_srvs/AddTwoInts"
        r = shmtool("service", "call", "/py/add", '{"a": 13, "b": 1}')
        assert r.returncode == 1 and "handler" in r.stderr, r.stderr
        assert [c[:2] for c in calls] == [(2, 40), (13, 1)]
        assert server.served == 1 and server.failed == 1
    finally:
        node.stop()
        spinner.join(timeout=10)
    assert not spinner.is_alive()


def test_a_python_client_calls_the_cpp_adder():
    adder = subprocess.Popen([ADDER, "--service", "/py/add_cpp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        client = shmbus.ServiceClient("/py/add_cpp", "example_srvs/AddTwoInts", msg_path=[ADDER_SRV])
        assert client.wait_for_server(20)
        rsp = client.call({"a": 40, "b": 2}, timeout=10)
        assert rsp.sum == 42 and rsp.type.name == "example_srvs/AddTwoInts_Response"
        req = client.request_type.new(a=-5, b=3)
        assert client.call(req, timeout=10).sum == -2
        # The adder refuses an overflowing sum: its handler throws.
        with pytest.raises(shmbus.ServiceFailed) as e:
            client.call({"a": 2**63 - 1, "b": 1}, timeout=10)
        assert e.value.exit_code == 1
        # No type given: the service's channels name it.
        untyped = shmbus.ServiceClient("/py/add_cpp")
        assert untyped.call({"a": 1, "b": 2}, timeout=10).sum == 3
        assert untyped.request_type == client.request_type
    finally:
        adder.terminate()
        adder.wait(timeout=10)


def test_a_call_without_a_server_is_not_found_with_exit_code_3():
    client = shmbus.ServiceClient("/py/add_nobody", "example_srvs/AddTwoInts", msg_path=[ADDER_SRV])
    with pytest.raises(shmbus.NotFoundError) as e:
        client.call({"a": 1, "b": 2}, timeout=0.2)
    assert e.value.exit_code == 3 and "/py/add_nobody" in str(e.value)
    with pytest.raises(shmbus.NotFoundError, match="/py/add_never"):
        shmbus.ServiceClient("/py/add_never")  # no type, and no channels to read it from
