"""rclpy.parameter on shmbus: Parameter and its Type."""

from __future__ import annotations

import enum
from typing import Any


class ParameterValue:
    """rclpy's ParameterValue (``get_parameter_value().string_value``)."""

    def __init__(self, value: Any) -> None:
        def all_of(kind: type) -> bool:
            return isinstance(value, (list, tuple)) and all(
                isinstance(x, kind) and (kind is bool or not isinstance(x, bool)) for x in value)

        self.type = Parameter.Type.from_parameter_value(value)
        self.bool_value = value if isinstance(value, bool) else False
        self.integer_value = value if isinstance(value, int) and not isinstance(value, bool) else 0
        self.double_value = float(value) if isinstance(value, float) else 0.0
        self.string_value = value if isinstance(value, str) else ""
        self.byte_array_value = list(value) if isinstance(value, (bytes, bytearray)) else []
        self.bool_array_value = list(value) if all_of(bool) else []
        self.integer_array_value = list(value) if all_of(int) else []
        self.double_array_value = list(value) if all_of(float) else []
        self.string_array_value = list(value) if all_of(str) else []


class Parameter:
    """A node's parameter (rclpy.parameter.Parameter): its name, type and
    value."""

    class Type(enum.IntEnum):
        NOT_SET = 0
        BOOL = 1
        INTEGER = 2
        DOUBLE = 3
        STRING = 4
        BYTE_ARRAY = 5
        BOOL_ARRAY = 6
        INTEGER_ARRAY = 7
        DOUBLE_ARRAY = 8
        STRING_ARRAY = 9

        @classmethod
        def from_parameter_value(cls, value: Any) -> "Parameter.Type":
            if value is None:
                return cls.NOT_SET
            if isinstance(value, bool):
                return cls.BOOL
            if isinstance(value, int):
                return cls.INTEGER
            if isinstance(value, float):
                return cls.DOUBLE
            if isinstance(value, str):
                return cls.STRING
            if isinstance(value, (bytes, bytearray)):
                return cls.BYTE_ARRAY
            if isinstance(value, (list, tuple)) and value:
                first = value[0]
                for kind, t in ((bool, cls.BOOL_ARRAY), (int, cls.INTEGER_ARRAY), (float, cls.DOUBLE_ARRAY),
                                (str, cls.STRING_ARRAY)):
                    if isinstance(first, kind):
                        return t
            raise TypeError(f"a parameter's value is a bool, int, float, str, bytes or a list of one of them, "
                            f"not {value!r:.60}")

    def __init__(self, name: str, type_: "Parameter.Type | None" = None, value: Any = None) -> None:
        if type_ is None:
            type_ = Parameter.Type.from_parameter_value(value)
        self.name = name
        self.type_ = type_
        self.value = value

    def get_parameter_value(self) -> ParameterValue:
        return ParameterValue(self.value)

    def __repr__(self) -> str:
        return f"Parameter({self.name!r}, {self.type_.name}, {self.value!r})"


__all__ = ["Parameter", "ParameterValue"]
