"""rclpy.executors on shmbus: the executors and ExternalShutdownException.
An executor serves its nodes on the calling thread (one node) or one
thread per node; a node's callbacks run one at a time."""

from __future__ import annotations

import threading
from typing import Any

from .. import ExternalShutdownException
from .node import Node

__all__ = ["Executor", "ExternalShutdownException", "MultiThreadedExecutor", "SingleThreadedExecutor"]


class Executor:
    def __init__(self, *, context: Any = None, num_threads: int | None = None) -> None:
        self._nodes: list[Node] = []
        self._stopped = False

    def add_node(self, node: Node) -> bool:
        if node not in self._nodes:
            self._nodes.append(node)
        return True

    def remove_node(self, node: Node) -> None:
        if node in self._nodes:
            self._nodes.remove(node)

    def get_nodes(self) -> list[Node]:
        return list(self._nodes)

    def spin(self) -> None:
        """Until shutdown(), rclpy.shutdown(), an exception, Ctrl-C or SIGTERM."""
        if len(self._nodes) == 1:
            self._nodes[0].spin()
            return
        threads = [threading.Thread(target=n.spin, name=f"spin {n.name}", daemon=True) for n in self._nodes[1:]]
        for t in threads:
            t.start()
        try:
            if self._nodes:
                self._nodes[0].spin()
        finally:
            for n in self._nodes:
                n.stop()
            for t in threads:
                t.join(1.0)

    def spin_once(self, timeout_sec: float | None = None) -> None:
        for n in self._nodes:
            if n.spin_once(timeout_sec if len(self._nodes) == 1 else 0.0):
                return

    def spin_until_future_complete(self, future: Any, timeout_sec: float | None = None) -> None:
        from . import spin_until_future_complete
        for n in self._nodes[:1]:
            spin_until_future_complete(n, future, timeout_sec=timeout_sec)

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        for n in self._nodes:
            n.stop()
        return True


class SingleThreadedExecutor(Executor):
    pass


class MultiThreadedExecutor(Executor):
    pass
