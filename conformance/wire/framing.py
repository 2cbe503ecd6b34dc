"""Framings and incremental deframers: feed bytes as they arrive, take whole frames out.

A :class:`Framing` is what a protocol's plug-in says about how its frames travel: it
frames a payload going in a direction (``request``: to the broker; ``reply``: from it),
makes a fresh deframer for a direction, and states the largest frame it takes.  Two
framings cover the seed protocols' common shapes (a u32 length prefix; a text line); a
protocol whose replies are framed unlike its requests (Iggy: a status before the length)
writes its own small framing class with the same three members, over the same
deframers.  :class:`Deframer` is the one interface of a deframer, for the server, the
client, the suite and the fuzzer alike.

Both deframers are sans-IO and bounded:

* :class:`LengthPrefixDeframer` reads a u32 length prefix whose byte order, whether
  it counts its own four bytes, and how many bytes come before it (``lead``: Iggy's
  reply status, handed out in front of the payload) are parameters.  The value of the length
  field is checked against ``max_frame`` as soon as the four prefix bytes are
  known, before any payload is buffered, so an oversize claim costs nothing.
* :class:`LineDeframer` splits on ``\\n`` and refuses a line longer than
  ``max_line`` bytes (terminator excluded) as soon as the buffered part of it is
  longer than that, again before waiting for the rest.

After an error a deframer is poisoned: the stream cannot be resynchronised, and
the caller is expected to close the connection.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal, Protocol

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.wire.primitives import ByteOrder

DIRECTIONS = ("request", "reply")
"""``request``: a frame going to the broker; ``reply``: a frame coming from it."""


class Deframer(Protocol):
    """Bytes in, whole frame payloads out; poisoned after its first error."""

    def feed(self, data: bytes) -> list[bytes]:
        """Buffer ``data`` and return every frame payload now complete; raises the
        ProtocolError that ends the stream (a bad prefix, an overlong line)."""
        ...

    @property
    def error(self) -> ProtocolError | None:
        """The error that ended the stream, once one was seen."""
        ...

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame (a partial frame when > 0)."""
        ...


class Framing(Protocol):
    """How a protocol's frames travel, both ways.

    A frame's *payload* is everything but the bytes that delimit it (a length prefix, a
    line's terminator): a header the protocol puts before its length stays in the payload.
    An Iggy reply, ``[u32 status][u32 length][payload]``, is read as the payload
    ``status + payload`` (the deframer drops only the length), so the annotator, the
    session opener, the canary and the reports all see the status."""

    @property
    def limit(self) -> int:
        """The largest frame (payload, or line) a broker of the protocol takes."""
        ...

    def frame(self, payload: bytes, direction: str = "request", length: int | None = None) -> bytes:
        """``payload`` framed as it travels in ``direction``; ``length`` (for the fuzzer)
        overrides what a length field says, where the framing has one."""
        ...

    def deframer(self, direction: str = "request") -> Deframer:
        """A fresh deframer for frames going in ``direction``."""
        ...


