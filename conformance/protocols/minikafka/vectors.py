"""The mini-Kafka vector schema: what a vector's ``decoded``, ``reply`` and extra keys hold.

A frame is ``[i32 length, counting its own 4 bytes][payload]`` both ways
(:data:`.codec.FRAMING`); the payload the generic loader hands over starts with the type byte.

A request vector's ``decoded`` is ``{type: consume, topic, offset, batch_size}``, ``{type:
produce, topic, data}`` or ``{type: flush}``, with ``trailing: N`` when N bytes follow the
last field (the real client pads every CONSUME, FACTS.md 2.3; they are read and ignored,
MK-FRAME-5, -6).  An encoder writes them as N zero bytes, the real client's padding: a
vector with other trailing bytes is not ``encode_exact``.  A topic is text: one whose bytes
are not UTF-8 is refused in ``doc`` (``BAD_REQUEST``) and read with U+FFFD in ``real``
(MK-ERR-4), where its vector is not ``encode_exact``.

A reply vector's ``decoded`` is ``{type, success: true, ...}`` with the success fields of
the reply to ``type`` (``consume``: ``next_offset`` and ``messages``, a list of ``{offset,
data}``; ``produce``: ``offset``; ``flush``: nothing) or ``{type, success: false, error}``.

Bytes (``data``) are ``{text: "..."}`` (their UTF-8, printable) or ``{hex: "..."}``
(whitespace ignored); :func:`from_message` writes text when it can, hex otherwise.

Extra keys: ``revision`` (``doc`` or ``real``, SPEC.md's revisions): the revision a request
is read in, and the reference broker it is sent to.  Without it the request must read
alike in both (the same request, or the same refusal) and its ``reply`` is checked against
both brokers.  On a reply vector it only says which broker sends it (a reply reads alike
in both).

A request vector's ``reply`` has the form of a reply's ``decoded`` and is compared on the
keys it gives (an error's wording is the broker's own: leave ``error`` out to accept any),
or is ``{closed: true}``: the broker closes the connection without a reply (a length
below 5, an unknown type byte, a length over the limit).  ``setup`` steps are ``{hex:
FRAME}`` or the text commands ``produce TOPIC [DATA]`` and ``flush`` (:func:`setup_request`).

Error codes: ``BAD_REQUEST`` (a request type whose fields are cut short or malformed:
answered with its error path), ``UNKNOWN_TYPE`` (a type byte no request or reply has),
``EMPTY_PAYLOAD`` (a frame of length 4), ``BAD_REPLY`` (a reply the codec cannot read),
``BAD_LENGTH`` (a length field below 4, which cannot count itself) and
``FRAME_TOO_LARGE`` (a length field over the deframer's limit, 8 MiB).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.vectors import mismatches, one_of, plain_bytes, text_or_hex

REVISIONS = ("doc", "real")
ERROR_NAMES = (
    "BAD_REQUEST",
    "UNKNOWN_TYPE",
    "EMPTY_PAYLOAD",
    "BAD_REPLY",
    "BAD_LENGTH",
    "FRAME_TOO_LARGE",
)
REQUEST_TYPES = {
    "consume": m.CONSUME_REQUEST,
    "produce": m.PRODUCE_REQUEST,
    "flush": m.FLUSH_REQUEST,
}
REPLY_TYPES = {name: m.REPLY_TYPE[t] for name, t in REQUEST_TYPES.items()}
_TYPE_NAMES = {t: name for table in (REQUEST_TYPES, REPLY_TYPES) for name, t in table.items()}
_REQUEST_KEYS = {
    "consume": ("topic", "offset", "batch_size"),
    "produce": ("topic", "data"),
    "flush": (),
}
_OK_KEYS = {"consume": ("next_offset", "messages"), "produce": ("offset",), "flush": ()}


class RevisionsDiffer(ProtocolError):
    """A request vector without ``revision`` whose payload reads differently in ``doc`` and
    ``real``."""


@dataclass(frozen=True)
class Decoded:
    """A vector's message: the codec's request or reply, and the bytes after its last field."""

    message: codec.Request | codec.Reply
    trailing: int = 0


# ------------------------------------------------------------------- plain data


def _int(d: Mapping[str, Any], key: str, what: str) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{what}: {key} must be an integer, got {v!r}")
    return v


def _only(d: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")


def _type(d: Mapping[str, Any], what: str) -> str:
    name = d.get("type")
    if name not in REQUEST_TYPES:
        raise ValueError(f"{what}: type {name!r} is not one of {', '.join(REQUEST_TYPES)}")
    return str(name)


def _topic(d: Mapping[str, Any], what: str) -> str:
    topic = d.get("topic")
    if not isinstance(topic, str):
        raise ValueError(f"{what}: topic must be text, got {topic!r}")
    return topic


def _request(d: Mapping[str, Any]) -> Decoded:
    name = _type(d, "a request")
    what = f"a {name} request"
    _only(d, ("type", *_REQUEST_KEYS[name], "trailing"), what)
    for key in _REQUEST_KEYS[name]:
        if key not in d:
            raise ValueError(f"{what} lacks {key}")
    trailing = d.get("trailing", 0)
    if isinstance(trailing, bool) or not isinstance(trailing, int) or trailing < 0:
        raise ValueError(f"{what}: trailing must be a count of bytes, got {trailing!r}")
    if name == "consume":
        request: codec.Request = codec.Consume(
            _topic(d, what), _int(d, "offset", what), _int(d, "batch_size", what)
        )
    elif name == "produce":
        request = codec.Produce(_topic(d, what), text_or_hex(d["data"], f"{what}: data"))
    else:
        request = codec.Flush()
    return Decoded(request, trailing)


def _consumed(items: Any, what: str) -> tuple[codec.Consumed, ...]:
    if not isinstance(items, list):
        raise ValueError(f"{what}: messages must be a list, got {items!r}")
    out = []
    for i, item in enumerate(items):
        where = f"{what}: messages[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where} must be a mapping, got {item!r}")
        _only(item, ("offset", "data"), where)
        out.append(
            codec.Consumed(_int(item, "offset", where), text_or_hex(item.get("data"), where))
        )
    return tuple(out)


def _reply(d: Mapping[str, Any]) -> Decoded:
    name = _type(d, "a reply")
    success = d.get("success")
    if not isinstance(success, bool):
        raise ValueError(f"a {name} reply: success must be true or false, got {success!r}")
    what = f"a {name} {'success' if success else 'error'} reply"
    if not success:
        _only(d, ("type", "success", "error"), what)
        error = d.get("error")
        if not isinstance(error, str):
            raise ValueError(f"{what}: error must be text, got {error!r}")
        return Decoded(codec.Failure(REPLY_TYPES[name], error))
    _only(d, ("type", "success", *_OK_KEYS[name]), what)
    for key in _OK_KEYS[name]:
        if key not in d:
            raise ValueError(f"{what} lacks {key}")
    if name == "consume":
        reply: codec.Reply = codec.ConsumeOk(
            _int(d, "next_offset", what), _consumed(d["messages"], what)
        )
    elif name == "produce":
        reply = codec.ProduceOk(_int(d, "offset", what))
    else:
        reply = codec.FlushOk()
    return Decoded(reply)


def to_message(decoded: Mapping[str, Any]) -> Decoded:
    """The message a ``decoded`` mapping describes (a reply has ``success``); ValueError if
    malformed."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    return _reply(decoded) if "success" in decoded else _request(decoded)


