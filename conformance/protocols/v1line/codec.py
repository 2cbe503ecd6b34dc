"""V1 line protocol codec, sans-IO: one ``\\n``-terminated text line per request and reply.

Requests are ``V1|<correlation_id>|<command>|<args>`` (V1L-ENV-1), replies
``V1|<cid>|OK``, ``V1|<cid>|OK|<payload>`` (V1L-ENV-3) or ``V1|<cid>|ERR|<code>|<message>``
(V1L-ENV-4), every one ending in ``\\n`` (V1L-ENV-2).  :func:`parse_request` reads a line
under one of SPEC.md's revisions (``doc``, ``real``) and returns a :class:`Request` or
raises :class:`~.errors.BadRequest` / :class:`~.errors.UnknownCommand` (both
:class:`~conformance.errors.ProtocolError`), and nothing else, for any bytes.

Requests, both revisions:

* The line is the deframer's output, without its ``\\n``; the parsers also take one
  trailing ``\\n``.  Any other ``\\n`` in it is BAD_REQUEST (V1L-ENV-17: the deframer
  splits there).  A line that is not UTF-8 is BAD_REQUEST (SPEC is silent; the
  real broker takes any bytes).
* Envelope checks come first (V1L-ENV-5 to -10, each a parse error answered with
  correlation id 0, V1L-ENV-11), then the command's name (V1L-ENV-14), then its
  arguments (V1L-ENV-15, -16, and each command's rules in :mod:`commands`, answered
  with the request's correlation id).  The correlation id is any non-empty text
  (V1L-ENV-3), echoed as read (trimmed in ``real``).  :func:`encode` writes only
  requests that read the same in both revisions (no ``|`` or whitespace in a field).
  Error texts are the real broker's (V1L-ENV-19).

``doc``: the line is split on every ``|`` into exactly four sections (V1L-ENV-5,
V1L-ENV-10); nothing is trimmed, so ``\\r`` and surrounding spaces belong to their
section; the version is exactly ``V1`` (V1L-ENV-6) and the command name matches exactly
(``ping`` is UNKNOWN_COMMAND).  Args are separated by single spaces (SPEC preamble,
values): an empty field (two spaces in a row, a leading or trailing space) makes the
arg count wrong.  Option values and roles match exactly (V1L-PROD-6, V1L-REPL-3,
V1L-GRP-8).

``real`` (V1L-ENV-18): the line is trimmed of surrounding whitespace (so a ``\\r``
before ``\\n`` goes), split into at most four sections (the fourth runs to the end of
the line and may hold ``|``) and each section is trimmed; the version is still exactly
``V1``; the command name is matched in any case; args are split on runs of whitespace.
Option keys and values and roles match in any case (V1L-PROD-10, V1L-REPL-16,
V1L-GRP-14).

Replies (SPEC preamble, reply payload grammar): ``key=value`` fields separated by one
space.  Lists are ``[0 1 2]``, items separated by one space, ``[]`` when empty; the
comma form (``[0,1,2]``) is refused by name.  ``messages=`` holds ``<offset>:<value>``
items joined by ``,`` (``messages= hw=-1`` when none); a reader starts an item wherever
a comma is followed by ``<digits>:``, so a value holding ``,<digits>:`` reads as two
(SPEC: ambiguous).  A success with no payload (PING) is ``V1|<cid>|OK`` (V1L-PING-2):
:func:`encode_result` writes it so.  Decoding is additive: every declared key must be
present and well-typed, unknown keys are kept as text, a repeated key is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from conformance.protocols.v1line.commands import (
    COMMANDS,
    I64_MAX,
    I64_MIN,
    REVISIONS,
    ArgValue,
    CommandSpec,
    ErrReply,
    Field,
    KeyValue,
    OkReply,
    PayloadValue,
    Reply,
    ReplyField,
    Request,
    Revision,
    command_spec,
)
from conformance.protocols.v1line.errors import BadReply, BadRequest, UnknownCommand, error_line
from conformance.wire.framing import LineFraming

VERSION = "V1"
LINE_LIMIT = 64 * 1024
FRAMING = LineFraming(limit=LINE_LIMIT)
"""One line per frame both ways; a line over 64 KiB closes the connection (V1L-ENV-13)."""

ENVELOPE_ERROR = "expected format V1|<correlation_id>|<command>|<args>"

__all__ = [
    "FRAMING",
    "ArgValue",
    "ErrReply",
    "KeyValue",
    "OkReply",
    "PayloadValue",
    "Reply",
    "Request",
    "Revision",
]

INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_MESSAGE_START = re.compile(r",(?=[0-9]+:)")
_MESSAGE_ITEM = re.compile(r"([0-9]+):(.*)", re.DOTALL)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _line_text(line: bytes) -> str | None:
    """The line as text without its one optional ``\\n``, or None when not UTF-8."""
    if line.endswith(b"\n"):
        line = line[:-1]
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


def integer(token: str) -> int | None:
    """The value of ``[+-]?[0-9]+`` in the int64 range, else None."""
    if not INTEGER_RE.fullmatch(token):
        return None
    digits = token.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:  # past int64 anyway
        return None
    # the digits without their leading zeros: int() refuses a text over 4300 digits long
    value = -int(digits) if token.startswith("-") else int(digits)
    return value if I64_MIN <= value <= I64_MAX else None


# -------------------------------------------------------------------- requests


def _sections(text: str, revision: Revision) -> list[str]:
    if revision == "doc":
        sections = text.split("|")
        return sections if len(sections) == 4 else []
    sections = [s.strip() for s in text.strip().split("|", 3)]
    return sections if len(sections) == 4 else []


def parse_request(line: bytes, *, revision: Revision) -> Request:
    """Parse one request line (with or without its ``\\n``) under ``revision``."""
    if revision not in REVISIONS:
        raise ValueError(f"revision {revision!r} is none of {', '.join(REVISIONS)}")
    text = _line_text(line)
    if text is None:
        raise BadRequest("request is not valid UTF-8")
    if "\n" in text:
        raise BadRequest("a request is one line: it holds a newline before its end")
    sections = _sections(text, revision)
    if not sections:
        raw = text.split("|")
        corr = raw[1] if len(raw) > 1 else ""
        corr = corr.strip() if revision == "real" else corr
        raise BadRequest(ENVELOPE_ERROR, request_correlation_id=corr or None)
    version, correlation_id, command, args = sections
    if version != VERSION:
        raise BadRequest("unsupported version", request_correlation_id=correlation_id or None)
    if not correlation_id:
        raise BadRequest("correlation id required")
    if not command:
        raise BadRequest("command required", request_correlation_id=correlation_id)
    spec = command_spec(command.upper() if revision == "real" else command, revision)
    if spec is None:  # (PING too in real: the real broker has none, V1L-PING-3)
        raise UnknownCommand(command, correlation_id)
    tokens = args.split() if revision == "real" else ([] if args == "" else args.split(" "))
    values = parse_args(spec, tokens, revision=revision, correlation_id=correlation_id)
    return Request(correlation_id, spec.name, values)


class _ArgError(Exception):
    """An argument error, before the request's correlation id is attached."""


