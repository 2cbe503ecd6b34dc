"""Kafka for the cross-protocol check (:class:`conformance.plugin.Messaging`), sans-IO.

create: CreateTopics v1, one partition, replication factor 1 (the shared name is the
base name: the driver's ``xp.<producer>.<consumer>.<hex>`` is a legal Kafka name).
produce: one Produce v3 (acks=1) with every value in one uncompressed magic-2 batch, no
key, no header, the create time now; the offsets are ``base_offset`` onwards.  consume:
Fetch v4 of partition 0 from the offset, again from the next offset until ``count``
records are read or a Fetch returns none (a batch may begin before the offset asked:
those records are skipped, as a consumer does).  Every reply with an error code other
than 0 raises :class:`MessagingRefused` naming the request and the error.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import Messaging, MessagingRefused
from conformance.protocols.kafka import codec
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.errors import CODES

PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19
PRODUCE_V, FETCH_V, CREATE_V = 3, 4, 1
CLIENT_ID = "conformance-cross"
MAX_BYTES = 1 << 20
NAMES = {c: n for n, c in CODES.items()}

Step = Generator[bytes, bytes, Any]


def _call(key: int, version: int, body: Mapping[str, Any], corr: int) -> Step:
    payload = codec.encode_request(key, version, body, correlation_id=corr, client_id=CLIENT_ID)
    reply = yield codec.frame(payload)
    try:
        got, decoded = codec.decode_response(reply, key, version)
    except ProtocolError as exc:
        raise MessagingRefused(f"the reply does not decode: {exc}") from None
    if got != corr:
        raise MessagingRefused(f"the reply has correlation id {got}, not {corr}")
    return decoded


def _refuse_on(what: str, error_code: int, message: object = None) -> None:
    if error_code:
        name = NAMES.get(error_code, "unknown error")
        text = f": {message}" if message else ""
        raise MessagingRefused(f"{what} was answered error {error_code} ({name}){text}")


def create(base: str) -> Generator[bytes, bytes, str]:
    topic = {"name": base, "num_partitions": 1, "replication_factor": 1}
    topics = [{**topic, "assignments": [], "configs": []}]
    body = {"topics": topics, "timeout_ms": 5000, "validate_only": False}
    reply = yield from _call(CREATE_TOPICS, CREATE_V, body, 1)
    t = reply["topics"][0]
    _refuse_on(f"CreateTopics v{CREATE_V} of {base!r}", t["error_code"], t.get("error_message"))
    return base


def produce(topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
    batch = rec.encode_batch(rec.make_batch(list(values), base_timestamp=time.time_ns() // 10**6))
    part = {"index": 0, "records": batch}
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [part]}],
    }
    reply = yield from _call(PRODUCE, PRODUCE_V, body, 2)
    got = reply["responses"][0]["partition_responses"][0]
    _refuse_on(f"Produce v{PRODUCE_V} to {topic}/0", got["error_code"])
    base = int(got["base_offset"])
    return [base + i for i in range(len(values))]


def consume(
    topic: str, offset: int, count: int
) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
    parts = [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": MAX_BYTES}]
    body = {
        "replica_id": -1,
        "max_wait_ms": 100,
        "min_bytes": 1,
        "max_bytes": MAX_BYTES,
        "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": parts}],
    }
    reply = yield from _call(FETCH, FETCH_V, body, 3)
    got = reply["responses"][0]["partitions"][0]
    _refuse_on(f"Fetch v{FETCH_V} of {topic}/0 at offset {offset}", got["error_code"])
    try:
        batches = rec.decode_batches(got["records"] or b"")
    except ProtocolError as exc:
        raise MessagingRefused(f"the records of Fetch v{FETCH_V} do not decode: {exc}") from None
    return [(b.base_offset + r.offset_delta, r.value or b"") for b in batches for r in b.records]


def messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    return Messaging(produce=produce, consume=consume, create=create)
