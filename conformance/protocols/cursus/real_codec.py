"""Cursus codec, revision ``real`` (the real broker and its Python client; FACTS.md), sans-IO.

Bytes in, messages out, and back; no sockets, no asyncio.  What differs from the document's
layout (codec.py), each from FACTS.md:

* the batch header has an ``i32`` partition and a ``u8`` acks length; offsets, sequences,
  the payload length and the schema version are unsigned (FACTS 4.1, 4.2); strings are bytes
  as they came (Go's ``string(bytes)`` checks nothing), kept here with ``surrogateescape``;
  a count below 0 or above 100000 is refused, bytes after the last message are ignored;
* a text command is ``NAME key=value ...`` inside ``[u16 topicLen][topic][command]``, or
  raw (FACTS 2.2, 3.1);
* replies: ``OK key=value ...`` (a value may be ``[0 1 2]`` or a Go-quoted string),
  ``ERROR: <code> [key=value ...]``, a JSON ack without empty ``leader``/``error`` (4.6),
  the bare ``OK`` of an acks=0 batch (4.5), a batch, or an empty frame (a keepalive).

:func:`classify` reads a payload as the broker does (batch, command, or the refusal the
real broker sends for it); refusals are :class:`RealRefusal`, never exceptions, since the
real broker answers each in its own way.  Decoders used by clients raise
:class:`~conformance.protocols.cursus.codec.CursusError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import (
    ERROR_PREFIX,
    MAGIC,
    Batch,
    BatchAck,
    ErrorReply,
    Message,
    OkReply,
    TextReply,
)
from conformance.protocols.cursus.real_messages import (
    KNOWN_COMMANDS,
    MAX_BATCH_MESSAGES,
    MAX_NAME_LENGTH,
    REAL_HEADER,
    REAL_MESSAGE,
    Keepalive,
    RealCommand,
    RealType,
)
from conformance.wire.primitives import Reader, Writer

RealReply = BatchAck | Batch | ErrorReply | OkReply | TextReply | Keepalive
RealRequest = RealCommand | Batch
MAGIC_BYTES = MAGIC.to_bytes(2, "big")
TEXT = "surrogateescape"  # bytes <-> str both ways, whatever the bytes


def _s(data: bytes) -> str:
    return data.decode("utf-8", TEXT)


def _b(text: str) -> bytes:
    return text.encode("utf-8", TEXT)


# ----------------------------------------------------------------------- batch

_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _write(w: Writer, kind: RealType, value: Any) -> None:
    if kind in _BITS:  # unsigned: Go wraps a value into its width, so do we
        getattr(w, kind)(int(value) % (1 << _BITS[kind]))
    elif kind in ("i32", "i64"):
        getattr(w, kind)(int(value))
    elif kind == "str8":
        data = _b(value)
        w.u8(len(data)).raw(data)
    elif kind == "str16":
        data = _b(value)
        w.u16(len(data)).raw(data)
    else:
        w.u32(len(value)).raw(bytes(value))


def _read(r: Reader, kind: RealType, what: str) -> Any:
    if kind in ("u8", "u16", "u32", "u64", "i32", "i64"):
        return getattr(r, kind)(what)
    if kind == "str8":
        return _s(r.take(r.u8(f"{what} length"), what))
    if kind == "str16":
        return _s(r.take(r.u16(f"{what} length"), what))
    return r.take(r.u32(f"{what} length"), what)


def batch_fields(batch: Batch) -> dict[str, Any]:
    """The header of ``batch`` by the real layout's names (the count included)."""
    return {
        "magic": MAGIC,
        "topic": batch.topic,
        "partition": int(batch.partition),
        "acks": batch.acks,
        "idempotent": 1 if batch.idempotent else 0,
        "seq_start": batch.seq_start,
        "seq_end": batch.seq_end,
        "message_count": len(batch.messages),
    }


def encode_batch(batch: Batch) -> bytes:
    """The real layout; ``batch.partition`` is the decimal text of an int32."""
    w = Writer(">")
    header = batch_fields(batch)
    for name, kind in REAL_HEADER:
        _write(w, kind, header[name])
    for m in batch.messages:
        for name, kind in REAL_MESSAGE:
            _write(w, kind, getattr(m, name))
    return w.getvalue()


def decode_batch(payload: bytes) -> Batch:
    """Read a batch as the real broker does: any non-zero idempotent byte is true, a count
    below 0 or over 100000 is refused, bytes after the last message are ignored."""
    r = Reader(payload, ">")
    try:
        head = {name: _read(r, kind, name) for name, kind in REAL_HEADER}
        if head["magic"] != MAGIC:
            raise CursusError("BAD_MAGIC", f"invalid magic number: {head['magic']:x}")
        count = head["message_count"]
        if count < 0:
            raise CursusError("MALFORMED_BATCH", f"invalid negative message count: {count}")
        if count > MAX_BATCH_MESSAGES:
            raise CursusError(
                "MALFORMED_BATCH",
                f"message count too high: {count} (max: {MAX_BATCH_MESSAGES})",
            )
        messages = []
        for i in range(count):
            values = {name: _read(r, kind, f"message[{i}] {name}") for name, kind in REAL_MESSAGE}
            messages.append(Message(**values))
    except CursusError:
        raise
    except ProtocolError as exc:
        raise CursusError("MALFORMED_BATCH", f"failed to read {exc}") from exc
    return Batch(
        topic=head["topic"],
        partition=str(head["partition"]),
        acks=head["acks"],
        idempotent=head["idempotent"] != 0,
        seq_start=head["seq_start"],
        seq_end=head["seq_end"],
        messages=tuple(messages),
    )


