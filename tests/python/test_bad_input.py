"""Bad input gets an exception carrying the C++ message and exit code, never
a crash: wrong types, unknown channels and types, closed objects, and a
seeded random sequence of calls with random arguments."""

import random

import numpy as np
import pytest

import shmbus


def test_an_unknown_channel_is_not_found_with_exit_code_3():
    with pytest.raises(shmbus.NotFoundError) as e:
        shmbus.Subscriber("/py/nobody_here")
    assert e.value.exit_code == 3 and "/py/nobody_here" in str(e.value) and "does not exist" in str(e.value)


def test_a_channel_opened_with_another_type_is_a_type_mismatch():
    shmbus.Publisher("/py/typed", "shmbus_msgs/String")
    with pytest.raises(shmbus.TypeMismatchError) as e:
        shmbus.Subscriber("/py/typed", "shmbus_msgs/Imu")
    assert e.value.exit_code == 2 and "shmbus_msgs/String" in str(e.value)


def test_an_unknown_type_names_where_it_was_looked_for():
    with pytest.raises(shmbus.InvalidArgumentError) as e:
        shmbus.message_type("nope_msgs/Nothing")
    assert "nope_msgs/Nothing" in str(e.value) and e.value.exit_code == 2


def test_wrong_values_are_refused_with_the_field_named():
    imu = shmbus.message_type("shmbus_msgs/Imu")
    pub = shmbus.Publisher("/py/bad_values", imu)
    for fields, what in [({"header": {"seq": -1}}, "header.seq: -1 is out of range for uint32"),
                         ({"header": {"seq": 2**40}}, "out of range"),
                         ({"orientation": [1, 2]}, "orientation: must be an array of 4 elements"),
                         ({"header": {"frame_id": "x" * 53}}, "string<52>"),
                         ({"nope": 1}, "unknown field 'nope'"),
                         ({"header": 3}, "must be a dict"),
                         ({"header": {"seq": 1.5}}, "must be an integer")]:
        with pytest.raises(shmbus.InvalidArgumentError, match=what.replace("[", r"\[")):
            pub.publish(fields)
    for value in (3, "text", None, [1, 2], object()):
        with pytest.raises(shmbus.InvalidArgumentError, match="publish takes"):
            pub.publish(value)
    with pytest.raises(shmbus.InvalidArgumentError, match="shorter"):
        pub.publish(b"\0" * 10)
    with pytest.raises(shmbus.TypeMismatchError):
        pub.publish(shmbus.message_type("shmbus_msgs/String").new())
    assert pub.published == 0
    # Larger than the channel's slots: the channel grows to hold it.
    big = np.zeros(imu.size + 5000, np.uint8)
    assert pub.max_message_size < big.size
    pub.publish(big)
    assert pub.published == 1 and pub.max_message_size >= big.size


def test_closed_objects_refuse_use():
    pub = shmbus.Publisher("/py/closing", "shmbus_msgs/String")
    sub = shmbus.Subscriber("/py/closing", "shmbus_msgs/String")
    pub.close()
    sub.close()
    with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
        sub.take()
    with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
        pub.publish({"data": "x"})


def test_a_view_outlives_its_closed_subscriber_without_a_crash():
    pub = shmbus.Publisher("/py/view_close", "shmbus_msgs/String")
    sub = shmbus.Subscriber("/py/view_close", "shmbus_msgs/String")
    pub.publish({"data": "kept mapped"})
    view = sub.read(view=True, timeout=5)
    sub.close()
    del sub
    with view as m:
        assert m.data == "kept mapped"


