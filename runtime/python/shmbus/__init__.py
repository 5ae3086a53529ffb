"""shmbus for Python: publish and subscribe over shared memory, nodes with
callbacks and timers, services, recordings and introspection, on the C++
libraries of shmbus. Messages are NumPy views of their bytes; a message
read in place (``sub.read(view=True)``) is a read-only view of the ring.

The domain is the process's default: ``SHMBUS_DOMAIN`` and
``SHMBUS_CONFIG`` as for every shmbus program.
"""

from __future__ import annotations

import atexit
import logging
import math
import signal
import sys
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import _shmbus
from ._time import Clock, Duration, Future, Time
from ._messages import Message, MessageType, Struct, encode, image_array, image_encoding, type_of
from .errors import (ConfigError, Error, InvalidArgumentError, LayoutError, NotFoundError, OverwrittenError,
                     PermissionDeniedError, ResourceError, ServiceFailed, ServiceTimeout, TypeMismatchError)

MessageInfo = _shmbus.MessageInfo
Input = _shmbus.Input
Timer = _shmbus.Timer

__all__ = [
    "ConfigError", "Error", "Input", "InvalidArgumentError", "LayoutError", "Loan", "Message", "MessageInfo", "MessageType",
    "MessageView", "Node", "NotFoundError", "OverwrittenError", "PermissionDeniedError", "Publisher",
    "ResourceError", "ServiceClient", "ServiceFailed", "ServiceServer", "ServiceTimeout", "ServiceType", "Struct",
    "Subscriber", "Subscription", "Timer", "TypeMismatchError", "channels", "image_array", "image_message",
    "message_type", "service_type", "ActionType", "action_type", "Clock", "Duration", "ExternalShutdownException", "Future", "Time",
]


class ExternalShutdownException(SystemExit):
    """SIGTERM, raised where the program waits (a spin, a read, a call), as
    Ctrl-C raises KeyboardInterrupt: ``finally`` blocks run and the node's
    endpoints leave their channels. rclpy's name; a SystemExit (code 0),
    so an uncaught one ends the program quietly and ``except Exception``
    does not swallow it."""

    def __init__(self, message: str = "SIGTERM: the program was asked to stop") -> None:
        super().__init__(0)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _on_sigterm(signum: int, frame: Any) -> None:
    raise ExternalShutdownException()


def _handle_sigterm() -> None:
    """SIGTERM raises ExternalShutdownException in the main thread from
    now on, unless the program set its own handler."""
    if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)):
        signal.signal(signal.SIGTERM, _on_sigterm)

_U1 = np.dtype("u1")


def message_type(name: str, msg_path: Iterable[str] | None = None) -> MessageType:
    """The type `name` (package/Name): the shipped definitions (std_msgs,
    sensor_msgs, shmbus_msgs), then each root of `msg_path`, then of
    ``SHMBUS_MSG_PATH`` (roots holding ``<package>/<Name>.msg``)."""
    t = type_of(name, msg_path)
    assert t is not None
    return t


def image_message(array: np.ndarray, encoding: str = "rgb8", type: str = "shmbus_msgs/Image",
                  **fields: Any) -> Message:
    """A new image (`type`: shmbus_msgs/Image, made in place, or ROS 2's
    sensor_msgs/Image) holding `array` ((height, width, channels)), with
    `fields` (``header=...``) set."""
    h, w, step = image_encoding(array, encoding)
    return message_type(type).new(
        fields, height=h, width=w, step=step, encoding=encoding,
        data=np.ascontiguousarray(array).reshape(-1).view(_U1))


def _repr(obj: Any, describe: Callable[[], str]) -> str:
    """``<shmbus.Class what>``, or ``<shmbus.Class (closed)>`` when the
    object refuses use."""
    try:
        what = describe()
    except Error:
        what = "(closed)"
    return f"<shmbus.{obj.__class__.__name__} {what}>"


# Nodes spinning now (in any thread). When the interpreter exits, each is
# stopped and given a moment to return: a spin left running in a daemon
# thread would otherwise be inside C++ while Python finalizes.
_spinning: "weakref.WeakSet[Node]" = weakref.WeakSet()


def _node_logger(name: str) -> logging.Logger:
    """The logger ``shmbus.node.NAME``, writing ``shmbus: node "NAME":
    [LEVEL] ...`` to stderr, INFO and above unless its level is set."""
    logger = logging.getLogger(f"shmbus.node.{name}")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f'shmbus: node "{name}": [%(levelname)s] %(message)s'))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)
    return logger


