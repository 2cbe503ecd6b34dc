"""The V1 line vector schema: what a V1 line vector's ``decoded``, ``reply`` and extra keys hold.

A frame is one line with its ``\\n`` (:data:`.codec.FRAMING`); the payload the generic loader
hands over is the line without it.

A request vector's ``decoded`` is ``{correlation_id, command, args}``: the correlation id as
text (quote it in YAML: ``'42'``), the command's name as :data:`.commands.COMMANDS` spells it
and ``args`` a mapping from each argument's name (``CommandSpec.arg_names``) to its value:
text for names, an integer for integers, ``<key>:<value>`` text for PRODUCE's message (split
on the first ``:``), the chosen text for a role or an option (``acks``, ``assignor``).  An
absent option is left out; PING's ``args`` is ``{}`` and may be left out.

A reply vector's ``decoded`` is ``{correlation_id, status: OK}`` (``V1|<cid>|OK``),
``{correlation_id, status: OK, payload}`` or ``{correlation_id, status: ERR, code,
message}``.  ``payload`` is a mapping from each key of the command's reply to its value:
an integer, ``true``/``false``, text, a list of integers (``isr=[0 1]``, ``assigned=[]``)
or, for CONSUME's ``messages``, a list of ``[offset, value]`` pairs; the extra key
``command`` names the command answered (required with a payload: it says how the payload
is read).

Extra keys: ``revision`` (``doc`` or ``real``, SPEC.md's revisions): the revision the line
is read in.  Without it the line must read alike in both: the same request, or the same
refusal (code, correlation id and message); a reply line reads alike in both always.
``command`` (reply vectors): see above.

A request vector's ``reply`` has the form of a reply's ``decoded`` and is compared on the
keys it gives.  For a refused request it is the reply the refusal is answered with
(:meth:`.errors.V1LineError.reply_line`): correlation id ``0`` for an envelope error,
the request's own for an argument error or an unknown command.

Error codes: ``BAD_REQUEST`` and ``UNKNOWN_COMMAND`` (a refused request), ``BAD_REPLY`` (a
reply line the codec cannot read) and ``FRAME_TOO_LARGE`` (a line over 64 KiB).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import (
    COMMANDS,
    REVISIONS,
    ArgValue,
    ErrReply,
    KeyValue,
    OkReply,
    PayloadValue,
    Request,
    Revision,
)
from conformance.protocols.v1line.errors import BadReply, V1LineError
from conformance.vectors import mismatches, one_of, reply_command

ERROR_NAMES = ("BAD_REQUEST", "UNKNOWN_COMMAND", "BAD_REPLY", "FRAME_TOO_LARGE")
REPLY_KEYS = ("correlation_id", "status", "payload", "code", "message")


class RevisionsDiffer(ProtocolError):
    """A vector without ``revision`` whose line reads differently in ``doc`` and ``real``."""


# ------------------------------------------------------------------- plain data


def _text(d: Mapping[str, Any], key: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise ValueError(f"key {key!r} must be text, got {v!r}")
    return v


def _only(d: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")


def _request(d: Mapping[str, Any]) -> Request:
    _only(d, ("correlation_id", "command", "args"), "a request")
    corr, name = _text(d, "correlation_id"), _text(d, "command")
    spec = COMMANDS.get(name)
    if spec is None:
        raise ValueError(f"unknown command {name!r}")
    args = d.get("args", {})
    if not isinstance(args, Mapping):
        raise ValueError(f"args must be a mapping, got {args!r}")
    _only(args, spec.arg_names, f"{name}'s args")
    values: list[ArgValue] = []
    for f in spec.fields:
        if f.name not in args:
            raise ValueError(f"{name}: args lacks {f.name}")
        v = args[f.name]
        if f.kind == "int":
            if type(v) is not int:
                raise ValueError(f"{name}: {f.name} must be an integer, got {v!r}")
            values.append(v)
        elif not isinstance(v, str):
            raise ValueError(f"{name}: {f.name} must be text, got {v!r}")
        elif f.kind == "message":
            key, sep, value = v.partition(":")
            if not sep:
                raise ValueError(f"{name}: message {v!r} is not <key>:<value>")
            values.append(KeyValue(key, value))
        else:
            values.append(v)
    if spec.option is not None:
        opt = args.get(spec.option.key)
        if opt is not None and not isinstance(opt, str):
            raise ValueError(f"{name}: {spec.option.key} must be text, got {opt!r}")
        values.append(opt)
    return Request(corr, name, tuple(values))


def _payload_value(key: str, v: Any) -> Any:
    if isinstance(v, bool | int | str):
        return v
    if isinstance(v, list) and all(type(x) is int for x in v):
        return list(v)
    if isinstance(v, list) and all(
        isinstance(x, list) and len(x) == 2 and type(x[0]) is int and isinstance(x[1], str)
        for x in v
    ):
        return [list(x) for x in v]
    raise ValueError(f"payload {key}: {v!r} is no integer, bool, text, int list or messages")


def _reply(d: Mapping[str, Any]) -> dict[str, Any]:
    _only(d, REPLY_KEYS, "a reply")
    corr, status = _text(d, "correlation_id"), _text(d, "status")
    if status == "OK":
        _only(d, ("correlation_id", "status", "payload"), "an OK reply")
        if "payload" not in d:
            return {"correlation_id": corr, "status": "OK"}
        payload = d["payload"]
        if not isinstance(payload, Mapping) or not payload:
            raise ValueError(f"payload must be a non-empty mapping, got {payload!r}")
        values = {str(k): _payload_value(str(k), v) for k, v in payload.items()}
        return {"correlation_id": corr, "status": "OK", "payload": values}
    if status == "ERR":
        _only(d, ("correlation_id", "status", "code", "message"), "an ERR reply")
        code, message = _text(d, "code"), _text(d, "message")
        return {"correlation_id": corr, "status": "ERR", "code": code, "message": message}
    raise ValueError(f"status {status!r} is neither OK nor ERR")


def to_message(decoded: Mapping[str, Any]) -> Request | dict[str, Any]:
    """A request's :class:`.commands.Request`, or a reply's plain form checked and
    normalised; ValueError if malformed."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    return _reply(decoded) if "status" in decoded else _request(decoded)


