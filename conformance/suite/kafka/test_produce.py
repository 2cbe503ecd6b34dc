"""Kafka Produce and idempotence (SPEC.md, area "produce")."""

from __future__ import annotations

import time
from typing import Any

from conformance.evidence import combined
from conformance.protocols.kafka import records
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import (
    batch,
    create_topic,
    fetch,
    produce,
    produce_body,
    produce_parts,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    missing,
    need,
    usable,
)
from conformance.suite.shown import joined, show, show_all, show_fields
from conformance.suite.target import CaseContext


@case("kafka/produce/1", "KAF-PRODUCE-1")
@at_every_version("Produce", since=3)
def test_acknowledged_records_read_back_in_order_from_the_base_offset(
    target: CaseContext, version: int
) -> None:
    """An acknowledged Produce answers the first record's offset; the records are then
    readable from it, in order, with keys, values, headers and timestamps.

    KAF-PRODUCE-1: "an acknowledged Produce (acks 1 or -1) answers, per partition, error 0 and the
    offset of the first record; the records are then readable by Fetch at consecutive offsets from
    it, in order, with their keys, values, headers and timestamps."
    """
    need(target, "Produce", version)
    first = records.make_batch(
        [b"a", b"b"],
        keys=[b"k", None],
        headers=[[("h", b"1")], []],
        timestamps=[1_700_000_000_000, 1_700_000_000_005],
    )
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "p1")
        p0 = produce(target, k, topic, records.encode_batch(first), version=version)
        p1 = produce(target, k, topic, batch([b"c"]), version=version)
        wrong = [p for p, want in ((p0, 0), (p1, 2)) if p["base_offset"] != want]
        require(
            not wrong,
            "KAF-PRODUCE-1",
            f"base offsets {p0['base_offset']} and {p1['base_offset']}, expected 0 and 2",
            combined(p.at("base_offset") for p in wrong),
        )
        got = fetch(target, k, topic, 0, 0, requirement="KAF-PRODUCE-1")
    found = got.located("KAF-PRODUCE-1")
    recs = [
        (
            x.offset,
            x.record.key,
            x.record.value,
            tuple(x.record.headers),
            x.batch.base_timestamp + x.record.timestamp_delta,
        )
        for x in found
    ]
    want = [
        (0, b"k", b"a", (("h", b"1"),), 1_700_000_000_000),
        (1, None, b"b", (), 1_700_000_000_005),
    ]
    fields = ("offset_delta", "key", "value", "headers", "timestamp_delta")
    if len(recs) < 2:
        judged = [f"{x.name}.{f}" for x in found for f in fields]
    else:
        judged = [
            f"{x.name}.{f}"
            for x, back, expected in zip(found, recs, want, strict=False)
            for f, a, b in zip(fields, back, expected, strict=True)
            if a != b
        ]
    require(
        recs[:2] == want and [r[0] for r in recs] == [0, 1, 2],
        "KAF-PRODUCE-1",
        f"read back: {_records(recs)}; expected {_records(want)}; then offset 2",
        got.records_at(*dict.fromkeys(judged)) if judged else got.records_at(),
    )


@case("kafka/produce/2", "KAF-PRODUCE-2")
def test_acks_0_gets_no_response_and_is_appended(target: CaseContext) -> None:
    """A Produce with acks 0 gets no response; its records are appended.

    KAF-PRODUCE-2: "a Produce with acks 0 gets no response; its records are appended."
    """
    v = usable(target, "Produce", lowest=3)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "acks0")
        k.send("Produce", v, produce_body(topic, {0: batch([b"quiet"])}, acks=0))
        k.expect_silence("KAF-PRODUCE-2", f"Produce v{v} with acks 0", 0.3)
        # the next request on the same connection gets its own answer, not a late one
        k.call("ApiVersions", 0, {}, "KAF-PRODUCE-2", "ApiVersions after the acks=0 Produce")
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-PRODUCE-2")
        got = fetched.values("KAF-PRODUCE-2")
    require(
        [v for _, v in got] == [b"quiet"],
        "KAF-PRODUCE-2",
        f"values after the acks=0 Produce: {show_all(v for _, v in got)}, expected 'quiet'",
        fetched.values_at("KAF-PRODUCE-2"),
    )