# Everything that holds endpoints (nodes, publishers, subscribers, service
# clients), closed as the interpreter exits: an object in a reference cycle
# through C++ (a node and a callback that names it) is never collected, and
# its endpoints would be left behind as a killed process leaves its own.
_open: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _stop_spinning_nodes() -> None:
    for node in list(_spinning):
        node.stop()
    deadline = time.monotonic() + 1.0
    while _spinning and time.monotonic() < deadline:
        time.sleep(0.005)
    for obj in sorted(_open, key=lambda o: not isinstance(o, Node)):  # nodes first
        try:
            obj.close()
        except Exception:  # closing at exit: what is closed already says so
            pass


# A wait longer than this is cut into slices of it, between which Python
# runs its signal handlers: Ctrl-C raises KeyboardInterrupt within one.
_SLICE = 0.02


def _slices(timeout: float | None) -> Iterator[float]:
    """The slices of a wait of `timeout` seconds (None: for ever; 0 or less:
    one slice of 0, a look without waiting), each at most _SLICE."""
    if timeout is None:
        while True:
            yield _SLICE
    deadline = time.monotonic() + float(timeout)
    left = deadline - time.monotonic()
    yield min(max(left, 0.0), _SLICE)
    while (left := deadline - time.monotonic()) > 0:
        yield min(left, _SLICE)


def _sizes(max_message_size: int | None, capacity: int | None, depth: int | None) -> dict[str, int]:
    """A publisher's size options as the binding takes them (0: the
    configuration's), each refused unless a positive integer."""
    out = {}
    for key, value in (("max_message_size", max_message_size), ("capacity", capacity), ("depth", depth)):
        if value is None:
            value = 0
        elif isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**32:
            raise InvalidArgumentError(f"{key}={value!r}: give a positive number (or None: the configuration's)")
        out[key] = value
    return out


# rclpy's keyword arguments that have no meaning on shmbus: accepted, and
# what each means here said once on stderr when one is given.
_RCLPY_ONLY = {
    "callback_group": "a node's callbacks run one at a time on the thread that spins it",
    "event_callbacks": "deadline and liveliness events are not delivered to Python callbacks",
    "qos_overriding_options": "QoS is not overridden by parameters",
    "raw": "a callback gets a shmbus.Message (bytes(msg) is its wire form)",
    "publisher_class": "the publisher is a shmbus.Publisher",
    "subscription_class": "the subscription is a shmbus.Subscription",
    "content_filter_options": "content filters are not applied: every message is delivered",
    "clock": "a timer runs on the monotonic clock",
    "autostart": "a timer starts when it is made",
}
_said: set[str] = set()


def _shmbus_options(options: dict[str, Any]) -> dict[str, Any]:
    """`options` without rclpy's keywords that mean nothing on shmbus (each
    said once on stderr when given a value)."""
    out = {}
    for k, v in options.items():
        if k not in _RCLPY_ONLY:
            out[k] = v
        elif v not in (None, False) and k not in _said:
            _said.add(k)
            print(f"shmbus: rclpy's {k}= is accepted and has no effect: {_RCLPY_ONLY[k]}", file=sys.stderr)
    return out


def _say_qos(qos_profile: Any) -> None:
    """Says once on stderr what a QoS policy without effect here means on
    shmbus (the depth, and TRANSIENT_LOCAL, have one)."""
    said = []
    reliability = getattr(qos_profile, "reliability", None)
    if getattr(reliability, "name", reliability) in ("BEST_EFFORT", 2):
        said.append(("reliability=BEST_EFFORT", "a subscription gets every message its channel's ring still holds, "
                                                "as with RELIABLE (what the ring overwrote is counted lost)"))
    for policy in ("deadline", "lifespan", "liveliness_lease_duration"):
        value = getattr(qos_profile, policy, None)
        if value is not None and getattr(value, "nanoseconds", value) not in (0, None):
            said.append((f"{policy}=", "not enforced (shmbusd's thresholds watch a channel's rate)"))
    for key, meaning in said:
        if key not in _said:
            _said.add(key)
            print(f"shmbus: rclpy's QoS {key} is accepted: {meaning}", file=sys.stderr)


def _transient_local(qos_profile: Any) -> bool:
    """A QoS profile whose durability is TRANSIENT_LOCAL (a latched topic)."""
    durability = getattr(qos_profile, "durability", None)
    return getattr(durability, "name", durability) in ("TRANSIENT_LOCAL", "transient_local", 1)


