"""Cursus codec, revision ``doc`` (cursus-protocol.txt), sans-IO.

Bytes in, messages out, and back; no sockets, no asyncio.  Every decoder returns a
message or raises :class:`CursusError` (a :class:`~conformance.errors.ProtocolError`)
whose ``code`` names what was wrong; the broker turns that code into an
``ERROR: <CODE> ...`` reply or a JSON ack with status ``ERROR``.

The codec refuses only what the document, or a convention of SPEC.md, rules out (see
refusals.py for every code and the requirement it rests on): a text command must be UTF-8
with single-space separated fields of the documented count; a name is any non-empty token;
a number is a signed int64 in ASCII decimal (``-?[0-9]+``, leading zeros allowed: the
document types offsets as int64 and FETCH_OFFSET answers -1).  Whether a topic, partition,
group, member or generation exists, whether an offset is one (not below 0), or whether a
partition count is one the broker will allocate (CUR-CONV-11), is for the broker to say,
not the codec.

Frames are ``[u32 BE length N][N bytes]``, N excluding the prefix, N <= 64 MiB.
A payload beginning with the magic 0xBA7C is a batch, anything else a text command
(with gzip enabled, a payload beginning 0x1F 0x8B is inflated first and must then
begin with the magic).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import fields as dc_fields
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.cursus.messages import (
    ACK_FIELDS,
    ACK_STATUSES,
    BATCH_HEADER,
    COMMANDS,
    ERROR_PREFIX,
    FRAME_LIMIT,
    GEN_MISMATCH,
    GZIP_MAGIC,
    MAGIC,
    MESSAGE_FIELDS,
    NOT_LEADER,
    REBALANCE_REQUIRED,
    ArgKind,
    ArgValue,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    FieldType,
    Message,
    OkReply,
    Reply,
    Request,
    SpecialReply,
    TextReply,
    TopicList,
)
from conformance.wire.framing import LengthPrefixDeframer, LengthPrefixFraming
from conformance.wire.primitives import Reader, Writer, decode_utf8

MAGIC_BYTES = MAGIC.to_bytes(2, "big")
DECIMAL_RE = re.compile(r"-?[0-9]+")  # ASCII only: int() also takes "+1", " 1", "1_0", "١"
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
PAST_INT64 = 2**63 + 1
"""What :func:`decimal` gives, with the sign, for more digits than any int64 has: past
either end of the range (+-2**63 would not be: -2**63 is the int64 minimum)."""


class CursusError(ProtocolError):
    """A malformed Cursus request or reply.  ``code`` is an upper-case word."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------- framing


FRAMING = LengthPrefixFraming(limit=FRAME_LIMIT)
"""Every Cursus frame, both ways: a big-endian u32 length that does not count itself."""


def new_deframer(max_frame: int = FRAME_LIMIT) -> LengthPrefixDeframer:
    """A deframer for Cursus frames, ``max_frame`` the largest length it takes (the
    broker's, which a quirk may move)."""
    return LengthPrefixDeframer(order=">", includes_self=False, max_frame=max_frame)


def frame(payload: bytes) -> bytes:
    return FRAMING.frame(payload)


# --------------------------------------------------------------- text commands


def _shown(token: str) -> str:
    return repr(token if len(token) <= 40 else token[:40] + "...")


def decimal(token: str) -> int | None:
    """The value of an optionally signed string of ASCII decimal digits (``-?[0-9]+``,
    leading zeros allowed), or None.  More digits than any int64 has give +-PAST_INT64."""
    if not DECIMAL_RE.fullmatch(token):
        return None
    sign = -1 if token[0] == "-" else 1
    digits = token.lstrip("-").lstrip("0") or "0"
    if len(digits) > len(str(I64_MAX)):  # also keeps int() clear of its 4300-digit limit
        return sign * PAST_INT64
    return sign * int(digits)


def _number(name: str, token: str) -> int:
    value = decimal(token)
    if value is None:
        raise CursusError("BAD_ARGUMENT", f"{name} {_shown(token)} is not a decimal integer")
    if not I64_MIN <= value <= I64_MAX:
        raise CursusError(
            "BAD_ARGUMENT",
            f"{name} {_shown(token)} is outside the int64 range {I64_MIN}..{I64_MAX}",
        )
    return value


