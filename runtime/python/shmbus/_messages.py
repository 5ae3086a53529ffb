"""Messages from their schema: NumPy dtypes, and message objects over bytes.

A message type's fixed part is a NumPy structured dtype (nested messages
are nested dtypes, fixed arrays subarrays, ``string<N>`` ``S<N>``); its
trailing ``T[]`` array follows the fixed part and is a NumPy array of the
element's dtype, as long as the count stored in the fixed part says. A
:class:`Message` reads and writes fields through these views of one buffer:
bytes copied out of a channel, a loan's slot, or (read-only) the ring
itself.

A type with strings or sequences elsewhere (ROS 2's ``string``, ``T[]``
anywhere, nested) holds a VarRef (uint32 offset, uint32 count) in its fixed
part for each: reading one follows it, checked against the message's bytes
first, to a ``str``, a NumPy view of the block (sequences of numbers) or
views of its messages. A message of such a type that is made here
(``new()``, ``T()``) holds its values as Python objects, assigned and
appended as rclpy's messages are, and is written once, when its bytes are
asked for (published), by the schema's one encoder in C++ (sequences of
numbers copied in one block). A message read from a channel holds its
bytes; assigning one of its strings or sequences turns it into a made one
(every view of it taken before follows).
"""

from __future__ import annotations

import array
import json
import numbers
import os
import struct
from typing import Any, Iterable

import numpy as np

from . import _shmbus
from .errors import InvalidArgumentError, TypeMismatchError

_PRIMITIVES = {
    "bool": "?",
    "int8": "i1",
    "uint8": "u1",
    "int16": "<i2",
    "uint16": "<u2",
    "int32": "<i4",
    "uint32": "<u4",
    "int64": "<i8",
    "uint64": "<u8",
    "float32": "<f4",
    "float64": "<f8",
}

_U1 = np.dtype("u1")
# array.array's code for each primitive (rclpy's sequences of numbers).
_ARRAY_CODES = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q",
                "f4": "f", "f8": "d"}
_RANGES = {k: (int(np.iinfo(k).min), int(np.iinfo(k).max)) for k in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8")}
_U32 = struct.Struct("<I")
# A string's or a sequence's place in the fixed part (the layout rule).
_VARREF = np.dtype([("offset", "<u4"), ("count", "<u4")])


def _block(ctx: tuple, ref: Any, size: int, align: int, bound: int, path: str) -> tuple[int, int]:
    """Where the VarRef `ref` points, checked before use by the layout
    runtime (inside the message's bytes, after its root's fixed part,
    aligned, within the sequence's bound, 0: none). (offset, count)."""
    raw, fixed = ctx[0], ctx[1]
    o, n = int(ref["offset"]), int(ref["count"])
    if n == 0:
        return 0, 0
    _shmbus.check_block(len(raw), fixed, o, n, size, align, bound, path)
    return o, n


def _charge(budget: Any, n: int, size: int, path: str) -> None:
    """A copy (to_dict) of `n` elements of `size` bytes, charged to the
    message's budget (_shmbus.Budget: blocks that overlap could make a
    small message copy into an exponentially large one)."""
    if budget is not None:
        budget.take(n, size, path)


def _check_values(value: Any, dtype: np.dtype, path: str) -> np.ndarray:
    """`value` as an array of `dtype`, refused (one line naming the field)
    when it is of the wrong kind or out of the type's range."""
    if isinstance(value, (str, bytes)) and dtype.kind != "S":
        raise InvalidArgumentError(f"{path}: must be a number or an array of numbers, not {type(value).__name__}")
    a = np.asarray(value)
    kind = dtype.kind
    if a.size == 0 and a.ndim == 1:
        return a.astype(dtype)  # [] is an empty sequence of any type
    if a.dtype.kind == "O":
        # Python integers beyond 64 bits, or mixed lists.
        try:
            ints = [int(x) for x in a.ravel()] if all(isinstance(x, numbers.Integral) for x in a.ravel()) else None
        except TypeError:
            ints = None
        if ints is None or kind not in "iu":
            raise InvalidArgumentError(f"{path}: must be numbers of type {dtype.name}, not {value!r:.60}")
        info = np.iinfo(dtype)
        bad = [x for x in ints if x < info.min or x > info.max]
        if bad:
            raise InvalidArgumentError(f"{path}: {bad[0]} is out of range for {dtype.name}")
        return np.array(ints, dtype=dtype).reshape(a.shape)
    if kind == "b":
        if a.dtype.kind != "b":
            raise InvalidArgumentError(f"{path}: must be True or False, not {value!r:.60}")
        return a
    if kind in "iu":
        if a.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{path}: must be an integer ({dtype.name}), not {value!r:.60}")
        if a.size:
            info = np.iinfo(dtype)
            lo, hi = int(a.min()), int(a.max())
            if lo < info.min or hi > info.max:
                raise InvalidArgumentError(
                    f"{path}: {lo if lo < info.min else hi} is out of range for {dtype.name}")
        return a
    if kind == "f":
        if a.dtype.kind not in "iuf":
            raise InvalidArgumentError(f"{path}: must be a number ({dtype.name}), not {value!r:.60}")
        return a
    return a


def _encode_string(value: Any, capacity: int, path: str) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray)):
        raise InvalidArgumentError(f"{path}: must be a string, not {type(value).__name__}")
    if len(value) > capacity:
        raise InvalidArgumentError(f"{path}: string of {len(value)} bytes is out of range for string<{capacity}>")
    return bytes(value)


def _decode_string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _at(ctx: tuple | None, i: int) -> tuple | None:
    """The context of element `i` of the field whose context is `ctx`."""
    return None if ctx is None else (ctx[0], ctx[1], ctx[2], ctx[3] + (i,))