def from_message(message: Any) -> dict[str, Any]:
    """The plain-data form of a :class:`Decoded` or a bare codec message."""
    trailing = 0
    if isinstance(message, Decoded):
        message, trailing = message.message, message.trailing
    out: dict[str, Any]
    if isinstance(message, codec.Consume | codec.Produce | codec.Flush):
        out = {"type": _TYPE_NAMES[message.type]}
        if isinstance(message, codec.Consume | codec.Produce):
            topic = message.topic
            out["topic"] = topic if isinstance(topic, str) else topic.decode("utf-8", "replace")
        if isinstance(message, codec.Consume):
            out |= {"offset": message.offset, "batch_size": message.batch_size}
        elif isinstance(message, codec.Produce):
            out["data"] = plain_bytes(message.data)
        if trailing:
            out["trailing"] = trailing
        return out
    if isinstance(message, codec.Failure):
        return {"type": _TYPE_NAMES[message.type], "success": False, "error": message.error}
    if isinstance(message, codec.ConsumeOk | codec.ProduceOk | codec.FlushOk):
        out = {"type": _TYPE_NAMES[message.type], "success": True}
        if isinstance(message, codec.ConsumeOk):
            out["next_offset"] = message.next_offset
            out["messages"] = [
                {"offset": c.offset, "data": plain_bytes(c.data)} for c in message.messages
            ]
        elif isinstance(message, codec.ProduceOk):
            out["offset"] = message.offset
        return out
    raise TypeError(f"not a mini-Kafka message: {message!r}")


