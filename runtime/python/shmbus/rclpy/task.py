"""rclpy.task on shmbus: Future."""

from .._time import Future

__all__ = ["Future"]