def _depth(qos_profile: Any) -> int:
    """rclpy's history depth: an int, or an object with ``depth`` (a
    QoSProfile)."""
    depth = getattr(qos_profile, "depth", qos_profile)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InvalidArgumentError(f"qos_profile={qos_profile!r}: give a history depth (an int >= 1) or an "
                                   "object with .depth")
    return depth


class Publisher:
    """Publishes on one channel, creating it with `type` if it does not
    exist. ``publish`` takes a :class:`Message`, a dict of fields or any
    bytes-like object (NumPy arrays included).

    A publisher that creates the channel gives it the configuration's
    sizes (``SHMBUS_CONFIG``; 4096-byte messages and 64 slots by default)
    unless `max_message_size` (bytes), `capacity` (slots, a power of two)
    or `depth` (at least that many slots) say otherwise. A channel that
    exists keeps its own sizes (``max_message_size`` says them; a line on
    stderr says when they differ from those asked for)."""

    def __init__(self, channel: str, type: MessageType | str, *, msg_path: Iterable[str] | None = None,
                 create: bool = True, max_message_size: int | None = None, capacity: int | None = None,
                 depth: int | None = None, _wrapped: Any = None) -> None:
        t = type_of(type, msg_path)
        if t is None:
            raise InvalidArgumentError("a publisher needs a type (a name such as shmbus_msgs/String, or "
                                       "shmbus.MessageType.bytes() for raw bytes)")
        self.type: MessageType = t
        self._pub = _wrapped if _wrapped is not None else _shmbus._Publisher(
            channel, t.info, "", create, **_sizes(max_message_size, capacity, depth))
        _open.add(self)

    def __repr__(self) -> str:
        return _repr(self, lambda: f"{self.channel} {self.type.name} published={self.published} "
                                   f"dropped={self.dropped} max_message_size={self.max_message_size}")

    def publish(self, message: Message | dict | Any) -> bool:
        """Publishes `message`; True when committed, False when dropped (a
        stuck writer held its slot; counted in ``dropped``)."""
        t = self.type
        if isinstance(message, dict) and t._general:
            message = t.new(message)
        if isinstance(message, Message) and message._buf is None:
            # A made message: written by the encoder and published in one
            # call, with no bytes object in between.
            if message._type != t and t.has_schema:
                raise TypeMismatchError(f"a {message._type.name} message on a channel of {t.name}")
            return self._pub.publish_values(message._type._schema(), message._vals)
        return self._pub.publish(encode(t, message))

    def new(self, _fields: dict | None = None, /, **fields: Any) -> Message:
        """A new message of the channel's type (see MessageType.new)."""
        return self.type.new(_fields, **fields)

    def loan(self, tail_length: int = 0, *, size: int | None = None) -> "Loan":
        """A slot of the ring to write a message into in place; ``with
        pub.loan(n) as msg:`` publishes `msg` when the block ends (and
        discards it when it raises). `tail_length` sizes the trailing array;
        `size` gives the bytes instead (raw channels)."""
        if size is None and not self.type.has_schema:
            raise InvalidArgumentError(f"a loan on {self.channel}, a channel of raw bytes, needs size=BYTES")
        n = size if size is not None else self.type.wire_size(tail_length)
        return Loan(self, self._pub.loan(n), tail_length if size is None else None)

    @property
    def channel(self) -> str:
        return self._pub.channel

    @property
    def channel_index(self) -> int:
        """The channel's index in the domain's registry: what
        ``MessageInfo.inputs`` name channels by."""
        return self._pub.channel_index

    @property
    def published(self) -> int:
        return self._pub.published

    @property
    def dropped(self) -> int:
        return self._pub.dropped

    @property
    def max_message_size(self) -> int:
        return self._pub.max_message_size

    def close(self) -> None:
        """Leaves the channel (the publisher's entry is released)."""
        self._pub.close()

    def __enter__(self) -> "Publisher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Loan:
    """A slot lent by a publisher: ``message`` writes into the ring itself;
    ``commit()`` publishes it, ``discard()`` gives it back."""

    def __init__(self, publisher: Publisher, loan: Any, tail_length: int | None) -> None:
        self._loan = loan
        raw = np.frombuffer(loan, _U1)
        t = publisher.type
        if t.has_schema:
            raw[:t.size] = 0
            if t.tail is not None:
                t._set_tail_ref(raw, tail_length or 0)
        self.message = Message(t, raw, None, shared=True)

    def commit(self) -> bool:
        return self._loan.commit()

    def discard(self) -> None:
        self._loan.discard()

    def __enter__(self) -> Message:
        return self.message

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self._loan.active:
            return
        if exc_type is None:
            self._loan.commit()
        else:
            self._loan.discard()


