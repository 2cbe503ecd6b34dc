"""The mini-Kafka frame annotator: a payload's fields with names and byte spans (sans-IO).

Naming rule: the first byte is ``type``; a reply's second byte is ``success``; every
other field is named by its key in :mod:`.messages` (``topic``, ``data``, ``offset``,
``batch_size``, ``next_offset``, ``messages[2].offset``, ``error``), a length prefix as
``<field> length`` and the message count as ``messages count``.  Everything comes from
the declarations (:meth:`conformance.wire.schema.Message.annotate`); a payload that does
not decode is followed by the schema's tolerant walk as far as its layout goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from conformance.plugin import Annotation, FieldSpan
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.wire.schema_types import shown

_PREFIXES = ("request.value.", "reply.value.value.")
_RENAMED = {"request.kind": "type", "reply.kind": "type", "reply.value.kind": "success"}


def _name(path: str) -> str:
    if path in _RENAMED:
        return _RENAMED[path]
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes] = ()) -> Annotation:
    """The fields of a mini-Kafka payload going in ``direction`` (``request``/``reply``);
    a reply needs no earlier request: its type byte says what it answers."""
    if not payload:
        return Annotation(f"{direction} with no type byte (a frame of length 4)")
    declaration = m.REQUEST if direction == "request" else m.REPLY
    known = m.REPLY_TYPE if direction == "request" else set(m.REPLY_TYPE.values())
    kind = payload[0]
    if kind not in known:
        fields = [FieldSpan("type", 0, 1, kind)]
        if len(payload) > 1:
            fields.append(FieldSpan("body", 1, len(payload), shown(payload[1:])))
        return Annotation(f"unknown {direction} type 0x{kind:02x}", fields)
    try:
        if direction == "request":
            decoded: codec.Request | codec.Reply = codec.decode_request(
                payload, strict=False, lenient_utf8=True
            )
        else:
            decoded = codec.decode_reply(payload)
    except codec.MiniKafkaError as exc:
        spans = declaration.annotate(payload, m.VERSION, tolerant=True)
        summary = f"malformed: {exc.message}"
    else:
        spans = declaration.annotate(payload, m.VERSION)
        summary = codec.describe(_raw_topic(decoded, payload))
    fields = [_shown(replace(s, name=_name(s.name))) for s in spans]
    end = max((s.end for s in fields), default=1)
    if end < len(payload) and not summary.startswith("malformed"):
        fields.append(FieldSpan("trailing bytes", end, len(payload), shown(payload[end:])))
        summary += f" + {len(payload) - end} trailing bytes"
    return Annotation(summary, fields)


def _raw_topic(decoded: codec.Request | codec.Reply, payload: bytes) -> codec.Request | codec.Reply:
    """A request whose topic is not UTF-8 with its topic as the bytes the wire carries (the
    summary shows them escaped, not as U+FFFD)."""
    if isinstance(decoded, codec.Consume | codec.Produce):
        raw = payload[5 : 5 + int.from_bytes(payload[1:5], "big")]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return replace(decoded, topic=raw)
    return decoded


def _shown(span: FieldSpan) -> FieldSpan:
    """A topic's bytes shown as text when they are UTF-8."""
    if span.name == "topic" and isinstance(span.value, bytes):
        try:
            return replace(span, value=span.value.decode("utf-8"))
        except UnicodeDecodeError:
            return span
    return span
