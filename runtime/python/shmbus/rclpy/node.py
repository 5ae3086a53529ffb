"""rclpy.node on shmbus: Node, as rclpy's (shmbus.Node already answers to
rclpy's names; this one takes rclpy's constructor, parameters, and waits
in spin_once as rclpy does)."""

from __future__ import annotations

import time
import weakref
from typing import Any, Callable

from .. import Node as _ShmbusNode
from .. import ServiceClient, _shmbus_options, channels
from .._time import Future
from ..errors import InvalidArgumentError, NotFoundError
from .logging import RcutilsLogger
from .parameter import Parameter

# Every rclpy node alive: rclpy.shutdown() stops their spins.
_nodes: "weakref.WeakSet[Node]" = weakref.WeakSet()


class Node(_ShmbusNode):
    """rclpy's Node: ``Node(node_name)``; ``namespace`` prefixes its
    relative names. Parameters live in the node (declare_parameter,
    get_parameter, set_parameters; ``parameter_overrides`` set them);
    they are not served to other processes."""

    def __init__(self, node_name: str, *, context: Any = None, cli_args: Any = None, namespace: str | None = None,
                 use_global_arguments: bool = True, enable_rosout: bool = True, start_parameter_services: bool = True,
                 parameter_overrides: list[Parameter] | None = None,
                 allow_undeclared_parameters: bool = False,
                 automatically_declare_parameters_from_overrides: bool = False, **_: Any) -> None:
        super().__init__(node_name)
        self._namespace = "/" + namespace.strip("/") if namespace and namespace.strip("/") else ""
        self._overrides = {p.name: p.value for p in parameter_overrides or []}
        self._parameters: dict[str, Parameter] = {}
        self._undeclared_ok = allow_undeclared_parameters
        if automatically_declare_parameters_from_overrides:
            for name, value in self._overrides.items():
                self.declare_parameter(name, value)
        _nodes.add(self)

    def _resolve(self, name: str) -> str:
        if self._namespace and not name.startswith(("/", "~")):
            name = f"{self._namespace}/{name}"
        return super()._resolve(name)

    def get_logger(self) -> RcutilsLogger:  # type: ignore[override]
        """rclpy's logger: info(), warn(), ... with once, skip_first and
        throttle_duration_sec."""
        return RcutilsLogger(super().get_logger())

    def create_rate(self, frequency: float, clock: Any = None) -> "Rate":
        """rclpy's Rate: ``sleep()`` until the next period (wall clock)."""
        return Rate(frequency)

    def count_publishers(self, topic_name: str) -> int:
        return self._channel(topic_name).get("publishers", 0)

    def count_subscribers(self, topic_name: str) -> int:
        return self._channel(topic_name).get("subscribers", 0)

    def get_topic_names_and_types(self, no_demangle: bool = False) -> list[tuple[str, list[str]]]:
        """The domain's channels and their types (``package/msg/Name``)."""
        return sorted((c["name"], [_ros_type(c.get("type", ""))]) for c in channels() if "error" not in c)

    def _channel(self, topic_name: str) -> dict[str, Any]:
        name = self._resolve(topic_name)
        return next((c for c in channels() if c.get("name") == name), {})

    def get_namespace(self) -> str:
        return self._namespace or "/"

    def get_fully_qualified_name(self) -> str:
        return f"{self._namespace}/{self.name}"

    def spin_once(self, timeout: float | None = None) -> int:  # type: ignore[override]
        """Runs what is ready, waiting up to `timeout` seconds (None: until
        a callback runs), as rclpy's spin_once."""
        return super().spin_once(timeout)

    def create_client(self, srv_type: Any, srv_name: str, **options: Any) -> ServiceClient:
        return super().create_client(srv_type, srv_name, **_shmbus_options(options))

    def create_service(self, srv_type: Any, srv_name: str, callback: Callable[[Any, Any], Any], **options: Any) -> Any:
        return super().create_service(srv_type, srv_name, callback, **_shmbus_options(options))

    def destroy_publisher(self, publisher: Any) -> bool:
        publisher.close()
        return True

    def destroy_subscription(self, subscription: Any) -> bool:
        subscription.cancel()
        return True

    def destroy_timer(self, timer: Any) -> bool:
        timer.cancel()
        return True

    def destroy_client(self, client: ServiceClient) -> bool:
        client.close()
        return True

    def destroy_service(self, service: Any) -> bool:
        service.close()
        return True

    # -- parameters --------------------------------------------------------

    def declare_parameter(self, name: str, value: Any = None, descriptor: Any = None,
                          ignore_override: bool = False) -> Parameter:
        if name in self._parameters:
            raise InvalidArgumentError(f"parameter {name!r} of node {self.name} is declared already")
        if isinstance(value, Parameter.Type):
            value = None  # declared by its type alone
        if not ignore_override and name in self._overrides:
            value = self._overrides[name]
        p = self._parameters[name] = Parameter(name, value=value)
        return p

    def undeclare_parameter(self, name: str) -> None:
        self._parameters.pop(name, None)

    def declare_parameters(self, namespace: str, parameters: list[tuple]) -> list[Parameter]:
        prefix = f"{namespace}." if namespace else ""
        return [self.declare_parameter(prefix + p[0], p[1] if len(p) > 1 else None) for p in parameters]

    def has_parameter(self, name: str) -> bool:
        return name in self._parameters

    def get_parameter(self, name: str) -> Parameter:
        p = self._parameters.get(name)
        if p is None:
            if self._undeclared_ok:
                return Parameter(name)
            raise NotFoundError(f"parameter {name!r} of node {self.name} is not declared; declare_parameter() it")
        return p

    def get_parameters(self, names: list[str]) -> list[Parameter]:
        return [self.get_parameter(n) for n in names]

    def get_parameter_or(self, name: str, alternative_value: Parameter | None = None) -> Parameter | None:
        return self._parameters.get(name, alternative_value)

    def set_parameters(self, parameters: list[Parameter]) -> list[Any]:
        for p in parameters:
            if p.name not in self._parameters and not self._undeclared_ok:
                raise NotFoundError(f"parameter {p.name!r} of node {self.name} is not declared")
            self._parameters[p.name] = Parameter(p.name, p.type_, p.value)
        return [_Result() for _ in parameters]


class Rate:
    """rclpy's Rate: sleep() returns at the next multiple of the period
    (periods that passed meanwhile are skipped)."""

    def __init__(self, frequency: float) -> None:
        if not frequency > 0:
            raise InvalidArgumentError(f"a rate's frequency must be above 0 Hz, not {frequency}")
        self._period = 1.0 / frequency
        self._next = time.monotonic() + self._period

    def sleep(self) -> None:
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
        self._next += self._period * max(1, int((time.monotonic() - self._next) / self._period) + 1)

    def destroy(self) -> None:
        pass


def _ros_type(name: str) -> str:
    """``pkg/Name`` as ROS 2 spells a message type: ``pkg/msg/Name``."""
    parts = name.split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else name


class _Result:
    successful = True
    reason = ""


__all__ = ["Future", "Node", "Parameter"]