def parse_args(
    spec: CommandSpec, tokens: Sequence[str], *, revision: Revision, correlation_id: str
) -> tuple[ArgValue, ...]:
    """The values of ``tokens`` (the args section split into fields) under ``spec``;
    BadRequest answered with ``correlation_id`` (V1L-ENV-15)."""
    try:
        return _parse_args(spec, tokens, revision)
    except _ArgError as exc:
        raise BadRequest(str(exc), stage="args", request_correlation_id=correlation_id) from None


def _parse_args(
    spec: CommandSpec, tokens: Sequence[str], revision: Revision
) -> tuple[ArgValue, ...]:
    n = len(spec.fields)
    most = n + (spec.option is not None)
    if "" in tokens or not n <= len(tokens) <= most:
        raise _ArgError(spec.usage)
    fields = zip(spec.fields, tokens[:n], strict=True)
    values: list[ArgValue] = [_parse_field(f, t, revision) for f, t in fields]
    if spec.option is not None:
        opt = spec.option
        if len(tokens) > n:
            key, sep, choice = tokens[n].partition("=")
            if revision == "real":
                key, choice = key.lower(), choice.lower()
            if not sep or key != opt.key or choice not in opt.choices:
                raise _ArgError(opt.error)
            values.append(choice)
        else:
            values.append(None)
    return tuple(values)