def is_batch(payload: bytes) -> bool:
    """FACTS 2.1: 6 bytes or more, the magic, and a topic length that is not 0 and fits."""
    if len(payload) < 6 or payload[:2] != MAGIC_BYTES:
        return False
    topic_len = int.from_bytes(payload[2:4], "big")
    return topic_len != 0 and topic_len + 2 <= len(payload)


# --------------------------------------------------------------- text commands

_ARG_NUMBER = re.compile(r"[+-]?[0-9]+")
_UINT = re.compile(r"[0-9]+")
I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def atoi(text: str | None) -> int | None:
    """Go's ``strconv.Atoi`` on a 64-bit machine: an optionally signed decimal int64."""
    if text is None or not _ARG_NUMBER.fullmatch(text) or len(text) > 40:
        return None
    value = int(text)
    return value if I64_MIN <= value <= I64_MAX else None


def parse_uint(text: str | None) -> int | None:
    """Go's ``strconv.ParseUint(text, 10, 64)``: unsigned decimal digits, at most 2**64-1."""
    if text is None or not _UINT.fullmatch(text) or len(text) > 40:
        return None
    value = int(text)
    return value if value <= U64_MAX else None


def command_name(text: str) -> str | None:
    """The known command ``text`` begins with (FACTS 2.2: letters first, at most 19
    characters up to the first whitespace, compared without case), or None."""
    stripped = text.lstrip(" \t\r\n")
    if not stripped or not ("a" <= stripped[0].lower() <= "z"):
        return None
    head = stripped[: MAX_NAME_LENGTH + 1]
    m = re.search(r"[ \t\r\n]", head)
    if m is None:
        if len(stripped) > MAX_NAME_LENGTH:
            return None
        word = stripped
    else:
        word = head[: m.start()]
    name = word.upper()
    return name if name in KNOWN_COMMANDS else None