class _Field:
    """How one field is read and written through a structured view."""

    __slots__ = ("name", "kind", "dtype", "capacity", "array_length", "definition", "type_text", "unbounded",
                 "bound", "align", "path", "default_json")

    def __init__(self, name: str, kind: str, dtype: np.dtype, capacity: int, array_length: int,
                 definition: "_Definition | None", type_text: str) -> None:
        self.name = name
        self.kind = kind  # "primitive", "string", "ustring" or "message"
        self.dtype = dtype  # one element's
        self.capacity = capacity
        self.array_length = array_length
        self.definition = definition
        self.type_text = type_text
        # A sequence (T[], T[<=bound]) read through its VarRef; its
        # elements' alignment; "pkg/Type.field" for errors.
        self.unbounded = False
        self.bound = 0
        self.align = 1
        self.path = name
        self.default_json: Any = None  # the definition's default, as JSON values

    @property
    def variable(self) -> bool:
        """Read through a VarRef: a sequence, or a ``string`` (alone or in
        a fixed array)."""
        return self.unbounded or self.kind == "ustring"

    def _elements(self, ctx: tuple, block: np.ndarray, budget: Any) -> Any:
        """A sequence's (or a fixed array's) elements in `block`."""
        if self.kind == "primitive":
            return block.view(self.dtype)
        if self.kind == "string":
            return [_decode_string(v.tobytes()) for v in block.view(self.dtype)]
        if self.kind == "ustring":
            return [self._string(ctx, r, budget) for r in block.view(_VARREF)]
        a = block.view(self.definition.dtype)
        return [Struct(self.definition, a[i:i + 1], _at(ctx, i)) for i in range(len(a))]

    def _string(self, ctx: tuple, ref: Any, budget: Any) -> str:
        o, n = _block(ctx, ref, 1, 1, 0, self.path)
        _charge(budget, n, 1, self.path)
        return ctx[0][o:o + n].tobytes().decode("utf-8", "replace")

    def get_variable(self, rec: np.ndarray, ctx: tuple, budget: Any = None) -> Any:
        """A string or sequence: followed to the message's bytes."""
        refs = rec[self.name][0]
        if not self.unbounded:
            if self.array_length == 0:
                return self._string(ctx, refs, budget)
            return [self._string(ctx, r, budget) for r in refs]
        size = _VARREF.itemsize if self.kind == "ustring" else self.dtype.itemsize
        o, n = _block(ctx, refs, size, self.align, self.bound, self.path)
        _charge(budget, n, size, self.path)
        block = ctx[0][o:o + n * size]
        if self.kind == "primitive" and n == 0:
            return np.zeros(0, self.dtype)
        return self._elements(ctx, block, budget)

    def get(self, rec: np.ndarray, ctx: tuple | None = None) -> Any:
        if ctx is not None and self.variable:
            return self.get_variable(rec, ctx)
        column = rec[self.name]  # shape (1,) or (1, n)
        if self.array_length == 0:
            if self.kind == "primitive":
                return column[0].item()
            if self.kind == "string":
                return _decode_string(column[0].tobytes())
            return Struct(self.definition, column, ctx)
        values = column[0]
        if self.kind == "primitive":
            return values
        if self.kind == "string":
            return [_decode_string(v.tobytes()) for v in values]
        return [Struct(self.definition, values[i:i + 1], _at(ctx, i)) for i in range(self.array_length)]

    def set(self, rec: np.ndarray, value: Any, path: str) -> None:
        if self.variable or (self.kind == "message" and self.definition.variable):
            raise InvalidArgumentError(
                f"{path}: a string or sequence is read-only in a message made; give it to new() "
                f"(the message is written once, through the JSON codec)")
        column = rec[self.name]
        if self.kind == "message":
            targets = [column] if self.array_length == 0 else [column[0][i:i + 1] for i in range(self.array_length)]
            values = [value] if self.array_length == 0 else _sequence(value, self.array_length, path)
            for i, (target, v) in enumerate(zip(targets, values)):
                p = path if self.array_length == 0 else f"{path}[{i}]"
                self.definition.assign(target, v, p)
            return
        if self.kind == "string":
            if self.array_length == 0:
                column[0] = _encode_string(value, self.capacity, path)
            else:
                vs = _sequence(value, self.array_length, path)
                column[0] = [_encode_string(v, self.capacity, f"{path}[{i}]") for i, v in enumerate(vs)]
            return
        a = _check_values(value, self.dtype, path)
        if self.array_length == 0:
            if a.ndim != 0:
                raise InvalidArgumentError(f"{path}: must be one {self.type_text} value, not an array")
        elif a.shape != (self.array_length,):
            raise InvalidArgumentError(f"{path}: must be an array of {self.array_length} elements, not shape {a.shape}")
        column[0] = a

    # -- made messages: values as Python objects --------------------------

    def default(self) -> Any:
        """A new value of the field as the definition's default makes it."""
        d = self.default_json
        n = self.array_length
        if self.kind == "message":
            if self.unbounded:
                return []
            if n:
                return [self.definition.made() for _ in range(n)]
            return self.definition.made()
        if self.kind in ("string", "ustring"):
            if self.unbounded:
                return list(d) if d is not None else []
            if n:
                return list(d) if d is not None else [""] * n
            return d if d is not None else ""
        zero = False if self.dtype.kind == "b" else 0.0 if self.dtype.kind == "f" else 0
        if self.unbounded:
            return self._sequence_of(d or [])
        if n:
            return np.array(d, self.dtype) if d is not None else np.zeros(n, self.dtype)
        return d if d is not None else zero

    def _sequence_of(self, values: list) -> Any:
        """A sequence of numbers that appends, as rclpy's array.array."""
        code = _ARRAY_CODES.get(self.dtype.str[1:])
        return array.array(code, values) if code else list(values)

    def value(self, value: Any, path: str) -> Any:
        """`value` as a made message holds the field: checked (one line
        naming the field), sequences of numbers as one block of their type
        (a NumPy array or a buffer of it kept, not copied), messages as
        made messages (a made one kept: assigning aliases, as in rclpy)."""
        n = self.array_length
        if self.unbounded or n:
            if self.kind == "primitive":
                return self._numbers(value, path)
            if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
                raise InvalidArgumentError(f"{path}: must be a list of {self.type_text}, not {type(value).__name__}")
            vs = list(value)
            if n and len(vs) != n:
                raise InvalidArgumentError(f"{path}: must be an array of {n} elements, not {len(vs)}")
            if self.bound and len(vs) > self.bound:
                raise InvalidArgumentError(f"{path}: {len(vs)} elements in a sequence of at most {self.bound}")
            return [self._one(v, f"{path}[{i}]") for i, v in enumerate(vs)]
        return self._one(value, path)

    def _one(self, value: Any, path: str) -> Any:
        if self.kind == "message":
            return self.definition.made_from(value, path)
        if self.kind in ("string", "ustring"):
            if isinstance(value, (bytes, bytearray)):
                value = bytes(value).decode("utf-8")
            if not isinstance(value, str):
                raise InvalidArgumentError(f"{path}: must be a string, not {type(value).__name__}")
            if self.kind == "string" and len(value.encode("utf-8")) > self.capacity:
                raise InvalidArgumentError(f"{path}: string of {len(value.encode('utf-8'))} bytes is out of range "
                                           f"for string<{self.capacity}>")
            return value
        t = type(value)
        kind = self.dtype.kind
        if t is bool and kind == "b" or t is float and kind == "f":
            return value
        if t is int and kind in "iu":
            lo, hi = _RANGES[self.dtype.str[1:]]
            if value < lo or value > hi:
                raise InvalidArgumentError(f"{path}: {value} is out of range for {self.type_text}")
            return value
        a = _check_values(value, self.dtype, path)
        if a.ndim != 0:
            raise InvalidArgumentError(f"{path}: must be one {self.type_text} value, not an array")
        return a.item()

    def _numbers(self, value: Any, path: str) -> Any:
        n, dt = self.array_length, self.dtype
        if isinstance(value, (bytes, bytearray, memoryview)) and dt.itemsize == 1 and not n:
            return np.frombuffer(value, dt)
        if isinstance(value, array.array) and not n and value.itemsize == dt.itemsize and (
                _ARRAY_CODES.get(dt.str[1:]) == value.typecode):
            a = value
        elif isinstance(value, np.ndarray) and value.dtype == dt:
            a = np.ascontiguousarray(value).reshape(-1)
        elif isinstance(value, np.ndarray) and np.can_cast(value.dtype, dt, "safe"):
            a = np.ascontiguousarray(value, dt).reshape(-1)
        else:
            checked = _check_values(value, dt, path)
            if checked.ndim != 1:
                raise InvalidArgumentError(f"{path}: must be an array of {self.type_text}, not shape {checked.shape}")
            a = np.ascontiguousarray(checked, dt) if isinstance(value, np.ndarray) or n else self._sequence_of(
                checked.astype(dt).tolist())
        if n and len(a) != n:
            raise InvalidArgumentError(f"{path}: must be an array of {n} elements, not {len(a)}")
        if n:
            return np.array(a, dt)  # a fixed array is the message's own (written in place)
        if self.bound and len(a) > self.bound:
            raise InvalidArgumentError(f"{path}: {len(a)} elements in a sequence of at most {self.bound}")
        return a

    def to_python(self, rec: np.ndarray, ctx: tuple | None = None, budget: Any = None) -> Any:
        v = self.get_variable(rec, ctx, budget) if ctx is not None and self.variable else self.get(rec, ctx)
        if isinstance(v, Struct):
            return v.to_dict(budget)
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, list):
            return [x.to_dict(budget) if isinstance(x, Struct) else x for x in v]
        return v