def _plain_value(v: PayloadValue) -> Any:
    if isinstance(v, tuple):
        return [list(x) if isinstance(x, tuple) else x for x in v]
    return v


def from_message(message: Any) -> dict[str, Any]:
    """The plain-data form of a request or a reply, as ``decoded`` spells it."""
    if isinstance(message, Request):
        args: dict[str, Any] = {}
        for name, v in zip(message.spec.arg_names, message.args, strict=True):
            if v is not None:
                args[name] = str(v) if isinstance(v, KeyValue) else v
        return {"correlation_id": message.correlation_id, "command": message.command, "args": args}
    if isinstance(message, Mapping):
        return _reply(message)
    raise TypeError(f"not a V1 line message: {message!r}")


def _reply_plain(reply: OkReply | ErrReply, command: str | None) -> dict[str, Any]:
    if isinstance(reply, ErrReply):
        return {
            "correlation_id": reply.correlation_id,
            "status": "ERR",
            "code": reply.code,
            "message": reply.message,
        }
    if reply.payload is None:
        return {"correlation_id": reply.correlation_id, "status": "OK"}
    if command is None:
        raise BadReply("an OK reply with a payload needs the command it answers")
    values = codec.decode_payload(command, reply.payload)
    payload = {k: _plain_value(v) for k, v in values.items()}
    return {"correlation_id": reply.correlation_id, "status": "OK", "payload": payload}


# --------------------------------------------------------------------- decoding


def _outcome(payload: bytes, revision: Revision) -> Request | V1LineError:
    try:
        return codec.parse_request(payload, revision=revision)
    except V1LineError as exc:
        return exc


def _same(a: Request | V1LineError, b: Request | V1LineError) -> bool:
    if isinstance(a, Request) or isinstance(b, Request):
        return a == b
    return (type(a), a.correlation_id, a.message) == (type(b), b.correlation_id, b.message)