def parse_args(text: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``key=value`` words and bare words; ``message=`` takes the rest of the line (FACTS 3.1)."""
    at = text.find("message=")
    before = text if at < 0 else text[:at]
    args: list[tuple[str, str]] = []
    words: list[str] = []
    for word in before.split():
        key, sep, value = word.partition("=")
        if sep:
            args.append((key, value))
        else:
            words.append(word)
    if at >= 0:
        args.append(("message", text[at + len("message=") :].strip()))
    return tuple(args), tuple(words)


def parse_command(text: str, *, topic: str = "", raw: bool = False) -> RealCommand:
    """A command text whose first word is a known name (see :func:`command_name`)."""
    body = text.strip()
    parts = re.split(r"[ \t\r\n]", body, maxsplit=1)
    rest = parts[1].strip() if len(parts) > 1 else ""
    args, words = parse_args(rest)
    last = rest.split()[-1] if rest else ""
    return RealCommand(parts[0].upper(), args, words, topic, raw, last)


def envelope(text: str, topic: str = "") -> bytes:
    """``[u16 topicLen][topic][text]``, as the real client sends every command (FACTS 2.3)."""
    t = _b(topic)
    return len(t).to_bytes(2, "big") + t + _b(text)


def encode_command(cmd: RealCommand) -> bytes:
    return _b(cmd.text()) if cmd.raw else envelope(cmd.text(), cmd.topic)


@dataclass(frozen=True)
class RealRefusal:
    """A payload the real broker refuses before any command runs: its reply, and whether
    the connection is closed after it (FACTS 2.2)."""

    reply: ErrorReply
    close: bool = False


def error(code: str, *details: str) -> ErrorReply:
    """``ERROR: <code> [details]``: ``code`` is the first word after the prefix."""
    return ErrorReply(code, " ".join((code, *details)))


def quoted(text: str) -> str:
    """A value the way Go's ``%q`` writes it (for the texts this broker sends)."""
    return json.dumps(text, ensure_ascii=False)


def classify(payload: bytes) -> Batch | RealCommand | RealRefusal:
    """A frame payload read as the real broker reads it (FACTS 2.1, 2.2, 4.4)."""
    if is_batch(payload):
        try:
            return decode_batch(payload)
        except CursusError as exc:
            return RealRefusal(error("batch_decode_failed", f"reason={quoted(str(exc))}"))
    text = _s(payload)
    if command_name(text.strip(" \t\r\n")):
        return parse_command(text, raw=True)
    if len(payload) < 2:
        return RealRefusal(error("decode_failed", 'reason="data too short"'))
    topic_len = int.from_bytes(payload[:2], "big")
    if topic_len + 2 > len(payload):
        return RealRefusal(error("decode_failed", 'reason="invalid topic length"'))
    inner = _s(payload[2 + topic_len :]).strip("\x00 \t\n\r")
    if command_name(inner):
        return parse_command(inner, topic=_s(payload[2 : 2 + topic_len]))
    return RealRefusal(error("malformed_input", "reason=missing_topic_or_payload"), close=True)


# --------------------------------------------------------------------- replies

ACK_REQUIRED: tuple[tuple[str, type], ...] = (
    ("status", str),
    ("last_offset", int),
    ("producer_epoch", int),
    ("producer_id", str),
    ("seq_start", int),
    ("seq_end", int),
)
ACK_OPTIONAL = ("leader", "error")
"""The real ack (FACTS 4.6): six fields always, in this order; leader and error only when
they are not empty."""


def encode_ack(ack: BatchAck) -> bytes:
    """JSON as Go's encoder writes it: bytes that are not UTF-8 become U+FFFD."""
    obj: dict[str, Any] = {name: _json(getattr(ack, name)) for name, _ in ACK_REQUIRED}
    obj.update({n: _json(getattr(ack, n)) for n in ACK_OPTIONAL if getattr(ack, n)})
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _json(value: Any) -> Any:
    return _b(value).decode("utf-8", "replace") if isinstance(value, str) else value


def decode_ack(payload: bytes) -> BatchAck:
    """Strict on the six fields (present, each of its type), lenient on the two optional."""
    try:
        obj = json.loads(payload.decode("utf-8"))
    except RecursionError:
        raise CursusError("BAD_ACK", "batch ack JSON is nested too deeply") from None
    except ValueError as exc:
        raise CursusError("BAD_ACK", f"batch ack is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CursusError("BAD_ACK", "batch ack is not a JSON object")
    values: dict[str, Any] = {}
    for name, typ in ACK_REQUIRED:
        v = obj.get(name)
        ok = isinstance(v, str) if typ is str else isinstance(v, int) and not isinstance(v, bool)
        if not ok:
            shown = "missing" if name not in obj else f"{v!r}, not a {typ.__name__}"
            raise CursusError("BAD_ACK", f"batch ack field {name!r} is {shown}")
        values[name] = v
    for name in ACK_OPTIONAL:
        v = obj.get(name, "")
        if not isinstance(v, str):
            raise CursusError("BAD_ACK", f"batch ack field {name!r} is {v!r}, not a string")
        values[name] = v
    return BatchAck(**values)


def ok_words(text: str) -> list[str]:
    """Words of an ``OK``/``ERROR:`` line; a ``key=[...]`` or ``key="..."`` value is one word
    even with spaces inside."""
    out: list[str] = []
    for word in text.split(" "):
        if out and _open(out[-1]):
            out[-1] += " " + word
        else:
            out.append(word)
    return [w for w in out if w]


def _open(word: str) -> bool:
    _, sep, value = word.partition("=")
    if not sep:
        return False
    if value.startswith("["):
        return not value.endswith("]")
    if value.startswith('"'):
        return len(value) < 2 or not value.endswith('"') or value.endswith('\\"')
    return False


def fields_of(text: str) -> tuple[tuple[str, str], ...]:
    """The ``key=value`` words of a reply line."""
    pairs = []
    for word in ok_words(text):
        key, sep, value = word.partition("=")
        if sep:
            pairs.append((key, value))
    return tuple(pairs)


def assignment(value: str) -> list[int] | None:
    """``[0 1 2]`` (FACTS 3.3) as a list; None when it is not brackets around numbers."""
    if not (value.startswith("[") and value.endswith("]")):
        return None
    inner = value[1:-1].split(" ") if value[1:-1] else []
    return [int(p) for p in inner] if all(p.isdigit() for p in inner) else None


def encode_reply(reply: RealReply) -> bytes:
    if isinstance(reply, Keepalive):
        return b""
    if isinstance(reply, BatchAck):
        return encode_ack(reply)
    if isinstance(reply, Batch):
        return encode_batch(reply)
    if isinstance(reply, ErrorReply):
        return _b(f"{ERROR_PREFIX} {reply.text}")
    if isinstance(reply, OkReply):
        return _b(" ".join(["OK", *(f"{k}={v}" for k, v in reply.fields)]))
    return _b(reply.text)


def decode_reply(payload: bytes) -> RealReply:
    """A reply read the way the real client reads it."""
    if not payload:
        return Keepalive()
    if payload[:2] == MAGIC_BYTES:
        return decode_batch(payload)
    text = _s(payload)
    if text.startswith("{"):
        return decode_ack(payload)
    if text.startswith(ERROR_PREFIX):
        desc = text[len(ERROR_PREFIX) :].strip()
        return ErrorReply(desc.split(" ", 1)[0] if desc else "", desc)
    if text == "OK" or text.startswith("OK "):
        return OkReply(fields_of(text[3:]))
    return TextReply(text)
