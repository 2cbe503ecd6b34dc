"""Cursus messages <-> engine records.

The engine stores protocol-neutral records (key, value, headers).  A Cursus message
carries more than that; its extra fields travel as ``cursus.*`` headers so that a
message produced over Cursus is consumed over Cursus unchanged, and one produced over
another protocol reads back with the Cursus defaults (empty strings, zeros), its
producer id, epoch and sequence the engine record's when it has them (an idempotent Kafka
producer's), its key as text (none: empty), its value None as empty, and its headers of
other protocols not shown (Cursus has none).  A Cursus message's empty key is stored as
no key (None: a Kafka consumer reads a null key), since Cursus cannot tell them apart
(docs/cross-protocol.md).
"""

from __future__ import annotations

from conformance.engine import NewRecord, Record
from conformance.protocols.cursus.messages import Batch, Message

_PREFIX = "cursus."
_INT_FIELDS = ("seq_num", "epoch", "schema_version", "aggregate_version")
_STR_FIELDS = ("producer_id", "event_type", "metadata")


TEXT = "surrogateescape"
"""Strings of a message are stored as the bytes that came (revision real's strings may be any
bytes: Go's ``string(bytes)`` checks nothing; the codec keeps them with this error handler)."""


def to_record(m: Message) -> NewRecord:
    headers = [(_PREFIX + name, str(getattr(m, name)).encode()) for name in _INT_FIELDS]
    headers += [(_PREFIX + name, getattr(m, name).encode("utf-8", TEXT)) for name in _STR_FIELDS]
    key = m.key.encode("utf-8", TEXT) if m.key else None
    return NewRecord(key=key, value=m.payload, headers=tuple(headers))


def to_message(r: Record, errors: str = "replace") -> Message:
    """The message of ``r``; text that is not UTF-8 is read with ``errors`` (revision doc:
    ``replace``, as its strings must be UTF-8; revision real: ``surrogateescape``, byte for
    byte)."""
    h = {k[len(_PREFIX) :]: v for k, v in r.headers if k.startswith(_PREFIX)}

    def num(name: str, default: int = 0) -> int:
        raw = h.get(name)
        try:
            return int(raw) if raw is not None else default
        except ValueError:
            return default

    def text(name: str, default: str = "") -> str:
        raw = h.get(name)
        return raw.decode("utf-8", errors) if raw is not None else default

    return Message(
        offset=r.offset,
        seq_num=num("seq_num", max(r.sequence, 0)),
        producer_id=text("producer_id", r.producer_id),
        key=(r.key or b"").decode("utf-8", errors),  # a Kafka null is empty here
        epoch=num("epoch", r.producer_epoch),
        payload=r.value or b"",
        event_type=text("event_type"),
        schema_version=num("schema_version"),
        aggregate_version=num("aggregate_version"),
        metadata=text("metadata"),
    )


def consume_batch(
    topic: str, partition: int, offset: int, records: list[Record], errors: str = "replace"
) -> Batch:
    """The batch a CONSUME or STREAM reply carries (convention, revision doc)."""
    messages = tuple(to_message(r, errors) for r in records)
    first = messages[0].offset if messages else offset
    last = messages[-1].offset if messages else offset
    return Batch(
        topic=topic,
        partition=str(partition),
        acks="",
        idempotent=False,
        seq_start=first,
        seq_end=last,
        messages=messages,
    )
