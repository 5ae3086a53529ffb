"""rclpy.action.server on shmbus: ActionServer and ServerGoalHandle."""

from __future__ import annotations

import sys
import threading
from enum import IntEnum
from typing import Any, Callable

from ... import ActionType, _shmbus, action_type, message_type
from ..._messages import Message, MessageType, encode

# action_msgs/GoalStatus's states.
STATUS_UNKNOWN, STATUS_ACCEPTED, STATUS_EXECUTING, STATUS_CANCELING = 0, 1, 2, 3
STATUS_SUCCEEDED, STATUS_CANCELED, STATUS_ABORTED = 4, 5, 6


class GoalResponse(IntEnum):
    REJECT = 1
    ACCEPT = 2


class CancelResponse(IntEnum):
    REJECT = 1
    ACCEPT = 2


def default_goal_callback(goal_request: Any) -> GoalResponse:
    return GoalResponse.ACCEPT


def default_cancel_callback(cancel_request: Any) -> CancelResponse:
    return CancelResponse.REJECT


def default_handle_accepted_callback(goal_handle: "ServerGoalHandle") -> None:
    goal_handle.execute()


def _uuid(type_: MessageType, goal_id: bytes) -> Any:
    return type_.new({"uuid": list(goal_id)})


class ServerGoalHandle:
    """One accepted goal: ``request`` (its goal), ``goal_id``, ``status``,
    ``is_active``, ``is_cancel_requested``; ``publish_feedback``, then
    ``succeed()``, ``abort()`` or ``canceled()``; the result is what the
    execute callback returns."""

    def __init__(self, server: "ActionServer", goal_id: bytes, request: Any) -> None:
        self._server = server
        self._id = goal_id
        self.request = request
        self._ending: int | None = None

    @property
    def goal_id(self) -> Any:
        return _uuid(self._server._uuid_type, self._id)

    @property
    def status(self) -> int:
        return int(self._server._live().status(self._id))

    @property
    def is_active(self) -> bool:
        return self.status in (STATUS_ACCEPTED, STATUS_EXECUTING, STATUS_CANCELING)

    @property
    def is_cancel_requested(self) -> bool:
        return self.status == STATUS_CANCELING

    def execute(self, execute_callback: Callable[["ServerGoalHandle"], Any] | None = None) -> None:
        """Starts the goal: its execute callback runs on a thread of its own
        (rclpy's MultiThreadedExecutor runs it beside the node's callbacks)."""
        self._server._live().execute(self._id)
        callback = execute_callback or self._server._execute_callback
        threading.Thread(target=self._server._run, args=(self, callback), daemon=True,
                         name=f"shmbus goal {self._id.hex()[:8]}").start()

    def publish_feedback(self, feedback: Any) -> None:
        fb = self._server._types.Impl.FeedbackMessage
        message = fb.new({"goal_id": {"uuid": list(self._id)}, "feedback": feedback})
        self._server._live().publish_feedback(self._id, encode(fb, message))

    def succeed(self) -> None:
        self._ending = STATUS_SUCCEEDED

    def abort(self) -> None:
        self._ending = STATUS_ABORTED

    def canceled(self) -> None:
        self._ending = STATUS_CANCELED

    def destroy(self) -> None:
        pass