def _parse_arg(kind: ArgKind, name: str, token: str) -> ArgValue:
    """Names are any non-empty token (the caller has refused empty ones); numbers are
    signed int64 decimals; offsets the BATCH_COMMIT payload (CUR-CONV-6)."""
    if kind in ("topic", "name"):
        return token
    if kind == "offsets":
        return _parse_offsets(token)
    return _number(name, token)


def _parse_offsets(token: str) -> tuple[tuple[int, int], ...]:
    pairs: list[tuple[int, int]] = []
    for item in token.split(","):
        p, sep, o = item.partition(":")
        if not sep or decimal(p) is None or decimal(o) is None:
            raise CursusError(
                "BAD_ARGUMENT", f"offsetsPayload item {_shown(item)} is not <partition>:<offset>"
            )
        pairs.append((_number("partition", p), _number("offset", o)))
    if len({p for p, _ in pairs}) != len(pairs):
        raise CursusError("BAD_ARGUMENT", "offsetsPayload names a partition more than once")
    return tuple(pairs)


def parse_command(payload: bytes) -> Command:
    """Parse a text command payload (UTF-8, fields separated by a single space)."""
    try:
        text = decode_utf8(payload, "text command")
    except ProtocolError as exc:
        raise CursusError("INVALID_UTF8", str(exc)) from exc
    if not text:
        raise CursusError("EMPTY_COMMAND", "empty command")
    tokens = text.split(" ")
    spec = COMMANDS.get(tokens[0])
    if spec is None:
        shown = tokens[0][:40]
        raise CursusError("UNKNOWN_COMMAND", f"unknown command {shown!r}")
    given = tokens[1:]
    if "" in given:
        raise CursusError(
            "BAD_ARGUMENTS", f"{spec.name}: fields must be separated by a single space"
        )
    if len(given) != len(spec.args):
        usage = " ".join([spec.name, *(f"<{a.name}>" for a in spec.args)])
        raise CursusError("BAD_ARGUMENTS", f"expected {usage}, got {len(given)} argument(s)")
    values = tuple(_parse_arg(a.kind, a.name, t) for a, t in zip(spec.args, given, strict=True))
    return Command(spec.name, values)


def _format_arg(value: ArgValue) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{p}:{o}" for p, o in value)
    return str(value)


def encode_command(cmd: Command) -> bytes:
    return " ".join([cmd.name, *(_format_arg(v) for v in cmd.args)]).encode("utf-8")


# ----------------------------------------------------------------------- batch

_READ = {
    "u8": Reader.u8,
    "u16": Reader.u16,
    "i32": Reader.i32,
    "i64": Reader.i64,
    "str16": Reader.str16,
    "bytes32": Reader.bytes32,
}


def _write(w: Writer, kind: FieldType, value: Any) -> None:
    if kind == "u8":
        w.u8(int(value))
    elif kind == "u16":
        w.u16(value)
    elif kind == "i32":
        w.i32(value)
    elif kind == "i64":
        w.i64(value)
    elif kind == "str16":
        w.str16(value)
    else:
        w.bytes32(value)


def batch_header(batch: Batch) -> dict[str, Any]:
    """The header fields of ``batch`` as the layout names them, but the message count."""
    return {
        "magic": MAGIC,
        "topic": batch.topic,
        "partition": batch.partition,
        "acks": batch.acks,
        "idempotent": 1 if batch.idempotent else 0,
        "seq_start": batch.seq_start,
        "seq_end": batch.seq_end,
    }


def encode_batch(batch: Batch) -> bytes:
    w = Writer(">")
    header = {**batch_header(batch), "message_count": len(batch.messages)}
    for name, kind in BATCH_HEADER:
        _write(w, kind, header[name])
    for m in batch.messages:
        for name, kind in MESSAGE_FIELDS:
            _write(w, kind, getattr(m, name))
    return w.getvalue()


LAYOUT = "the batch does not fit the layout"


