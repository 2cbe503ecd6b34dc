"""Golden vectors: load ``vectors/<protocol>/*.yaml`` and check their schema.

A vector ties the bytes of one whole frame (length prefix included) to the message the
codec decodes from it, or to the error code it refuses it with, and optionally to the
reply a broker gives.  The schema is checked strictly on load; anything wrong raises
:class:`VectorError` naming the file, the vector id and the offending key.

Keys of a vector (``*`` = required)::

    id*            unique, hierarchical, starts with "<protocol>/"
    requirements*  list of requirement IDs (e.g. CUR-FRAME-1)
    direction*     request | reply
    description*   one line
    hex*           the whole frame in hex; whitespace is ignored
    decoded        the decoded message, as plain data (see ``to_message``)
    error          instead of ``decoded``: the error code the deframer or codec raises
    compression    gzip: decode the payload with compression=gzip
    encode_exact   default true; false: encoding ``decoded`` need not give these bytes
                   (required for gzip vectors), only bytes that decode to the same message
    truncated      true: ``hex`` is a length prefix without its payload; the deframer must
                   wait for more (no ``decoded``), or refuse the prefix (``error``)
    setup          request vectors: steps sent to a broker first, each a text command or
                   ``{hex: FRAME}``
    reply          request vectors: the expected reply, compared on the keys given

``to_message`` / ``from_message`` convert between that plain data and the Cursus
message classes of :mod:`conformance.protocols.cursus.messages`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

import conformance
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

VECTOR_ROOT = Path(conformance.__file__).resolve().parent.parent / "vectors"
"""``vectors/`` at the repository root (the package is installed editable)."""

REQUIRED_KEYS = ("id", "requirements", "direction", "description", "hex")
OPTIONAL_KEYS = ("decoded", "error", "compression", "encode_exact", "truncated", "setup", "reply")
DIRECTIONS = ("request", "reply")
REQUEST_KINDS = ("command", "batch")
REPLY_KINDS = ("batch", "ack", "error", "special", "ok", "topics", "text")
COMPRESSIONS = ("gzip",)

_ID_RE = re.compile(r"[a-z0-9]+(/[a-z0-9._-]+)+")
_REQ_RE = re.compile(r"[A-Z]+-[A-Z]+-[0-9]+")
_CODE_RE = re.compile(r"[A-Z][A-Z0-9_]*")
_HEX_RE = re.compile(r"([0-9a-fA-F]{2})*")

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


class VectorError(ValueError):
    """A vector file that does not follow the schema."""


@dataclass(frozen=True)
class Vector:
    id: str
    file: str
    requirements: tuple[str, ...]
    direction: str
    description: str
    frame: bytes
    decoded: Mapping[str, Any] | None = None
    error: str | None = None
    compression: str | None = None
    encode_exact: bool = True
    truncated: bool = False
    setup: tuple[str | bytes, ...] = ()
    reply: Mapping[str, Any] | None = None

    @property
    def payload(self) -> bytes:
        """The frame without its 4-byte length prefix."""
        return self.frame[4:]

    @property
    def message(self) -> Request | Reply:
        """``decoded`` as a message object (only for vectors with ``decoded``)."""
        if self.decoded is None:
            raise ValueError(f"vector {self.id} has no decoded message")
        return to_message(self.decoded)


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


def to_message(decoded: Mapping[str, Any]) -> Request | Reply:
    """Build the message a vector's ``decoded`` mapping describes; ValueError if malformed."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    kind = decoded.get("kind")
    if kind == "command":
        _only(decoded, ("kind", "name", "args"), "command")
        return _command(decoded)
    if kind not in _REPLY_KEYS:
        raise ValueError(f"unknown kind {kind!r} (one of command, {', '.join(_REPLY_KEYS)})")
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


def from_message(msg: Request | Reply) -> dict[str, Any]:
    """The plain-data form of a message (every field given), as ``decoded`` spells it."""
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


# ----------------------------------------------------------------------- loading


def parse_hex(text: str) -> bytes:
    """Hex digits with any whitespace between them; ValueError if not whole bytes of hex."""
    digits = "".join(text.split())
    if not _HEX_RE.fullmatch(digits):
        bad = next((c for c in digits if c not in "0123456789abcdefABCDEF"), None)
        why = f"character {bad!r} is not hex" if bad else f"odd number of digits ({len(digits)})"
        raise ValueError(why)
    return bytes.fromhex(digits)


