"""rclpy.logging on shmbus: a node's logger with rclpy's keyword arguments
(``once``, ``skip_first``, ``throttle_duration_sec``), writing through
Python's logging to stderr as a shmbus node's own lines."""

from __future__ import annotations

import enum
import logging as _logging
import sys
import time
from typing import Any


class LoggingSeverity(enum.IntEnum):
    UNSET = 0
    DEBUG = 10
    INFO = 20
    WARN = 30
    ERROR = 40
    FATAL = 50


# A call site's last emission, per logger (once, skip_first, throttle).
_seen: dict[tuple, float] = {}


class RcutilsLogger:
    """What ``node.get_logger()`` returns in rclpy: debug, info, warning
    (warn), error and fatal, each taking a message and rclpy's conditions."""

    def __init__(self, logger: _logging.Logger) -> None:
        self._logger = logger
        self.name = logger.name

    def _log(self, level: int, message: Any, once: bool = False, skip_first: bool = False,
             throttle_duration_sec: float | None = None, **_: Any) -> bool:
        site = self.name, sys._getframe(2).f_code, sys._getframe(2).f_lineno
        now = time.monotonic()
        last = _seen.get(site)
        _seen[site] = now if last is None or not (once or skip_first) else last
        if once and last is not None:
            return False
        if skip_first and last is None:
            return False
        if throttle_duration_sec is not None and last is not None and now - last < throttle_duration_sec:
            _seen[site] = last
            return False
        self._logger.log(level, message)
        return True

    def debug(self, message: Any, **kwargs: Any) -> bool:
        return self._log(_logging.DEBUG, message, **kwargs)

    def info(self, message: Any, **kwargs: Any) -> bool:
        return self._log(_logging.INFO, message, **kwargs)

    def warning(self, message: Any, **kwargs: Any) -> bool:
        return self._log(_logging.WARNING, message, **kwargs)

    warn = warning

    def error(self, message: Any, **kwargs: Any) -> bool:
        return self._log(_logging.ERROR, message, **kwargs)

    def fatal(self, message: Any, **kwargs: Any) -> bool:
        return self._log(_logging.CRITICAL, message, **kwargs)

    def set_level(self, level: int) -> bool:
        self._logger.setLevel(int(level) or _logging.NOTSET)
        return True

    def get_effective_level(self) -> LoggingSeverity:
        return LoggingSeverity(min(self._logger.getEffectiveLevel(), 50))

    def is_enabled_for(self, severity: int) -> bool:
        return self._logger.isEnabledFor(int(severity))

    def get_child(self, name: str) -> "RcutilsLogger":
        return RcutilsLogger(self._logger.getChild(name))


def get_logger(name: str) -> RcutilsLogger:
    """A logger of its own name (``shmbus: node "NAME": [INFO] ...``)."""
    from .. import _node_logger
    return RcutilsLogger(_node_logger(name))


__all__ = ["LoggingSeverity", "RcutilsLogger", "get_logger"]
