"""The Cursus frame annotator: a payload's fields with names and byte spans.

A batch (0xBA7C) is annotated by the shared schema machinery from its one declaration,
``BATCH``, in its tolerant mode (:meth:`conformance.wire.schema.Message.annotate`), so a
malformed batch is annotated as far as its bytes go: a length or count as soon as its
prefix is read, and a length that is negative or points past the data spanning the rest
of it.  The fields keep this annotator's names: a string's or bytes' length is
``<field>.len`` (counting the bytes after it), each message's fields are
``message[i].<field>``, and ``message_count`` lists the messages it counts (a message cut
short included); a string or bytes value is shown as text.  :func:`has_negative_payload_len`
(the trigger of a fault quirk) reads the same annotation.  A text command is annotated
token by token, named after the command's declared arguments (a text reply, or a request
that is no command, as ``word0``, ``word1``...); every token but the command word can be
dropped (with the space before it).  A JSON object received as a reply (the ack) is
annotated key by key, each field spanning its value, so a report can point at
``last_offset``.  Anything else (a gzip body, other JSON) is one field.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from conformance.plugin import FieldSpan
from conformance.protocols.cursus.messages import BATCH, COMMANDS, COUNT_NAMES, GZIP_MAGIC, MAGIC

SHOWN = 64
"""Characters of a string field's value kept in its annotation."""

_MAGIC = MAGIC.to_bytes(2, "big")
_PAYLOAD_LENGTH = re.compile(r"messages\[\d+\]\.payload length")
"""The schema's name of a message's payloadLen."""


def annotate(payload: bytes, direction: str = "request") -> list[FieldSpan]:
    """The fields of a Cursus frame payload sent as a ``request`` or received as a ``reply``."""
    spans = batch_spans(payload)
    if spans is not None:
        return [_named(s, payload) for s in spans]
    if payload[:2] == GZIP_MAGIC:
        return [FieldSpan("gzip body", 0, len(payload), f"{len(payload)} bytes")]
    if payload[:1] in (b"{", b"[") or not payload:
        keyed = _json_members(payload) if direction == "reply" else None
        if keyed:
            return keyed
        return [FieldSpan("reply", 0, len(payload), _text(payload))] if payload else []
    return _tokens(payload, commands=direction == "request")


def batch_spans(payload: bytes) -> list[FieldSpan] | None:
    """The tolerant annotation of ``payload`` as a ``BATCH``, named the schema's way
    (``messages[0].payload length``), or None when it does not start with the magic."""
    if payload[:2] != _MAGIC:
        return None
    return BATCH.annotate(payload, 0, tolerant=True)


def has_negative_payload_len(data: bytes) -> bool:
    """True when ``data`` is a batch in which some message's payloadLen is negative."""
    return any(
        isinstance(s.value, int) and s.value < 0 and _PAYLOAD_LENGTH.fullmatch(s.name)
        for s in batch_spans(data) or ()
    )


def _named(s: FieldSpan, payload: bytes) -> FieldSpan:
    """A span of the schema's annotation under this annotator's name (and text value)."""
    name = s.name
    for array, count in COUNT_NAMES.items():  # messages[i].key -> message[i].key
        if name == f"{array} count":
            name = count
        elif name.startswith(f"{array}["):
            name = count.removesuffix("_count") + name[len(array) :]
    if name.endswith(" length"):
        name = name.removesuffix(" length") + ".len"
    if isinstance(s.value, str | bytes):
        return replace(s, name=name, value=_text(payload[s.start : s.end]))
    return replace(s, name=name)


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


def _text(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


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
