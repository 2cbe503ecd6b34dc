"""Mini-Kafka's framing and payload codec, sans-IO (no socket, no asyncio).

Limits first:

* :data:`DEFAULT_MAX_FRAME`: the largest length field (which counts its own 4 bytes) a
  deframer accepts, checked as soon as the four bytes are in, before anything is
  buffered for the payload.  The real server has none: it allocates whatever the length
  says (FACTS.md); ours refuses from the prefix (``--max-frame-bytes``).
* A length below 4 cannot count its own 4 bytes: the deframer refuses it.  A length of 4
  (no type byte) is a frame with an empty payload, refused by :func:`decode_request`.

Frames are ``[i32 length = 4 + payload][payload]`` both ways (MK-FRAME-1, -2); the
payload's first byte is its type.  Requests and replies are the flat dataclasses below,
written and read by the declarations of :mod:`.messages` alone.  Every decoder returns a
value or raises :class:`MiniKafkaError` (a :class:`~conformance.errors.ProtocolError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.protocols.minikafka import messages as m
from conformance.wire.framing import LengthPrefixDeframer, LengthPrefixFraming

DEFAULT_MAX_FRAME = 8 * 1024 * 1024
"""8 MiB: the default limit of a frame's length field (``--max-frame-bytes``)."""

FRAMING = LengthPrefixFraming(limit=DEFAULT_MAX_FRAME, order="big", includes_self=True)


