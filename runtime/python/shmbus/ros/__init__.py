"""ROS 2's interface packages as rclpy imports them: ``from
shmbus.ros.std_msgs.msg import String`` and ``from
shmbus.ros.example_interfaces.srv import AddTwoInts``. Each name is
resolved when it is first imported, as ``shmbus.message_type`` and
``shmbus.service_type`` resolve it (the shipped definitions, then
SHMBUS_MSG_PATH); a service type has ``Request`` and ``Response``, an
action type (``from shmbus.ros.action_tutorials_interfaces.action import
Fibonacci``) ``Goal``, ``Result`` and ``Feedback``."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

from .._messages import type_of
from ..errors import Error

_KINDS = ("msg", "srv", "action")


class _Interfaces(types.ModuleType):
    """``PKG.msg``, ``PKG.srv`` or ``PKG.action``: its types, resolved on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        package, kind = self.__name__.split(".")[-2:]
        full = f"{package}/{kind}/{name}"
        try:
            if kind == "msg":
                value: Any = type_of(full)
            elif kind == "srv":
                from .. import service_type
                value = service_type(full)
            else:
                from .. import action_type
                value = action_type(full)
        except Error as e:
            raise ImportError(f"cannot import {name} from {self.__name__}: {e}") from None
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        parts = fullname.split(".")
        if parts[:2] != ["shmbus", "ros"] or len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] not in _KINDS):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=len(parts) == 3)

    def create_module(self, spec: Any) -> types.ModuleType:
        if spec.name.count(".") == 3:
            return _Interfaces(spec.name)
        module = types.ModuleType(spec.name)
        module.__path__ = []  # a package: PKG.msg and PKG.srv below it
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())
