"""The Cursus vector schema: what a Cursus vector's ``decoded`` and ``reply`` hold.

``decoded`` is the plain-data form of a Cursus message (:func:`to_message` builds the
message, :func:`from_message` gives the form back), keyed by ``kind``: ``command``
(``name``, ``args``) and ``batch`` for requests; ``batch``, ``ack``, ``error``,
``special``, ``ok``, ``topics`` and ``text`` for replies.  A ``reply`` is compared on the
keys it gives (``topics`` as a subset: other vectors of a file create topics too).  The
extra key ``compression: gzip`` decodes a request payload with gzip enabled; such a
vector says ``encode_exact: false`` (gzip output is not unique).  The extra key
``revision: real`` reads and writes a vector in revision real's layouts (real_vectors.py:
its kinds ``real_command`` and ``keepalive`` besides these).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.cursus import codec, real_vectors
from conformance.protocols.cursus.layouts import layout
from conformance.protocols.cursus.messages import (
    ACK_FIELDS,
    COMMANDS,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    Reply,
    Request,
    SpecialReply,
    TextReply,
    TopicList,
)
from conformance.protocols.cursus.real_messages import Keepalive, RealCommand
from conformance.vectors import mismatches, parse_hex

REQUEST_KINDS = ("command", "batch")
REPLY_KINDS = ("batch", "ack", "error", "special", "ok", "topics", "text")
COMPRESSIONS = ("gzip",)
REVISIONS = ("doc", "real")

_MESSAGE_INTS = ("offset", "seq_num", "epoch", "schema_version", "aggregate_version")
_MESSAGE_STRS = ("producer_id", "key", "event_type", "metadata")
_BATCH_KEYS = ("kind", *(f.name for f in fields(Batch)))
_REPLY_KEYS: dict[str, tuple[str, ...]] = {
    "batch": _BATCH_KEYS,
    "ack": ("kind", *(name for name, _ in ACK_FIELDS)),
    "error": ("kind", "code", "text"),
    "special": ("kind", "name", "text"),
    "ok": ("kind", "fields"),
    "topics": ("kind", "topics"),
    "text": ("kind", "text"),
}

# ------------------------------------------------------------------- converters


def _want(d: Mapping[str, Any], key: str, typ: type, default: Any = None) -> Any:
    if key not in d:
        if default is None:
            raise ValueError(f"missing key {key!r}")
        return default
    v = d[key]
    if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise ValueError(f"key {key!r} must be an integer, got {v!r}")
    if not isinstance(v, typ):
        raise ValueError(f"key {key!r} must be a {typ.__name__}, got {v!r}")
    return v


def _only(d: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")


def _message(d: Any) -> Message:
    if not isinstance(d, Mapping):
        raise ValueError(f"a message must be a mapping, got {d!r}")
    allowed = (*_MESSAGE_INTS, *_MESSAGE_STRS, "payload", "payload_hex")
    _only(d, allowed, "message")
    if "payload" in d and "payload_hex" in d:
        raise ValueError("give payload or payload_hex, not both")
    if "payload_hex" in d:
        payload = parse_hex(_want(d, "payload_hex", str))
    else:
        payload = _want(d, "payload", str, "").encode("utf-8")
    values: dict[str, Any] = {k: _want(d, k, int, 0) for k in _MESSAGE_INTS}
    values.update({k: _want(d, k, str, "") for k in _MESSAGE_STRS})
    return Message(payload=payload, **values)


def _batch(d: Mapping[str, Any]) -> Batch:
    messages = _want(d, "messages", list, [])
    return Batch(
        topic=_want(d, "topic", str),
        partition=_want(d, "partition", str, "0"),
        acks=_want(d, "acks", str, "1"),
        idempotent=_want(d, "idempotent", bool, False),
        seq_start=_want(d, "seq_start", int, 0),
        seq_end=_want(d, "seq_end", int, 0),
        messages=tuple(_message(m) for m in messages),
    )


def _command(d: Mapping[str, Any]) -> Command:
    name = _want(d, "name", str)
    spec = COMMANDS.get(name)
    if spec is None:
        raise ValueError(f"unknown command {name!r}")
    args = _want(d, "args", list, [])
    if len(args) != len(spec.args):
        raise ValueError(f"{name} takes {len(spec.args)} argument(s), the vector gives {len(args)}")
    values: list[Any] = []
    for a, v in zip(spec.args, args, strict=True):
        if a.kind in ("topic", "name"):
            ok = isinstance(v, str)
        elif a.kind == "offsets":
            ok = isinstance(v, list) and all(
                isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p) for p in v
            )
            v = tuple((p[0], p[1]) for p in v) if ok else v
        else:
            ok = type(v) is int
        if not ok:
            raise ValueError(f"{name} argument {a.name} ({a.kind}) has the wrong type: {v!r}")
        values.append(v)
    return Command(name, tuple(values))


def _str_map(v: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(v, Mapping):
        raise ValueError(f"fields must be a mapping, got {v!r}")
    out = []
    for k, x in v.items():
        if isinstance(x, bool) or not isinstance(x, str | int):
            raise ValueError(f"field {k!r} must be a string or an integer, got {x!r}")
        out.append((str(k), str(x)))
    return tuple(out)


def to_message(decoded: Mapping[str, Any]) -> Request | Reply | RealCommand | Keepalive:
    """Build the message a vector's ``decoded`` mapping describes; ValueError if malformed."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    kind = decoded.get("kind")
    if kind == "real_command":
        return real_vectors.real_command(decoded)
    if kind == "keepalive":
        _only(decoded, ("kind",), "keepalive")
        return Keepalive()
    if kind == "command":
        _only(decoded, ("kind", "name", "args"), "command")
        return _command(decoded)
    if kind not in _REPLY_KEYS:
        known = ", ".join(("command", "real_command", "keepalive", *_REPLY_KEYS))
        raise ValueError(f"unknown kind {kind!r} (one of {known})")
    _only(decoded, _REPLY_KEYS[kind], kind)
    if kind == "batch":
        return _batch(decoded)
    if kind == "ack":
        values: dict[str, Any] = {"status": _want(decoded, "status", str)}
        for name, typ in ACK_FIELDS[1:]:
            values[name] = _want(decoded, name, typ, getattr(BatchAck("OK"), name))
        return BatchAck(**values)
    if kind == "error":
        return ErrorReply(_want(decoded, "code", str), _want(decoded, "text", str))
    if kind == "special":
        return SpecialReply(_want(decoded, "name", str), _want(decoded, "text", str))
    if kind == "ok":
        return OkReply(_str_map(decoded.get("fields", {})))
    if kind == "topics":
        topics = _want(decoded, "topics", list)
        if not all(isinstance(t, str) for t in topics):
            raise ValueError(f"topics must be strings, got {topics!r}")
        return TopicList(tuple(topics))
    return TextReply(_want(decoded, "text", str))