class LengthPrefixDeframer:
    """u32 length-prefixed frames.

    ``max_frame`` bounds the value of the length field itself.  With
    ``includes_self`` the field counts its own four bytes, so values below four
    are malformed.  ``lead`` bytes before the length field (not counted by it) are
    handed out in front of the frame's payload.
    """

    def __init__(
        self,
        *,
        order: ByteOrder = ">",
        includes_self: bool = False,
        max_frame: int,
        lead: int = 0,
    ) -> None:
        self._fmt = struct.Struct(order + "I")
        self._includes_self = includes_self
        self._lead = lead
        self.lead = lead
        """Bytes before the length field, handed out at the front of the payload."""
        self._head = b""  # the lead bytes of the frame being read
        self.max_frame = max_frame
        self._buf = bytearray()
        self._need: int | None = None  # payload length of the frame being read
        self._error: ProtocolError | None = None
        self.sizes: list[int] = []
        """The bytes each frame the last :meth:`feed` returned took on the wire (its lead,
        length field and payload), for a caller that must show what was sent."""

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame."""
        return len(self._buf)

    @property
    def error(self) -> ProtocolError | None:
        """The error that ended this stream, once a bad prefix was seen.

        :meth:`feed` returns the frames complete before a bad prefix and raises the error
        on the next call; a caller with nothing more to feed checks this after handling
        the frames it got."""
        return self._error

    @property
    def pending_frame_length(self) -> int | None:
        """Payload length of a frame whose prefix arrived but whose payload has not."""
        return self._need

    def feed(self, data: bytes) -> list[bytes]:
        """Buffer ``data`` and return every frame payload now complete, in order."""
        if self._error is not None:
            raise self._error
        self._buf += data
        frames: list[bytes] = []
        self.sizes = sizes = []
        buf, pos = self._buf, 0
        try:
            while True:
                if self._need is None:
                    if len(buf) - pos < self._lead + 4:
                        return frames
                    (value,) = self._fmt.unpack_from(buf, pos + self._lead)
                    try:
                        self._need = self._payload_length(value)
                    except ProtocolError as exc:
                        self._error = exc
                        if frames:  # hand out what came before; raise on the next feed
                            return frames
                        raise
                    self._head = bytes(buf[pos : pos + self._lead])
                    pos += self._lead + 4
                if len(buf) - pos < self._need:
                    return frames
                frames.append(self._head + bytes(buf[pos : pos + self._need]))
                sizes.append(self._lead + 4 + self._need)
                pos += self._need
                self._need = None
        finally:
            del buf[:pos]

    def _payload_length(self, value: int) -> int:
        if value > self.max_frame:
            raise FrameTooLarge(value, self.max_frame)
        if self._includes_self:
            if value < 4:
                raise ProtocolError(f"length field {value} is smaller than its own 4 bytes")
            return value - 4
        return value


def frame_u32(
    payload: bytes,
    *,
    order: ByteOrder = ">",
    includes_self: bool = False,
    length: int | None = None,
) -> bytes:
    """Prefix ``payload`` with its u32 length; ``length`` (for the fuzzer) overrides the
    value written, as its 32-bit two's complement when negative."""
    value = len(payload) + (4 if includes_self else 0) if length is None else length
    return struct.pack(order + "I", value & 0xFFFFFFFF) + payload


@dataclass(frozen=True)
class LengthPrefixFraming:
    """Frames behind a u32 length, the same both ways (Cursus, Kafka, mini-Kafka).

    ``order`` is spelled as an :class:`~conformance.wire.encoding.Encoding` spells it
    (``big`` or ``little``); ``includes_self``: the length counts its own four bytes.  A
    ``length`` override is written as its 32-bit two's complement, so a fuzzer can claim a
    negative size."""

    limit: int
    order: Literal["big", "little"] = "big"
    includes_self: bool = False

    @property
    def _struct_order(self) -> ByteOrder:
        return ">" if self.order == "big" else "<"

    def frame(self, payload: bytes, direction: str = "request", length: int | None = None) -> bytes:
        return frame_u32(
            payload, order=self._struct_order, includes_self=self.includes_self, length=length
        )

    def deframer(self, direction: str = "request") -> LengthPrefixDeframer:
        return LengthPrefixDeframer(
            order=self._struct_order, includes_self=self.includes_self, max_frame=self.limit
        )


@dataclass(frozen=True)
class LineFraming:
    """One ``\\n``-terminated line a frame, the same both ways (the V1 line protocol);
    ``limit`` bounds a line without its terminator.  There is no length to override."""

    limit: int

    def frame(self, payload: bytes, direction: str = "request", length: int | None = None) -> bytes:
        return payload + b"\n"

    def deframer(self, direction: str = "request") -> LineDeframer:
        return LineDeframer(max_line=self.limit)


class LineDeframer:
    """``\\n``-terminated lines of at most ``max_line`` bytes (terminator excluded)."""

    def __init__(self, *, max_line: int) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._error: ProtocolError | None = None
        self.sizes: list[int] = []
        """The bytes each line the last :meth:`feed` returned took, its ``\\n`` counted."""

    @property
    def error(self) -> ProtocolError | None:
        return self._error

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        """Buffer ``data`` and return every complete line, without its ``\\n``.  As
        :class:`LengthPrefixDeframer` does, the lines complete before an over-long one are
        handed out first; the error is raised then, or on the next call when there were
        some (see :attr:`error`)."""
        if self._error is not None:
            raise self._error
        self._buf += data
        lines: list[bytes] = []
        self.sizes = sizes = []
        buf, pos = self._buf, 0
        try:
            while True:
                end = buf.find(b"\n", pos)
                size = (len(buf) if end < 0 else end) - pos
                if size > self.max_line:
                    self._error = FrameTooLarge(size, self.max_line)
                    if lines:
                        return lines
                    raise self._error
                if end < 0:
                    return lines
                lines.append(bytes(buf[pos:end]))
                sizes.append(end - pos + 1)
                pos = end + 1
        finally:
            del buf[:pos]
