"""rclpy.time on shmbus."""

from .._time import Time

__all__ = ["Time"]