class ActionServer:
    """rclpy's ActionServer: ``ActionServer(node, Fibonacci, 'fibonacci',
    execute_callback)``, with goal_callback(goal) -> GoalResponse,
    cancel_callback(goal_handle) -> CancelResponse and
    handle_accepted_callback(goal_handle). Finished goals' results are kept
    for ``result_timeout`` seconds (ROS 2's default, 900)."""

    def __init__(self, node: Any, action_type_: ActionType | str, action_name: str,
                 execute_callback: Callable[[ServerGoalHandle], Any], *, callback_group: Any = None,
                 goal_callback: Callable[[Any], Any] = default_goal_callback,
                 handle_accepted_callback: Callable[[ServerGoalHandle], Any] = default_handle_accepted_callback,
                 cancel_callback: Callable[[ServerGoalHandle], Any] = default_cancel_callback,
                 result_timeout: float = 900, max_goals: int = 1024, **_: Any) -> None:
        t = action_type_ if isinstance(action_type_, ActionType) else action_type(action_type_)
        self._types = t
        self._execute_callback = execute_callback
        self._goal_callback = goal_callback
        self._cancel_callback = cancel_callback
        self._accepted_callback = handle_accepted_callback
        self._handles: dict[bytes, ServerGoalHandle] = {}
        self._lock = threading.Lock()
        send, get = t.Impl.SendGoalService, t.Impl.GetResultService
        self._uuid_type = message_type("unique_identifier_msgs/UUID")
        self._name = node._resolve(action_name) if hasattr(node, "_resolve") else action_name
        unknown = encode(get.Response, get.Response.new())
        self._server: Any = _shmbus._ActionServer(node._node, self._name, t.short_name, t._types, self._on_goal,
                                                  self._on_cancel, self._on_accepted, unknown, float(result_timeout),
                                                  int(max_goals))
        self._send_request_type = send.Request
        node._servers.append(self)

    def _live(self) -> Any:
        if self._server is None:
            from ...errors import InvalidArgumentError
            raise InvalidArgumentError(f"action server {self._name} is destroyed; make a new one")
        return self._server

    def _on_goal(self, goal_id: bytes, request: bytes) -> int:
        import numpy as np
        message = Message(self._send_request_type, np.frombuffer(request, np.uint8).copy(), None)
        goal = message.goal
        response = self._goal_callback(goal)
        if response == GoalResponse.ACCEPT:
            with self._lock:
                self._handles[goal_id] = ServerGoalHandle(self, goal_id, goal)
            # Accepted and waiting (rclpy's ACCEPTED) until the accepted
            # callback calls execute(), as its default does.
            return 3
        return 1

    def _on_cancel(self, goal_id: bytes) -> int:
        with self._lock:
            handle = self._handles.get(goal_id)
        if handle is None:
            return 1
        return int(self._cancel_callback(handle))

    def _on_accepted(self, goal_id: bytes) -> None:
        with self._lock:
            handle = self._handles.get(goal_id)
        if handle is not None:
            # ACCEPT_AND_DEFER: the goal waits in ACCEPTED until execute().
            self._accepted_callback(handle)

    def _run(self, handle: ServerGoalHandle, callback: Callable[[ServerGoalHandle], Any]) -> None:
        get = self._types.Impl.GetResultService
        result: Any = None
        try:
            result = callback(handle)
        except Exception:  # the goal aborts; the traceback goes to stderr, as rclpy logs it
            import traceback
            traceback.print_exc()
            handle._ending = STATUS_ABORTED
        status = handle._ending
        if status is None:
            print(f"shmbus: action {self._name}: the execute callback set no state (succeed, abort or "
                  "canceled); the goal is aborted, as rclpy does", file=sys.stderr)
            status = STATUS_ABORTED
        fields: dict[str, Any] = {"status": status}
        if result is not None:
            fields["result"] = result
        response = get.Response.new(fields)
        with self._lock:
            self._handles.pop(handle._id, None)
        if self._server is not None and not self._server.finish(handle._id, status, encode(get.Response, response)):
            # canceled() of a goal not asked to cancel: rclpy refuses the
            # transition; the goal still ends, aborted, so its client is answered.
            print(f"shmbus: action {self._name}: goal {handle._id.hex()} could not end "
                  f"{_STATUS_NAMES.get(status, status)} (it was not asked to cancel, or had ended); it is aborted",
                  file=sys.stderr)
            response = get.Response.new(dict(fields, status=STATUS_ABORTED))
            self._server.finish(handle._id, STATUS_ABORTED, encode(get.Response, response))

    @property
    def counters(self) -> dict[str, int]:
        """Goals accepted, rejected, refused; results expired; ... (the C++ server's)."""
        return dict(self._live().counters)

    def close(self) -> None:
        """Stops serving (Node.close() closes its node's servers)."""
        self._server = None

    def destroy(self) -> None:
        """rclpy's ActionServer.destroy(): close()."""
        self.close()


_STATUS_NAMES = {STATUS_SUCCEEDED: "succeeded", STATUS_ABORTED: "aborted", STATUS_CANCELED: "canceled"}
