"""Kafka DeleteRecords and the log start offset (SPEC-cluster-admin.md, area
"delete-records")."""

from __future__ import annotations

from conformance.evidence import Node
from conformance.suite.case import case, require
from conformance.suite.kafka.cluster_admin_steps import (
    SET,
    alter,
    config_until,
    delete_records,
    list_offset,
    until,
)
from conformance.suite.kafka.steps import batch, create_topic, fetch, produce
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    need,
    usable,
)
from conformance.suite.target import CaseContext


def _topic_of_five(target: CaseContext, k: KafkaClient, base: str, requirement: str) -> str:
    """A topic whose partition 0 holds records v0..v4 at offsets 0..4, a batch each."""
    name = create_topic(target, k, base)
    for i in range(5):
        produce(target, k, name, batch([b"v%d" % i]), requirement=requirement)
    return name


def _low(p: Node, expected: int, requirement: str, what: str) -> None:
    expect_code(p, "error_code", "NONE", requirement, what)
    require(
        p["low_watermark"] == expected,
        requirement,
        f"{what}: low_watermark {p['low_watermark']}, expected {expected}",
        p.at("low_watermark"),
    )


@case("kafka/delete-records/1", "KAF-DELREC-1")
@at_every_version("DeleteRecords")
def test_delete_records_moves_the_log_start(target: CaseContext, version: int) -> None:
    """DeleteRecords answers the offset as low watermark; -1 means the high watermark.

    KAF-DELREC-1: "DeleteRecords with an offset from the log start to the high watermark answers
    error 0 and that offset as low_watermark; offset -1 means the high watermark."
    """
    need(target, "DeleteRecords", version)
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "trim", "KAF-DELREC-1")
        got = delete_records(target, k, name, {0: 2}, "KAF-DELREC-1", version)[0]
        _low(got, 2, "KAF-DELREC-1", "to 2")
        got = delete_records(target, k, name, {0: -1}, "KAF-DELREC-1", version)[0]
    _low(got, 5, "KAF-DELREC-1", "to -1 (the high watermark, 5)")


@case("kafka/delete-records/2", "KAF-DELREC-2")
def test_earliest_offset_and_fetch_report_the_log_start(target: CaseContext) -> None:
    """After DeleteRecords, ListOffsets earliest and Fetch's log_start_offset say the new start.

    KAF-DELREC-2: "after DeleteRecords, ListOffsets for the earliest offset (timestamp -2) answers
    the new log start offset, and Fetch (v5+) reports it as the partition's log_start_offset."
    """
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "earliest", "KAF-DELREC-2")
        _low(delete_records(target, k, name, {0: 3}, "KAF-DELREC-2")[0], 3, "KAF-DELREC-2", "to 3")
        earliest = list_offset(target, k, name, 0, -2, "KAF-DELREC-2")
        expect_code(earliest, "error_code", "NONE", "KAF-DELREC-2", "ListOffsets -2")
        require(
            earliest["offset"] == 3,
            "KAF-DELREC-2",
            f"ListOffsets earliest answers {earliest['offset']} after DeleteRecords to 3, "
            "expected 3",
            earliest.at("offset"),
        )
        v = usable(target, "Fetch", lowest=5)
        got = fetch(target, k, name, 0, 3, version=v, requirement="KAF-DELREC-2")
    expect_code(got.part, "error_code", "NONE", "KAF-DELREC-2", "Fetch at 3")
    start = got.part["log_start_offset"]
    require(
        start == 3,
        "KAF-DELREC-2",
        f"Fetch v{v} log_start_offset {start} after DeleteRecords to 3, expected 3",
        got.at("log_start_offset"),
    )


@case("kafka/delete-records/3", "KAF-DELREC-3")
def test_fetch_below_the_log_start_is_out_of_range(target: CaseContext) -> None:
    """A Fetch below the log start is OFFSET_OUT_OF_RANGE; at it, the records from it come.

    KAF-DELREC-3: "after DeleteRecords, a Fetch below the log start offset answers
    OFFSET_OUT_OF_RANGE (1) for the partition, and a Fetch at the log start offset returns the
    records from it."
    """
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "below", "KAF-DELREC-3")
        _low(delete_records(target, k, name, {0: 3}, "KAF-DELREC-3")[0], 3, "KAF-DELREC-3", "to 3")
        below = fetch(target, k, name, 0, 1, requirement="KAF-DELREC-3")
        expect_code(below.part, "error_code", "OFFSET_OUT_OF_RANGE", "KAF-DELREC-3", "Fetch at 1")
        at = fetch(target, k, name, 0, 3, requirement="KAF-DELREC-3")
    expect_code(at.part, "error_code", "NONE", "KAF-DELREC-3", "Fetch at 3")
    got = [(o, v) for o, v in at.values("KAF-DELREC-3") if o >= 3]
    require(
        got[:1] == [(3, b"v3")],
        "KAF-DELREC-3",
        f"Fetch at 3 returned {got[:2]}, expected offset 3 (b'v3') first",
        at.values_at("KAF-DELREC-3"),
    )


