"""rclpy's API on shmbus: a script written for rclpy runs with its imports
changed to these (docs/python.md, "rclpy scripts")::

    import shmbus.rclpy as rclpy
    from shmbus.rclpy.node import Node
    from shmbus.rclpy.executors import ExternalShutdownException
    from shmbus.ros.std_msgs.msg import String

``init`` (also ``with rclpy.init():``), ``shutdown``, ``ok``,
``create_node``, ``spin``, ``spin_once`` (waiting, as rclpy's does),
``spin_until_future_complete``. SIGTERM raises ExternalShutdownException
from what the program waits in, as in rclpy; Ctrl-C KeyboardInterrupt.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .. import ExternalShutdownException, Future, _handle_sigterm
from ..errors import InvalidArgumentError
from . import executors, logging, node, parameter, qos, task
from .node import Node
from .parameter import Parameter

__all__ = ["ExternalShutdownException", "Future", "Node", "Parameter", "create_node", "executors", "get_logger", "init",
           "logging", "node", "ok", "parameter", "qos", "shutdown", "spin", "spin_once", "spin_until_future_complete",
           "task", "try_shutdown"]


class Context:
    """rclpy's Context: initialized by init(), ended by shutdown(). Leaving
    a ``with rclpy.init():`` block shuts it down."""

    def __init__(self) -> None:
        self._ok = False
        self._lock = threading.Lock()

    def ok(self) -> bool:
        return self._ok

    def init(self, args: Any = None, **_: Any) -> "Context":
        with self._lock:
            if self._ok:
                raise RuntimeError("rclpy.init() was called already; call rclpy.shutdown() first")
            self._ok = True
        _handle_sigterm()
        return self

    def shutdown(self) -> None:
        with self._lock:
            if not self._ok:
                raise RuntimeError("rclpy.shutdown() without rclpy.init()")
            self._ok = False
        for n in list(node._nodes):
            n.stop()

    def try_shutdown(self) -> None:
        if self._ok:
            self.shutdown()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.try_shutdown()


_default = Context()


def init(*, args: Any = None, context: Context | None = None, domain_id: int | None = None,
         signal_handler_options: Any = None) -> Context:
    """Starts rclpy's default context (``with rclpy.init():`` shuts it down
    at the block's end). `args` and `domain_id` mean nothing on shmbus (its
    domain is SHMBUS_DOMAIN)."""
    return (context or _default).init(args)


def shutdown(*, context: Context | None = None, uninstall_handlers: bool | None = None) -> None:
    """Ends the context: every node's spin returns, ok() is False."""
    (context or _default).shutdown()


def try_shutdown(*, context: Context | None = None, uninstall_handlers: bool | None = None) -> None:
    (context or _default).try_shutdown()


def ok(*, context: Context | None = None) -> bool:
    return (context or _default).ok()


def get_default_context() -> Context:
    return _default


def get_logger(name: str) -> "logging.RcutilsLogger":
    return logging.get_logger(name)


def create_node(node_name: str, **kwargs: Any) -> Node:
    return Node(node_name, **kwargs)


def _executor(executor: Any, n: Node) -> Any:
    if executor is None:
        return None
    executor.add_node(n)
    return executor


def spin(node: Node, executor: Any = None) -> None:
    """Runs the node's callbacks until shutdown(), an exception, Ctrl-C
    (KeyboardInterrupt) or SIGTERM (ExternalShutdownException)."""
    e = _executor(executor, node)
    if e is not None:
        e.spin()
        return
    _spin_checked(node)


def _spin_checked(n: Node) -> None:
    if not ok():
        raise InvalidArgumentError("rclpy.spin() before rclpy.init(): call rclpy.init() first")
    n.spin()


def spin_once(node: Node, *, executor: Any = None, timeout_sec: float | None = None) -> None:
    """Runs one ready callback, waiting up to `timeout_sec` (None: until
    there is one), as rclpy's spin_once."""
    e = _executor(executor, node)
    if e is not None:
        e.spin_once(timeout_sec=timeout_sec)
        return
    node.spin_once(timeout_sec)


def spin_until_future_complete(node: Node, future: Future, executor: Any = None,
                               timeout_sec: float | None = None) -> None:
    """Runs the node's callbacks until `future` is done or `timeout_sec`
    passes (None: no limit)."""
    deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
    while not future.done() and ok():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return
        node.spin_once(0.05 if left is None else min(left, 0.05))