class MessageView:
    """A message where it lies in the ring (``Subscriber.read(view=True)``):
    ``with view as msg:`` gives the read-only message; when the block ends a
    message a publisher overwrote meanwhile raises OverwrittenError, so what
    was read from it is never silently wrong. ``valid()`` asks the same
    inside the block."""

    def __init__(self, view: Any, info: MessageInfo, mtype: MessageType, channel: str) -> None:
        self._view = view
        self._channel = channel
        self.message = Message(mtype, np.frombuffer(view, _U1), info, shared=True)

    @property
    def address(self) -> int:
        """Where the message lies (in the channel's mapping)."""
        return self._view.address

    def valid(self) -> bool:
        """True while no publisher has overwritten the message."""
        return self._view.unchanged()

    def check(self) -> None:
        """Raises OverwrittenError when the message was overwritten."""
        if not self._view.unchanged():
            raise OverwrittenError(
                f"channel {self._channel}: message {self.message._info.sequence} was overwritten by a publisher "
                "while it was read in place (the ring lapped this reader); discard what was read from it")

    def __enter__(self) -> Message:
        return self.message

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.check()


class Subscriber:
    """Takes the messages of one channel in order. With `type` None any type
    is accepted (the channel's stored schema then gives the messages their
    fields) and the channel must exist, unless `wait_for_channel`."""

    def __init__(self, channel: str, type: MessageType | str | None = None, *, wait_for_channel: bool = False,
                 history: int = 0, from_first: bool = False, msg_path: Iterable[str] | None = None) -> None:
        self._type = type_of(type, msg_path)
        self._sub = _shmbus._Subscriber(channel, self._type.info if self._type else None, bool(wait_for_channel),
                                        history, from_first, "")
        _open.add(self)

    def __repr__(self) -> str:
        return _repr(self, lambda: f"{self.channel} {self._type.name if self._type else '(type from the channel)'} "
                                   f"received={self.received} lost={self.lost}")

    @property
    def type(self) -> MessageType:
        """The channel's type (from the channel when none was given)."""
        if self._type is None:
            if not self._sub.attached():
                raise NotFoundError(f"channel {self.channel} does not exist yet; its type is not known")
            self._type = MessageType(*self._sub.type())
        return self._type

    def take(self) -> Message | None:
        """The next message (a copy), or None when there is none."""
        r = self._sub.take()
        if r is None:
            return None
        data, info = r
        return Message(self.type, np.frombuffer(data, _U1), info)

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until a message may be taken or `timeout` seconds pass
        (None: for ever); False on timeout. The GIL is released meanwhile,
        and Ctrl-C raises KeyboardInterrupt within 20 ms."""
        return any(self._sub.wait(s) for s in _slices(timeout))

    def read(self, view: bool = False, timeout: float | None = 0.0) -> Message | MessageView | None:
        """The next message, waiting up to `timeout` seconds (0, the
        default: only what is there; None: for ever); None when none came.
        With ``view=True`` a MessageView of the message in the ring (no
        copy), to be used in a ``with`` block. Ctrl-C interrupts it."""
        for s in _slices(timeout):
            if view:
                r = self._sub.read_view()
                if r is not None:
                    return MessageView(r[0], r[1], self.type, self.channel)
            else:
                m = self.take()
                if m is not None:
                    return m
            if s > 0:
                self._sub.wait(s)
        return None

    def __iter__(self) -> "Subscriber":
        return self

    def __next__(self) -> Message:
        """Blocks for the next message (Ctrl-C interrupts within 100 ms)."""
        while True:
            m = self.take()
            if m is not None:
                return m
            self._sub.wait(_SLICE)  # Python's signal handlers run as it returns

    @property
    def channel(self) -> str:
        return self._sub.channel

    @property
    def channel_index(self) -> int:
        """The channel's index in the domain's registry (see Input)."""
        return self._sub.channel_index

    @property
    def received(self) -> int:
        return self._sub.received

    @property
    def lost(self) -> int:
        """Messages the ring overwrote before this subscriber took them."""
        return self._sub.lost

    @property
    def discarded(self) -> int:
        return self._sub.discarded

    @property
    def transport(self) -> str:
        return self._sub.transport

    def close(self) -> None:
        """Leaves the channel. Views still held keep its memory mapped."""
        self._sub.close()

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Subscription:
    """A node's subscription (Node.subscribe): its counters, its type (as
    Subscriber.type) and cancel()."""

    def __init__(self, type: MessageType | None) -> None:
        self._type = type
        self._sub: Any = None

    @property
    def type(self) -> MessageType:
        """The channel's type (from the channel when none was given)."""
        if self._type is None:
            self._type = MessageType(*self._sub.type())
        return self._type

    @property
    def channel(self) -> str:
        return self._sub.channel

    @property
    def calls(self) -> int:
        return self._sub.calls

    @property
    def errors(self) -> int:
        return self._sub.errors

    @property
    def overwritten(self) -> int:
        """In-place deliveries whose message a publisher overwrote while
        the callback read it."""
        return self._sub.overwritten

    @property
    def lost(self) -> int:
        return self._sub.lost

    def cancel(self) -> None:
        """No more calls (the subscriber stays open)."""
        self._sub.cancel()

    def __repr__(self) -> str:
        return _repr(self, lambda: f"{self.channel} {self._type.name if self._type else '(type from the channel)'} "
                                   f"calls={self.calls} lost={self.lost}")