@case("kafka/delete-records/4", "KAF-DELREC-4")
def test_an_offset_out_of_the_log_is_refused(target: CaseContext) -> None:
    """An offset past the high watermark or below -1 is OFFSET_OUT_OF_RANGE; nothing moves.

    KAF-DELREC-4: "DeleteRecords with an offset past the high watermark, or below 0 other than -1,
    answers OFFSET_OUT_OF_RANGE (1) and the log start offset does not move."
    """
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "past", "KAF-DELREC-4")
        for offset in (6, -2):
            got = delete_records(target, k, name, {0: offset}, "KAF-DELREC-4")[0]
            expect_code(got, "error_code", "OFFSET_OUT_OF_RANGE", "KAF-DELREC-4", f"to {offset}")
        got = delete_records(target, k, name, {0: 0}, "KAF-DELREC-4")[0]
    _low(got, 0, "KAF-DELREC-4", "to 0 after the refused ones (the log start, unmoved)")


@case("kafka/delete-records/5", "KAF-DELREC-5")
def test_the_log_start_never_moves_back(target: CaseContext) -> None:
    """Deleting below the log start answers error 0 and the current log start.

    KAF-DELREC-5: "DeleteRecords with an offset below the current log start offset answers error 0
    and the current log start offset as low_watermark: the log start offset never moves back."
    """
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "back", "KAF-DELREC-5")
        _low(delete_records(target, k, name, {0: 4}, "KAF-DELREC-5")[0], 4, "KAF-DELREC-5", "to 4")
        got = delete_records(target, k, name, {0: 1}, "KAF-DELREC-5")[0]
    _low(got, 4, "KAF-DELREC-5", "to 1 after 4")


@case("kafka/delete-records/6", "KAF-DELREC-6")
def test_an_unknown_partition_is_refused(target: CaseContext) -> None:
    """An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION (3).

    KAF-DELREC-6: "DeleteRecords of a topic or partition the broker does not have answers
    UNKNOWN_TOPIC_OR_PARTITION (3) for it."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "onlyone")
        for topic, partition in ((target.name("nodelete"), 0), (name, 5)):
            got = delete_records(target, k, topic, {partition: 0}, "KAF-DELREC-6")[partition]
            expect_code(
                got,
                "error_code",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "KAF-DELREC-6",
                f"{topic}/{partition}",
            )


@case("kafka/delete-records/7", "KAF-DELREC-7")
def test_a_compacted_topic_refuses_deletion(target: CaseContext) -> None:
    """A topic with cleanup.policy compact answers DeleteRecords POLICY_VIOLATION (44).

    KAF-DELREC-7: "DeleteRecords of a topic whose cleanup.policy does not include delete (compact
    alone) answers POLICY_VIOLATION (44)."
    """
    with KafkaClient(target) as k:
        name = _topic_of_five(target, k, "compacted", "KAF-DELREC-7")
        changed = alter(target, k, "KAF-DELREC-7", name, [("cleanup.policy", SET, "compact")])
        expect_code(changed, "error_code", "NONE", "KAF-DELREC-7", "cleanup.policy=compact")
        config_until(
            target, k, name, "cleanup.policy", lambda c: c["value"] == "compact", "KAF-DELREC-7"
        )
        # the broker applies the policy to the log a moment after it describes it: offset 0
        # moves nothing, so asking again is harmless
        got = until(
            target,
            lambda: delete_records(target, k, name, {0: 0}, "KAF-DELREC-7")[0],
            lambda p: p["error_code"] != 0,
        )
    expect_code(got, "error_code", "POLICY_VIOLATION", "KAF-DELREC-7", "cleanup.policy=compact")