def decode_batch(payload: bytes) -> Batch:
    """Decode a whole batch; the batch must fill the payload exactly."""
    r = Reader(payload, ">")
    try:
        head: dict[str, Any] = {name: _READ[kind](r, name) for name, kind in BATCH_HEADER}
        if head["magic"] != MAGIC:
            raise CursusError(
                "BAD_MAGIC", f"batch magic is 0x{head['magic']:04X}, not 0x{MAGIC:04X}"
            )
        if head["idempotent"] not in (0, 1):
            raise CursusError(
                "MALFORMED_BATCH", f"{LAYOUT}: idempotent flag is {head['idempotent']}, not 0 or 1"
            )
        count = head["message_count"]
        if count < 0:
            raise CursusError("MALFORMED_BATCH", f"{LAYOUT}: messageCount is negative ({count})")
        messages = []
        for i in range(count):
            values: dict[str, Any] = {
                name: _READ[kind](r, f"message {i} {name}") for name, kind in MESSAGE_FIELDS
            }
            messages.append(Message(**values))
        r.expect_end("the last message of the batch")
    except CursusError:
        raise
    except ProtocolError as exc:
        raise CursusError("MALFORMED_BATCH", f"{LAYOUT}: {exc}") from exc
    return Batch(
        topic=head["topic"],
        partition=head["partition"],
        acks=head["acks"],
        idempotent=bool(head["idempotent"]),
        seq_start=head["seq_start"],
        seq_end=head["seq_end"],
        messages=tuple(messages),
    )


def partition_number(batch: Batch) -> int:
    """The header's partition string as an int ("UTF-8 decimal, e.g. \\"0\\""): read as
    text-command numbers are (``-?[0-9]+``, leading zeros allowed); BAD_PARTITION
    otherwise (CUR-BATCH-8).  A number no topic has a partition of (below 0, or too large,
    at most +-PAST_INT64) comes back as it is for the engine to answer UNKNOWN_PARTITION.
    The acks string is not checked: the document gives "1", "0" and "-1" as examples, and
    the broker acknowledges every level alike."""
    value = decimal(batch.partition)
    if value is None:
        raise CursusError(
            "BAD_PARTITION", f"partition {_shown(batch.partition)} is not a decimal number"
        )
    return value


# ----------------------------------------------------------------- compression


def gzip_body(body: bytes) -> bytes:
    """Compress a batch body the way a client with compressionType=gzip does."""
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(body) + c.flush()


def inflate_gzip(data: bytes, limit: int = FRAME_LIMIT) -> bytes:
    """Inflate a gzip member, refusing output larger than ``limit`` bytes."""
    d = zlib.decompressobj(31)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise CursusError("BAD_COMPRESSION", f"gzip body does not inflate: {exc}") from exc
    if len(out) > limit:
        raise CursusError(
            "FRAME_TOO_LARGE", f"gzip body inflates past the {limit}-byte frame limit"
        )
    if not d.eof:
        raise CursusError("BAD_COMPRESSION", "gzip body is truncated")
    if d.unused_data:
        raise CursusError(
            "BAD_COMPRESSION", f"gzip body has {len(d.unused_data)} bytes after the gzip member"
        )
    return out


# -------------------------------------------------------------------- requests


def is_batch(payload: bytes) -> bool:
    return payload[:2] == MAGIC_BYTES


def decode_request(
    payload: bytes, *, compression: str | None = None, limit: int = FRAME_LIMIT
) -> Request:
    """Classify and decode one frame payload sent to the broker."""
    if compression == "gzip" and payload[:2] == GZIP_MAGIC:
        body = inflate_gzip(payload, limit)
        if not is_batch(body):
            raise CursusError(
                "BAD_MAGIC", "compressed body does not begin with the batch magic 0xBA7C"
            )
        return decode_batch(body)
    if is_batch(payload):
        return decode_batch(payload)
    return parse_command(payload)


def encode_request(req: Request, *, compression: str | None = None) -> bytes:
    body = encode_batch(req) if isinstance(req, Batch) else encode_command(req)
    if compression == "gzip" and isinstance(req, Batch):
        return gzip_body(body)
    return body


# --------------------------------------------------------------------- replies


