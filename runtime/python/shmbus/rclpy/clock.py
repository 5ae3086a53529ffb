"""rclpy.clock on shmbus."""

from .._time import Clock

__all__ = ["Clock"]