class Node:
    """A node: subscriptions whose callbacks get each message, publishers,
    timers, services; ``spin()`` runs them; ``close()`` (or a ``with``
    block) ends it (the C++ executor; the GIL is
    released while it waits). What a callback publishes cites the message
    that triggered it (provenance), as in C++. An exception in a callback
    stops spin() and is raised from it; Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, name: str) -> None:
        self._node = _shmbus._Node(name)
        self._name: str = self._node.name
        # The node's services live as long as it does (rclpy's node keeps
        # its services): a server need not be held by the caller. Its
        # clients end with it (close()).
        self._servers: list[Any] = []  # service and action servers: each has close()
        self._clients: "weakref.WeakSet[ServiceClient]" = weakref.WeakSet()
        _open.add(self)
        _handle_sigterm()

    @property
    def name(self) -> str:
        return self._name

    def subscribe(self, channel: str, type: MessageType | str | None, callback: Callable[[Message], Any], *,
                  in_place: bool = False, history: int = 0, wait_for_channel: bool = False,
                  on_overwritten: Callable[[MessageInfo], Any] | None = None,
                  msg_path: Iterable[str] | None = None) -> Subscription:
        """Calls ``callback(msg)`` for each message (``msg.info`` says its
        sequence, stamps and inputs). With `in_place` the message is a
        read-only view of the ring, valid only during the call; a message
        overwritten while the callback read it calls `on_overwritten(info)`
        (and counts in ``Subscription.overwritten``)."""
        s = Subscription(type_of(type, msg_path))

        def deliver(data: Any, info: MessageInfo) -> None:
            callback(Message(s.type, np.frombuffer(data, _U1), info, shared=in_place))

        t = s._type
        s._sub = self._node.subscribe(channel, t.info if t else None, deliver, in_place, history, wait_for_channel,
                                      on_overwritten)
        return s

    def publisher(self, channel: str, type: MessageType | str, *, msg_path: Iterable[str] | None = None,
                  max_message_size: int | None = None, capacity: int | None = None,
                  depth: int | None = None) -> Publisher:
        """A publisher of the node (see Publisher for the size options)."""
        t = type_of(type, msg_path)
        if t is None:
            raise InvalidArgumentError("a publisher needs a type")
        return Publisher(channel, t, _wrapped=self._node.publisher(channel, t.info,
                                                                   **_sizes(max_message_size, capacity, depth)))

    # rclpy's names, with rclpy's argument order: the type first, then the
    # name; qos_profile is a history depth (an int, or anything with .depth).

    def _resolve(self, name: str) -> str:
        """A name as rclpy resolves it in the root namespace: ``topic`` is
        ``/topic``, ``~/topic`` ``/NODE/topic``."""
        if name.startswith("~"):
            return f"/{self.name}{name[1:]}" if name == "~" or name.startswith("~/") else name
        return name if name.startswith("/") else "/" + name

    def create_publisher(self, msg_type: MessageType | str, topic: str, qos_profile: Any = 10, **options: Any
                         ) -> Publisher:
        """rclpy's create_publisher: ``publisher(topic, msg_type,
        depth=...)``; a channel it creates keeps at least `depth` messages
        (more when the configuration says so)."""
        _say_qos(qos_profile)
        return self.publisher(self._resolve(topic), msg_type, depth=_depth(qos_profile), **_shmbus_options(options))

    def create_subscription(self, msg_type: MessageType | str | None, topic: str,
                            callback: Callable[[Message], Any], qos_profile: Any = 10, **options: Any
                            ) -> Subscription:
        """rclpy's create_subscription: ``subscribe(topic, msg_type,
        callback)``. The depth is checked, and the queue a subscription may
        fall behind by is the channel's ring (its capacity; a slower
        subscription counts what the ring overwrote in ``lost``)."""
        depth = _depth(qos_profile)
        _say_qos(qos_profile)
        options = _shmbus_options(options)
        if _transient_local(qos_profile):
            options.setdefault("history", depth)  # a latched topic: the last `depth` messages, as a late joiner's
        return self.subscribe(self._resolve(topic), msg_type, callback, **options)

    def create_timer(self, timer_period_sec: float, callback: Callable[[], Any], **options: Any) -> Timer:
        """rclpy's create_timer: ``every(timer_period_sec, callback)``."""
        unknown = _shmbus_options(options)
        if unknown:
            raise TypeError(f"create_timer() got unexpected keyword arguments: {', '.join(unknown)}")
        return self.every(timer_period_sec, callback)

    def create_service(self, srv_type: "ServiceType | str", srv_name: str, callback: Callable[[Message, Message], Any],
                       **options: Any) -> "ServiceServer":
        """rclpy's create_service: ``callback(request, response)`` fills
        the response it is given (a new one of the service's response type)
        and returns it."""
        server: list[ServiceServer] = []

        def handler(request: Message) -> Any:
            return callback(request, server[0].response_type.new())

        server.append(ServiceServer(self, self._resolve(srv_name), srv_type, handler, **_shmbus_options(options)))
        return server[0]

    def create_client(self, srv_type: "ServiceType | str | None", srv_name: str, **options: Any) -> "ServiceClient":
        """rclpy's create_client: ``ServiceClient(srv_name, srv_type)``
        (call, wait_for_service)."""
        client = ServiceClient(self._resolve(srv_name), srv_type, **_shmbus_options(options))
        client._node_ref = weakref.ref(self)  # call_async completes its futures in this node's spin
        self._clients.add(client)
        return client

    def get_logger(self) -> logging.Logger:
        """rclpy's get_logger(): a logging.Logger that writes to stderr, as
        the node's own lines (``shmbus: node "NAME": ...``), INFO and above
        unless its level is set (``logging.getLogger("shmbus.node.NAME")``)."""
        return _node_logger(self.name)

    def get_clock(self) -> Clock:
        """rclpy's get_clock(): the wall clock (``.now().to_msg()``)."""
        return Clock()

    def get_name(self) -> str:
        """rclpy's get_name(): the node's name."""
        return self.name

    def destroy_node(self) -> None:
        """rclpy's destroy_node(): close()."""
        self.close()

    def __repr__(self) -> str:
        return f"<shmbus.Node {self.name}{'' if self._node.is_open() else ' (closed)'}>"

    def every(self, period: float, callback: Callable[[], Any]) -> Timer:
        """Calls `callback()` every `period` seconds."""
        return self._node.timer(float(period), callback, True)

    def after(self, delay: float, callback: Callable[[], Any]) -> Timer:
        """Calls `callback()` once, `delay` seconds from now."""
        return self._node.timer(float(delay), callback, False)

    def spin(self) -> None:
        """Runs callbacks until stop(), an exception or Ctrl-C."""
        _spinning.add(self)
        try:
            self._node.spin()
        finally:
            _spinning.discard(self)

    def spin_once(self, timeout: float | None = 0.0) -> int:
        """Runs what is ready, waiting up to `timeout` seconds for work (0,
        the default: none; None: for ever); returns how many callbacks ran.
        Ctrl-C interrupts the wait."""
        for s in _slices(timeout):
            n = self._node.spin_once(s)
            if n:
                return n
        return 0

    def stop(self) -> None:
        """Ends spin() (from a callback, a timer or another thread)."""
        self._node.stop()

    def ok(self) -> bool:
        return self._node.ok()

    def close(self) -> None:
        """Stops the node and ends it: its callbacks are dropped (a callback
        that refers to its node keeps both alive until then) and its
        subscriptions leave their channels (once no publisher of the node is
        held). rclpy's destroy_node()."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        for client in list(self._clients):
            client.close()
        self._node.close()

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _in_spin(node: "Node | None", complete: Callable[[], Any]) -> None:
    """Runs `complete` (a future's completion) in `node`'s spin (a one-shot
    timer wakes it), as rclpy's executor completes futures; at once when
    there is no open node."""
    if node is not None and node._node.is_open():
        try:
            node.after(1e-9, complete)
            return
        except Error:
            pass
    complete()


class ServiceType:
    """A service type (package/Name of its .srv, or package/srv/Name): its
    name and its two message types, ``Request`` and ``Response``, which
    make messages as rclpy's srv classes do (``AddTwoInts.Request(a=1,
    b=2)``)."""

    def __init__(self, name: str, msg_path: Iterable[str] | None = None) -> None:
        self.name = name
        self.Request, self.Response = (MessageType(*t) for t in _shmbus.service_types(name, list(msg_path or [])))

    def __repr__(self) -> str:
        return f"<shmbus.ServiceType {self.name}>"


def service_type(name: str, msg_path: Iterable[str] | None = None) -> ServiceType:
    """The service type `name`, found as message_type finds a type."""
    return ServiceType(name, msg_path)


class ActionType:
    """An action type (package/Name of its .action, or package/action/Name),
    as rclpy's action classes have it: ``Goal``, ``Result`` and ``Feedback``
    make messages (``Fibonacci.Goal(order=10)``), and ``Impl`` holds what
    ROS 2 derives (``SendGoalService``, ``GetResultService``,
    ``FeedbackMessage``, ``CancelGoalService``, ``GoalStatusMessage``)."""

    class Impl:
        SendGoalService: ServiceType
        GetResultService: ServiceType
        FeedbackMessage: MessageType
        CancelGoalService: ServiceType
        GoalStatusMessage: MessageType

    def __init__(self, name: str, msg_path: Iterable[str] | None = None) -> None:
        self.name = name
        path = list(msg_path or [])
        parts = name.split("/")
        short = f"{parts[0]}/{parts[-1]}"
        self._types = tuple(_shmbus.action_types(short, path))
        self.Goal, self.Result, self.Feedback = (message_type(f"{short}_{p}", path) for p in ("Goal", "Result",
                                                                                               "Feedback"))
        impl = ActionType.Impl()
        impl.SendGoalService = ServiceType(f"{short}_SendGoal", path)
        impl.GetResultService = ServiceType(f"{short}_GetResult", path)
        impl.FeedbackMessage = MessageType(*self._types[4])
        impl.CancelGoalService = ServiceType("action_msgs/CancelGoal")
        impl.GoalStatusMessage = message_type("action_msgs/GoalStatusArray")
        self.Impl = impl  # type: ignore[misc]
        self.short_name = short

    def __repr__(self) -> str:
        return f"<shmbus.ActionType {self.name}>"


def action_type(name: str, msg_path: Iterable[str] | None = None) -> ActionType:
    """The action type `name`, found as message_type finds a type."""
    return ActionType(name, msg_path)


def _service_types(type: "ServiceType | str", msg_path: Iterable[str] | None) -> tuple[str, MessageType, MessageType]:
    t = type if isinstance(type, ServiceType) else ServiceType(type, msg_path)
    return t.name, t.Request, t.Response


class ServiceServer:
    """Serves service `name` of type `type` (a .srv: package/Name) on
    `node`: ``handler(request)`` returns the response (a Message, a dict of
    fields or bytes). A handler that raises fails that call (the client
    gets ServiceFailed; the traceback goes to stderr)."""

    def __init__(self, node: Node, name: str, type: ServiceType | str, handler: Callable[[Message], Any], *,
                 msg_path: Iterable[str] | None = None) -> None:
        type, req, rsp = _service_types(type, msg_path)
        self.request_type, self.response_type = req, rsp

        def serve(data: bytes, info: MessageInfo) -> Any:
            return encode(rsp, handler(Message(req, np.frombuffer(data, _U1), info)))

        self._server: Any = _shmbus._ServiceServer(node._node, name, type, req.info, rsp.info, serve)
        self._name = name
        node._servers.append(self)

    def __repr__(self) -> str:
        if self._server is None:
            return f"<shmbus.ServiceServer {self._name} (closed)>"
        return f"<shmbus.ServiceServer {self._name} served={self.served} failed={self.failed}>"

    def _live(self) -> Any:
        if self._server is None:
            raise InvalidArgumentError(f"service server {self._name} is closed (its node was closed); make a new one")
        return self._server

    @property
    def served(self) -> int:
        return self._live().served

    @property
    def failed(self) -> int:
        return self._live().failed

    def close(self) -> None:
        """Stops serving: its channels are left (Node.close() closes its
        node's servers; rclpy's destroy_service)."""
        self._server = None

    def destroy(self) -> None:
        """rclpy's Service.destroy(): close()."""
        self.close()