@case("kafka/produce/3", "KAF-PRODUCE-3")
def test_unknown_topics_and_partitions_are_error_3(target: CaseContext) -> None:
    """A Produce to a missing topic or partition (a negative index too) is
    UNKNOWN_TOPIC_OR_PARTITION (3), and the broker keeps serving.

    KAF-PRODUCE-3: "a Produce to a topic or partition that does not exist (a negative partition
    index included) is answered UNKNOWN_TOPIC_OR_PARTITION (3) for that partition, and the broker
    keeps serving."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "p3")
        for name, index in ((topic, 99), (topic, -1), (target.name("never-created"), 0)):
            p = produce_parts(target, k, name, {index: batch([b"x"])}, requirement="KAF-PRODUCE-3")
            expect_code(
                p[index],
                "error_code",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "KAF-PRODUCE-3",
                f"Produce to {name}/{index}",
            )
        k.call("ApiVersions", 0, {}, "KAF-PRODUCE-3", "ApiVersions after the refusals")


def _init_producer(target: CaseContext, k: KafkaClient) -> tuple[int, int]:
    """A new producer id.  A fresh Kafka may answer COORDINATOR_LOAD_IN_PROGRESS until its
    first block of producer ids arrives from the controller (``ProducerIdManager``): asked
    again then, for 10 s at most."""
    v = usable(target, "InitProducerId")
    ask = {
        "transactional_id": None,
        "transaction_timeout_ms": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    deadline = time.monotonic() + max(10.0, target.timeout)
    while True:
        body = k.call("InitProducerId", v, ask, "KAF-PRODUCE-4", f"InitProducerId v{v}")
        loading = body["error_code"] == CODES["COORDINATOR_LOAD_IN_PROGRESS"]
        if not loading or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    expect_code(body, "error_code", "NONE", "KAF-PRODUCE-4", "InitProducerId")
    require(
        body["producer_id"] >= 0 and body["producer_epoch"] >= 0,
        "KAF-PRODUCE-4",
        f"InitProducerId gave id {body['producer_id']} epoch {body['producer_epoch']}, "
        "expected both >= 0",
        body.at("producer_id") + body.at("producer_epoch"),
    )
    return int(body["producer_id"]), int(body["producer_epoch"])


def _idem(values: list[bytes], pid: int, epoch: int, seq: int) -> bytes:
    return batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@case("kafka/produce/4", "KAF-PRODUCE-4")
def test_an_idempotent_resend_is_stored_once(target: CaseContext) -> None:
    """An idempotent batch sent twice is acknowledged with the original offset and stored once.

    KAF-PRODUCE-4: "an idempotent producer's batch (producer id >= 0) is stored once: a resend with
    the same producer id, epoch and sequences is acknowledged with the original offsets ..."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "idem")
        pid, epoch = _init_producer(target, k)
        first = produce(
            target, k, topic, _idem([b"a", b"b"], pid, epoch, 0), requirement="KAF-PRODUCE-4"
        )["base_offset"]
        again = produce_parts(
            target, k, topic, {0: _idem([b"a", b"b"], pid, epoch, 0)}, requirement="KAF-PRODUCE-4"
        )[0]
        expect_code(
            again,
            "error_code",
            ["NONE", "DUPLICATE_SEQUENCE_NUMBER"],
            "KAF-PRODUCE-4",
            "the resend",
        )
        if again["error_code"] == 0:
            require(
                again["base_offset"] == first,
                "KAF-PRODUCE-4",
                f"the resend was acknowledged at {again['base_offset']}, expected {first}",
                again.at("base_offset"),
            )
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-PRODUCE-4")
        got = fetched.values("KAF-PRODUCE-4")
    require(
        [v for _, v in got] == [b"a", b"b"],
        "KAF-PRODUCE-4",
        f"stored values {show_all(v for _, v in got)}, expected 'a', 'b' (each once)",
        fetched.values_at("KAF-PRODUCE-4"),
    )


@case("kafka/produce/5", "KAF-PRODUCE-4")
def test_a_sequence_gap_is_out_of_order(target: CaseContext) -> None:
    """A batch whose first sequence skips ahead is OUT_OF_ORDER_SEQUENCE_NUMBER (45).

    KAF-PRODUCE-4: "an idempotent producer's batch ... a sequence gap is
    OUT_OF_ORDER_SEQUENCE_NUMBER (45) ..."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "gap")
        pid, epoch = _init_producer(target, k)
        produce(target, k, topic, _idem([b"a"], pid, epoch, 0), requirement="KAF-PRODUCE-4")
        p = produce_parts(
            target, k, topic, {0: _idem([b"c"], pid, epoch, 5)}, requirement="KAF-PRODUCE-4"
        )[0]
        expect_code(
            p, "error_code", "OUT_OF_ORDER_SEQUENCE_NUMBER", "KAF-PRODUCE-4", "sequence 5 after 0"
        )


@case("kafka/produce/6", "KAF-PRODUCE-4")
def test_a_lower_epoch_is_fenced(target: CaseContext) -> None:
    """A batch from an older epoch of a producer id is INVALID_PRODUCER_EPOCH (47).

    KAF-PRODUCE-4: "an idempotent producer's batch ... a lower epoch INVALID_PRODUCER_EPOCH (47);
    a higher epoch the producer took on its own side starts again at sequence 0 and is accepted."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "epoch")
        pid, epoch = _init_producer(target, k)
        produce(target, k, topic, _idem([b"a"], pid, epoch, 0), requirement="KAF-PRODUCE-4")
        # the producer bumps its epoch on its own side and starts again at sequence 0
        # (KIP-360); asking InitProducerId would hand it a new id instead (Apache Kafka)
        newer = epoch + 1
        produce(target, k, topic, _idem([b"b"], pid, newer, 0), requirement="KAF-PRODUCE-4")
        p = produce_parts(
            target, k, topic, {0: _idem([b"c"], pid, epoch, 1)}, requirement="KAF-PRODUCE-4"
        )[0]
        expect_code(
            p,
            "error_code",
            ["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"],
            "KAF-PRODUCE-4",
            f"epoch {epoch} after epoch {newer}",
        )


