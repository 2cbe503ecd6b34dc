"""V1 line protocol codec, sans-IO: one ``\\n``-terminated text line per request and reply.

Requests are ``V1|<correlation_id>|<command>|<args>`` (seed l.9), replies
``V1|<corr>|OK``, ``V1|<corr>|OK|<payload>`` or ``V1|<corr>|ERR|<code>|<message>``
(seed l.25-32), every one ending in ``\\n`` (DESIGN).  :func:`parse_request` returns a
:class:`Request` or raises :class:`~.errors.BadRequest` / :class:`~.errors.UnknownCommand`
(both :class:`~conformance.errors.ProtocolError`), and nothing else, for any bytes.

Decisions where the document is silent (SPEC.md cites them as conventions):

* Bytes: a line is UTF-8; a line that is not answers BAD_REQUEST.  The line is the
  deframer's output, without its ``\\n``; the parsers also take one trailing ``\\n``.
  Any other ``\\n`` in a line is BAD_REQUEST.  Nothing is trimmed: ``\\r`` (a CRLF
  client) and surrounding spaces are ordinary characters of the section they are in, so
  `` V1|...`` has version `` V1`` (BAD_REQUEST) and ``V1|9|PING|\\r`` gives PING an
  argument (BAD_REQUEST).
* Envelope (seed l.63-68): split on every ``|``; exactly four sections, or BAD_REQUEST;
  so no section, and no argument, can contain ``|``.  The version is exactly ``V1``;
  correlation id and command are non-empty.  The document asks nothing more of a
  correlation id: any text without ``|`` is one (``abc``, ``-1``, `` 7``), kept as a
  string and echoed as it came.  Commands match exactly (``ping`` is UNKNOWN_COMMAND).
  Envelope checks come first, then the command's name, then its arguments.
* Arguments: split on single spaces; an empty field (two spaces in a row, a leading or
  a trailing space) is BAD_REQUEST, unless the caller passes ``collapse_spaces=True``,
  where runs of spaces separate fields and leading and trailing ones are dropped (an
  older text of the document said arguments are "split on whitespace").  So a name or
  a message value cannot hold a space.  A command with no arguments (PING) must have an
  empty args section (seed l.19-21).  Each command's grammar is in :mod:`commands`.
* Every BAD_REQUEST, from the envelope or the arguments, is answered with correlation
  id 0 (seed l.34-36, DESIGN "always"); the error keeps the line's id
  (``request_correlation_id``) for a handler that decides otherwise.
* Reply payloads (seed l.90-103) are ``key=value`` tokens separated by single spaces,
  each split on its first ``=``.  Lists are ``[1,2,3]`` with commas (the document shows
  no separator), ``[]`` when empty; a list written with spaces (``[0 1 2]``) is refused
  by name.  ``messages=`` holds ``<offset>:<value>`` items separated by commas, empty
  when there is none; an item begins wherever a comma is followed by ``<digits>:``, so a
  value may hold commas but a value holding ``,<digits>:`` reads as two messages (the
  document has no escaping).  Decoding is additive (seed l.92): every declared key
  must be present and well-typed, unknown keys are kept as text, a repeated key is
  refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from conformance.protocols.v1line.commands import (
    COMMANDS,
    I64_MAX,
    I64_MIN,
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
)
from conformance.protocols.v1line.errors import BadReply, BadRequest, UnknownCommand, error_line
from conformance.wire.framing import LineFraming

VERSION = "V1"
LINE_LIMIT = 64 * 1024
FRAMING = LineFraming(limit=LINE_LIMIT)
"""One line per frame both ways; a line over 64 KiB closes the connection (DESIGN)."""

__all__ = [
    "FRAMING",
    "ArgValue",
    "ErrReply",
    "KeyValue",
    "OkReply",
    "PayloadValue",
    "Reply",
    "Request",
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
    if len(digits) > 19:  # keeps int() clear of its digit limit; past int64 anyway
        return None
    value = int(token)
    return value if I64_MIN <= value <= I64_MAX else None


# -------------------------------------------------------------------- requests


def parse_request(line: bytes, *, collapse_spaces: bool = False) -> Request:
    """Parse one request line (with or without its ``\\n``)."""
    text = _line_text(line)
    if text is None:
        raise BadRequest("request is not valid UTF-8")
    if "\n" in text:
        raise BadRequest("a request is one line: it holds a newline before its end")
    sections = text.split("|")
    corr = sections[1] if len(sections) > 1 and sections[1] else None
    if len(sections) != 4:
        raise BadRequest(
            f"expected 4 |-separated sections V1|<correlation_id>|<command>|<args>, "
            f"got {len(sections)}",
            request_correlation_id=corr,
        )
    version, correlation_id, command, args = sections
    if version != VERSION:
        raise BadRequest(
            f"protocol version {_shown(version)} is not V1", request_correlation_id=corr
        )
    if not correlation_id:
        raise BadRequest("empty correlation id")
    if not command:
        raise BadRequest("empty command", request_correlation_id=correlation_id)
    spec = COMMANDS.get(command)
    if spec is None:
        raise UnknownCommand(command, correlation_id)
    tokens = (
        [t for t in args.split(" ") if t]
        if collapse_spaces
        else ([] if args == "" else args.split(" "))
    )
    try:
        values = parse_args(spec, tokens)
    except BadRequest as exc:
        raise BadRequest(str(exc), stage="args", request_correlation_id=correlation_id) from None
    return Request(correlation_id, command, values)


def _usage_error(spec: CommandSpec, why: str) -> BadRequest:
    return BadRequest(f"{spec.name}: {why}; expected {spec.usage}", stage="args")


def parse_args(spec: CommandSpec, tokens: Sequence[str]) -> tuple[ArgValue, ...]:
    """The values of ``tokens`` (the args section split into fields) under ``spec``."""
    if "" in tokens:
        raise _usage_error(spec, "fields must be separated by a single space")
    n = len(spec.fields)
    most = n + (spec.option is not None)
    if not n <= len(tokens) <= most:
        raise _usage_error(spec, f"got {len(tokens)} argument(s)")
    fields = zip(spec.fields, tokens[:n], strict=True)
    values: list[ArgValue] = [_parse_field(spec, f, t) for f, t in fields]
    if spec.option is not None:
        opt = spec.option
        if len(tokens) > n:
            key, sep, choice = tokens[n].partition("=")
            if not sep or key != opt.key:
                raise _usage_error(spec, f"unexpected argument {_shown(tokens[n])}")
            if choice not in opt.choices:
                allowed = ", ".join(f"{opt.key}={c}" for c in opt.choices)
                raise BadRequest(
                    f"{spec.name}: {_shown(tokens[n])} is not exactly one of {allowed}",
                    stage="args",
                )
            values.append(choice)
        else:
            values.append(None)
    return tuple(values)


def _parse_field(spec: CommandSpec, field: Field, token: str) -> ArgValue:
    if field.kind == "name":
        return token
    if field.kind == "message":
        key, sep, value = token.partition(":")
        if not sep:
            raise BadRequest(
                f"{spec.name}: message {_shown(token)} is not <key>:<value>", stage="args"
            )
        return KeyValue(key, value)
    if field.kind == "choice":
        if token not in field.choices:
            allowed = " or ".join(field.choices)
            raise BadRequest(
                f"{spec.name}: {field.name} {_shown(token)} is not exactly {allowed}",
                stage="args",
            )
        return token
    number = integer(token)
    if number is None:
        raise BadRequest(
            f"{spec.name}: {field.name} {_shown(token)} is not an integer in the int64 range",
            stage="args",
        )
    if field.minimum is not None and number < field.minimum:
        raise BadRequest(
            f"{spec.name}: {field.name} {number} is below {field.minimum}", stage="args"
        )
    return number


def encode_request(correlation_id: str | int, command: str, args: str = "") -> bytes:
    """``V1|<corr>|<command>|<args>\\n``, written as given (the suite may send anything)."""
    return f"{VERSION}|{correlation_id}|{command}|{args}\n".encode()


def format_args(command: str, values: Sequence[ArgValue]) -> str:
    """The args section of ``command`` with ``values`` (an option None is left out);
    ValueError when a value cannot be written so that it parses back."""
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
        if not text or any(c in text for c in " |\n"):
            raise ValueError(f"{command}: {name} {text!r} cannot be written as one field")
        out.append(text)
    return " ".join(out)


def encode(request: Request) -> bytes:
    """A typed request as its line (checked to parse back to ``request``)."""
    if not request.correlation_id or any(c in request.correlation_id for c in "|\n"):
        raise ValueError(f"correlation id {request.correlation_id!r} cannot be written")
    args = format_args(request.command, request.args)
    return encode_request(request.correlation_id, request.command, args)


# --------------------------------------------------------------------- replies


def encode_ok(correlation_id: str | int, payload: str | None = None) -> bytes:
    if payload is None:
        return f"{VERSION}|{correlation_id}|OK\n".encode()
    return f"{VERSION}|{correlation_id}|OK|{payload}\n".encode()


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
        return "[" + ",".join(str(v) for v in value) + "]"
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
    parts = [f"{f.name}={_format_value(f, values[f.name])}" for f in declared]
    parts += [f"{k}={v}" for k, v in values.items() if k not in names]
    for p in parts:
        if " " in p or "\n" in p:
            raise ValueError(f"{command} reply field {p!r} holds a space or newline")
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
        items = inner.split(",") if inner else []
        numbers = [integer(i) for i in items]
        if any(n is None for n in numbers):
            raise BadReply(f"{where}: items must be integers separated by commas, as in [0,1,2]")
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
    raw: dict[str, str] = {}
    tokens = payload.split(" ") if payload else []
    open_list = False  # the previous token began a [...] list it did not close
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not key:
            if open_list:
                raise BadReply(
                    f"{command} reply {payload!r}: a list separates its items with spaces; "
                    "this codec reads commas, as in [0,1,2]"
                )
            raise BadReply(f"{command} reply {payload!r}: token {_shown(token)} is not key=value")
        open_list = value.startswith("[") and not value.endswith("]")
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
