"""The Cursus vector schema's part for revision ``real`` (a vector with ``revision: real``).

Kinds of ``decoded``: ``real_command`` (``name``; ``args``, a mapping in the order written;
``words``, the bare words after them; ``topic``, the envelope's topic; ``raw``, true when sent
without the envelope) and ``batch`` for requests; ``batch``, ``ack``, ``error``, ``ok``,
``text`` and ``keepalive`` (an empty frame) for replies.  Batches and acks are spelled as in
revision doc (the layouts differ on the wire, not in what they say); a request refused the
way the real broker refuses it before any command runs (``decode_failed``,
``malformed_input``, ``batch_decode_failed``) is a vector's ``error``, upper-cased.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import ErrorReply
from conformance.protocols.cursus.real_codec import RealRefusal, RealReply, RealRequest
from conformance.protocols.cursus.real_messages import Keepalive, RealCommand

REQUEST_KINDS = ("real_command", "batch")
REPLY_KINDS = ("batch", "ack", "error", "ok", "text", "keepalive")
COMMAND_KEYS = ("kind", "name", "args", "words", "topic", "raw")


def real_command(d: Mapping[str, Any]) -> RealCommand:
    for key in d:
        if key not in COMMAND_KEYS:
            raise ValueError(f"unknown key {key!r} in real_command")
    name = d.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a real_command needs a name")
    args = d.get("args", {})
    if not isinstance(args, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | int) and not isinstance(v, bool)
        for k, v in args.items()
    ):
        raise ValueError(f"args must map names to strings or integers, got {args!r}")
    words = d.get("words", [])
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise ValueError(f"words must be a list of strings, got {words!r}")
    topic, raw = d.get("topic", ""), d.get("raw", False)
    if not isinstance(topic, str) or not isinstance(raw, bool):
        raise ValueError("topic must be a string and raw true or false")
    cmd = RealCommand(name, tuple((k, str(v)) for k, v in args.items()), tuple(words), topic, raw)
    rest = cmd.text().partition(" ")[2]
    return RealCommand(cmd.name, cmd.args, cmd.words, topic, raw, rest.split()[-1] if rest else "")


def from_real(msg: RealCommand | Keepalive) -> dict[str, Any]:
    if isinstance(msg, Keepalive):
        return {"kind": "keepalive"}
    return {
        "kind": "real_command",
        "name": msg.name,
        "args": dict(msg.args),
        "words": list(msg.words),
        "topic": msg.topic,
        "raw": msg.raw,
    }


def decode_request(payload: bytes) -> RealRequest:
    got = real_codec.classify(payload)
    if isinstance(got, RealRefusal):
        raise CursusError(got.reply.code.upper(), got.reply.text)
    return got


def decode_reply(payload: bytes) -> RealReply:
    return real_codec.decode_reply(payload)


def encode(message: Any, direction: str) -> bytes:
    if isinstance(message, RealCommand):
        return real_codec.encode_command(message)
    if direction == "request":
        return real_codec.encode_batch(message)
    return real_codec.encode_reply(message)


def error_kind(reply: RealReply) -> bool:
    return isinstance(reply, ErrorReply)
