"""The Cursus frame annotator: a payload's fields with names and byte spans.

A batch (0xBA7C) is annotated field by field from the tolerant :func:`walk`, so a
malformed batch is annotated as far as its bytes go: each length-prefixed string is a
``.len`` field (counting the bytes after it) and the string itself, each message's fields
are named ``message[i].<field>``, and ``message_count`` lists the messages it counts.  A
text command is annotated token by token, named after the command's declared arguments
(a text reply, or a request that is no command, as ``word0``, ``word1``...);
every token but the command word can be dropped (with the space before it).  A JSON
object received as a reply (the ack) is annotated key by key, each field spanning its
value, so a report can point at ``last_offset``.  Anything else (a gzip body, other JSON)
is one field.
"""

from __future__ import annotations

import json

from conformance.plugin import FieldSpan
from conformance.protocols.cursus.messages import COMMANDS, GZIP_MAGIC
from conformance.protocols.cursus.walk import LENGTH_SIZES, Span, walk

SHOWN = 64
"""Characters of a string field's value kept in its annotation."""

_SIGNED = ("i32", "i64", "bytes32")


def annotate(payload: bytes, direction: str = "request") -> list[FieldSpan]:
    """The fields of a Cursus frame payload sent as a ``request`` or received as a ``reply``."""
    found = walk(payload)
    if found is not None:
        messages = tuple(found.messages())
        out: list[FieldSpan] = []
        for s in found.spans:
            out += _batch_field(payload, s, messages)
        return out
    if payload[:2] == GZIP_MAGIC:
        return [FieldSpan("gzip body", 0, len(payload), f"{len(payload)} bytes")]
    if payload[:1] in (b"{", b"[") or not payload:
        keyed = _json_members(payload) if direction == "reply" else None
        if keyed:
            return keyed
        return [FieldSpan("reply", 0, len(payload), _text(payload))] if payload else []
    return _tokens(payload, commands=direction == "request")


def _json_members(payload: bytes) -> list[FieldSpan] | None:
    """One field per member of a flat JSON object (``"last_offset":3`` spans the ``3``),
    or None when the payload is not one (or not ASCII, where characters are not bytes)."""
    if not payload.isascii():
        return None
    text, decoder, out = payload.decode("ascii"), json.JSONDecoder(), []
    pos = _skip(text, 1)
    try:
        while pos < len(text) and text[pos] != "}":
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
            if text[pos : pos + 1] != ":" or not isinstance(key, str):
                return None
            start = _skip(text, pos + 1)
            value, pos = decoder.raw_decode(text, start)
            number = isinstance(value, int) and not isinstance(value, bool)
            raw = value if isinstance(value, str) else text[start:pos]  # a number, list, null...
            out.append(FieldSpan(key, start, pos, value if number else _text(raw.encode())))
            pos = _skip(text, pos)
            if text[pos : pos + 1] == ",":
                pos = _skip(text, pos + 1)
    except (ValueError, IndexError):
        return None
    return out if text[pos : pos + 1] == "}" else None


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _name(s: Span) -> str:
    return s.name if s.message < 0 else f"message[{s.message}].{s.name}"


def _text(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _batch_field(payload: bytes, s: Span, messages: tuple[tuple[int, int], ...]) -> list[FieldSpan]:
    signed = s.kind in _SIGNED
    if s.kind not in LENGTH_SIZES:
        items = messages if s.name == "message_count" and s.message < 0 else ()
        return [FieldSpan(_name(s), s.start, s.end, s.value, items=items, signed=signed)]
    head = s.start + LENGTH_SIZES[s.kind]
    counts = (head, s.end) if s.value >= 0 else None
    out = [FieldSpan(_name(s) + ".len", s.start, head, s.value, counts=counts, signed=signed)]
    if s.end > head:
        out.append(FieldSpan(_name(s), head, s.end, _text(payload[head : s.end])))
    return out


def _tokens(payload: bytes, commands: bool) -> list[FieldSpan]:
    tokens = payload.split(b" ")
    spec = COMMANDS.get(tokens[0].decode("utf-8", "replace")) if commands else None
    names = [a.name for a in spec.args] if spec else []
    first = "command" if spec else "word0"  # not a command: a text reply, or garbage
    out = [FieldSpan(first, 0, len(tokens[0]), _text(tokens[0]))]
    pos = len(tokens[0])
    for i, token in enumerate(tokens[1:]):
        name = names[i] if i < len(names) else f"word{i + 1}"
        out.append(FieldSpan(name, pos, pos + 1 + len(token), _text(token), droppable=True))
        pos += 1 + len(token)
    return out
