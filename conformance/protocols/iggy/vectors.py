"""The Iggy vector schema: what an Iggy vector's ``decoded``, ``reply`` and extra keys hold.

A frame payload as the generic loader sees it is ``u32 code + payload`` (request) or ``u32
status + payload`` (reply): the length is the framing's (:class:`.codec.IggyFraming`).

A request vector's ``decoded`` is ``{command, body}``: the command's snake_case name
(:data:`.messages.CODES`) and its body as the codec decodes it (:mod:`.messages`; for
SEND_MESSAGES ``stream``, ``topic``, ``partitioning`` and ``messages``, see :mod:`.batch`).
A command without a payload may leave ``body`` out.

A reply vector's ``decoded`` is ``{status, body}``: ``status`` 0 and the body of the reply
to the command named by the extra key ``command`` (required when ``status`` is 0), or
``body: null`` for the empty reply of a thing not found (GET_STREAM of an unknown stream);
or a non-zero ``status`` alone, an error reply (no payload: IGG-FRAME-3).

Plain-data conventions:

* bytes (a message payload, a messages key, a user-header key or value) are ``{text:
  "..."}`` (their UTF-8) or ``{hex: "..."}`` (whitespace ignored); :func:`from_message`
  writes text when the bytes are printable UTF-8, hex otherwise;
* Identifier, Consumer and Partitioning are ``{kind, value}`` unions (balanced
  partitioning: ``{kind: 1, value: {}}``);
* a message of SEND_MESSAGES or POLL_MESSAGES gives ``payload`` and, when not 0,
  ``checksum``, ``id`` (u128), ``offset``, ``timestamp``, ``origin_timestamp`` (µs) and
  ``reserved`` (doc: a sent message has ``id`` and ``payload`` only, a polled one also
  ``offset``, ``state``, ``timestamp`` and ``checksum``); its ``headers`` (left out when
  empty) are the user-header entries, a list of ``{key_kind, key, value_kind, value}``
  (CM/wire_conversions.rs ``user_headers_to_wire``), or ``{hex}`` for a block that is not
  a sequence of such entries.

Extra keys: ``command`` (reply vectors: the command answered) and ``revision`` (``classic``,
the default, or ``doc``: the codec revision the frame is read in).

A request vector's ``reply`` is ``{status}`` and optionally ``body``, compared on the keys
it gives.  Error codes of refused frames are the names of :data:`.errors.NAMES` (the
status the real server answers: ``INVALID_COMMAND``, ``INVALID_FORMAT``) and
``FRAME_TOO_LARGE`` (a length prefix over the deframer's limit).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.batch import INT_FIELDS, USER_HEADERS
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.messages import CODES, NAMES, VERSION
from conformance.protocols.iggy.replies import OPTIONAL_REPLIES
from conformance.vectors import mismatches, one_of, plain_bytes, reply_command, text_or_hex

REVISIONS = codec.REVISIONS
DEFAULT_REVISION = "classic"
ERROR_NAMES = frozenset({*STATUS_NAMES.values(), "FRAME_TOO_LARGE"}) - {"OK"}
STATUS = struct.Struct("<I")
_INT_KEYS = (*INT_FIELDS, "state")
"""A message's integers: classic's header fields, and doc's polled ``state``."""
_MESSAGE_KEYS = (*_INT_KEYS, "payload", "headers")
DOC_SENT = ("id", "payload")
DOC_POLLED = ("offset", "state", "timestamp", "id", "checksum", "payload")
"""The fields of a message in doc's SEND_MESSAGES and POLL_MESSAGES (:mod:`.doc`)."""
_ENTRY_KEYS = ("key_kind", "key", "value_kind", "value")

# ------------------------------------------------------------------ plain data


def _int(d: Mapping[str, Any], key: str, what: str) -> int:
    v = d.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{what}.{key} must be an integer, got {v!r}")
    return v


def _headers(v: Any, what: str) -> bytes:
    if isinstance(v, Mapping):
        return text_or_hex(v, what)
    if not isinstance(v, list):
        raise ValueError(f"{what} must be a list of entries or {{hex: ...}}, got {v!r}")
    entries = []
    for i, e in enumerate(v):
        where = f"{what}[{i}]"
        if not isinstance(e, Mapping) or set(e) != set(_ENTRY_KEYS):
            raise ValueError(f"{where} must give exactly {', '.join(_ENTRY_KEYS)}")
        entries.append(
            {
                "key_kind": _int(e, "key_kind", where),
                "key": text_or_hex(e["key"], f"{where}.key"),
                "value_kind": _int(e, "value_kind", where),
                "value": text_or_hex(e["value"], f"{where}.value"),
            }
        )
    return USER_HEADERS.encode({"entries": entries}, VERSION)


