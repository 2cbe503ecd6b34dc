"""Kafka Fetch's aborted transactions by isolation level (SPEC.md, area "fetch", KAF-FETCH-10)."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.kafka.steps import (
    batch,
    create_topic,
    fetch_body,
    fetched_partition,
    produce,
    topic_id,
)
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.target import CaseContext

REQ = "KAF-FETCH-10"


@case("kafka/fetch/11", REQ)
def test_aborted_transactions_are_null_unless_read_committed(target: CaseContext) -> None:
    """A READ_UNCOMMITTED fetch answers aborted_transactions null; a READ_COMMITTED one a
    list (empty: nothing was aborted).

    KAF-FETCH-10: "from Fetch v4, a partition read with isolation_level READ_UNCOMMITTED (0), or
    answered with an error, carries aborted_transactions null; one read READ_COMMITTED (1) without
    error carries a list, empty when no aborted transaction overlaps what it returns."
    """
    v = usable(target, "Fetch", lowest=4)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "isolation")
        produce(target, k, topic, batch([b"plain"]), requirement=REQ)
        ref = topic_id(target, k, topic) if v >= 13 else topic
        for level, want in ((0, None), (1, [])):
            body = {**fetch_body(ref, 0, 0, v), "isolation_level": level}
            what = f"Fetch v{v} isolation_level {level}"
            part = fetched_partition(k.call("Fetch", v, body, REQ, what), topic, 0, REQ, what, ref)
            expect_code(part, "error_code", "NONE", REQ, what)
            got = part["aborted_transactions"]
            got = None if got is None else list(got)
            require(
                got == want,
                REQ,
                f"{what}: aborted_transactions {'null' if got is None else got}, expected "
                + ("null (Kafka collects none for READ_UNCOMMITTED)" if want is None else "[]"),
                part.at("aborted_transactions"),
            )
