"""Kafka Fetch returns the batches as produced (SPEC.md, area "fetch", KAF-FETCH-9)."""

from __future__ import annotations

from conformance.evidence import Evidence, Judged
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import batch, create_topic, fetch, produce
from conformance.suite.kafka.transaction_steps import init_producer_id
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.target import CaseContext

REQ = "KAF-FETCH-9"
_RECORDS = "topic_data[0].partition_data[0].records"
_HEADER_FIELDS = (  # (name, first byte, end) of the batch header from the magic byte on
    ("magic", 16, 17),
    ("crc", 17, 21),
    ("attributes", 21, 23),
    ("last_offset_delta", 23, 27),
    ("base_timestamp", 27, 35),
    ("max_timestamp", 35, 43),
    ("producer_id", 43, 51),
    ("producer_epoch", 51, 53),
    ("base_sequence", 53, 57),
    ("record count", 57, 61),
)


@case("kafka/fetch/10", REQ)
def test_a_compressed_batch_comes_back_as_produced(target: CaseContext) -> None:
    """A gzip batch of three records of an idempotent producer (its id and epoch from
    InitProducerId) is fetched back with the bytes it was produced with (but its offset).

    KAF-FETCH-9: "a Fetch returns a produced magic-2 batch as the producer wrote it: the same
    length and, from the magic byte on, the same bytes ..."
    """
    v = usable(target, "Fetch", lowest=4)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "as-produced")
        # an idempotent producer's id and epoch, as a producer gets them
        idem = init_producer_id(target, k, None, REQ)
        expect_code(idem, "error_code", "NONE", REQ, "InitProducerId without a transactional id")
        pid, epoch = int(idem["producer_id"]), int(idem["producer_epoch"])
        sent = batch(
            [b"first", b"second", b"third"],
            keys=[b"a", None, b"c"],
            timestamps=[1_700_000_000_000, 1_700_000_000_002, 1_700_000_000_001],
            compression="gzip",
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
        )
        base = int(produce(target, k, topic, sent, requirement=REQ)["base_offset"])
        produced = Evidence((Judged(k.requests[k.corr], (_RECORDS,)),))  # the Produce's batch
        got = fetch(target, k, topic, 0, base, version=v, requirement=REQ)
    data = got.data
    require(
        len(data) >= len(sent),
        REQ,
        f"Fetch v{v} returned {len(data)} bytes of records for a {len(sent)}-byte batch",
        got.records_at(),
    )
    back = data[: len(sent)]
    fields = (("batch_length", 8, 12), *_HEADER_FIELDS)
    wrong = [(name, a, b) for name, a, b in fields if back[a:b] != sent[a:b]]
    offset = int.from_bytes(back[0:8], "big", signed=True)
    differ = [
        f"{name} {_int(name, back[a:b])} (produced {_int(name, sent[a:b])})" for name, a, b in wrong
    ]
    if not wrong and back[61:] != sent[61:]:
        differ.append(f"the records' bytes after the header (produced {len(sent) - 61})")
    if offset != base:
        differ.append(f"base offset {offset} (the Produce answered {base})")
    require(
        not differ,
        REQ,
        f"the first fetched batch differs from the one produced ({len(sent)} bytes: gzip, 3 "
        f"records, producer {pid} epoch {epoch} sequence 0): " + "; ".join(differ),
        (got.records_at(*(f"batch[0].{n}" for n, _, _ in wrong)) if wrong else got.records_at())
        + produced,
    )


def _int(name: str, raw: bytes) -> int:
    """A header field's value (the CRC unsigned, the others signed, as Kafka reads them)."""
    return int.from_bytes(raw, "big", signed=name != "crc")
