"""Hypothesis strategies for mini-Kafka requests and replies, derived from :mod:`.messages`.

Valid ones come from the declarations through :mod:`conformance.wire.schema_strategies`
(every field of a type over its whole range: int64 offsets, int32 batch sizes, data of
up to 32 bytes), turned into the flat dataclasses of :mod:`.codec`; only the topic is
drawn here, as text (the declaration holds it as bytes, since ``doc`` and ``real`` read
bytes that are not UTF-8 differently): :func:`.codec.encode_request` then writes it and
:func:`.codec.decode_request` reads it back equal, strictly, in both revisions.

Invalid ones (:func:`invalid_requests`) are a valid request's payload with one lie put
into it, named by its kind (:data:`INVALID_KINDS`), each of which
:func:`.codec.decode_request` refuses (strict, not ``lenient_utf8``) with a
:class:`~.codec.MiniKafkaError`:

* ``empty`` -- no type byte (a frame of length 4);
* ``unknown-type`` -- a type byte that is no request type, with a body;
* ``cut`` -- a CONSUME or PRODUCE cut short inside or between its fields;
* ``topic-length`` / ``data-length`` -- a length that runs past the payload, or is
  negative;
* ``trailing`` -- bytes after the last field (accepted by a broker: ``strict=False``);
* ``bad-utf8`` -- a topic that is not UTF-8 (``real`` reads it as U+FFFD).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.wire import schema_strategies as derived

NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
I32 = struct.Struct(">i")
HEAD = 1
"""Bytes before a request's first field: the type byte."""


def topics(max_size: int = 16) -> st.SearchStrategy[str]:
    """Plain names mostly, any UTF-8 text now and then (empty and NUL included: the codec
    takes them; a broker may refuse them with an error reply)."""
    return st.text(NAME_CHARS, min_size=1, max_size=max_size) | st.text(
        st.characters(codec="utf-8"), max_size=max_size
    )


def _fields(struct_: Any) -> st.SearchStrategy[dict[str, Any]]:
    """The values of one request struct of :mod:`.messages`, its topic as text."""
    overrides = {"topic": topics()}
    return derived.type_values(struct_, m.VERSION, False, overrides=overrides)


def consumes() -> st.SearchStrategy[codec.Consume]:
    return _fields(m.CONSUME).map(lambda v: codec.Consume(v["topic"], v["offset"], v["batch_size"]))


def produces() -> st.SearchStrategy[codec.Produce]:
    return _fields(m.PRODUCE).map(lambda v: codec.Produce(v["topic"], v["data"]))


def flushes() -> st.SearchStrategy[codec.Flush]:
    return _fields(m.FLUSH).map(lambda _: codec.Flush())


BY_TYPE: dict[int, Callable[[], st.SearchStrategy[codec.Request]]] = {
    m.CONSUME_REQUEST: consumes,
    m.PRODUCE_REQUEST: produces,
    m.FLUSH_REQUEST: flushes,
}


def requests(kind: int | None = None) -> st.SearchStrategy[codec.Request]:
    """A request of type ``kind`` (0x01, 0x03, 0x05; any when None) that round-trips."""
    if kind is not None:
        return BY_TYPE[kind]()
    either: st.SearchStrategy[codec.Request] = st.one_of(consumes(), produces(), flushes())
    return either


# ------------------------------------------------------------------ invalid

INVALID_KINDS = (
    "empty",
    "unknown-type",
    "cut",
    "topic-length",
    "data-length",
    "trailing",
    "bad-utf8",
)
BAD_UTF8 = (b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\x80", b"\x80", b"\xe2\x82")
"""Byte strings that are not UTF-8 wherever they stand."""


def _lying_length(draw: st.DrawFn, payload: bytes, at: int) -> bytes:
    """``payload`` with the i32 length at ``at`` made negative or past the payload's end."""
    left = len(payload) - at - 4
    lie = draw(st.one_of(st.integers(-(2**31), -1), st.integers(left + 1, 2**31 - 1)))
    return payload[:at] + I32.pack(lie) + payload[at + 4 :]


def _raw(topic: str | bytes) -> bytes:
    return topic if isinstance(topic, bytes) else topic.encode("utf-8")


@st.composite
def invalid_requests(draw: st.DrawFn, kind: str | None = None) -> tuple[str, bytes]:
    """``(kind, payload)``: a payload with one lie of ``kind`` (any of
    :data:`INVALID_KINDS` when None) that :func:`.codec.decode_request` refuses."""
    kind = kind or draw(st.sampled_from(INVALID_KINDS))
    if kind == "empty":
        return kind, b""
    if kind == "unknown-type":
        known = set(m.REPLY_TYPE)
        head = draw(st.integers(0, 255).filter(lambda t: t not in known))
        body = draw(st.binary(max_size=32) | requests().map(lambda r: codec.encode_request(r)[1:]))
        return kind, bytes([head]) + body
    if kind == "trailing":
        valid = codec.encode_request(draw(requests()))
        return kind, valid + draw(st.binary(min_size=1, max_size=32))
    fielded = consumes() | produces()
    if kind == "data-length":
        fielded = produces()
    request = draw(fielded)
    assert isinstance(request, codec.Consume | codec.Produce)
    if kind == "bad-utf8":
        odd = draw(st.sampled_from(BAD_UTF8))
        raw = _raw(request.topic)
        at = draw(st.integers(0, len(raw)))
        bad = raw[:at] + odd + raw[at:]
        if isinstance(request, codec.Consume):
            odd_request: codec.Request = codec.Consume(bad, request.offset, request.batch_size)
        else:
            odd_request = codec.Produce(bad, request.data)
        return kind, codec.encode_request(odd_request)
    payload = codec.encode_request(request)
    if kind == "cut":
        return kind, payload[: draw(st.integers(HEAD, len(payload) - 1))]
    if kind == "topic-length":
        return kind, _lying_length(draw, payload, HEAD)
    topic = len(_raw(request.topic))
    return kind, _lying_length(draw, payload, HEAD + 4 + topic)  # data-length


# ------------------------------------------------------------------ replies


def _consumed(value: dict[str, Any]) -> codec.ConsumeOk:
    items = tuple(codec.Consumed(i["offset"], i["data"]) for i in value["messages"])
    return codec.ConsumeOk(value["next_offset"], items)


def _reply(value: dict[str, Any]) -> codec.Reply:
    reply = value["reply"]
    kind, outcome = reply["kind"], reply["value"]
    body = outcome["value"]
    if outcome["kind"] == m.FAILURE:
        return codec.Failure(kind, body["error"])
    if kind == m.CONSUME_RESPONSE:
        return _consumed(body)
    if kind == m.PRODUCE_RESPONSE:
        return codec.ProduceOk(body["offset"])
    return codec.FlushOk()


def replies() -> st.SearchStrategy[codec.Reply]:
    """Any reply, success or error path, that :func:`.codec.encode_reply` writes and
    :func:`.codec.decode_reply` reads back equal."""
    return derived.values(m.REPLY, m.VERSION).map(_reply)
