"""Recordings: MCAP files of the shmbus recorder (``shmtool record``), read
as messages with their channel, times and provenance, and written for
tests. Compressed (zstd, lz4) or not; a split recording is read from its
first file (``run_0.mcap``) on.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

from . import _shmbus
from ._messages import Message, MessageType, encode

__all__ = ["ChannelInfo", "Reader", "Recorded", "Writer", "export", "import_ros2"]

_PROVENANCE_CHANNEL = "/shmbus/provenance"


class ChannelInfo:
    """A recorded channel: its name, type and message count."""

    __slots__ = ("name", "type", "messages")

    def __init__(self, name: str, type: MessageType, messages: int) -> None:
        self.name, self.type, self.messages = name, type, messages

    def __repr__(self) -> str:
        return f"ChannelInfo({self.name!r}, {self.type.name}, messages={self.messages})"


class Recorded:
    """One recorded message: ``message`` (a Message), ``channel``,
    ``sequence``, ``log_time`` and ``publish_time`` (ns), and
    ``provenance``: where it came from (the module, and the messages it was
    made from as (channel, sequence)), or None when not recorded."""

    __slots__ = ("channel", "sequence", "log_time", "publish_time", "message", "_reader")

    def __init__(self, reader: "Reader", channel: str, sequence: int, log_time: int, publish_time: int,
                 message: Message) -> None:
        self._reader = reader
        self.channel, self.sequence, self.log_time, self.publish_time = channel, sequence, log_time, publish_time
        self.message = message

    @property
    def provenance(self) -> dict[str, Any] | None:
        return self._reader._reader.origin(self.channel, self.sequence)

    def __repr__(self) -> str:
        return f"Recorded({self.channel!r}, sequence={self.sequence}, log_time={self.log_time})"


class Reader:
    """Reads a recording in log-time order; iterating gives
    :class:`Recorded` messages. `channels` (names or fnmatch globs) and
    `start`/`end` (log time, ns since the epoch; end excluded) filter."""

    def __init__(self, path: str, channels: Iterable[str] | None = None, start: int | None = None,
                 end: int | None = None, include_provenance_channel: bool = False) -> None:
        self.path = path
        self._reader = _shmbus._Reader(path, list(channels or []), int(start or 0),
                                       int(end) if end is not None else (1 << 64) - 1)
        self._internal = include_provenance_channel
        self.channels: dict[str, ChannelInfo] = {}
        for c in self._reader.channels():
            if c["name"] == _PROVENANCE_CHANNEL and not include_provenance_channel:
                continue
            self.channels[c["name"]] = ChannelInfo(c["name"], MessageType(*c["type"]), c["messages"])

    def __iter__(self) -> Iterator[Recorded]:
        self._reader.rewind()
        while True:
            r = self._reader.next()
            if r is None:
                return
            channel, sequence, log_time, publish_time, data = r
            info = self.channels.get(channel)
            if info is None:
                continue  # the provenance channel
            yield Recorded(self, channel, sequence, log_time, publish_time,
                           Message(info.type, np.frombuffer(data, np.uint8), None))

    def graph(self) -> dict[str, Any]:
        """The modules and channels of the recording and who feeds whom:
        what ``shmtool bag graph --json`` prints."""
        return self._reader.graph()

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class Writer:
    """Writes a recording as the recorder lays it out, so that Reader,
    shmtool bag and shmtool play read it. `compression`: zstd, lz4 or
    none."""

    def __init__(self, path: str, compression: str = "zstd") -> None:
        self._writer = _shmbus._Writer(path, compression)
        self._sequences: dict[str, int] = {}

    def write(self, channel: str, message: Message, log_time: int, publish_time: int | None = None,
              sequence: int | None = None) -> None:
        """Writes `message` on `channel` at `log_time` (ns); the sequence
        counts from 0 per channel unless given."""
        seq = self._sequences.get(channel, 0) if sequence is None else sequence
        self._sequences[channel] = seq + 1
        self._writer.write(channel, message._type.info, seq, int(log_time),
                           int(log_time if publish_time is None else publish_time), encode(message._type, message))

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def export(input: str, output: str, encoding: str = "json", strict: bool = False) -> dict[str, Any]:
    """Writes `output`, the recording `input` with every message in
    `encoding`: "json" (a jsonschema per type) or "cdr" (profile ros2,
    ros2msg schemas, what rosbag2 writes). A channel whose type cannot be
    read, or a message that does not decode, is left out and listed under
    "left_out" (with `strict`, the first raises InvalidArgumentError).
    Returns {"messages", "channels", "bytes", "left_out"}; as `shmtool bag
    export`."""
    return dict(_shmbus.export_recording(input, output, encoding, strict))


def import_ros2(input: str, output: str, msg_path: Iterable[str] = (), strict: bool = False) -> dict[str, Any]:
    """Writes `output`, a shmbus recording, from the ROS 2 recording
    `input` (cdr messages, ros2msg schemas; rosbag2's MCAP). A channel
    whose type cannot be held, or a message that does not decode, is kept
    raw and listed under "left_out" (with `strict`, the first raises).
    Returns {"messages", "channels", "bytes", "left_out"}; as `shmtool bag
    import`."""
    return dict(_shmbus.import_ros2(input, output, list(msg_path), strict))
