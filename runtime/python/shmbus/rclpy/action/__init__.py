"""rclpy.action on shmbus: ActionServer and ActionClient in rclpy's shape
over shmbus's actions (the C++ shmbus::action, one implementation for both
languages). docs/actions.md."""

from .client import ActionClient, ClientGoalHandle
from .server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle

__all__ = ["ActionClient", "ActionServer", "CancelResponse", "ClientGoalHandle", "GoalResponse", "ServerGoalHandle"]
