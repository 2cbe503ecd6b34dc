"""Spec quirks of Fetch answers against what Kafka's log gives (see :mod:`.quirks` for
what a quirk may do).  ``fetch-rebatches`` acts out a broker that keeps records, not the
producer's batches (this broker before it kept them): every fetched magic-2 batch is
written again uncompressed, one record per batch, and the answer is cut at the first such
batch that passes the fetch's byte limits (the first always).
``uncommitted-aborted-listed`` answers a READ_UNCOMMITTED fetch an empty list of aborted
transactions where Kafka sends null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.errors import ProtocolError
from conformance.plugin import QuirkSpec
from conformance.protocols.kafka import records as rec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

FETCH = 1

QUIRKS: dict[str, QuirkSpec] = {
    "uncommitted-aborted-listed": QuirkSpec(
        "uncommitted-aborted-listed",
        "spec",
        "fetch",
        ("KAF-FETCH-10",),
        "answers aborted_transactions with an empty list, never null, in a Fetch (v4+) "
        "read READ_UNCOMMITTED",
    ),
    "fetch-rebatches": QuirkSpec(
        "fetch-rebatches",
        "spec",
        "fetch",
        ("KAF-FETCH-6", "KAF-FETCH-9"),
        "writes every fetched batch again, uncompressed and one record per batch, and cuts "
        "the answer where the fetch's max_bytes or partition_max_bytes falls (the first "
        "record always), as a broker that stores records and not the producer's batches",
    ),
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    if request.api_key != FETCH:
        return response
    if "uncommitted-aborted-listed" in quirks and int(request.body.get("isolation_level", 0)) == 0:
        for t in response.get("responses", []):
            for p in t.get("partitions", []):
                if p.get("aborted_transactions") is None:
                    p["aborted_transactions"] = []
    if "fetch-rebatches" not in quirks:
        return response
    body = request.body
    budget = int(body.get("max_bytes", 0x7FFFFFFF)) if request.api_version >= 3 else 1 << 31
    asked = {
        int(p.get("partition", 0)): int(p.get("partition_max_bytes", 0x7FFFFFFF))
        for t in body.get("topics", [])
        for p in t.get("partitions", [])
    }
    first = True
    for t in response.get("responses", []):
        for p in t.get("partitions", []):
            data = p.get("records") or b""
            if not data:
                continue
            limit = min(asked.get(int(p.get("partition_index", 0)), 1 << 31), budget)
            p["records"] = _cut(_singles(data), limit, first)
            budget -= len(p["records"])
            first = first and not p["records"]
    return response


def _singles(data: bytes) -> list[bytes]:
    """``data``'s entries, a magic-2 batch that is not a control batch split into
    uncompressed batches of one record each."""
    try:
        spans, _ = rec.batch_spans(data)
    except ProtocolError:
        return [data]
    out: list[bytes] = []
    for start, end in spans:
        raw = data[start:end]
        try:
            (batch,) = rec.decode_batches(raw)
        except (ProtocolError, ValueError):
            out.append(raw)
            continue
        if batch.magic != 2 or batch.is_control:
            out.append(raw)
            continue
        for r in batch.records:
            ts = batch.base_timestamp + r.timestamp_delta
            sequence = batch.base_sequence + r.offset_delta if batch.base_sequence >= 0 else -1
            single = rec.make_batch(
                [r.value],
                keys=[r.key],
                headers=[r.headers],
                timestamps=[ts],
                base_offset=batch.base_offset + r.offset_delta,
                partition_leader_epoch=batch.partition_leader_epoch,
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=sequence,
                transactional=batch.is_transactional,
            )
            out.append(rec.encode_batch(single))
    return out


def _cut(entries: list[bytes], limit: int, first: bool) -> bytes:
    kept: list[bytes] = []
    size = 0
    for entry in entries:
        if size + len(entry) > limit and not (first and not kept):
            break
        kept.append(entry)
        size += len(entry)
    return b"".join(kept)