def test_a_random_sequence_of_calls_raises_only_shmbus_or_argument_errors():
    rng = random.Random(43)
    names = ["/py/fz/a", "/py/fz/b", "", "bad name", "/py/fz/" + "x" * 300, "/py/fz/a/_request"]
    types = ["shmbus_msgs/String", "shmbus_msgs/Imu", "shmbus/Bytes", "nope/X", 7, None]
    values = [b"", b"\0" * 64, {"data": "s"}, {"data": 1}, {"header": {}}, "str", 5, None, np.zeros(3),
              np.zeros((2, 2)).T, {"nope": 1}, [1]]
    objects = []
    ops = 0
    for _ in range(3000):
        op = rng.randrange(8)
        try:
            if op == 0:
                objects.append(shmbus.Publisher(rng.choice(names), rng.choice(types)))
            elif op == 1:
                objects.append(shmbus.Subscriber(rng.choice(names), rng.choice(types),
                                                 wait_for_channel=rng.random() < 0.5))
            elif objects:
                o = rng.choice(objects)
                if isinstance(o, shmbus.Publisher):
                    [lambda: o.publish(rng.choice(values)), o.close, lambda: o.loan(rng.randrange(-1, 70000)),
                     lambda: o.loan(size=rng.randrange(0, 9000))][op % 4]()
                else:
                    [o.take, o.close, lambda: o.read(view=True), lambda: o.wait(rng.choice([0, -1, 1e-4, float("nan")])),
                     lambda: o.read(timeout=0), lambda: o.type][op % 6]()
            ops += 1
        except (shmbus.Error, TypeError, OverflowError):
            pass
    assert ops > 500  # calls that ran to a result or an exception of ours


def test_a_closed_node_leaves_its_channels_and_refuses_use():
    from conftest import subscribers
    node = shmbus.Node("py_closing")
    sub = node.subscribe("/py/node_close", "shmbus_msgs/String", lambda m: node.stop())  # refers to its node
    node.every(1.0, lambda: None)
    assert subscribers("/py/node_close") == 1
    node.close()
    assert subscribers("/py/node_close") == 0
    assert not node.ok()
    with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
        node.spin()
    with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
        sub.calls
    with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
        node.subscribe("/py/node_close", "shmbus_msgs/String", print)


def test_every_handle_of_a_closed_node_refuses_use_though_its_publisher_is_held():
    node = shmbus.Node("py_closing_all")
    pub = node.publisher("/py/node_close_all", "shmbus_msgs/String")
    timer = node.every(1.0, lambda: None)
    sub = node.subscribe("/py/node_close_all", "shmbus_msgs/String", lambda m: None)
    assert pub.publish({"data": "while open"})
    node.close()  # `pub` still holds the C++ node
    for use in (lambda: pub.publish({"data": "after close"}), lambda: pub.loan(size=8), timer.cancel,
                lambda: timer.runs, sub.cancel, lambda: sub.calls):
        with pytest.raises(shmbus.InvalidArgumentError, match="closed"):
            use()


def test_an_exception_in_a_callback_is_raised_from_spin():
    node = shmbus.Node("py_raiser")
    pub = node.publisher("/py/raise", "shmbus_msgs/String")

    def boom(msg):
        raise KeyError(msg.data)

    node.subscribe("/py/raise", "shmbus_msgs/String", boom)
    node.after(0.01, lambda: pub.publish({"data": "from the timer"}))
    with pytest.raises(KeyError, match="from the timer"):
        node.spin()
    node.close()


def test_every_public_name_has_a_type_hint():
    import os
    stub = open(os.path.join(os.path.dirname(shmbus.__file__), "__init__.pyi")).read()
    missing = [n for n in shmbus.__all__ if f"class {n}" not in stub and f"def {n}(" not in stub
               and f"as {n}" not in stub]
    assert missing == []


