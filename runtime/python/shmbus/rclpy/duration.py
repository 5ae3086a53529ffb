"""rclpy.duration on shmbus."""

from .._time import Duration

__all__ = ["Duration"]