def _check(raw: Any, file: str, index: int, protocol: str) -> Vector:
    if not isinstance(raw, Mapping):
        raise VectorError(f"{file}: entry {index} is not a mapping")
    vid = raw.get("id")
    where = f"{file}: vector {vid!r}" if isinstance(vid, str) else f"{file}: entry {index}"

    def bad(key: str, why: str) -> VectorError:
        return VectorError(f"{where}: key {key!r}: {why}")

    for key in raw:
        if key not in REQUIRED_KEYS + OPTIONAL_KEYS:
            raise bad(key, f"unknown key (allowed: {', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)})")
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise bad(key, "missing")
    if not isinstance(vid, str) or not _ID_RE.fullmatch(vid) or not vid.startswith(protocol + "/"):
        raise bad("id", f"must look like {protocol}/<area>/<name> in lower case")
    reqs = raw["requirements"]
    if not isinstance(reqs, list) or not reqs or not all(isinstance(r, str) for r in reqs):
        raise bad("requirements", "must be a non-empty list of requirement IDs")
    for r in reqs:
        if not _REQ_RE.fullmatch(r):
            raise bad("requirements", f"{r!r} is not a requirement ID like CUR-FRAME-1")
    direction = raw["direction"]
    if direction not in DIRECTIONS:
        raise bad("direction", f"{direction!r} is not one of {', '.join(DIRECTIONS)}")
    if not isinstance(raw["description"], str) or not raw["description"].strip():
        raise bad("description", "must be a non-empty string")
    if not isinstance(raw["hex"], str):
        raise bad("hex", "must be a string of hex digits")
    try:
        frame = parse_hex(raw["hex"])
    except ValueError as exc:
        raise bad("hex", str(exc)) from None
    truncated = raw.get("truncated", False)
    if not isinstance(truncated, bool):
        raise bad("truncated", "must be true or false")
    if truncated and len(frame) != 4:
        raise bad("hex", f"a truncated vector gives only the 4-byte prefix, not {len(frame)} bytes")
    if not truncated and (len(frame) < 4 or int.from_bytes(frame[:4], "big") != len(frame) - 4):
        raise bad("hex", "the length prefix does not match the payload (or set truncated: true)")
    decoded, error = raw.get("decoded"), raw.get("error")
    if decoded is not None and error is not None:
        raise bad("error", "give decoded or error, not both")
    if decoded is None and error is None and not truncated:
        raise bad("decoded", "missing (give decoded or error)")
    if truncated and decoded is not None:
        raise bad("decoded", "a truncated vector has no decoded message")
    if error is not None and (not isinstance(error, str) or not _CODE_RE.fullmatch(error)):
        raise bad("error", f"{error!r} is not an upper-case error code")
    if decoded is not None:
        try:
            to_message(decoded)
        except ValueError as exc:
            raise bad("decoded", str(exc)) from None
        kinds = REQUEST_KINDS if direction == "request" else REPLY_KINDS
        if decoded["kind"] not in kinds:
            raise bad("decoded", f"kind {decoded['kind']!r} is not a {direction} kind")
    compression = raw.get("compression")
    if compression is not None and compression not in COMPRESSIONS:
        raise bad("compression", f"{compression!r} is not one of {', '.join(COMPRESSIONS)}")
    if compression is not None and direction != "request":
        raise bad("compression", "only requests are compressed")
    exact = raw.get("encode_exact", True)
    if not isinstance(exact, bool):
        raise bad("encode_exact", "must be true or false")
    if compression and decoded is not None and exact:
        raise bad("encode_exact", "a compressed vector must say encode_exact: false")
    setup = _setup(raw.get("setup", []), direction, bad)
    reply = raw.get("reply")
    if reply is not None:
        if direction != "request":
            raise bad("reply", "only request vectors have an expected reply")
        if not isinstance(reply, Mapping) or reply.get("kind") not in REPLY_KINDS:
            raise bad("reply", f"must be a mapping whose kind is one of {', '.join(REPLY_KINDS)}")
        for key in reply:
            if key not in _REPLY_KEYS[reply["kind"]]:
                raise bad("reply", f"unknown key {key!r} for a {reply['kind']} reply")
    return Vector(
        id=vid,
        file=file,
        requirements=tuple(reqs),
        direction=direction,
        description=raw["description"],
        frame=frame,
        decoded=decoded,
        error=error,
        compression=compression,
        encode_exact=exact,
        truncated=truncated,
        setup=setup,
        reply=reply,
    )


def _setup(steps: Any, direction: str, bad: Any) -> tuple[str | bytes, ...]:
    if not isinstance(steps, list):
        raise bad("setup", "must be a list")
    if steps and direction != "request":
        raise bad("setup", "only request vectors have setup steps")
    out: list[str | bytes] = []
    for step in steps:
        if isinstance(step, str) and step:
            out.append(step)
        elif isinstance(step, Mapping) and list(step) == ["hex"] and isinstance(step["hex"], str):
            try:
                out.append(parse_hex(step["hex"]))
            except ValueError as exc:
                raise bad("setup", str(exc)) from None
        else:
            raise bad("setup", f"step {step!r} is neither a text command nor {{hex: FRAME}}")
    return tuple(out)


def load_file(path: Path, protocol: str) -> list[Vector]:
    """The vectors of one YAML file, checked."""
    name = path.name
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise VectorError(f"{name}: not valid YAML: {exc}") from None
    if not isinstance(raw, list):
        raise VectorError(f"{name}: the file must hold a list of vectors")
    return [_check(item, name, i, protocol) for i, item in enumerate(raw)]


def load(protocol: str, root: Path | None = None) -> list[Vector]:
    """Every vector of ``protocol``, file by file (sorted by name), in file order."""
    folder = (root or VECTOR_ROOT) / protocol
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise VectorError(f"no vector files in {folder}")
    vectors: list[Vector] = []
    seen: dict[str, str] = {}
    for path in files:
        for v in load_file(path, protocol):
            if v.id in seen:
                raise VectorError(
                    f"{v.file}: vector {v.id!r}: key 'id': duplicate (first in {seen[v.id]})"
                )
            seen[v.id] = v.file
            vectors.append(v)
    return vectors