def _sequence(value: Any, n: int, path: str) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidArgumentError(f"{path}: must be an array of {n} elements")
    vs = list(value)
    if len(vs) != n:
        raise InvalidArgumentError(f"{path}: must be an array of {n} elements, not {len(vs)}")
    return vs


class _Definition:
    """One message type's fixed part: its dtype and fields."""

    def __init__(self, name: str, size: int, constants: list) -> None:
        self.name = name
        self.size = size
        self.dtype: np.dtype = np.dtype([])
        self.fields: dict[str, _Field] = {}
        self.constants = {c[0]: _constant_value(c[1], c[2]) for c in constants}
        self.variable = False  # holds a VarRef (here or nested)

    def assign(self, rec: np.ndarray, value: Any, path: str) -> None:
        """Writes `value` (a dict of fields, or a Struct of this type) into
        the 1-element structured view `rec`; fields not given stay as they
        are."""
        value = _as_field(value)
        if isinstance(value, Struct):
            if not self.same(value._def):
                raise TypeMismatchError(f"{path}: a {value._def.name} where a {self.name} goes")
            if value._made_vals() is not None:
                self.assign(rec, value._values, path)
                return
            rec[0] = value._rec[0]
            return
        if not isinstance(value, dict):
            raise InvalidArgumentError(f"{path or self.name}: must be a dict of {self.name}'s fields, "
                                       f"not {type(value).__name__}")
        for key, v in value.items():
            f = self.field(key, path)
            f.set(rec, v, f"{path}.{key}" if path else key)

    def same(self, other: "_Definition") -> bool:
        """The same type (from another MessageType's schema, maybe)."""
        return other is self or (other.name == self.name and other.dtype == self.dtype)

    def field(self, key: str, path: str) -> "_Field":
        f = self.fields.get(key)
        if f is None:
            raise InvalidArgumentError(
                f"{path or self.name}: unknown field '{key}' (message {self.name} has: {', '.join(self.fields)})")
        return f

    def made(self) -> "Struct":
        """A new made message of this type at its defaults."""
        return Struct(self, None, None, {name: f.default() for name, f in self.fields.items()})

    def made_from(self, value: Any, path: str) -> "Struct":
        """`value` (a dict of fields, or a message of this type) as a made
        message: a made one itself, a read one copied."""
        value = _as_field(value)
        if isinstance(value, Struct):
            if not self.same(value._def):
                raise TypeMismatchError(f"{path}: a {value._def.name} where a {self.name} goes")
            if value._vals is not None and value._def is self:
                return value
            value = value._values
        elif not isinstance(value, dict):
            raise InvalidArgumentError(f"{path or self.name}: must be a dict of {self.name}'s fields, "
                                       f"not {type(value).__name__}")
        for key in value:
            self.field(key, path)  # an unknown field is refused, naming it
        vals = {name: f.value(value[name], f"{path}.{name}" if path else name) if name in value else f.default()
                for name, f in self.fields.items()}
        return Struct(self, None, None, vals)


