"""rclpy.qos on shmbus. A profile's depth sizes what a channel keeps
(create_publisher) and, with TRANSIENT_LOCAL durability, how many earlier
messages a subscription gets when it joins (a latched topic). The rest
has one meaning here: delivery is always reliable within a channel's ring
(a reader that falls behind by more than the ring counts its losses), and
deadline, lifespan and liveliness are not enforced."""

from __future__ import annotations

import enum
from typing import Any


class HistoryPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    KEEP_LAST = 1
    KEEP_ALL = 2
    UNKNOWN = 3


class ReliabilityPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    RELIABLE = 1
    BEST_EFFORT = 2
    UNKNOWN = 3
    BEST_AVAILABLE = 4


class DurabilityPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    TRANSIENT_LOCAL = 1
    VOLATILE = 2
    UNKNOWN = 3
    BEST_AVAILABLE = 4


class LivelinessPolicy(enum.IntEnum):
    SYSTEM_DEFAULT = 0
    AUTOMATIC = 1
    MANUAL_BY_TOPIC = 3
    UNKNOWN = 4
    BEST_AVAILABLE = 5


class QoSProfile:
    """rclpy's QoSProfile: ``depth`` (or ``history=KEEP_LAST`` with one) is
    what shmbus uses; see the module's doc for the rest."""

    def __init__(self, *, depth: int | None = None, history: Any = HistoryPolicy.KEEP_LAST,
                 reliability: Any = ReliabilityPolicy.RELIABLE, durability: Any = DurabilityPolicy.VOLATILE,
                 **others: Any) -> None:
        if depth is None and history == HistoryPolicy.KEEP_ALL:
            depth = 1000
        if depth is None:
            raise ValueError("QoSProfile needs a depth (or history=KEEP_ALL)")
        self.depth = depth
        self.history = history
        self.reliability = reliability
        self.durability = durability
        for k, v in others.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return (f"QoSProfile(depth={self.depth}, history={self.history!r}, reliability={self.reliability!r}, "
                f"durability={self.durability!r})")


qos_profile_sensor_data = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
qos_profile_system_default = QoSProfile(depth=10)
qos_profile_services_default = QoSProfile(depth=10)
qos_profile_parameters = QoSProfile(depth=1000)
qos_profile_parameter_events = QoSProfile(depth=1000)
QoSReliabilityPolicy = ReliabilityPolicy
QoSHistoryPolicy = HistoryPolicy
QoSDurabilityPolicy = DurabilityPolicy
QoSLivelinessPolicy = LivelinessPolicy

__all__ = ["DurabilityPolicy", "HistoryPolicy", "LivelinessPolicy", "QoSProfile", "ReliabilityPolicy",
           "qos_profile_sensor_data", "qos_profile_system_default"]
