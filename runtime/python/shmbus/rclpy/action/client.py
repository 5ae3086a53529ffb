"""rclpy.action.client on shmbus: ActionClient and ClientGoalHandle."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import ActionType, Future, _in_spin, _shmbus, _slices, action_type, message_type
from ..._messages import Message, encode
from ...errors import Error


def _message(type_: Any, data: bytes) -> Message:
    return Message(type_, np.frombuffer(data, np.uint8).copy(), None)


class ClientGoalHandle:
    """A goal as its client sees it: ``accepted``, ``goal_id``, ``stamp``,
    ``status``; ``get_result_async()`` and ``cancel_goal_async()``."""

    def __init__(self, client: "ActionClient", goal_id: bytes, accepted: bool, stamp_ns: int) -> None:
        self._client = client
        self._id = goal_id
        self.accepted = accepted
        self._stamp_ns = stamp_ns
        self.status = 1 if accepted else 0  # STATUS_ACCEPTED, until its outcome
        self._result = Future()

    @property
    def goal_id(self) -> Any:
        return message_type("unique_identifier_msgs/UUID").new({"uuid": list(self._id)})

    @property
    def stamp(self) -> Any:
        return message_type("builtin_interfaces/Time").new(
            {"sec": self._stamp_ns // 1_000_000_000, "nanosec": self._stamp_ns % 1_000_000_000})

    def get_result_async(self) -> Future:
        """A Future of the goal's GetResult response (``.status``, ``.result``)."""
        return self._result

    def get_result(self) -> Any:
        """The GetResult response, waiting for it (Ctrl-C interrupts)."""
        while not self._result.wait(0.02):
            pass
        return self._result.result()

    def cancel_goal_async(self) -> Future:
        """A Future of the server's action_msgs/CancelGoal response."""
        return self._client._cancel_goal_async(self)

    def cancel_goal(self) -> Any:
        future = self.cancel_goal_async()
        while not future.wait(0.02):
            pass
        return future.result()


class ActionClient:
    """rclpy's ActionClient: ``ActionClient(node, Fibonacci, 'fibonacci')``;
    ``wait_for_server``, ``send_goal_async(goal, feedback_callback)`` (a
    Future of a ClientGoalHandle), ``send_goal`` (waits for the result).
    Futures complete, and feedback callbacks run, in the node's spin."""

    def __init__(self, node: Any, action_type_: ActionType | str, action_name: str, **_: Any) -> None:
        t = action_type_ if isinstance(action_type_, ActionType) else action_type(action_type_)
        self._types = t
        self._node = node
        self._name = node._resolve(action_name) if hasattr(node, "_resolve") else action_name
        self._client: Any = _shmbus._ActionClient(node._node, self._name, t.short_name, t._types)
        node._clients.add(self)  # Node.close() closes it first

    def _live(self) -> Any:
        if self._client is None:
            from ...errors import InvalidArgumentError
            raise InvalidArgumentError(f"action client {self._name} is destroyed; make a new one")
        return self._client

    def server_is_ready(self) -> bool:
        return bool(self._live().server_ready)

    def wait_for_server(self, timeout_sec: float | None = None) -> bool:
        """Whether a server came within `timeout_sec` (None: for ever); Ctrl-C interrupts it."""
        client = self._live()
        return any(client.wait_for_server(s) for s in _slices(timeout_sec))

    def send_goal_async(self, goal: Any, feedback_callback: Callable[[Any], Any] | None = None,
                        goal_uuid: Any = None) -> Future:
        """Sends `goal`; a Future of its ClientGoalHandle (``accepted``
        false when the server rejected it). `feedback_callback(msg)` gets
        each FeedbackMessage (``msg.feedback``, ``msg.goal_id``)."""
        impl = self._types.Impl
        goal_id = bytes(bytearray(goal_uuid.uuid)) if goal_uuid is not None else _shmbus.random_goal_id()
        request = impl.SendGoalService.Request.new({"goal_id": {"uuid": list(goal_id)}, "goal": goal})
        future = Future()
        handle: list[ClientGoalHandle] = []

        def on_response(accepted: bool, stamp_ns: int, error: str) -> None:
            if error:
                _in_spin(self._node, lambda: future.set_exception(Error(f"action {self._name}: {error}")))
                return
            h = ClientGoalHandle(self, goal_id, accepted, stamp_ns)
            handle.append(h)
            _in_spin(self._node, lambda: future.set_result(h))

        def on_feedback(data: bytes) -> None:
            if feedback_callback is not None:
                message = _message(impl.FeedbackMessage, data)
                # In the spin, after the goal's response (which came first).
                _in_spin(self._node, lambda: feedback_callback(message))

        def on_result(status: int, data: bytes, error: str) -> None:
            h = handle[0] if handle else None
            if h is None:
                return
            h.status = status
            if data:
                response = _message(impl.GetResultService.Response, data)
            else:  # no server answered: the outcome without a result
                response = impl.GetResultService.Response.new({"status": status})
            _in_spin(self._node, lambda: h._result.set_result(response))

        self._live().send_goal(goal_id, encode(impl.SendGoalService.Request, request), on_response, on_feedback,
                               on_result)
        return future

    def send_goal(self, goal: Any, feedback_callback: Callable[[Any], Any] | None = None,
                  goal_uuid: Any = None) -> Any:
        """Sends `goal` and waits for its GetResult response (None when it
        was rejected), spinning the node meanwhile."""
        future = self.send_goal_async(goal, feedback_callback, goal_uuid)
        while not future.done():
            self._node.spin_once(0.02)
        handle = future.result()
        if not handle.accepted:
            return None
        result = handle.get_result_async()
        while not result.done():
            self._node.spin_once(0.02)
        return result.result()

    def _cancel_goal_async(self, handle: ClientGoalHandle) -> Future:
        return self.cancel_goals_async(handle._id, 0)

    def cancel_goals_async(self, goal_id: bytes = bytes(16), stamp_ns: int = 0) -> Future:
        """Asks the server to cancel goal `goal_id` (zero: every goal) and
        those accepted at or before `stamp_ns`; a Future of its answer."""
        future = Future()
        response_type = self._types.Impl.CancelGoalService.Response

        def done(data: bytes, error: str) -> None:
            if error:
                _in_spin(self._node, lambda: future.set_exception(Error(f"action {self._name}: {error}")))
            else:
                message = _message(response_type, data)
                _in_spin(self._node, lambda: future.set_result(message))

        self._live().cancel_goal(goal_id, int(stamp_ns), done)
        return future

    def close(self) -> None:
        """Ends the client (Node.close() closes its node's clients)."""
        self._client = None

    def destroy(self) -> None:
        """rclpy's ActionClient.destroy(): close()."""
        self.close()