def _plain_headers(block: bytes) -> list[dict[str, Any]] | dict[str, str]:
    """The entries of a user-header block, or ``{hex}`` if it does not read as entries
    that give back the very bytes."""
    try:
        value, end = USER_HEADERS.decode_at(block, VERSION)
    except ProtocolError:
        return {"hex": block.hex()}
    if end != len(block) or USER_HEADERS.encode(value, VERSION) != block:
        return {"hex": block.hex()}
    return [
        {
            "key_kind": e["key_kind"],
            "key": plain_bytes(e["key"]),
            "value_kind": e["value_kind"],
            "value": plain_bytes(e["value"]),
        }
        for e in value["entries"]
    ]


def _message(d: Any, what: str) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ValueError(f"{what} must be a mapping, got {d!r}")
    for key in d:
        if key not in _MESSAGE_KEYS:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(_MESSAGE_KEYS)})")
    out: dict[str, Any] = {k: _int(d, k, what) for k in _INT_KEYS if k in d}
    out["payload"] = text_or_hex(d.get("payload", {"hex": ""}), f"{what}.payload")
    if "headers" in d:
        out["headers"] = _headers(d["headers"], f"{what}.headers")
    return out


def _plain_message(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: m[k] for k in _INT_KEYS if m.get(k, 0)}
    out["payload"] = plain_bytes(bytes(m.get("payload", b"")))
    headers = bytes(m.get("headers", b""))
    if headers:
        out["headers"] = _plain_headers(headers)
    return out


def _to_value(v: Any) -> Any:
    """Plain data to codec values: ``{text}``/``{hex}`` become bytes."""
    if isinstance(v, Mapping):
        if len(v) == 1 and ("text" in v or "hex" in v):
            return text_or_hex(v, "bytes")
        return {k: _to_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_value(x) for x in v]
    return v


def _to_plain(v: Any) -> Any:
    if isinstance(v, bytes | bytearray):
        return plain_bytes(bytes(v))
    if isinstance(v, Mapping):
        return {k: _to_plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_to_plain(x) for x in v]
    return v


