"""The Iggy frame annotator: a payload's fields with names and byte spans (sans-IO).

A payload, as the deframers hand it out, is ``u32 code + command payload`` (request) or
``u32 status + reply payload`` (reply).  Naming rule: the first four bytes are ``code``
or ``status``; every other field is named by its path in the decoded body
(:mod:`.codec`), dotted and indexed (``stream.value``, ``strategy.kind``,
``messages[2].id``), with the schema's names for what the body has no key for: a length
prefix is ``<field> length`` (``name length``, ``messages[0].payload length``), a size
prefix ``<field> size`` (``partitioning.value size``), a count ``<array> count``
(``messages count``, whose ``items`` are the messages' spans), SEND_MESSAGES' index table
``index[i].position``... and a user-header block's entries
``messages[i].headers.entries[j].key``.  All of it comes from the declarations
(:meth:`conformance.wire.schema.Message.annotate`).

The annotator cannot know the revision: a request is read as ``classic`` and, when
classic does not decode the whole payload, as ``doc``; when neither does, the classic
layout is followed as far as it goes (the schema's tolerant walk,
:meth:`conformance.wire.schema.Message.annotate`).  A reply is read as the reply of the
command of the request before it (``earlier[-1]``), the same way; one with a non-zero
status has no payload fields (a payload an error reply should not carry is one span,
``payload``).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import Annotation, FieldSpan
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.messages import NAMES, VERSION
from conformance.wire.schema_types import shown

U32 = struct.Struct("<I")
SHOWN = 40
"""Characters of a text value kept in a summary."""


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes] = ()) -> Annotation:
    """The fields of an Iggy frame payload going in ``direction`` (``request``/``reply``)
    given the request payloads sent before it (newest last)."""
    first = "status" if direction == "reply" else "code"
    if len(payload) < 4:
        fields = [FieldSpan(first, 0, len(payload), payload)] if payload else []
        return Annotation(f"{direction} of {len(payload)} bytes: no u32 {first}", fields)
    (head,) = U32.unpack_from(payload)
    fields = [FieldSpan(first, 0, 4, head, order="little")]
    if direction == "reply":
        return _reply(payload, head, fields, earlier)
    return _request(payload, head, fields)


def _request(payload: bytes, code: int, fields: list[FieldSpan]) -> Annotation:
    name = NAMES.get(code)
    if name is None or all(name not in codec.tables(r)[0] for r in codec.REVISIONS):
        if len(payload) > 4:
            fields.append(FieldSpan("payload", 4, len(payload), shown(payload[4:])))
        return Annotation(f"unknown command {code}", fields)
    body, spans, fault = _read(name, payload, "request")
    summary = name.upper()
    if body is not None:
        shown_body = _brief(body)
        summary += f" {shown_body}" if shown_body else ""
    else:
        summary += f" (malformed: {fault})"
    return Annotation(summary, fields + spans)


def _reply(
    payload: bytes, status: int, fields: list[FieldSpan], earlier: Sequence[bytes]
) -> Annotation:
    status_name = STATUS_NAMES.get(status, "?")
    if status != 0:
        if len(payload) > 4:
            fields.append(FieldSpan("payload", 4, len(payload), shown(payload[4:])))
        return Annotation(f"status {status} {status_name}", fields)
    name = _answered(earlier)
    if name is None:
        if len(payload) > 4:
            fields.append(FieldSpan("payload", 4, len(payload), shown(payload[4:])))
        return Annotation(f"status 0 ({status_name}), {len(payload) - 4} bytes", fields)
    body, spans, fault = _read(name, payload, "reply")
    if fault is not None:
        what = f"(malformed: {fault})"
    elif body is None:
        what = "empty (not found)"
    else:
        what = _reply_brief(name, body)
    return Annotation(f"status 0 ({status_name}) {name.upper()} reply: {what}", fields + spans)


def _answered(earlier: Sequence[bytes]) -> str | None:
    """The command of the request a reply answers (the newest earlier one)."""
    if not earlier or len(earlier[-1]) < 4:
        return None
    name = NAMES.get(U32.unpack_from(earlier[-1])[0])
    if name is None or all(name not in codec.tables(r)[1] for r in codec.REVISIONS):
        return None
    return name


def _read(
    name: str, payload: bytes, direction: str
) -> tuple[dict[str, Any] | None, list[FieldSpan], str | None]:
    """``(body, spans, fault)``: the first revision that decodes the whole payload, else
    classic's layout walked tolerantly, with the fault classic found."""
    fault = None
    for revision in codec.REVISIONS:
        try:
            body = _decode(name, payload[4:], direction, revision)
        except ProtocolError as exc:
            fault = fault or str(exc)
            continue
        if body is None:
            return None, [], None
        return body, _spans(name, payload, direction, revision, tolerant=False), None
    revision = next(r for r in codec.REVISIONS if name in _table(direction, r))
    return None, _spans(name, payload, direction, revision, tolerant=True), fault