def _parse_field(field: Field, token: str, revision: Revision) -> ArgValue:
    if field.kind == "name":
        return token
    if field.kind == "message":
        key, sep, value = token.partition(":")
        if not sep:
            raise _ArgError("message must be key:value")
        return KeyValue(key, value)
    if field.kind == "choice":
        choice = token.lower() if revision == "real" else token
        if choice not in field.choices:
            raise _ArgError(f"invalid {field.name}")
        return choice
    number = integer(token)
    if number is None or (field.minimum is not None and number < field.minimum):
        raise _ArgError(f"invalid {field.name}")
    return number


def encode_request(correlation_id: str | int, command: str, args: str = "") -> bytes:
    """``V1|<corr>|<command>|<args>\\n``, written as given (the suite may send anything)."""
    return f"{VERSION}|{correlation_id}|{command}|{args}\n".encode()


def format_args(command: str, values: Sequence[ArgValue]) -> str:
    """The args section of ``command`` with ``values`` (an option None is left out);
    ValueError when a value cannot be written so that it parses back in both revisions
    (no field holds ``|`` or whitespace)."""
    spec = COMMANDS[command]
    names = spec.arg_names
    if len(values) != len(names):
        raise ValueError(f"{command} takes {len(names)} value(s), got {len(values)}")
    out: list[str] = []
    for name, value in zip(names, values, strict=True):
        if value is None:
            if spec.option is None or name != spec.option.key:
                raise ValueError(f"{command}: {name} is required")
            continue
        text = str(value)
        if spec.option is not None and name == spec.option.key:
            text = f"{name}={text}"
        if isinstance(value, KeyValue) and ":" in value.key:
            raise ValueError(f"{command}: key {value.key!r} holds ':' (split on the first)")
        if not text or any(c == "|" or c.isspace() for c in text):
            raise ValueError(f"{command}: {name} {text!r} cannot be written as one field")
        out.append(text)
    return " ".join(out)


def encode(request: Request) -> bytes:
    """A typed request as its line, parsing back to ``request`` in both revisions."""
    corr = request.correlation_id
    if not corr or "|" in corr or "\n" in corr or corr != corr.strip():
        raise ValueError(f"correlation id {request.correlation_id!r} cannot be written")
    args = format_args(request.command, request.args)
    return encode_request(request.correlation_id, request.command, args)


# --------------------------------------------------------------------- replies


def encode_ok(correlation_id: str | int, payload: str | None = None) -> bytes:
    if payload is None:
        return f"{VERSION}|{correlation_id}|OK\n".encode()
    return f"{VERSION}|{correlation_id}|OK|{payload}\n".encode()


def encode_result(
    correlation_id: str | int, command: str, values: Mapping[str, PayloadValue]
) -> bytes:
    """The success line of ``command`` with ``values``: ``V1|<cid>|OK`` when the payload
    is empty (PING, V1L-PING-2), else ``V1|<cid>|OK|<payload>``."""
    return encode_ok(correlation_id, encode_payload(command, values) or None)


def encode_err(correlation_id: str | int, code: str, message: str) -> bytes:
    return error_line(str(correlation_id), code, message)


def encode_reply(reply: Reply) -> bytes:
    if isinstance(reply, OkReply):
        return encode_ok(reply.correlation_id, reply.payload)
    return encode_err(reply.correlation_id, reply.code, reply.message)


def parse_reply(line: bytes) -> Reply:
    """Read one reply line (with or without its ``\\n``); BadReply when it is none of the
    three forms.  An OK payload and an ERR message are kept whole (``|`` included)."""
    text = _line_text(line)
    if text is None:
        raise BadReply("reply is not valid UTF-8")
    if "\n" in text:
        raise BadReply("a reply is one line: it holds a newline before its end")
    sections = text.split("|", 4)
    if len(sections) < 3 or sections[0] != VERSION or not sections[1]:
        raise BadReply(f"reply {_shown(text)} is not V1|<correlation_id>|OK or ERR|...")
    corr, status = sections[1], sections[2]
    if status == "OK":
        payload = None if len(sections) == 3 else text.split("|", 3)[3]
        return OkReply(corr, payload)
    if status == "ERR":
        if len(sections) < 5 or not sections[3]:
            raise BadReply(f"error reply {_shown(text)} is not V1|<corr>|ERR|<code>|<message>")
        return ErrReply(corr, sections[3], sections[4])
    raise BadReply(f"reply status {_shown(status)} is neither OK nor ERR")


# -------------------------------------------------------------- reply payloads