def _body(command: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise ValueError(f"body must be a mapping, got {body!r}")
    if command in ("send_messages", "poll_messages") and "messages" in body:
        messages = body["messages"]
        if not isinstance(messages, list):
            raise ValueError(f"messages must be a list, got {messages!r}")
        rest = _to_value({k: v for k, v in body.items() if k != "messages"})
        return {
            **rest,
            "messages": [_message(m, f"messages[{i}]") for i, m in enumerate(messages)],
        }
    return dict(_to_value(body))


def _plain_body(body: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: _to_plain(v) for k, v in body.items() if k != "messages"}
    if "messages" in body:
        out["messages"] = [_plain_message(m) for m in body["messages"]]
    return out


def to_message(decoded: Mapping[str, Any]) -> dict[str, Any]:
    """The message a ``decoded`` mapping describes: ``{command, body}`` (request) or
    ``{status, body}`` (reply), with bytes as bytes; ValueError if malformed."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    if "command" in decoded:
        for key in decoded:
            if key not in ("command", "body"):
                raise ValueError(f"unknown key {key!r} in a request (allowed: command, body)")
        command = decoded["command"]
        if command not in CODES:
            raise ValueError(f"unknown command {command!r}")
        return {"command": command, "body": _body(command, decoded.get("body", {}))}
    if "status" in decoded:
        for key in decoded:
            if key not in ("status", "body"):
                raise ValueError(f"unknown key {key!r} in a reply (allowed: status, body)")
        status = _int(decoded, "status", "reply")
        if status != 0:
            if "body" in decoded:
                raise ValueError("an error reply (status != 0) has no body")
            return {"status": status}
        body = decoded.get("body")
        return {"status": 0, "body": None if body is None else _body("poll_messages", body)}
    raise ValueError("decoded gives command (a request) or status (a reply)")


def from_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The plain-data form of a message, as ``decoded`` spells it."""
    if "command" in message:
        return {"command": message["command"], "body": _plain_body(message["body"])}
    if message["status"] != 0:
        return {"status": message["status"]}
    body = message.get("body")
    return {"status": 0, "body": None if body is None else _plain_body(body)}


def _for_revision(message: Mapping[str, Any], revision: str) -> Mapping[str, Any]:
    """``message`` with its messages as the revision's codec takes them: classic's batch
    fills what is left out with 0, doc's declarations want exactly their fields."""
    body = message.get("body")
    if revision != "doc" or not isinstance(body, Mapping) or "messages" not in body:
        return message
    keys = DOC_SENT if "command" in message else DOC_POLLED
    messages = [{k: m.get(k, 0) for k in keys} for m in body["messages"]]
    return {**message, "body": {**body, "messages": messages}}


# ------------------------------------------------------------------ the schema


class IggyVectors:
    """The :class:`conformance.plugin.VectorSchema` of Iggy."""

    extra_keys: tuple[str, ...] = ("command", "revision")
    not_encoded: tuple[str, ...] = ()

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        revision = one_of(raw, "revision", REVISIONS) or DEFAULT_REVISION
        extras: dict[str, Any] = {"revision": revision}
        command = reply_command(raw, direction, tuple(CODES))
        if command is not None:
            extras["command"] = command
        decoded = raw.get("decoded")
        if decoded is not None:
            try:
                msg = to_message(decoded)
            except ValueError as exc:
                raise SchemaError("decoded", str(exc)) from None
            want = "command" if direction == "request" else "status"
            if want not in msg:
                raise SchemaError("decoded", f"a {direction} gives {want}")
            if direction == "reply" and msg["status"] == 0:
                if command is None:
                    raise SchemaError("command", "a reply with status 0 names its command")
                if msg["body"] is None and command not in OPTIONAL_REPLIES:
                    raise SchemaError("decoded", f"{command} has no empty (not found) reply")
        error = raw.get("error")
        if error is not None and error not in ERROR_NAMES:
            raise SchemaError("error", f"{error!r} is not a status name of errors.NAMES")
        reply = raw.get("reply")
        if reply is not None:
            if not isinstance(reply, Mapping) or "status" not in reply:
                raise SchemaError("reply", "must be a mapping with a status (and maybe a body)")
            try:
                to_message(reply)
            except ValueError as exc:
                raise SchemaError("reply", str(exc)) from None
        return extras

    def to_message(self, decoded: Mapping[str, Any]) -> dict[str, Any]:
        return to_message(decoded)

    def from_message(self, message: Any) -> dict[str, Any]:
        return from_message(message)

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> Any:
        revision = extras.get("revision", DEFAULT_REVISION)
        if direction == "request":
            name, body = codec.decode_request(payload, revision)
            return {"command": name, "body": body}
        status, rest = codec.split_reply(payload)
        if status != 0:
            if rest:
                raise IggyError(f"an error reply (status {status}) with {len(rest)} bytes")
            return {"status": status}
        return {"status": 0, "body": codec.decode_reply(extras["command"], rest, revision)}

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        revision = extras.get("revision", DEFAULT_REVISION)
        message = _for_revision(message, revision)
        if direction == "request":
            name = message["command"]
            return STATUS.pack(CODES[name]) + codec.encode_request(name, message["body"], revision)
        if message["status"] != 0:
            return STATUS.pack(message["status"])
        body = codec.encode_reply(extras["command"], message["body"], revision)
        return STATUS.pack(0) + body

    def error_name(self, exc: ProtocolError) -> str | None:
        if isinstance(exc, FrameTooLarge) and not isinstance(exc, IggyError):
            return "FRAME_TOO_LARGE"
        if isinstance(exc, IggyError):
            return STATUS_NAMES.get(exc.status)
        return None

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        try:
            code, _ = codec.split_request(request)
            command = NAMES.get(code, "")
            got = self.decode(payload, "reply", {"command": command})
        except (IggyError, KeyError) as exc:
            return f"the reply does not decode: {exc}"
        want = from_message(to_message(expected))
        if "body" not in expected:
            want.pop("body", None)
        problems = mismatches(want, from_message(got), "reply")
        return "; ".join(problems) or None


SCHEMA = IggyVectors()