def _as_field(value: Any) -> Any:
    """`value`, to go into a field of another message: a message read
    through its trailing-array view is read the general way, as a field's
    type is."""
    if isinstance(value, Message) and value._type.tail is not None and value._vals is None:
        return Message(value._type._as_general(), value._buf, None)
    return value


def _constant_value(primitive: str, text: str) -> Any:
    if primitive == "string":
        return text
    if primitive == "bool":
        return text == "true"
    if primitive.startswith("float"):
        return float(text)
    return int(text)


class MessageType:
    """A message type: its name, hash and schema text, and what NumPy makes
    of it (``dtype`` for the fixed part, ``tail_dtype`` for the trailing
    array). ``MessageType.bytes()`` is the schema-less type of raw channels.
    """

    def __init__(self, name: str, hash: int, schema: str, general: bool = False) -> None:
        self.name = name
        self.hash = hash
        self.schema = schema
        self._root: _Definition | None = None
        # The same type read the general way (the trailing sequence a field
        # like any other): what a made message turns into when its trailing
        # array takes a new length (made once, when first needed).
        self._general_twin: MessageType | None = None
        self.tail: _Field | None = None
        # The trailing sequence's VarRef (uint32 offset, uint32 count) in
        # the fixed part; its elements are where the offset says.
        self._tail_ref_offset = 0
        # A string or sequence other than one trailing sequence of fixed
        # elements: each read through its VarRef (see the module's doc),
        # messages made through the JSON codec.
        self._general = False
        # The fixed part as the definition's defaults make it (made once).
        self._defaults: np.ndarray | None = None
        if general:
            self._general = True
        if schema and hash != 0:
            self._build(_shmbus.describe(schema))

    def _as_general(self) -> "MessageType":
        """This type, read the general way (equal to this one)."""
        if self._general:
            return self
        if self._general_twin is None:
            self._general_twin = MessageType(self.name, self.hash, self.schema, general=True)
        return self._general_twin

    @staticmethod
    def bytes() -> "MessageType":
        return MessageType("shmbus/Bytes", 0, "")

    @property
    def info(self) -> tuple[str, int, str]:
        """(name, hash, schema): what the C++ TypeInfo holds."""
        return (self.name, self.hash, self.schema)

    @property
    def has_schema(self) -> bool:
        return self._root is not None

    @property
    def dtype(self) -> np.dtype | None:
        """The fixed part's structured dtype (None without a schema)."""
        return self._root.dtype if self._root else None

    @property
    def size(self) -> int:
        """The fixed part's bytes (0 without a schema)."""
        return self._root.size if self._root else 0

    @property
    def tail_dtype(self) -> np.dtype | None:
        return self.tail.dtype if self.tail else None

    @property
    def fields(self) -> list[str]:
        names = list(self._root.fields) if self._root else ["data"]
        return names + ([self.tail.name] if self.tail else [])

    @property
    def constants(self) -> dict[str, Any]:
        return dict(self._root.constants) if self._root else {}

    def __repr__(self) -> str:
        return f"MessageType({self.name!r}, hash=0x{self.hash:016x})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessageType) and (self.name, self.hash) == (other.name, other.hash)

    def __hash__(self) -> int:
        return hash((self.name, self.hash))

    def _build(self, described: dict) -> None:
        types = described["types"]
        defs: dict[str, _Definition] = {}
        root = described["root"]
        # One trailing sequence of fixed elements in the root, and no other
        # string or sequence: the trailing-array view (writable); anything
        # else the general one.
        for name, t in types.items():
            for i, f in enumerate(t["fields"]):
                tail = name == root and i == len(t["fields"]) - 1 and f["unbounded"] and not f["variable"]
                if (f["kind"] == "ustring" or f["unbounded"] or f["variable"]) and not tail:
                    self._general = True
        # Each type after the types it nests (passes over the list, no
        # recursion; the schema library has refused cycles).
        remaining = dict(types)
        while remaining:
            ready = [n for n, t in remaining.items()
                     if all(f["message"] in defs for f in t["fields"] if f["kind"] == "message")]
            if not ready:
                raise InvalidArgumentError(f"{root}: its message types nest each other")
            for name in ready:
                defs[name] = self._definition(name, remaining.pop(name), defs)
        self._root = defs[described["root"]]

    def _definition(self, name: str, t: dict, defs: dict[str, _Definition]) -> _Definition:
        d = _Definition(name, t["size"], t["constants"])
        names, formats, offsets = [], [], []
        for f in t["fields"]:
            field = self._field(f, defs)
            field.path = f"{name}.{f['name']}"
            field.default_json = json.loads(f["default"]) if f["default"] else None
            if f["unbounded"] and not self._general:
                self.tail = field
                self._tail_ref_offset = f["offset"]
                continue
            slot = field.dtype
            field.unbounded, field.bound, field.align = f["unbounded"], f["sequence_bound"], f["element_align"]
            if field.variable:
                slot = _VARREF
                d.variable = True
            elif field.kind == "message" and field.definition.variable:
                d.variable = True
            names.append(f["name"])
            formats.append(slot if f["unbounded"] or not f["array_length"] else (slot, (f["array_length"],)))
            offsets.append(f["offset"])
            d.fields[f["name"]] = field
        d.dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": d.size})
        return d

    @staticmethod
    def _field(f: dict, defs: dict[str, _Definition]) -> _Field:
        if f["kind"] == "primitive":
            dt, definition, cap, text = np.dtype(_PRIMITIVES[f["primitive"]]), None, 0, f["primitive"]
        elif f["kind"] == "ustring":
            dt, definition, cap, text = _VARREF, None, 0, "string"
        elif f["kind"] == "string":
            dt, definition, cap, text = np.dtype(f"S{f['capacity']}"), None, f["capacity"], f"string<{f['capacity']}>"
        else:
            definition = defs[f["message"]]
            dt, cap, text = definition.dtype, 0, f["message"]
        return _Field(f["name"], f["kind"], dt, cap, f["array_length"], definition, text)

    # -- making messages ---------------------------------------------------

    def _tail_offset(self) -> int:
        """Where a message made here keeps its trailing elements: right
        after the fixed part, aligned for them."""
        a = self.tail.dtype.alignment
        return (self.size + a - 1) // a * a

    def wire_size(self, tail_length: int = 0) -> int:
        """Bytes of a message with `tail_length` trailing elements."""
        if self.tail is None:
            return self.size
        return self._tail_offset() + tail_length * self.tail.dtype.itemsize

    def _set_tail_ref(self, raw: np.ndarray, n: int) -> None:
        o = self._tail_ref_offset
        raw[o:o + 8].view("<u4")[:] = (self._tail_offset() if n else 0, n)

    def new(self, _fields: dict | None = None, /, **fields: Any) -> "Message":
        """A new message (writable) with the fields given, the others at
        the definition's defaults (zero where it gives none); the trailing
        array's length is the length of the value given for it."""
        given = dict(_fields or {}, **fields)
        if self._general:
            return Message._made(self, self._root.made_from(given, "")._vals)
        if self._root is None:
            data = given.pop("data", b"")
            if given:
                raise InvalidArgumentError(f"{self.name} has one field, data; not {', '.join(given)}")
            return Message(self, np.frombuffer(bytearray(data), _U1), None)
        tail_value = None
        if self.tail is not None and self.tail.name in given:
            tail_value = self._tail_array(given.pop(self.tail.name))
        n = 0 if tail_value is None else len(tail_value)
        raw = np.zeros(self.wire_size(n), _U1)
        if self._defaults is None:
            made = _shmbus.encode_json(self.schema, "{}")
            self._defaults = np.frombuffer(bytes(made), _U1)[:self.size].copy()
        raw[:self.size] = self._defaults
        msg = Message(self, raw, None)
        self._root.assign(msg._rec, given, "")
        if self.tail is not None:
            self._set_tail_ref(raw, n)
            if n:
                self._tail_view(raw, n)[:] = tail_value
        return msg

    def __call__(self, _fields: dict | None = None, /, **fields: Any) -> "Message":
        """new(): a type makes its messages as rclpy's classes do
        (``String(data="hi")``)."""
        return self.new(_fields, **fields)

    def _tail_array(self, value: Any) -> Any:
        t = self.tail
        path = t.name
        if t.kind == "primitive":
            if isinstance(value, (bytes, bytearray, memoryview)) and t.dtype.itemsize == 1:
                return np.frombuffer(value, t.dtype)
            a = _check_values(value, t.dtype, path)
            if a.ndim == 0:
                raise InvalidArgumentError(f"{path}: must be an array")
            return a.reshape(-1)
        vs = list(value)
        if len(vs) >= 1 << 32:
            raise InvalidArgumentError(f"{path}: {len(vs)} elements do not fit a uint32 count")
        out = np.zeros(len(vs), t.dtype)
        for i, v in enumerate(vs):
            if t.kind == "string":
                out[i] = _encode_string(v, t.capacity, f"{path}[{i}]")
            else:
                t.definition.assign(out[i:i + 1], v, f"{path}[{i}]")
        return out

    def _tail_view(self, raw: np.ndarray, n: int) -> np.ndarray:
        es = self.tail.dtype.itemsize
        start = _U32.unpack_from(raw, self._tail_ref_offset)[0] if n else self.size
        return raw[start:start + n * es].view(self.tail.dtype)

    def _tail_count(self, raw: np.ndarray) -> int:
        return _U32.unpack_from(raw, self._tail_ref_offset + 4)[0]

    def _check_tail(self, raw: np.ndarray) -> None:
        """The trailing sequence's VarRef points inside `raw`, after the
        fixed part, aligned (a message from elsewhere may lie)."""
        ref = {"offset": _U32.unpack_from(raw, self._tail_ref_offset)[0], "count": self._tail_count(raw)}
        _block((raw, self.size), ref, self.tail.dtype.itemsize, self.tail.dtype.alignment, 0,
               f"{self.name}.{self.tail.name}")

    def decode(self, data: Any, info: Any = None) -> "Message":
        """A message over `data` (bytes-like; not copied)."""
        raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, _U1)
        return Message(self, raw, info)

    def _schema(self) -> Any:
        """The schema, parsed once (what the encoder writes from)."""
        handle = self.__dict__.get("_schema_handle")
        if handle is None:
            handle = self._schema_handle = _shmbus.Schema(self.schema)
        return handle

    def _encode(self, values: Any) -> np.ndarray:
        """A made message's bytes, written by the schema's encoder."""
        return self._schema().encode(values)

    def __getattr__(self, name: str) -> Any:
        """A constant of the type as a class attribute (``PointField.FLOAT32``),
        as rclpy's message classes have them."""
        root = self.__dict__.get("_root")
        if root is not None and name in root.constants:
            return root.constants[name]
        raise AttributeError(f"{self.__dict__.get('name', 'MessageType')} has no constant or attribute '{name}'")