def _expected_reply(reply: Any) -> dict[str, Any]:
    """A request vector's ``reply`` checked, with its bytes as :func:`from_message` writes
    them; ValueError if malformed."""
    if not isinstance(reply, Mapping):
        raise ValueError(f"must be a mapping, got {reply!r}")
    if "closed" in reply:
        if dict(reply) != {"closed": True}:
            raise ValueError("closed: true stands alone")
        return {"closed": True}
    name = _type(reply, "the reply")
    success = reply.get("success")
    if not isinstance(success, bool):
        raise ValueError(f"success must be true or false, got {success!r}")
    keys = ("error",) if not success else _OK_KEYS[name]
    _only(reply, ("type", "success", *keys), f"a {name} reply")
    full = {k: v for k, v in reply.items()}
    if success:  # check the value types through the full form
        defaults: dict[str, Any] = {"next_offset": 0, "messages": [], "offset": 0}
        _reply({**{k: defaults[k] for k in keys}, **full})
    elif "error" in full and not isinstance(full["error"], str):
        raise ValueError(f"error must be text, got {full['error']!r}")
    if "messages" in full:
        full["messages"] = [
            {"offset": c.offset, "data": plain_bytes(c.data)}
            for c in _consumed(full["messages"], "the reply")
        ]
    return full


# ------------------------------------------------------------------ setup steps


def setup_request(step: str) -> bytes:
    """The request payload of a text setup step: ``produce TOPIC [DATA]`` (DATA as UTF-8,
    empty if left out) or ``flush``; ValueError otherwise."""
    words = step.split(" ")
    if words == ["flush"]:
        return codec.encode_request(codec.Flush())
    if words[0] == "produce" and len(words) in (2, 3) and words[1]:
        data = words[2].encode("utf-8") if len(words) == 3 else b""
        return codec.encode_request(codec.Produce(words[1], data))
    raise ValueError(f"step {step!r} is neither 'produce TOPIC [DATA]' nor 'flush'")


# --------------------------------------------------------------------- decoding


def decode_request(payload: bytes, revision: str) -> Decoded:
    """The request in ``payload`` as the reference broker reads it in ``revision``: bytes
    after the last field are ignored (and counted), a topic that is not UTF-8 is refused in
    ``doc`` and read with U+FFFD in ``real``."""
    request = codec.decode_request(payload, strict=False, lenient_utf8=revision == "real")
    _, end = m.REQUEST.decode_at(payload, m.VERSION)
    return Decoded(request, len(payload) - end)


def _outcome(payload: bytes, revision: str) -> Decoded | codec.MiniKafkaError:
    try:
        return decode_request(payload, revision)
    except codec.MiniKafkaError as exc:
        return exc


def _same(a: Decoded | codec.MiniKafkaError, b: Decoded | codec.MiniKafkaError) -> bool:
    if isinstance(a, Decoded) or isinstance(b, Decoded):
        return a == b
    return (type(a), a.message, a.type) == (type(b), b.message, b.type)


