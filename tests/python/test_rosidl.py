"""shmbus reads every ROS 2 definition as ROS 2's own parser does.

rosidl_adapter's .msg parser (Debian's python3-rosidl, the one rosidl_adapter
turns into IDL) and shmbus's must agree, field by field, on names, element
types, array kinds and bounds, string bounds, defaults and constants, for
every message of ROS 2's test definitions (Debian's
ros2-test-interface-files) and every shipped ROS 2 type. Debian's rosidl is
installed for /usr/bin/python3, the interpreter the suite runs."""
import array
import pathlib

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