def test_ctrl_c_ends_a_spinning_node_with_keyboard_interrupt():
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent("""
        import shmbus, sys
        node = shmbus.Node("py_sleeper")
        node.subscribe("/py/never", "shmbus_msgs/String", print)
        # Said from a timer, so the signal arrives while spin() runs.
        node.after(0.05, lambda: print("spinning", flush=True))
        try:
            node.spin()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=os.environ)
    try:
        assert p.stdout.readline().strip() == "spinning"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)  # spin() looks at signals every 100 ms
    finally:
        p.kill()
    assert p.returncode == 130 and out.strip() == "interrupted", err


def test_channels_is_what_shmtool_list_json_lists():
    import json
    from conftest import shmtool
    pub = shmbus.Publisher("/py/listed", "shmbus_msgs/String")
    for i in range(3):
        pub.publish({"data": str(i)})
    ours = [c for c in shmbus.channels() if c.get("name") == "/py/listed"]
    r = shmtool("list", "--json")
    assert r.returncode == 0, r.stderr
    theirs = [c for c in json.loads(r.stdout) if c.get("name") == "/py/listed"]
    assert ours == theirs and ours[0]["messages"] == 3 and ours[0]["publishers"] == 1


def test_strings_and_sequences_that_point_outside_their_message_are_refused_naming_the_field():
    # A ROS 2 type with an unbounded string, a sequence that is not last and
    # a bounded sequence of messages that hold their own.
    schema = ("MSG: ros_msgs/Scan\nstring frame_id\nfloat32[] ranges\nuint8 flags\nros_msgs/Item[<=3] items\n"
              "MSG: ros_msgs/Item\nstring name\n")
    t = shmbus.MessageType("ros_msgs/Scan", 0x1234, schema)
    m = t.new(frame_id="laser", ranges=[0.5, 1.5], items=[{"name": "a"}, {"name": "b" * 100}])
    raw = bytes(m)
    assert t.decode(raw).to_dict() == {"frame_id": "laser", "ranges": [0.5, 1.5], "flags": 0,
                                        "items": [{"name": "a"}, {"name": "b" * 100}]}
    outside = bytearray(raw)
    outside[0:8] = len(raw).to_bytes(4, "little") + (1).to_bytes(4, "little")  # frame_id past the end
    bad = t.decode(bytes(outside))
    with pytest.raises(shmbus.InvalidArgumentError, match=r"ros_msgs/Scan\.frame_id: 1 elements .* outside"):
        bad.frame_id
    assert list(bad.ranges) == [0.5, 1.5]  # the other fields still read
    with pytest.raises(shmbus.InvalidArgumentError, match=r"^items: 4 elements in a sequence of at most 3"):
        t.new(items=[{}] * 4)
    # Three items whose names all point at the 100-byte one: each read is
    # inside the message, but a copy would be larger than the message.
    raw = bytearray(bytes(t.new(items=[{"name": "a"}, {"name": "c"}, {"name": "b" * 100}])))
    at = t.dtype.fields["items"][1]  # the items' VarRef in the fixed part
    block = int.from_bytes(raw[at:at + 4], "little")  # each Item is its name's 8-byte VarRef
    raw[block:block + 16] = bytes(raw[block + 16:block + 24]) * 2
    overlapping = t.decode(bytes(raw))
    assert [len(i.name) for i in overlapping.items] == [100, 100, 100]
    with pytest.raises(shmbus.InvalidArgumentError, match="overlap"):
        overlapping.to_dict()
    m.flags = 7  # a number in the fixed part is written in place
    m.frame_id = "other"  # a string: the message is made anew, as rclpy's would be
    assert t.decode(bytes(m)).flags == 7 and t.decode(bytes(m)).frame_id == "other"
    shared = shmbus.Message(t, np.frombuffer(bytes(m), np.uint8), None, shared=True)  # as a view of the ring
    with pytest.raises(shmbus.InvalidArgumentError, match="read-only"):
        shared.frame_id = "again"


def test_one_trailing_sequence_of_fixed_elements_is_a_writable_view_through_its_varref():
    # One trailing sequence of fixed elements is viewed, through its VarRef.
    tail = shmbus.MessageType("ros_msgs/Samples", 0x5678, "MSG: ros_msgs/Samples\nuint8 kind\nfloat32[] values\n")
    m = tail.new(kind=3, values=[0.5, 1.5])
    raw = bytes(m)
    assert int.from_bytes(raw[4:8], "little") == 12  # the VarRef's offset: after the 12-byte fixed part
    assert int.from_bytes(raw[8:12], "little") == 2  # and its count
    back = tail.decode(raw)
    assert back.kind == 3 and list(back.values) == [0.5, 1.5]
    lying = bytearray(raw)
    lying[8:12] = (3).to_bytes(4, "little")  # a count past the message
    with pytest.raises(shmbus.InvalidArgumentError, match="outside the message"):
        tail.decode(bytes(lying))