def decode_in(payload: bytes, revision: str | None) -> Decoded:
    """:func:`decode_request` in ``revision``, or in both when None (RevisionsDiffer if they
    do not agree)."""
    if revision is not None:
        return decode_request(payload, revision)
    doc, real = (_outcome(payload, r) for r in REVISIONS)
    if not _same(doc, real):
        raise RevisionsDiffer(f"doc reads {doc!r}, real reads {real!r}: give a revision")
    if isinstance(doc, codec.MiniKafkaError):
        raise doc
    return doc


# ------------------------------------------------------------------- the schema


class MiniKafkaVectors:
    """The :class:`conformance.plugin.VectorSchema` of mini-Kafka."""

    extra_keys: tuple[str, ...] = ("revision",)
    not_encoded: tuple[str, ...] = ()

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        revision = one_of(raw, "revision", REVISIONS)
        if revision is not None:
            extras["revision"] = revision
        decoded = raw.get("decoded")
        if decoded is not None:
            try:
                msg = to_message(decoded)
            except ValueError as exc:
                raise SchemaError("decoded", str(exc)) from None
            is_request = isinstance(msg.message, codec.Consume | codec.Produce | codec.Flush)
            if (direction == "request") != is_request:
                raise SchemaError("decoded", f"is not a {direction} (a reply gives success)")
        error = raw.get("error")
        if error is not None and error not in ERROR_NAMES:
            raise SchemaError("error", f"{error!r} is not one of {', '.join(ERROR_NAMES)}")
        if raw.get("reply") is not None:
            try:
                _expected_reply(raw["reply"])
            except ValueError as exc:
                raise SchemaError("reply", str(exc)) from None
        for step in raw.get("setup") or []:
            if isinstance(step, str):
                try:
                    setup_request(step)
                except ValueError as exc:
                    raise SchemaError("setup", str(exc)) from None
        return extras

    def to_message(self, decoded: Mapping[str, Any]) -> Decoded:
        return to_message(decoded)

    def from_message(self, message: Any) -> dict[str, Any]:
        return from_message(message)

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> Decoded:
        if direction == "request":
            return decode_in(payload, extras.get("revision"))
        return Decoded(codec.decode_reply(payload))

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        if not isinstance(message, Decoded):
            message = Decoded(message)
        if direction == "request":
            request = message.message
            assert isinstance(request, codec.Consume | codec.Produce | codec.Flush)
            return codec.encode_request(request) + bytes(message.trailing)
        reply = message.message
        assert isinstance(reply, codec.ConsumeOk | codec.ProduceOk | codec.FlushOk | codec.Failure)
        return codec.encode_reply(reply)

    def error_name(self, exc: ProtocolError) -> str | None:
        if isinstance(exc, RevisionsDiffer):
            return None
        if isinstance(exc, FrameTooLarge):
            return "FRAME_TOO_LARGE"
        if isinstance(exc, codec.UnknownType):
            return "UNKNOWN_TYPE"
        if isinstance(exc, codec.EmptyPayload):
            return "EMPTY_PAYLOAD"
        if isinstance(exc, codec.MiniKafkaError):
            return "BAD_REQUEST" if exc.type is not None else "BAD_REPLY"
        return "BAD_LENGTH"

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        """Where a broker's reply ``payload`` to ``request`` differs from ``expected``
        (compared on the keys it gives)."""
        want = _expected_reply(expected)
        if want.get("closed"):
            return f"expected the connection closed, got the reply {payload.hex()}"
        try:
            got = from_message(codec.decode_reply(payload))
        except codec.MiniKafkaError as exc:
            return f"the reply does not decode: {exc}"
        problems = mismatches(want, got, "reply")
        if request and request[0] in m.REPLY_TYPE and payload[0] != m.REPLY_TYPE[request[0]]:
            problems.append(f"reply type 0x{payload[0]:02x} does not answer 0x{request[0]:02x}")
        return "; ".join(problems) or None


SCHEMA = MiniKafkaVectors()