def decode_request(payload: bytes, revision: str | None) -> Request:
    """The request in ``payload`` read in ``revision``, or in both when None (they must
    agree: RevisionsDiffer otherwise)."""
    if revision is not None:
        return codec.parse_request(payload, revision=revision)  # type: ignore[arg-type]
    doc, real = (_outcome(payload, r) for r in REVISIONS)
    if not _same(doc, real):
        raise RevisionsDiffer(f"doc reads {doc!r}, real reads {real!r}: give a revision")
    if isinstance(doc, V1LineError):
        raise doc
    return doc


def _raw_args(request: Request) -> str:
    """The args section written as given, for a request :func:`.codec.encode` refuses
    because it reads so in one revision only (``real``: a ``|`` in a value)."""
    spec = request.spec
    out = []
    for name, v in zip(spec.arg_names, request.args, strict=True):
        if v is None:
            continue
        out.append(f"{name}={v}" if spec.option is not None and name == spec.option.key else str(v))
    return " ".join(out)


# ------------------------------------------------------------------- the schema


class V1LineVectors:
    """The :class:`conformance.plugin.VectorSchema` of the V1 line protocol."""

    extra_keys: tuple[str, ...] = ("revision", "command")
    not_encoded: tuple[str, ...] = ()

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        revision = one_of(raw, "revision", REVISIONS)
        if revision is not None:
            extras["revision"] = revision
        command = reply_command(raw, direction, tuple(COMMANDS))
        if command is not None:
            extras["command"] = command
        decoded = raw.get("decoded")
        if decoded is not None:
            try:
                msg = to_message(decoded)
            except ValueError as exc:
                raise SchemaError("decoded", str(exc)) from None
            if (direction == "request") != isinstance(msg, Request):
                raise SchemaError("decoded", f"is not a {direction}")
            if isinstance(msg, dict) and "payload" in msg and command is None:
                raise SchemaError("command", "a reply with a payload names its command")
        error = raw.get("error")
        if error is not None and error not in ERROR_NAMES:
            raise SchemaError("error", f"{error!r} is not one of {', '.join(ERROR_NAMES)}")
        reply = raw.get("reply")
        if reply is not None:
            try:
                if not isinstance(reply, Mapping) or "status" not in reply:
                    raise ValueError("must be a mapping with a status")
                _reply(reply)
            except ValueError as exc:
                raise SchemaError("reply", str(exc)) from None
        return extras

    def to_message(self, decoded: Mapping[str, Any]) -> Request | dict[str, Any]:
        return to_message(decoded)

    def from_message(self, message: Any) -> dict[str, Any]:
        return from_message(message)

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> Any:
        if direction == "request":
            return decode_request(payload, extras.get("revision"))
        return _reply_plain(codec.parse_reply(payload), extras.get("command"))

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        if direction == "request":
            assert isinstance(message, Request)
            try:
                line = codec.encode(message)
            except ValueError:
                line = codec.encode_request(
                    message.correlation_id, message.command, _raw_args(message)
                )
            return line.removesuffix(b"\n")
        plain = _reply(message)
        if plain["status"] == "ERR":
            line = codec.encode_err(plain["correlation_id"], plain["code"], plain["message"])
        elif "payload" not in plain:
            line = codec.encode_ok(plain["correlation_id"])
        else:
            values = {
                k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                if isinstance(v, list)
                else v
                for k, v in plain["payload"].items()
            }
            text = codec.encode_payload(extras["command"], values)
            line = codec.encode_ok(plain["correlation_id"], text)
        return line.removesuffix(b"\n")

    def error_name(self, exc: ProtocolError) -> str | None:
        if isinstance(exc, V1LineError):
            return exc.code
        if isinstance(exc, BadReply):
            return "BAD_REPLY"
        if isinstance(exc, FrameTooLarge):
            return "FRAME_TOO_LARGE"
        return None

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        """Where a broker's reply line ``payload`` to ``request`` differs from ``expected``
        (compared on the keys it gives)."""
        try:
            command: str | None = codec.parse_request(request, revision="real").command
        except V1LineError:
            command = None
        try:
            got = _reply_plain(codec.parse_reply(payload), command)
        except BadReply as exc:
            return f"the reply does not decode: {exc}"
        return "; ".join(mismatches(dict(expected), got, "reply")) or None


SCHEMA = V1LineVectors()
