"""The broker's request deframer and its Identifier scan: the parts of Iggy's classic
framing the shared length-prefix deframer cannot express.

:class:`RequestDeframer` hands out ``code + payload`` like ``codec.new_deframer("request")``
with two differences, both to keep serving where the real server does (FACTS.md section 1):

* a length below 4 is a frame of its own: :class:`Refused` (status 3) once the whole
  8-byte header (length, code) is in, no payload read; the next bytes are the next frame
  (SV/tcp/connection_handler.rs reads the header whole before it judges the length);
* a control request (any code but SEND_MESSAGES) announcing more than 10 MiB of payload
  is :class:`Refused` from its 8-byte header alone, and its payload is then skipped as it
  arrives, never buffered.  The real server leaves that payload unread, so its stream
  desyncs; skipping it keeps our connection in step with an honest client.

A length past ``max_frame`` (64 MiB, SEND_MESSAGES included) ends the connection: the
server shell answers the framing error (status 3) and closes.

:func:`scan_identifiers` walks the leading Identifiers of a classic request, which the
broker needs for two things the schema decoder does not say: which decode failures are
field validation (status 4: a numeric Identifier whose length is not 4, an empty string
one; SV/binary/dispatch.rs, BP/primitives/identifier.rs) and where a string Identifier's
length runs past the payload (the fault quirk crash-on-short-identifier).
"""

from __future__ import annotations

import struct

from conformance.protocols.iggy.codec import MAX_CONTROL_PAYLOAD, MAX_FRAME
from conformance.protocols.iggy.errors import INVALID_COMMAND, IggyFrameTooLarge
from conformance.protocols.iggy.messages import CODES

SEND_MESSAGES = CODES["send_messages"]
_U32 = struct.Struct("<I")


class Refused(bytes):
    """A frame the deframer already judged: answer ``status``; its bytes are the code."""

    status = INVALID_COMMAND
    reason = ""

    @classmethod
    def of(cls, data: bytes, reason: str) -> Refused:
        frame = cls(data)
        frame.reason = reason
        return frame


class RequestDeframer:
    def __init__(self, max_frame: int = MAX_FRAME, max_control: int = MAX_CONTROL_PAYLOAD):
        self.max_frame = max_frame
        self.max_control = max_control
        self._buf = bytearray()
        self._need: int | None = None
        self._skip = 0
        self._error: IggyFrameTooLarge | None = None

    @property
    def error(self) -> IggyFrameTooLarge | None:
        return self._error

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        if self._error is not None:
            raise self._error
        self._buf += data
        frames: list[bytes] = []
        buf, pos = self._buf, 0
        try:
            while True:
                if self._skip:
                    n = min(self._skip, len(buf) - pos)
                    pos += n
                    self._skip -= n
                    if self._skip:
                        return frames
                if self._need is None:
                    if len(buf) - pos < 4:
                        return frames
                    (length,) = _U32.unpack_from(buf, pos)
                    if length < 4:
                        if len(buf) - pos < 8:
                            return frames
                        frames.append(Refused.of(b"", f"length {length} is below 4"))
                        pos += 8
                        continue
                    if length > self.max_frame:
                        self._error = IggyFrameTooLarge(length, self.max_frame)
                        if frames:
                            return frames
                        raise self._error
                    if len(buf) - pos < 8:
                        return frames
                    code = bytes(buf[pos + 4 : pos + 8])
                    if _U32.unpack(code)[0] != SEND_MESSAGES and length - 4 > self.max_control:
                        reason = f"a control payload of {length - 4} bytes is over 10 MiB"
                        frames.append(Refused.of(code, reason))
                        pos += 8
                        self._skip = length - 4
                        continue
                    self._need = length
                    pos += 4
                if len(buf) - pos < self._need:
                    return frames
                frames.append(bytes(buf[pos : pos + self._need]))
                pos += self._need
                self._need = None
        finally:
            del buf[:pos]


# ------------------------------------------------------------------ identifiers

_LEADING: dict[str, tuple[int, int]] = {
    "get_stream": (0, 1),
    "delete_stream": (0, 1),
    "get_topics": (0, 1),
    "create_topic": (0, 1),
    "get_topic": (0, 2),
    "delete_topic": (0, 2),
    "create_partitions": (0, 2),
    "delete_partitions": (0, 2),
    "get_consumer_groups": (0, 2),
    "create_consumer_group": (0, 2),
    "get_consumer_group": (0, 3),
    "delete_consumer_group": (0, 3),
    "join_consumer_group": (0, 3),
    "leave_consumer_group": (0, 3),
    "send_messages": (4, 2),
    "poll_messages": (1, 3),
    "get_consumer_offset": (1, 3),
    "store_consumer_offset": (1, 3),
    "delete_consumer_offset": (1, 3),
}
"""Where a classic request's Identifiers start and how many follow one another there."""

SHORT, INVALID = "short", "invalid"


def scan_identifiers(name: str, payload: bytes) -> str | None:
    """:data:`SHORT` when a string Identifier's length byte runs past the payload,
    :data:`INVALID` when one fails validation (numeric length not 4, empty string),
    else None: the decode failure, if any, is 3.

    In the order of ``WireIdentifier::decode`` (BP/primitives/identifier.rs): kind and
    length, then the value bytes (cut off: UnexpectedEof, 3), then the length check (4)
    or the UTF-8 check (3), then the kind (unknown: 3).  A request that starts with a
    Consumer (POLL and the consumer-offset commands) has its kind checked first
    (``WireConsumer::decode``, BP/primitives/consumer.rs): not 1 or 2 is 3."""
    where = _LEADING.get(name)
    if where is None:
        return None
    pos, count = where
    if pos == 1 and (not payload or payload[0] not in (1, 2)):  # a Consumer's kind
        return None
    for _ in range(count):
        if pos + 2 > len(payload):
            return None
        kind, length = payload[pos], payload[pos + 1]
        if pos + 2 + length > len(payload):
            return SHORT if kind == 2 else None
        if kind == 1 and length != 4:
            return INVALID
        if kind == 2:
            if length == 0:
                return INVALID
            try:
                payload[pos + 2 : pos + 2 + length].decode()
            except UnicodeDecodeError:
                return None
        elif kind != 1:
            return None
        pos += 2 + length
    return None