class Struct:
    """A message nested in another (or the fixed part of one): fields are
    attributes; arrays are NumPy views of the message's buffer. A made one
    (``_vals``) holds its fields' values instead (see the module's doc)."""

    __slots__ = ("_def", "_rec", "_ctx", "_vals")

    def __init__(self, definition: _Definition, rec: np.ndarray | None, ctx: tuple | None = None,
                 vals: dict | None = None) -> None:
        object.__setattr__(self, "_def", definition)
        if rec is not None:
            object.__setattr__(self, "_rec", rec)
        # (the message's bytes, its root's fixed size, the root message
        # (None: this is it), the path from the root): where a VarRef leads,
        # and where this view is in the root once the root is made.
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "_vals", vals)

    def _made_vals(self) -> dict | None:
        """The values of a made message, also for a view of a message made
        since the view was taken (it follows the root)."""
        vals = self._vals
        if vals is None:
            ctx = self._ctx
            root = ctx[2] if ctx is not None else None
            if root is not None and root._vals is not None:
                node: Any = root
                try:
                    for key in ctx[3]:
                        node = node[key] if isinstance(key, int) else node._vals[key]
                except (IndexError, KeyError, TypeError):
                    node = None
                if not isinstance(node, Struct) or node._vals is None:
                    raise InvalidArgumentError(f"{self._def.name}: this view's place in its message "
                                               f"({'.'.join(map(str, ctx[3]))}) was replaced; read it again")
                vals = node._vals
                object.__setattr__(self, "_vals", vals)
        return vals

    def _child(self, name: str) -> tuple | None:
        ctx = self._ctx
        return None if ctx is None else (ctx[0], ctx[1], ctx[2] if ctx[2] is not None else self, ctx[3] + (name,))

    def __getattr__(self, name: str) -> Any:
        d = object.__getattribute__(self, "_def")
        vals = self._made_vals()
        if vals is not None:
            if name in vals:
                return vals[name]
        else:
            f = d.fields.get(name)
            if f is not None:
                return f.get(self._rec, self._child(name) if f.kind == "message" else self._ctx)
        if name in d.constants:
            return d.constants[name]
        raise AttributeError(f"{d.name} has no field '{name}'; it has: {', '.join(d.fields)}")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self._def
        f = d.fields.get(name)
        if f is None:
            raise AttributeError(f"{d.name} has no field '{name}'; it has: {', '.join(d.fields)}")
        vals = self._made_vals()
        if vals is None:
            variable = f.variable or (f.kind == "message" and f.definition.variable)
            if not variable and self._rec.flags.writeable:
                f.set(self._rec, value, name)  # in place, in the message's bytes
                return
            root = self._ctx[2] if self._ctx is not None and self._ctx[2] is not None else self
            if not isinstance(root, Message) or root._shared or root._type.tail is not None:
                # In the ring (a view, a loan), or a trailing-array type read
                # from a channel: its bytes are what it is.
                raise InvalidArgumentError(f"{d.name}.{name}: the message is read-only (its bytes are shared or "
                                           f"read; copy it to change it: {d.name.split('/')[-1]}(msg.to_dict()))")
            root._make()
            vals = self._made_vals()
        vals[name] = f.value(value, name)

    def __dir__(self) -> list[str]:
        return list(self._def.fields) + list(self._def.constants)

    @property
    def _values(self) -> dict[str, Any]:
        """The fields' values: a made message's own, or read from the bytes
        (nested messages as views): what the encoder reads."""
        vals = self._made_vals()
        if vals is not None:
            return vals
        return {name: self.__getattr__(name) for name in self._def.fields}

    def to_dict(self, _budget: Any = None) -> dict[str, Any]:
        """The fields as plain Python values (lists for arrays)."""
        vals = self._made_vals()
        if vals is not None:
            return {name: _plain(v) for name, v in vals.items()}
        ctx = self._ctx
        if ctx is not None and _budget is None and self._def.variable:
            _budget = _shmbus.Budget(len(ctx[0]))
        return {name: f.to_python(self._rec, ctx, _budget) for name, f in self._def.fields.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and self._def.same(other._def) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"{self._def.name}({self.to_dict()!r:.200})"


def _plain(v: Any) -> Any:
    """A made message's value as plain Python values (to_dict)."""
    if isinstance(v, Struct):
        return v.to_dict()
    if isinstance(v, (np.ndarray, array.array)):
        return v.tolist()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


# A message's own attributes, each also as _NAME (a field of the name wins).
_OWN = frozenset({"type", "raw", "info"})


class Message(Struct):
    """One message: its fields as attributes (`msg.header.stamp_ns`), its
    trailing array as a NumPy array (`msg.data`), ``bytes(msg)`` its wire
    form, ``msg.info`` what the transport said (a shmbus.MessageInfo, or
    None for a message made here), ``msg.type`` its MessageType and
    ``msg.raw`` its bytes as a NumPy array. A field of one of those names
    wins (ROS 2's visualization_msgs/Marker has a ``type``,
    nav_msgs/OccupancyGrid an ``info``): ``msg._info``, ``msg._type`` and
    ``msg._raw`` are always these (no ROS 2 field starts with ``_``)."""

    __slots__ = ("_type", "_buf", "_info", "_shared")

    def __init__(self, mtype: MessageType, raw: np.ndarray, info: Any, shared: bool = False) -> None:
        # Few steps: an in-place callback pays each in cache misses.
        root = mtype._root
        if root is not None and len(raw) < root.size:
            raise InvalidArgumentError(
                f"{mtype.name}: {len(raw)} bytes are shorter than the {mtype.size} bytes of its fixed part")
        # The record view (`_rec`) is made on first use: a callback that only
        # wants the pixels does not pay for it.
        set_slot = object.__setattr__
        set_slot(self, "_def", root or _BYTES_DEF)
        set_slot(self, "_type", mtype)
        set_slot(self, "_buf", raw)
        set_slot(self, "_info", info)
        set_slot(self, "_shared", shared)  # in the ring (a view, a loan): never made
        set_slot(self, "_vals", None)
        set_slot(self, "_ctx", (raw, root.size, None, ()) if root is not None else None)
        if mtype.tail is not None:
            mtype._check_tail(raw)

    @classmethod
    def _made(cls, mtype: MessageType, vals: dict) -> "Message":
        """A message made here of a type with strings or sequences: its
        values, written when its bytes are asked for."""
        msg = cls.__new__(cls)
        set_slot = object.__setattr__
        set_slot(msg, "_def", mtype._root)
        set_slot(msg, "_type", mtype)
        set_slot(msg, "_buf", None)
        set_slot(msg, "_info", None)
        set_slot(msg, "_shared", False)
        set_slot(msg, "_vals", vals)
        set_slot(msg, "_ctx", None)
        return msg

    def _make(self) -> None:
        """Turns a message read from its bytes into a made one (its values
        read once); views taken of it before follow (_made_vals)."""
        if self._vals is None:
            vals = self._def.made_from(self, "")._vals
            object.__setattr__(self, "_vals", vals)
            object.__setattr__(self, "_buf", None)

    @property
    def _raw(self) -> np.ndarray:
        buf = self._buf
        return buf if buf is not None else self._type._encode(self._vals)

    def __getattr__(self, name: str) -> Any:
        t = object.__getattribute__(self, "_type")
        if name == "_rec":
            raw = object.__getattribute__(self, "_buf")
            rec = np.ndarray((1,), t._root.dtype, buffer=raw) if t._root else raw[:0]
            object.__setattr__(self, "_rec", rec)
            return rec
        if t._root is None and name == "data":
            return object.__getattribute__(self, "_buf")
        if t.tail is not None and name == t.tail.name and object.__getattribute__(self, "_vals") is None:
            raw = object.__getattribute__(self, "_buf")
            a = t._tail_view(raw, t._tail_count(raw))
            if t.tail.kind == "string":
                return [_decode_string(v.tobytes()) for v in a]
            if t.tail.kind == "message":
                return [Struct(t.tail.definition, a[i:i + 1]) for i in range(len(a))]
            return a
        root = t._root
        if name in _OWN and (root is None or (name not in root.fields and name not in root.constants)):
            return object.__getattribute__(self, "_" + name)
        return Struct.__getattr__(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        t = self._type
        if t.tail is not None and name == t.tail.name and self._vals is None:
            a = t._tail_array(value)
            n = t._tail_count(self._buf)
            if len(a) != n and not self._shared:
                # A message made here takes a new length, as rclpy's do: it
                # holds its values, read the general way, from now on
                # (written when sent).
                twin = t._as_general()
                vals = twin._root.made_from(Message(twin, self._buf, None), "")._vals
                set_slot = object.__setattr__
                set_slot(self, "_type", twin)
                set_slot(self, "_def", twin._root)
                set_slot(self, "_vals", vals)
                set_slot(self, "_buf", None)
                set_slot(self, "_ctx", None)
                Struct.__setattr__(self, name, value)
                return
            if len(a) != n:
                raise InvalidArgumentError(
                    f"{t.name}.{name}: has {n} elements; a message's trailing array keeps the length it was made "
                    f"with (make a new message: {t.name.split('/')[-1]}.new({name}=...))")
            t._tail_view(self._buf, n)[:] = a
            return
        Struct.__setattr__(self, name, value)

    def __bytes__(self) -> bytes:
        return self._raw.tobytes()

    def __len__(self) -> int:
        return len(self._raw)

    def to_dict(self, _budget: Any = None) -> dict[str, Any]:
        t = self._type
        if t._root is None:
            return {"data": self._buf.tolist()}
        out = Struct.to_dict(self, _budget)
        if t.tail is not None:
            v = self.__getattr__(t.tail.name)
            out[t.tail.name] = [x.to_dict() for x in v] if t.tail.kind == "message" else (
                v if isinstance(v, list) else v.tolist())
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and self._type == other._type and bytes(self) == bytes(other)

    def __dir__(self) -> list[str]:
        return self._type.fields + list(self._type.constants)

    def __repr__(self) -> str:
        return f"{self._type.name}({self.to_dict()!r:.200})"


_BYTES_DEF = _Definition("shmbus/Bytes", 0, [])
_BYTES_DEF.dtype = np.dtype({"names": [], "formats": [], "itemsize": 0})


# -- images ---------------------------------------------------------------

_ENCODINGS = {
    "mono8": ("u1", 1), "8UC1": ("u1", 1), "mono16": ("u2", 1), "16UC1": ("u2", 1),
    "rgb8": ("u1", 3), "bgr8": ("u1", 3), "8UC3": ("u1", 3),
    "rgba8": ("u1", 4), "bgra8": ("u1", 4), "8UC4": ("u1", 4),
    "rgb16": ("u2", 3), "bgr16": ("u2", 3), "16UC3": ("u2", 3),
    "32FC1": ("f4", 1), "32FC3": ("f4", 3), "64FC1": ("f8", 1),
}


_IMAGE_FIELDS = ("height", "width", "encoding", "is_bigendian", "step")
_PIXEL_DTYPES = {(base, big): np.dtype((">" if big else "<") + base)
                 for base, _ in set(_ENCODINGS.values()) for big in (False, True)}
_STRUCT_CODES = {"u1": "B", "u2": "H", "u4": "I", "u8": "Q", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
                 "f4": "f", "f8": "d", "b1": "?"}


def _image_layout(t: MessageType) -> tuple[struct.Struct, int, tuple[int, ...]] | None:
    """How to read an Image's fields in one struct call: (the Struct, its
    offset, where each of _IMAGE_FIELDS lands in the tuple); None when `t`
    is not an image type. Cached on the type."""
    layout = t.__dict__.get("_image_layout", False)
    if layout is False:
        layout = None
        fields = t.dtype.fields if t.dtype is not None else None
        if fields and t.tail is not None and t.tail.name == "data" and t.tail.dtype == _U1 and all(
                n in fields for n in _IMAGE_FIELDS):
            placed = sorted((fields[n][1], n, fields[n][0]) for n in _IMAGE_FIELDS)
            fmt, pos, order = "<", placed[0][0], []
            for offset, name, dt in placed:
                code = f"{dt.itemsize}s" if dt.kind == "S" else _STRUCT_CODES.get(dt.str[1:])
                if code is None or offset < pos:
                    break
                fmt += "x" * (offset - pos) + code
                pos = offset + dt.itemsize
                order.append(name)
            else:
                layout = (struct.Struct(fmt), placed[0][0], tuple(order.index(n) for n in _IMAGE_FIELDS))
        t._image_layout = layout
    return layout


def image_array(msg: Message) -> np.ndarray:
    """An image's pixels (a sensor_msgs/Image or a shmbus_msgs/Image) as a
    (height, width, channels) array over the message's own buffer (no copy;
    read-only for a view)."""
    t = msg._type
    layout = _image_layout(t)
    if layout is not None:  # the fixed fields in one struct call
        unpack, offset, order = layout
        raw = msg._raw
        values = unpack.unpack_from(raw, offset)
        h, w, enc, big, step = (values[i] for i in order)
        enc = _decode_string(enc)
        data = t._tail_view(raw, t._tail_count(raw))
    elif set(_IMAGE_FIELDS + ("data",)) <= set(t.fields):  # each field read where it lies
        h, w, big, step = (int(getattr(msg, n)) for n in ("height", "width", "is_bigendian", "step"))
        enc = msg.encoding
        data = msg.data
        if isinstance(data, (bytes, bytearray, memoryview, array.array)):
            data = np.frombuffer(data, _U1)  # a made message's
    else:
        raise InvalidArgumentError(f"image_array needs a sensor_msgs/Image or a shmbus_msgs/Image, not a {t.name}")
    pixel = _ENCODINGS.get(enc)
    if pixel is None:
        raise InvalidArgumentError(f"image encoding '{enc}' is not one of {', '.join(_ENCODINGS)}")
    base, channels = pixel
    dt = _PIXEL_DTYPES[base, bool(big)]
    if not isinstance(data, np.ndarray) or data.dtype != _U1:
        raise InvalidArgumentError(f"image_array needs {t.name}.data to be a uint8[]")
    if step < w * channels * dt.itemsize or len(data) < step * h:
        raise InvalidArgumentError(
            f"image of {h}x{w} {enc} with step {step} needs {step * h} bytes; the message holds {len(data)}")
    return np.ndarray((h, w, channels), dt, buffer=data, strides=(step, channels * dt.itemsize, dt.itemsize))


def image_encoding(array: np.ndarray, encoding: str) -> tuple[int, int, int]:
    """(height, width, step) of `array` for `encoding`, refused when the
    array does not hold that encoding's pixels."""
    if encoding not in _ENCODINGS:
        raise InvalidArgumentError(f"image encoding '{encoding}' is not one of {', '.join(_ENCODINGS)}")
    base, channels = _ENCODINGS[encoding]
    a = array if array.ndim == 3 else array.reshape(array.shape + (1,)) if array.ndim == 2 else None
    if a is None or a.shape[2] != channels or a.dtype.str[1:] != base:
        raise InvalidArgumentError(f"an image of {encoding} is a (height, width, {channels}) array of {base}, "
                                   f"not {array.shape} of {array.dtype}")
    return a.shape[0], a.shape[1], a.shape[1] * channels * a.dtype.itemsize


_RESOLVED: dict[tuple, MessageType] = {}


def type_of(value: "MessageType | str | None", msg_path: Iterable[str] | None = None) -> MessageType | None:
    """A MessageType from a MessageType, a name (package/Name, resolved in
    the shipped definitions, `msg_path`, then SHMBUS_MSG_PATH) or None."""
    if value is None or isinstance(value, MessageType):
        return value
    if isinstance(value, str):
        if value == "shmbus/Bytes":
            return MessageType.bytes()
        # Resolved once per name and path (a type is immutable; its dtypes
        # and parsed schema are made once).
        key = (value, tuple(msg_path or ()), os.environ.get("SHMBUS_MSG_PATH", ""))
        t = _RESOLVED.get(key)
        if t is None:
            t = MessageType(*_shmbus.resolve_type(value, list(msg_path or [])))
            if len(_RESOLVED) >= 256:
                _RESOLVED.pop(next(iter(_RESOLVED)))
            _RESOLVED[key] = t
        return t
    raise InvalidArgumentError(f"a message type is a name (package/Name) or a shmbus.MessageType, "
                               f"not {type(value).__name__}")


def encode(mtype: MessageType | None, obj: Any) -> Any:
    """What publish sends for `obj`: a Message's buffer, a dict encoded with
    the channel's type, or any bytes-like object as it is."""
    if isinstance(obj, Message):
        if mtype is not None and mtype.has_schema and obj._type != mtype:
            raise TypeMismatchError(f"a {obj._type.name} message on a channel of {mtype.name}")
        return obj._raw
    if isinstance(obj, dict):
        if mtype is None or not mtype.has_schema:
            raise InvalidArgumentError("a dict needs a channel type with a schema; publish bytes on a raw channel")
        return mtype.new(obj)._raw
    if isinstance(obj, (str, int, float, list, tuple)) or obj is None:
        raise InvalidArgumentError(
            f"publish takes a shmbus.Message, a dict of fields or a bytes-like object, not {type(obj).__name__}")
    try:
        view = memoryview(obj)
    except TypeError:
        raise InvalidArgumentError(
            f"publish takes a shmbus.Message, a dict of fields or a bytes-like object, not {type(obj).__name__}"
        ) from None
    if mtype is not None and mtype.has_schema and view.nbytes < mtype.size:
        raise InvalidArgumentError(
            f"{view.nbytes} bytes are shorter than the {mtype.size} bytes of a {mtype.name}'s fixed part")
    return obj