class MiniKafkaError(ProtocolError):
    """A payload that is not a mini-Kafka message.  ``type`` is its type byte when it has
    one a reply can answer (a request type: the error reply's type is ``type + 1``)."""

    def __init__(self, message: str, type: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.type = type


class UnknownType(MiniKafkaError):
    """A type byte that is no request type (or no reply type, for a reply)."""


class EmptyPayload(MiniKafkaError):
    """A frame of length 4: no type byte at all."""


def frame(payload: bytes, length: int | None = None) -> bytes:
    """``[i32 4 + len(payload)][payload]``; ``length`` (a fuzzer's) overrides the field."""
    return FRAMING.frame(payload, length=length)


def new_deframer(max_frame: int = DEFAULT_MAX_FRAME) -> LengthPrefixDeframer:
    return LengthPrefixDeframer(order=">", includes_self=True, max_frame=max_frame)


# ---------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Consume:
    topic: str | bytes
    """Text, or raw bytes a test sends as they are (not UTF-8, on purpose)."""
    offset: int
    batch_size: int
    type = m.CONSUME_REQUEST


@dataclass(frozen=True)
class Produce:
    topic: str | bytes
    data: bytes
    type = m.PRODUCE_REQUEST


@dataclass(frozen=True)
class Flush:
    type = m.FLUSH_REQUEST


Request = Consume | Produce | Flush


def encode_request(request: Request) -> bytes:
    """The payload of ``request`` (ValueError for a value that does not fit its field)."""
    if isinstance(request, Consume):
        body: dict[str, Any] = {
            "topic": _topic_bytes(request.topic),
            "offset": request.offset,
            "batch_size": request.batch_size,
        }
    elif isinstance(request, Produce):
        body = {"topic": _topic_bytes(request.topic), "data": request.data}
    else:
        body = {}
    return m.REQUEST.encode({"request": {"kind": request.type, "value": body}}, m.VERSION)


def _plain(exc: ProtocolError) -> str:
    """A schema error's text with the declaration's paths cut to field names."""
    text = str(exc).replace("request.value.", "").replace("reply.value.value.", "")
    return text.replace("reply.value:", "success byte:")


def _topic_bytes(topic: str | bytes) -> bytes:
    return topic if isinstance(topic, bytes) else topic.encode("utf-8")


def _topic(raw: bytes, kind: int, lenient: bool) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if lenient:
            return raw.decode("utf-8", "replace")
        raise MiniKafkaError(
            f"{m.NAMES[kind]}: the topic is not valid UTF-8 (byte {exc.start})", kind
        ) from None


def decode_request(payload: bytes, *, strict: bool = True, lenient_utf8: bool = False) -> Request:
    """The request in a frame's payload; MiniKafkaError naming what is wrong (its ``type``
    set when the type byte is a request type, so the refusal can be answered).

    ``strict``: bytes after the last field are an error (a broker passes False: the real
    client pads CONSUME, FACTS.md 2.3); ``lenient_utf8``: a topic's bytes that are not
    UTF-8 are read as U+FFFD, as the real server reads them (FACTS.md 2.10)."""
    if not payload:
        raise EmptyPayload("a frame of length 4 has no type byte")
    kind = payload[0]
    if kind not in m.REPLY_TYPE:
        raise UnknownType(
            f"unknown message type 0x{kind:02x} (requests are 0x01 CONSUME, 0x03 PRODUCE, "
            "0x05 FLUSH)"
        )
    try:
        value = m.REQUEST.decode(payload, m.VERSION, whole=strict)["request"]["value"]
    except Truncated as exc:
        raise MiniKafkaError(f"{m.NAMES[kind]} is cut short: {_plain(exc)}", kind) from None
    except TrailingBytes:
        raise MiniKafkaError(f"{m.NAMES[kind]} has bytes after its last field", kind) from None
    except ProtocolError as exc:
        raise MiniKafkaError(f"{m.NAMES[kind]}: {_plain(exc)}", kind) from None
    if kind == m.CONSUME_REQUEST:
        topic = _topic(value["topic"], kind, lenient_utf8)
        return Consume(topic, value["offset"], value["batch_size"])
    if kind == m.PRODUCE_REQUEST:
        return Produce(_topic(value["topic"], kind, lenient_utf8), value["data"])
    return Flush()


# ------------------------------------------------------------------------ replies


@dataclass(frozen=True)
class Consumed:
    """One message of a CONSUME reply."""

    offset: int
    data: bytes


@dataclass(frozen=True)
class ConsumeOk:
    next_offset: int
    messages: tuple[Consumed, ...] = ()
    type = m.CONSUME_RESPONSE


@dataclass(frozen=True)
class ProduceOk:
    offset: int
    type = m.PRODUCE_RESPONSE


@dataclass(frozen=True)
class FlushOk:
    type = m.FLUSH_RESPONSE


@dataclass(frozen=True)
class Failure:
    """The error path of any reply: ``[type][success 0][i32 length][UTF-8 error]``."""

    type: int
    error: str


Reply = ConsumeOk | ProduceOk | FlushOk | Failure


def failure_for(request_type: int, error: str) -> Failure:
    """The error reply to a request of ``request_type``."""
    return Failure(m.REPLY_TYPE[request_type], error)


def encode_reply(reply: Reply) -> bytes:
    if isinstance(reply, Failure):
        outcome: dict[str, Any] = {"kind": m.FAILURE, "value": {"error": reply.error}}
    elif isinstance(reply, ConsumeOk):
        items = [{"offset": c.offset, "data": c.data} for c in reply.messages]
        body = {"next_offset": reply.next_offset, "messages": items}
        outcome = {"kind": m.SUCCESS, "value": body}
    elif isinstance(reply, ProduceOk):
        outcome = {"kind": m.SUCCESS, "value": {"offset": reply.offset}}
    else:
        outcome = {"kind": m.SUCCESS, "value": {}}
    return m.REPLY.encode({"reply": {"kind": reply.type, "value": outcome}}, m.VERSION)


def decode_reply(payload: bytes) -> Reply:
    """The reply in a frame's payload; MiniKafkaError if it is none."""
    if not payload:
        raise EmptyPayload("a reply frame of length 4 has no type byte")
    if payload[0] not in m.REPLY_TYPE.values():
        raise UnknownType(f"unknown reply type 0x{payload[0]:02x} (replies are 0x02, 0x04, 0x06)")
    try:
        reply = m.REPLY.decode(payload, m.VERSION)["reply"]
    except ProtocolError as exc:
        raise MiniKafkaError(f"{m.NAMES[payload[0]]}: {_plain(exc)}") from None
    kind, outcome = reply["kind"], reply["value"]
    value = outcome["value"]
    if outcome["kind"] == m.FAILURE:
        return Failure(kind, value["error"])
    if kind == m.CONSUME_RESPONSE:
        items = tuple(Consumed(i["offset"], i["data"]) for i in value["messages"])
        return ConsumeOk(value["next_offset"], items)
    if kind == m.PRODUCE_RESPONSE:
        return ProduceOk(value["offset"])
    return FlushOk()


def reply_type_of(payload: bytes) -> int | None:
    return payload[0] if payload else None


def describe(request: Request | Reply) -> str:
    """A one-line summary, for wire logs and messages."""
    if isinstance(request, Consume):
        return f"CONSUME {request.topic!r} offset={request.offset} batch={request.batch_size}"
    if isinstance(request, Produce):
        return f"PRODUCE {request.topic!r} {len(request.data)} bytes"
    if isinstance(request, Flush):
        return "FLUSH"
    if isinstance(request, Failure):
        return f"{m.NAMES.get(request.type, hex(request.type))} error {request.error!r}"
    if isinstance(request, ConsumeOk):
        offsets: Sequence[int] = [c.offset for c in request.messages]
        shown = ",".join(map(str, offsets[:8])) + ("..." if len(offsets) > 8 else "")
        return f"CONSUME reply next_offset={request.next_offset} {len(offsets)} messages [{shown}]"
    if isinstance(request, ProduceOk):
        return f"PRODUCE reply offset={request.offset}"
    return "FLUSH reply ok"