def _plain_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(Message):
        v = getattr(m, f.name)
        if f.name == "payload":
            try:
                out["payload"] = v.decode("utf-8")
            except UnicodeDecodeError:
                out["payload_hex"] = v.hex()
        else:
            out[f.name] = v
    return out


def from_message(msg: Request | Reply | RealCommand | Keepalive) -> dict[str, Any]:
    """The plain-data form of a message (every field given), as ``decoded`` spells it."""
    if isinstance(msg, RealCommand | Keepalive):
        return real_vectors.from_real(msg)
    if isinstance(msg, Command):
        args = [[list(p) for p in a] if isinstance(a, tuple) else a for a in msg.args]
        return {"kind": "command", "name": msg.name, "args": args}
    if isinstance(msg, Batch):
        out: dict[str, Any] = {"kind": "batch"}
        out.update({k: getattr(msg, k) for k in _BATCH_KEYS[1:-1]})
        out["messages"] = [_plain_message(m) for m in msg.messages]
        return out
    if isinstance(msg, BatchAck):
        return {"kind": "ack", **{name: getattr(msg, name) for name, _ in ACK_FIELDS}}
    if isinstance(msg, ErrorReply):
        return {"kind": "error", "code": msg.code, "text": msg.text}
    if isinstance(msg, SpecialReply):
        return {"kind": "special", "name": msg.kind, "text": msg.text}
    if isinstance(msg, OkReply):
        return {"kind": "ok", "fields": dict(msg.fields)}
    if isinstance(msg, TopicList):
        return {"kind": "topics", "topics": list(msg.topics)}
    return {"kind": "text", "text": msg.text}