class ServiceClient:
    """Calls service `name` of type `type` (package/Name of its .srv); with
    no type, the types its channels in this domain store (as `shmtool
    service call` does; the service must exist)."""

    def __init__(self, name: str, type: ServiceType | str | None = None, *,
                 msg_path: Iterable[str] | None = None) -> None:
        if type is None:
            type, *types = _shmbus.service_types_of(name)
            req, rsp = (MessageType(*t) for t in types)
        else:
            type, req, rsp = _service_types(type, msg_path)
        self.request_type, self.response_type = req, rsp
        self._client: Any = _shmbus._ServiceClient(name, type, req.info, rsp.info)
        self.name, self.type = name, type
        self.srv_name = name
        self._calls = threading.Lock()  # call_async's threads, one call at a time
        self._node_ref: Any = None  # the node that made it (create_client)
        _open.add(self)

    def __repr__(self) -> str:
        return f"<shmbus.ServiceClient {self.name} {self.type}>"

    def call(self, request: Message | dict | Any, timeout: float | None = 5.0) -> Message:
        """The response to `request`, within `timeout` seconds (None: for
        ever). Raises NotFoundError (no server), ServiceTimeout or
        ServiceFailed; Ctrl-C raises KeyboardInterrupt within 20 ms."""
        data, info = self._live().call(encode(self.request_type, request),
                                       math.inf if timeout is None else float(timeout))
        return Message(self.response_type, np.frombuffer(data, _U1), info)

    def call_async(self, request: Message | dict | Any, timeout: float | None = 5.0) -> "Future":
        """rclpy's call_async: a Future of the response, called on a thread
        of its own (one call at a time per client); its result() is the
        response, or raises what call() would. A node's spin, spin_once or
        ``rclpy.spin_until_future_complete`` runs its done callbacks."""
        client = self._live()
        payload = encode(self.request_type, request)
        if isinstance(payload, Message):
            payload = payload._raw
        future = Future()

        def finish(complete: Callable[[], Any]) -> None:
            _in_spin(self._node_ref() if self._node_ref is not None else None, complete)

        def run() -> None:
            try:
                with self._calls:
                    data, info = client.call(payload, math.inf if timeout is None else float(timeout))
                response = Message(self.response_type, np.frombuffer(data, _U1), info)
                finish(lambda: future.set_result(response))
            except Exception as e:  # handed to the caller through the future
                finish(lambda: future.set_exception(e))

        threading.Thread(target=run, name=f"shmbus call {self.name}", daemon=True).start()
        return future

    def _live(self) -> Any:
        if self._client is None:
            raise InvalidArgumentError(f"service client {self.name} is closed (its node was closed); make a new one")
        return self._client

    def close(self) -> None:
        """Ends the client (Node.close() closes its node's clients; rclpy's
        destroy_client)."""
        self._client = None

    def destroy(self) -> None:
        """rclpy's Client.destroy(): close()."""
        self.close()

    def wait_for_server(self, timeout: float | None = 5.0) -> bool:
        """Whether a server came within `timeout` seconds (None: for ever);
        Ctrl-C interrupts it."""
        client = self._live()
        return any(client.wait_for_server(s) for s in _slices(timeout))

    @property
    def server_ready(self) -> bool:
        return self._live().server_ready

    def wait_for_service(self, timeout_sec: float | None = None) -> bool:
        """rclpy's wait_for_service: wait_for_server(timeout_sec)."""
        return self.wait_for_server(timeout_sec)

    def service_is_ready(self) -> bool:
        """rclpy's service_is_ready: server_ready."""
        return self.server_ready


def channels(domain: str | None = None, config: str | None = None) -> list[dict[str, Any]]:
    """The channels of `domain` (default: SHMBUS_DOMAIN, or the config's),
    as ``shmtool list --json`` lists them: one dict per channel (rate,
    level, publishers, subscribers, messages, lost, ...), then ``{name,
    error}`` for each channel that cannot be read."""
    return _shmbus.channels(domain, config or "")