def _format_value(f: ReplyField, value: PayloadValue) -> str:
    if f.kind == "bool":
        return "true" if value else "false"
    if f.kind == "int_list":
        assert isinstance(value, tuple)
        return "[" + " ".join(str(v) for v in value) + "]"
    if f.kind == "messages":
        assert isinstance(value, tuple)
        return ",".join(f"{item[0]}:{item[1]}" for item in value if isinstance(item, tuple))
    return str(value)


def encode_payload(command: str, values: Mapping[str, PayloadValue]) -> str:
    """The OK payload of ``command``: its declared keys in order, then any other key."""
    declared = COMMANDS[command].reply
    names = {f.name for f in declared}
    missing = [f.name for f in declared if f.name not in values]
    if missing:
        raise ValueError(f"{command} reply lacks {', '.join(missing)}")
    parts: list[str] = []
    for f in declared:
        text = _format_value(f, values[f.name])
        if "\n" in text or (f.kind != "int_list" and " " in text):
            raise ValueError(f"{command} reply field {f.name}={text!r} holds a space or newline")
        parts.append(f"{f.name}={text}")
    for k, v in values.items():
        if k not in names:
            if " " in f"{k}{v}" or "\n" in f"{k}{v}":
                raise ValueError(f"{command} reply field {k}={v!r} holds a space or newline")
            parts.append(f"{k}={v}")
    return " ".join(parts)


def _read_value(command: str, f: ReplyField, text: str) -> PayloadValue:
    where = f"{command} reply {f.name}={text}"
    if f.kind == "int":
        value = integer(text)
        if value is None:
            raise BadReply(f"{where}: not an integer")
        return value
    if f.kind == "bool":
        if text not in ("true", "false"):
            raise BadReply(f"{where}: not true or false")
        return text == "true"
    if f.kind == "literal":
        if text != f.literal:
            raise BadReply(f"{where}: expected exactly {f.literal!r}")
        return text
    if f.kind == "word":
        if not text:
            raise BadReply(f"{where}: empty")
        return text
    if f.kind == "int_list":
        if not (text.startswith("[") and text.endswith("]")):
            raise BadReply(f"{where}: not a list in [...]")
        inner = text[1:-1]
        items = inner.split(" ") if inner else []
        numbers = [integer(i) for i in items]
        if any(n is None for n in numbers):
            if "," in inner:
                raise BadReply(
                    f"{where}: items are separated by one space, as in [0 1 2], not commas"
                )
            raise BadReply(f"{where}: items must be integers separated by one space, as in [0 1 2]")
        return tuple(n for n in numbers if n is not None)
    messages: list[tuple[int, str]] = []
    for item in _MESSAGE_START.split(text) if text else []:
        m = _MESSAGE_ITEM.fullmatch(item)
        offset = integer(m.group(1)) if m else None
        if m is None or offset is None:
            raise BadReply(f"{where}: item {_shown(item)} is not <offset>:<value>")
        messages.append((offset, m.group(2)))
    return tuple(messages)


def decode_payload(command: str, payload: str) -> dict[str, PayloadValue]:
    """The typed values of ``command``'s OK payload: every declared key, each of its
    kind; keys the document does not declare are kept as text (additive evolution)."""
    spec = COMMANDS[command]
    lists = {f.name for f in spec.reply if f.kind == "int_list"}
    declared = {f.name for f in spec.reply}
    raw: dict[str, str] = {}
    tokens = iter(payload.split(" ") if payload else [])
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise BadReply(f"{command} reply {payload!r}: token {_shown(token)} is not key=value")
        # a list holds spaces: a declared list, or an unknown key's, runs to its "]"
        if (key in lists or key not in declared) and value.startswith("["):
            while not value.endswith("]"):
                more = next(tokens, None)
                if more is None:
                    raise BadReply(
                        f"{command} reply {payload!r}: {key}= opens a list it never closes"
                    )
                value += " " + more
        if key in raw:
            raise BadReply(f"{command} reply {payload!r}: key {key!r} appears twice")
        raw[key] = value
    out: dict[str, PayloadValue] = {}
    for f in spec.reply:
        if f.name not in raw:
            raise BadReply(f"{command} reply {payload!r} has no {f.name}=")
        out[f.name] = _read_value(command, f, raw.pop(f.name))
    out.update(raw)
    return out