def _table(direction: str, revision: str) -> Mapping[str, Any]:
    return codec.tables(revision)[0 if direction == "request" else 1]


def _decode(name: str, data: bytes, direction: str, revision: str) -> dict[str, Any] | None:
    if direction == "request":
        return codec.decode_request_payload(name, data, revision)
    return codec.decode_reply(name, data, revision)


def _spans(
    name: str, payload: bytes, direction: str, revision: str, *, tolerant: bool
) -> list[FieldSpan]:
    declaration = _table(direction, revision)[name]
    if direction == "reply" and len(payload) == 4:
        return []
    spans: list[FieldSpan] = []
    with contextlib.suppress(ProtocolError):
        declaration.decode_at(payload, VERSION, 4, spans, tolerant=tolerant)
    return sorted(spans, key=lambda s: (s.start, s.end > s.start, -s.end))


# ------------------------------------------------------------------ summaries


IDENTIFIERS = frozenset({"stream", "topic", "group"})
"""Top-level keys whose value is an Identifier, shown as its number or name alone."""


def _brief(body: Mapping[str, Any]) -> str:
    """``stream=1 topic="orders" partitions_count=3``: a body's top-level values (an
    Identifier as its value, another union as ``kind:value``)."""
    parts = []
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            parts.append(f"messages={len(value)}")
        elif key in IDENTIFIERS and isinstance(value, Mapping):
            parts.append(f"{key}={_value(value.get('value'))}")
        elif key == "password" or (key == "partition_flag"):
            continue
        elif key == "partition_id" and body.get("partition_flag", 1) != 1:
            parts.append("partition_id=none")
        else:
            parts.append(f"{key}={_value(value)}")
    return " ".join(parts)


def _value(value: Any) -> str:
    if isinstance(value, Mapping) and set(value) == {"kind", "value"}:
        inner = value["value"]
        if isinstance(inner, Mapping) and set(inner) == {"kind", "value"}:  # an Identifier
            inner = inner["value"]
        return f"{value['kind']}:{_value(inner)}"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        text = value if len(value) <= SHOWN else value[:SHOWN] + "..."
        return f'"{text}"'
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, list):
        return f"[{len(value)}]"
    return str(value)


REPLY_BRIEFS: dict[str, tuple[str, str, str]] = {
    "create_stream": ("stream", "topics_count", "topics"),
    "get_stream": ("stream", "topics_count", "topics"),
    "create_topic": ("topic", "partitions_count", "partitions"),
    "get_topic": ("topic", "partitions_count", "partitions"),
    "create_consumer_group": ("group", "members_count", "members"),
    "get_consumer_group": ("group", "members_count", "members"),
}
"""Replies shown as ``stream 0 "s" 2 topics``: the thing, its count field, the counted."""


def _reply_brief(name: str, body: Mapping[str, Any]) -> str:
    if name in REPLY_BRIEFS:
        thing, count, counted = REPLY_BRIEFS[name]
        return (
            f"{thing} {body.get('id')} {_value(body.get('name', ''))} {body.get(count)} {counted}"
        )
    if not body:
        return "empty"
    lists = [k for k, v in body.items() if isinstance(v, list)]
    if len(body) == 1 and lists:
        return f"{len(body[lists[0]])} {lists[0]}"
    return _brief(body)