class CursusVectors:
    """The :class:`conformance.plugin.VectorSchema` of Cursus."""

    extra_keys: tuple[str, ...] = ("compression", "revision")
    not_encoded: tuple[str, ...] = ()

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        decoded = raw.get("decoded")
        revision = raw.get("revision", "doc")
        if revision not in REVISIONS:
            raise SchemaError("revision", f"{revision!r} is not one of {', '.join(REVISIONS)}")
        real = revision == "real"
        if decoded is not None:
            try:
                to_message(decoded)
            except ValueError as exc:
                raise SchemaError("decoded", str(exc)) from None
            kinds: tuple[str, ...] = REQUEST_KINDS if direction == "request" else REPLY_KINDS
            if real:
                real_kinds = real_vectors.REQUEST_KINDS, real_vectors.REPLY_KINDS
                kinds = real_kinds[0] if direction == "request" else real_kinds[1]
            if decoded["kind"] not in kinds:
                raise SchemaError("decoded", f"kind {decoded['kind']!r} is not a {direction} kind")
        compression = raw.get("compression")
        if compression is not None and compression not in COMPRESSIONS:
            raise SchemaError(
                "compression", f"{compression!r} is not one of {', '.join(COMPRESSIONS)}"
            )
        if compression is not None and direction != "request":
            raise SchemaError("compression", "only requests are compressed")
        if compression and decoded is not None and raw.get("encode_exact", True):
            raise SchemaError("encode_exact", "a compressed vector must say encode_exact: false")
        reply = raw.get("reply")
        if reply is not None:
            reply_kinds = real_vectors.REPLY_KINDS if real else REPLY_KINDS
            if not isinstance(reply, Mapping) or reply.get("kind") not in reply_kinds:
                raise SchemaError(
                    "reply", f"must be a mapping whose kind is one of {', '.join(reply_kinds)}"
                )
            for key in reply:
                if key not in _REPLY_KEYS.get(reply["kind"], ("kind",)):
                    raise SchemaError("reply", f"unknown key {key!r} for a {reply['kind']} reply")
        extras: dict[str, Any] = {"compression": compression} if compression else {}
        return {**extras, "revision": "real"} if real else extras

    def to_message(self, decoded: Mapping[str, Any]) -> Any:
        return to_message(decoded)

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> Any:
        if extras.get("revision") == "real":
            real = layout("real")
            return (real.decode_request if direction == "request" else real.decode_reply)(payload)
        if direction == "request":
            return codec.decode_request(payload, compression=extras.get("compression"))
        return codec.decode_reply(payload)

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        if extras.get("revision") == "real":
            real = layout("real")
            return (real.encode_request if direction == "request" else real.encode_reply)(message)
        if direction == "request":
            return codec.encode_request(message, compression=extras.get("compression"))
        return codec.encode_reply(message)

    def error_name(self, exc: ProtocolError) -> str | None:
        return exc.code if isinstance(exc, codec.CursusError) else None

    def from_message(self, message: Any) -> dict[str, Any]:
        return from_message(message)

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        """Compared as the document's reply, else as revision real's (the reply of a real
        vector); the document's problems are the ones told when neither matches."""
        found = None
        for decode in (codec.decode_reply, real_vectors.decode_reply):
            try:
                got: Any = decode(payload)
            except codec.CursusError as exc:
                found = found or f"the reply does not decode: {exc}"
                continue
            problems = mismatches(expected, from_message(got), "reply", subset=("topics",))
            if not problems:
                return None
            found = found or "; ".join(problems)
        return found


SCHEMA = CursusVectors()