def encode_ack(ack: BatchAck) -> bytes:
    obj = {name: getattr(ack, name) for name, _ in ACK_FIELDS}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_ack(payload: bytes) -> BatchAck:
    """Strict: a JSON object with every documented field, each of its documented type."""
    try:
        obj = json.loads(decode_utf8(payload, "batch ack"))
    except RecursionError:
        raise CursusError("BAD_ACK", "batch ack JSON is nested too deeply") from None
    except (ProtocolError, ValueError) as exc:
        raise CursusError("BAD_ACK", f"batch ack is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CursusError("BAD_ACK", "batch ack is not a JSON object")
    values: dict[str, Any] = {}
    for name, typ in ACK_FIELDS:
        if name not in obj:
            raise CursusError("BAD_ACK", f"batch ack has no {name!r} field")
        v = obj[name]
        if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise CursusError("BAD_ACK", f"batch ack field {name!r} is {v!r}, not a number")
        if typ is str and not isinstance(v, str):
            raise CursusError("BAD_ACK", f"batch ack field {name!r} is {v!r}, not a string")
        values[name] = v
    if values["status"] not in ACK_STATUSES:
        raise CursusError(
            "BAD_ACK", f"batch ack status {values['status']!r} is not OK, PARTIAL or ERROR"
        )
    return BatchAck(**values)


def encode_reply(reply: Reply) -> bytes:
    """The payload (unframed) of a broker reply."""
    if isinstance(reply, BatchAck):
        return encode_ack(reply)
    if isinstance(reply, Batch):
        return encode_batch(reply)
    if isinstance(reply, ErrorReply):
        return f"{ERROR_PREFIX} {reply.text}".encode()
    if isinstance(reply, OkReply):
        return " ".join(["OK", *(f"{k}={v}" for k, v in reply.fields)]).encode()
    if isinstance(reply, TopicList):
        return json.dumps(list(reply.topics), separators=(",", ":")).encode()
    return reply.text.encode("utf-8")


def error_reply(code: str, description: str) -> ErrorReply:
    return ErrorReply(code, f"{code} {description}")


def decode_reply(payload: bytes) -> Reply:
    """Classify a broker reply the way a client does (document order of checks)."""
    if is_batch(payload):
        return decode_batch(payload)
    try:
        text = decode_utf8(payload, "reply")
    except ProtocolError as exc:
        raise CursusError("BAD_REPLY", str(exc)) from exc
    if text.startswith("{"):
        return decode_ack(payload)
    if text.startswith(ERROR_PREFIX):
        desc = text[len(ERROR_PREFIX) :].strip()
        return ErrorReply(desc.split(" ", 1)[0] if desc else "", desc)
    for kind in (NOT_LEADER, REBALANCE_REQUIRED, GEN_MISMATCH):
        if kind in text:
            return SpecialReply(kind, text)
    if text == "OK" or text.startswith("OK "):
        pairs = []
        for token in text[3:].split(" ") if text != "OK" else []:
            k, sep, v = token.partition("=")
            if not sep:
                return TextReply(text)
            pairs.append((k, v))
        return OkReply(tuple(pairs))
    if text.startswith("["):
        try:
            names = json.loads(text)
        except (ValueError, RecursionError):
            return TextReply(text)
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return TopicList(tuple(names))
    return TextReply(text)


def message_field_names() -> tuple[str, ...]:
    return tuple(f.name for f in dc_fields(Message))


PROBE_REQUEST = frame(b"LIST")
"""A harmless request any Cursus broker answers: used to tell a slow case from a dead target."""


def describe(direction: str, payload: bytes) -> str:
    """A one-line summary of a frame payload for wire logs (never raises); a Cursus
    payload reads the same either way, so ``direction`` does not matter."""
    if not payload:
        return "empty frame"
    if is_batch(payload):
        try:
            b = decode_batch(payload)
        except CursusError as exc:
            return f"batch (malformed: {exc.code})"
        return f"batch {b.topic}/{b.partition} acks={b.acks} {len(b.messages)} message(s)"
    if payload[:2] == GZIP_MAGIC:
        return f"gzip body, {len(payload)} bytes"
    text = payload[:80].decode("utf-8", "replace")
    shown = text if len(payload) <= 80 else text + "..."
    return repr(shown)
