"""shmbus reads every ROS 2 definition as ROS 2's own parser does.

rosidl_adapter's .msg parser (Debian's python3-rosidl, the one rosidl_adapter
turns into IDL) and shmbus's must agree, field by field, on names, element
types, array kinds and bounds, string bounds, defaults and constants, for
every message of ROS 2's test definitions (Debian's
ros2-test-interface-files) and every shipped ROS 2 type. Debian's rosidl is
installed for /usr/bin/python3, the interpreter the suite runs."""
import array
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import rosidl_adapter.parser as rosidl_parser  # Debian's python3-rosidl (scripts/install-deps.sh)

import shmbus
from shmbus import _shmbus

TEST_FILES = pathlib.Path("/usr/share/test_interface_files/msg")
SHIPPED = pathlib.Path(__file__).resolve().parents[2] / "runtime" / "msg"
# shmbus holds ROS 2's `byte` and `char` as uint8 (docs/messages.md).
ALIASES = {"byte": "uint8", "char": "uint8"}


def definitions() -> list[tuple[str, pathlib.Path, list[str]]]:
    """(package, file, msg path) of every definition compared."""
    out = []
    if TEST_FILES.is_dir():
        for f in sorted(TEST_FILES.glob("*.msg")):
            if f.stem != "WStrings":  # wstring has no place in shmbus's layout
                out.append(("test_interface_files", f, ["/usr/share"]))
    for f in sorted(SHIPPED.glob("*/*.msg")):
        if f.parent.name != "shmbus_msgs":  # shmbus's own, not ROS 2's
            out.append((f.parent.name, f, []))
    return out


def element_type(field: dict) -> str:
    if field["kind"] == "primitive":
        return field["primitive"]
    if field["kind"] == "message":
        return field["message"]
    return "string"


