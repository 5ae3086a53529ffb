"""Time, Duration, Clock and Future as rclpy has them (``rclpy.time``,
``rclpy.duration``, ``rclpy.clock``, ``rclpy.task``): what a node's
``get_clock().now().to_msg()`` and a client's ``call_async`` give."""

from __future__ import annotations

import threading
import time as _time
from typing import Any, Callable

_NS = 1_000_000_000


class Duration:
    """A span of time in nanoseconds (rclpy.duration.Duration)."""

    def __init__(self, *, seconds: float = 0, nanoseconds: int = 0) -> None:
        self.nanoseconds = int(seconds * _NS) + int(nanoseconds)

    def to_msg(self) -> Any:
        """A builtin_interfaces/Duration message."""
        from ._messages import type_of
        sec, nanosec = divmod(self.nanoseconds, _NS)
        return type_of("builtin_interfaces/Duration")(sec=sec, nanosec=nanosec)  # type: ignore[misc]

    @classmethod
    def from_msg(cls, msg: Any) -> "Duration":
        return cls(seconds=msg.sec, nanoseconds=msg.nanosec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and self.nanoseconds == other.nanoseconds

    def __lt__(self, other: "Duration") -> bool:
        return self.nanoseconds < other.nanoseconds

    def __hash__(self) -> int:
        return hash(self.nanoseconds)

    def __repr__(self) -> str:
        return f"Duration(nanoseconds={self.nanoseconds})"


class Time:
    """A point in time in nanoseconds since the epoch (rclpy.time.Time)."""

    def __init__(self, *, seconds: float = 0, nanoseconds: int = 0, clock_type: str = "ROS_TIME") -> None:
        self.nanoseconds = int(seconds * _NS) + int(nanoseconds)
        self.clock_type = clock_type

    def seconds_nanoseconds(self) -> tuple[int, int]:
        return divmod(self.nanoseconds, _NS)

    def to_msg(self) -> Any:
        """A builtin_interfaces/Time message (``header.stamp = ...``)."""
        from ._messages import type_of
        sec, nanosec = self.seconds_nanoseconds()
        return type_of("builtin_interfaces/Time")(sec=sec, nanosec=nanosec)  # type: ignore[misc]

    @classmethod
    def from_msg(cls, msg: Any, clock_type: str = "ROS_TIME") -> "Time":
        return cls(seconds=msg.sec, nanoseconds=msg.nanosec, clock_type=clock_type)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Time):
            return Duration(nanoseconds=self.nanoseconds - other.nanoseconds)
        return Time(nanoseconds=self.nanoseconds - other.nanoseconds, clock_type=self.clock_type)

    def __add__(self, other: Duration) -> "Time":
        return Time(nanoseconds=self.nanoseconds + other.nanoseconds, clock_type=self.clock_type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and self.nanoseconds == other.nanoseconds

    def __lt__(self, other: "Time") -> bool:
        return self.nanoseconds < other.nanoseconds

    def __hash__(self) -> int:
        return hash(self.nanoseconds)

    def __repr__(self) -> str:
        return f"Time(nanoseconds={self.nanoseconds}, clock_type={self.clock_type})"


class Clock:
    """A node's clock (rclpy.clock.Clock): the system's wall clock
    (CLOCK_REALTIME), which is ROS_TIME where no simulated time is set."""

    def __init__(self, clock_type: str = "ROS_TIME") -> None:
        self.clock_type = clock_type

    def now(self) -> Time:
        return Time(nanoseconds=_time.time_ns(), clock_type=self.clock_type)


class Future:
    """The outcome of something that finishes later (rclpy.task.Future):
    ``done()``, ``result()`` (None until done; raises the exception a
    failed one holds), ``exception()``, ``add_done_callback(cb)`` (cb(future),
    on the thread that completes it, or at once when it is done),
    ``cancel()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._result: Any = None
        self._exception: BaseException | None = None
        self._cancelled = False
        self._callbacks: list[Callable[[Future], Any]] = []

    def done(self) -> bool:
        return self._event.is_set()

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        self._finish(cancelled=True)

    def result(self) -> Any:
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self) -> BaseException | None:
        return self._exception

    def set_result(self, result: Any) -> None:
        self._result = result
        self._finish()

    def set_exception(self, exception: BaseException) -> None:
        self._exception = exception
        self._finish()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until done or `timeout` seconds; whether it is done."""
        return self._event.wait(timeout)

    def _finish(self, cancelled: bool = False) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._cancelled = cancelled
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback: Callable[["Future"], Any]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self) -> str:
        state = "cancelled" if self._cancelled else "done" if self.done() else "pending"
        return f"<shmbus.Future {state}>"