@case("kafka/produce/7", "KAF-PRODUCE-5")
def test_each_partition_of_a_produce_is_answered_on_its_own(target: CaseContext) -> None:
    """A Produce to a good and a missing partition writes the good one and refuses the other.

    KAF-PRODUCE-5: "a Produce that writes to several partitions is answered per partition: a
    partition that cannot be written gets its own error and the others are written and
    acknowledged."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "multi")
        parts = produce_parts(
            target, k, topic, {0: batch([b"ok"]), 7: batch([b"no"])}, requirement="KAF-PRODUCE-5"
        )
        expect_code(parts[0], "error_code", "NONE", "KAF-PRODUCE-5", "partition 0")
        expect_code(
            parts[7], "error_code", "UNKNOWN_TOPIC_OR_PARTITION", "KAF-PRODUCE-5", "partition 7"
        )
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-PRODUCE-5")
        got = fetched.values("KAF-PRODUCE-5")
    require(
        [v for _, v in got] == [b"ok"],
        "KAF-PRODUCE-5",
        f"partition 0 holds values {show_all(v for _, v in got)}, expected 'ok'",
        fetched.values_at("KAF-PRODUCE-5"),
    )


@case("kafka/produce/8", "KAF-PRODUCE-6")
def test_acks_other_than_minus_1_0_1_are_refused(target: CaseContext) -> None:
    """acks 2 or -2 is INVALID_REQUIRED_ACKS (21), and nothing is stored.

    KAF-PRODUCE-6: "a Produce whose acks is not -1, 0 or 1 is refused with INVALID_REQUIRED_ACKS
    (21) and nothing is stored."
    """
    v = usable(target, "Produce", lowest=3)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "acks")
        for acks in (2, -2):
            reply = k.call(
                "Produce",
                v,
                produce_body(topic, {0: batch([b"x"])}, acks=acks),
                "KAF-PRODUCE-6",
                f"Produce v{v} with acks {acks}",
            )
            parts = [p for t in reply["responses"] for p in t["partition_responses"]]
            if not parts:
                missing(reply["responses"], "partition", "KAF-PRODUCE-6", f"acks {acks}")
            expect_code(
                parts[0], "error_code", "INVALID_REQUIRED_ACKS", "KAF-PRODUCE-6", f"acks {acks}"
            )
        got = fetch(target, k, topic, 0, 0, requirement="KAF-PRODUCE-6")
    require(
        not got.data,
        "KAF-PRODUCE-6",
        f"{len(got.data)} bytes of records stored ({_stored(got.values('KAF-PRODUCE-6'))}), "
        "expected none",
        got.values_at("KAF-PRODUCE-6"),
    )


@case("kafka/produce/9", "KAF-PRODUCE-7")
def test_a_batch_over_1_mib_is_message_too_large(target: CaseContext) -> None:
    """The reference broker refuses a batch of more than 1 MiB with MESSAGE_TOO_LARGE (10).

    KAF-PRODUCE-7: "the reference broker refuses a batch of more than 1 MiB with MESSAGE_TOO_LARGE
    (10) ..."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "large")
        big = batch([bytes(512 * 1024)] * 3)
        p = produce_parts(target, k, topic, {0: big}, requirement="KAF-PRODUCE-7")[0]
        expect_code(
            p, "error_code", "MESSAGE_TOO_LARGE", "KAF-PRODUCE-7", f"a batch of {len(big)} bytes"
        )


def _records(rows: list[tuple[Any, ...]]) -> str:
    """Records ``(offset, key, value, headers, timestamp)`` as the wire has them."""
    return joined(
        (
            " ".join(
                [
                    show_fields(offset=offset, key=key, value=value),
                    *(f"header {show(h)}={show(v)}" for h, v in headers),
                    f"timestamp {timestamp}",
                ]
            )
            for offset, key, value, headers, timestamp in rows
        ),
        sep="; ",
        empty="no records",
    )


def _stored(values: list[tuple[int, bytes | None]]) -> str:
    """``(offset, value)`` pairs as ``offset 0 value 'x', ...``."""
    return joined((show_fields(offset=o, value=v) for o, v in values), empty="no record in them")