def python_value(v):
    if isinstance(v, (np.ndarray, array.array)):
        return v.tolist()
    if isinstance(v, (np.generic,)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [python_value(x) for x in v]
    return v


def same(ours, theirs, primitive: str) -> bool:
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(
            same(a, b, primitive) for a, b in zip(ours, theirs))
    if primitive == "float32":  # held as float32: rosidl's value rounded so
        return float(np.float32(theirs)) == float(ours)
    return bool(ours == theirs)


@pytest.mark.parametrize("package,path,msg_path", definitions(), ids=lambda x: getattr(x, "stem", None))
def test_shmbus_parses_as_rosidl(package, path, msg_path):
    spec = rosidl_parser.parse_message_file(package, str(path))
    name = f"{package}/{path.stem}"
    root, _, schema = _shmbus.resolve_type(name, msg_path)
    ours = _shmbus.describe(schema)["types"][root]
    assert [f["name"] for f in ours["fields"]] == [f.name for f in spec.fields]
    message = shmbus.message_type(name, msg_path).new()
    for mine, theirs in zip(ours["fields"], spec.fields):
        t = theirs.type
        where = f"{name}.{theirs.name}"
        expected = f"{t.pkg_name}/{t.type}" if t.pkg_name else ALIASES.get(t.type, t.type)
        assert element_type(mine) == expected, where
        if t.type == "string" and t.string_upper_bound is not None:
            assert (mine["kind"], mine["capacity"]) == ("string", t.string_upper_bound), where
        elif t.type == "string":
            assert mine["kind"] == "ustring", where
        if not t.is_array:
            assert (mine["array_length"], mine["unbounded"]) == (0, False), where
        elif t.array_size is None:
            assert (mine["unbounded"], mine["sequence_bound"]) == (True, 0), where
        elif t.is_upper_bound:
            assert (mine["unbounded"], mine["sequence_bound"]) == (True, t.array_size), where
        else:
            assert (mine["array_length"], mine["unbounded"]) == (t.array_size, False), where
        if theirs.default_value is not None:
            value = python_value(getattr(message, theirs.name))
            assert same(value, theirs.default_value, mine.get("primitive", "")), (where, value, theirs.default_value)
    constants = {c[0]: c for c in ours["constants"]}
    assert sorted(constants) == sorted(c.name for c in spec.constants)
    for c in spec.constants:
        _, ctype, text = constants[c.name]
        assert ctype == ALIASES.get(c.type, c.type), c.name
        value = shmbus.message_type(name, msg_path).constants[c.name]
        assert same(python_value(value), c.value, ctype), (c.name, value, c.value, text)


def test_every_test_interface_file_but_wstrings_is_compared():
    compared = [d for d in definitions() if d[0] == "test_interface_files"]
    assert len(compared) >= 11, "install ros2-test-interface-files"


ACTIONS = [("test_msgs", pathlib.Path("/usr/share/test_interface_files"), pathlib.Path("action/Fibonacci.action")),
           ("action_tutorials_interfaces", pathlib.Path(__file__).resolve().parents[2] / "examples" / "rclcpp" /
            "action" / "action_tutorials_interfaces", pathlib.Path("Fibonacci.action"))]


def _rosidl_type(t) -> str:
    """A member's type as shmbus writes it (`pkg/Name`, or the primitive)."""
    if hasattr(t, "namespaces"):
        return f"{t.namespaces[0]}/{t.name}"
    return {"boolean": "bool"}.get(t.typename, t.typename)


@pytest.mark.parametrize("package,root,relative", ACTIONS, ids=lambda x: str(x))
def test_the_types_shmbus_derives_from_an_action_are_rosidls(package, root, relative, tmp_path):
    """rosidl_parser's Action (the IDL rosidl_adapter makes of the .action)
    derives the send-goal and get-result services and the feedback
    message; shmbus's, field for field, name for name."""
    import rosidl_parser.definition as idl
    import rosidl_parser.parser as idl_parser
    # rosidl_adapter's template engine (empy) wants the real stdout, which
    # pytest captures: it runs in a process of its own.
    code = ("import pathlib, sys\nfrom rosidl_adapter.action import convert_action_to_idl\n"
            "print(convert_action_to_idl(*map(pathlib.Path, sys.argv[1:2]), sys.argv[2], "
            "*map(pathlib.Path, sys.argv[3:5])))")
    run = subprocess.run([sys.executable, "-c", code, str(root), package, str(relative), str(tmp_path)],
                         capture_output=True, text=True, check=True)
    made = pathlib.Path(run.stdout.strip().splitlines()[-1])
    action = idl_parser.parse_idl_file(idl.IdlLocator(tmp_path, made.relative_to(tmp_path))).content \
        .get_elements_of_type(idl.Action)[0]
    # shmbus finds the .action as a program finds a type (the msg path).
    msg_path = tmp_path / "path" / package / "action"
    msg_path.mkdir(parents=True)
    (msg_path / relative.name).write_text((root / relative).read_text())
    name = f"{package}/{relative.stem}"
    ours = [_shmbus.describe(t[2])["types"][t[0]] for t in _shmbus.action_types(name, [str(tmp_path / "path")])]
    theirs = [action.send_goal_service.request_message, action.send_goal_service.response_message,
              action.get_result_service.request_message, action.get_result_service.response_message,
              action.feedback_message]
    for mine, message, their_name in zip(ours, theirs, ["SendGoal_Request", "SendGoal_Response", "GetResult_Request",
                                                         "GetResult_Response", "FeedbackMessage"]):
        st = message.structure
        assert st.namespaced_type.name == f"{relative.stem}_{their_name}"
        assert [(f["name"], element_type(f)) for f in mine["fields"]] == \
            [(m.name, _rosidl_type(m.type)) for m in st.members], their_name


# Names (CamelCase, as rosidl and shmbus require) that take each branch of
# rosidl's rule: runs of capitals, digits
# before and after capitals, one letter.
HEADER_NAMES = ["ColorRGBA", "PointCloud2", "MultiDOFJointTrajectory", "ABCDef", "AbCd", "HTTPServer2Go",
                "Imu", "A", "GoalID", "UUID", "Vector3Stamped", "TF2Error", "XYZ1abc", "Pose2D", "A1B2", "Abc2DEFg"]


def test_msggen_writes_headers_at_the_paths_rosidl_names(tmp_path):
    """Each header's name is what rosidl_pycommon (Debian's python3-rosidl)
    derives from its type, for ROS 2's test definitions and for names that
    take every branch of the rule; a .srv beside a .msg of one name gets its
    own header, and so does an .action."""
    import os
    import subprocess

    from rosidl_pycommon import convert_camel_case_to_lower_case_underscore as rosidl_name

    share = tmp_path / "share" / "names_msgs"
    (share / "msg").mkdir(parents=True)
    (share / "srv").mkdir()
    files = []
    for name in HEADER_NAMES:
        f = share / "msg" / f"{name}.msg"
        f.write_text("int32 x\n")
        files.append(str(f))
    (share / "srv" / "ColorRGBA.srv").write_text("int32 a\n---\nint32 b\n")
    files.append(str(share / "srv" / "ColorRGBA.srv"))
    (share / "action").mkdir()
    (share / "action" / "ColorRGBA.action").write_text("int32 goal\n---\nint32 result\n---\nint32 feedback\n")
    files.append(str(share / "action" / "ColorRGBA.action"))
    names = list(HEADER_NAMES)
    if TEST_FILES.is_dir():
        files += [str(f) for f in sorted(TEST_FILES.glob("*.msg")) if f.stem != "WStrings"]
        names += [f.stem for f in sorted(TEST_FILES.glob("*.msg")) if f.stem != "WStrings"]
    out = tmp_path / "out"
    r = subprocess.run([os.environ["SHMBUS_MSGGEN"], "--out", str(out), *files], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    for name in names:
        pkg = "names_msgs" if name in HEADER_NAMES else "test_interface_files"
        header = out / pkg / "msg" / f"{rosidl_name(name)}.hpp"
        assert header.is_file(), f"{name}: no {header.relative_to(out)}; written: {sorted(map(str, out.rglob('*.hpp')))}"
        assert (out / pkg / f"{name}.hpp").read_text().endswith(f'#include "{pkg}/msg/{rosidl_name(name)}.hpp"\n')
    service = (out / "names_msgs" / "srv" / f"{rosidl_name('ColorRGBA')}.hpp").read_text()
    assert "namespace names_msgs::srv" in service and "using Request = names_msgs::ColorRGBA_Request;" in service
    action = (out / "names_msgs" / "action" / f"{rosidl_name('ColorRGBA')}.hpp").read_text()
    assert "namespace names_msgs::action" in action and "using Goal = names_msgs::ColorRGBA_Goal;" in action
    # The message of the same name keeps its header: neither overwrote it.
    assert "struct ColorRGBA {" in (out / "names_msgs" / "msg" / f"{rosidl_name('ColorRGBA')}.hpp").read_text()


def _msggen(*args: str, env: dict | None = None):
    import os
    import subprocess

    return subprocess.run([os.environ["SHMBUS_MSGGEN"], *args], capture_output=True, text=True, timeout=60,
                          env=env)


@pytest.mark.skipif(not TEST_FILES.is_dir(), reason="needs ros2-test-interface-files")
def test_msggen_leaves_out_only_the_file_it_cannot_read_and_what_uses_it(tmp_path):
    """ROS 2's test package with its wstring file, and a file of our own
    that uses that one: each is said in one line, every other header is
    written; exit 2, or 0 with --keep-going (what shmbus_generate_messages
    passes)."""
    mine = tmp_path / "mine_msgs" / "msg"
    mine.mkdir(parents=True)
    (mine / "Wide.msg").write_text("test_interface_files/WStrings w\n")
    (mine / "Fine.msg").write_text("test_interface_files/BasicTypes b\n")
    files = [str(f) for f in sorted(TEST_FILES.parent.glob("*/*.*"))
             if f.suffix in (".msg", ".srv", ".action")] + [str(mine / "Wide.msg"), str(mine / "Fine.msg")]
    for keep_going, rc in ((False, 2), (True, 0)):
        out = tmp_path / f"out{int(keep_going)}"
        r = _msggen("--out", str(out), *(["--keep-going"] if keep_going else []), *files)
        assert r.returncode == rc, r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 2, r.stderr
        assert "WStrings.msg:" in lines[0] and "wide strings are not carried" in lines[0], lines[0]
        assert "WStrings.msg:" in lines[1], lines[1]  # Wide.msg fails with the file it uses
        if keep_going:
            assert lines[0].endswith("test_interface_files/WStrings is not generated"), lines[0]
            assert lines[1].endswith("mine_msgs/Wide is not generated"), lines[1]
        written = {str(p.relative_to(out)) for p in out.rglob("*.hpp")}
        for header in ("test_interface_files/msg/multi_nested.hpp", "test_interface_files/srv/arrays.hpp",
                       "test_interface_files/msg/arrays.hpp", "test_interface_files/action/fibonacci.hpp",
                       "mine_msgs/msg/fine.hpp"):
            assert header in written, sorted(written)
        assert not any("w_strings" in h or "wide" in h for h in written), sorted(written)


def test_msggen_finds_what_a_file_uses_as_every_program_does(tmp_path):
    """A type from a sourced ROS 2 workspace (AMENT_PREFIX_PATH) or
    SHMBUS_MSG_PATH is found, and its header generated too (it is not
    shipped); a type found nowhere names the folders looked in and the way
    to add one."""
    import os

    mine = tmp_path / "src" / "mine_msgs" / "msg"
    mine.mkdir(parents=True)
    (mine / "UsesBasic.msg").write_text("test_interface_files/BasicTypes b\nstd_msgs/Header header\n")
    (mine / "Lost.msg").write_text("visualization_msgs/Marker marker\n")
    if TEST_FILES.is_dir():
        out = tmp_path / "out"
        env = dict(os.environ, AMENT_PREFIX_PATH="/usr")
        env.pop("SHMBUS_MSG_PATH", None)
        r = _msggen("--out", str(out), str(mine / "UsesBasic.msg"), env=env)
        assert r.returncode == 0, r.stderr
        assert (out / "test_interface_files" / "msg" / "basic_types.hpp").is_file()
        assert not (out / "std_msgs").exists(), "std_msgs is shipped: shmbus::messages has its headers"
        r = _msggen("--out", str(tmp_path / "out2"), str(mine / "UsesBasic.msg"),
                    env=dict(env, AMENT_PREFIX_PATH="", SHMBUS_MSG_PATH="/usr/share"))
        assert r.returncode == 0, r.stderr
    env = dict(os.environ, SHMBUS_MSG_PATH=str(tmp_path / "nowhere"))
    env.pop("AMENT_PREFIX_PATH", None)
    r = _msggen("--out", str(tmp_path / "out3"), str(mine / "Lost.msg"), env=env)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "\n" not in line, line
    assert "Lost.msg:1: unknown type 'visualization_msgs/Marker'" in line, line
    assert str(tmp_path / "nowhere") in line and "AMENT_PREFIX_PATH" in line and "--include" in line, line
