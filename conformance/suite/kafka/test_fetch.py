"""Kafka Fetch (SPEC.md, area "fetch")."""

from __future__ import annotations

import time
import uuid

from conformance.evidence import Evidence
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Violation, case, require
from conformance.suite.kafka.steps import (
    Fetched,
    batch,
    create_topic,
    fetch,
    fetch_body,
    fetched_partition,
    fetched_partitions,
    produce,
    topic_id,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    name_of,
    need,
    usable,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


@case("kafka/fetch/1", "KAF-FETCH-1")
def test_a_long_poll_fetch_answers_when_data_arrives(target: CaseContext) -> None:
    """A Fetch with no data waits, and answers with the records when they arrive in time.

    KAF-FETCH-1: "a Fetch with no data at its offset waits until data arrives or max_wait_ms passes
    (long poll), and answers with at least min_bytes of records when they arrive in time."
    """
    v = usable(target, "Fetch")
    with KafkaClient(target) as k, KafkaClient(target) as producer:
        topic = create_topic(target, k, "poll")
        # the partition online first (a new topic may answer NOT_LEADER_OR_FOLLOWER a moment,
        # at once: the fetch step asks again), so the long poll below waits for data
        fetch(target, k, topic, 0, 0, version=v, requirement="KAF-FETCH-1")
        ref = topic_id(target, k, topic) if v >= 13 else topic
        corr = k.send("Fetch", v, fetch_body(ref, 0, 0, v, max_wait_ms=3000, min_bytes=1))
        time.sleep(0.2)
        start = time.monotonic()
        produce(target, producer, topic, batch([b"late"]), requirement="KAF-FETCH-1")
        what = f"the waiting Fetch v{v}"
        reply = k.answer("Fetch", v, corr, "KAF-FETCH-1", what, timeout=5)
        took = time.monotonic() - start
    got = Fetched(fetched_partition(reply, topic, 0, "KAF-FETCH-1", what, ref))
    require(
        got.data,
        "KAF-FETCH-1",
        "the long poll answered with no records, expected the one produced meanwhile",
        got.records_at(),
    )
    require(
        took < 2.0,
        "KAF-FETCH-1",
        f"answered {took:.2f}s after the record arrived, expected at once (max_wait_ms 3000)",
        got.records_at(),
    )


@case("kafka/fetch/2", "KAF-FETCH-2")
@at_every_version("Fetch")
def test_an_offset_outside_the_log_is_out_of_range(target: CaseContext, version: int) -> None:
    """A Fetch at an offset outside the partition's log is OFFSET_OUT_OF_RANGE (1).

    KAF-FETCH-2: "a Fetch at an offset outside the partition's log is answered OFFSET_OUT_OF_RANGE
    (1) for that partition."
    """
    need(target, "Fetch", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "range")
        produce(target, k, topic, batch([b"a"]), requirement="KAF-FETCH-2")
        got = fetch(target, k, topic, 0, 50, version=version, requirement="KAF-FETCH-2")
    expect_code(
        got.part, "error_code", "OFFSET_OUT_OF_RANGE", "KAF-FETCH-2", f"Fetch v{version} at 50"
    )


@case("kafka/fetch/3", "KAF-FETCH-3")
@at_every_version("Fetch")
def test_the_high_watermark_is_the_offset_after_the_last_record(
    target: CaseContext, version: int
) -> None:
    """Each partition of a Fetch response carries the high watermark.

    KAF-FETCH-3: "each partition of a Fetch response carries the partition's high watermark (the
    offset after the last record)."
    """
    need(target, "Fetch", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "hwm")
        produce(target, k, topic, batch([b"a", b"b", b"c"]), requirement="KAF-FETCH-3")
        got = fetch(target, k, topic, 0, 1, version=version, requirement="KAF-FETCH-3")
    require(
        got.high_watermark == 3,
        "KAF-FETCH-3",
        f"Fetch v{version}: high watermark {got.high_watermark}, expected 3",
        got.at("high_watermark"),
    )


@case("kafka/fetch/4", "KAF-FETCH-4")
def test_an_empty_fetch_answers_once_max_wait_has_passed(target: CaseContext) -> None:
    """A Fetch with no data is answered, error 0 and no records, once max_wait_ms has passed.

    KAF-FETCH-4: "a Fetch with no data at its offset is answered, error 0 and no records, once
    max_wait_ms has passed: not much before it, and never long after it."
    """
    v = usable(target, "Fetch")
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "wait")
        start = time.monotonic()
        got = fetch(
            target,
            k,
            topic,
            0,
            0,
            version=v,
            requirement="KAF-FETCH-4",
            max_wait_ms=400,
            min_bytes=1,
            timeout=5,
        )
        took = time.monotonic() - start
    expect_code(got.part, "error_code", "NONE", "KAF-FETCH-4", "an empty long poll")
    require(
        not got.data,
        "KAF-FETCH-4",
        f"an empty partition answered {len(got.data)} bytes of records, expected none",
        got.records_at(),
    )
    require(
        0.3 <= took <= 2.0,
        "KAF-FETCH-4",
        f"max_wait_ms 400 answered after {took:.2f}s, expected 0.3-2.0s",
        got.at(),
    )


@case("kafka/fetch/5", "KAF-FETCH-5")
@at_every_version("Fetch")
def test_records_come_from_the_offset_asked(target: CaseContext, version: int) -> None:
    """A Fetch returns records from the offset asked, offsets increasing.

    KAF-FETCH-5: "a Fetch returns records from the offset asked: the first batch returned holds that
    offset (records before it only in that same batch), and offsets increase through the response."
    """
    need(target, "Fetch", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "from")
        for i in range(3):
            produce(target, k, topic, batch([b"%d" % (2 * i), b"%d" % (2 * i + 1)]))
        fetched = fetch(target, k, topic, 0, 3, version=version)
    found = fetched.located("KAF-FETCH-5")
    offsets = [x.offset for x in found]
    require(
        offsets and offsets[0] <= 3 and 3 in offsets,
        "KAF-FETCH-5",
        f"Fetch v{version} at 3 returned offsets {show_all(offsets)}, expected the first at 3 "
        "or before and 3 among them",
        _offsets_at(fetched),
    )
    require(
        offsets == sorted(set(offsets)),
        "KAF-FETCH-5",
        f"offsets {show_all(offsets)}, expected increasing",
        _offsets_at(fetched),
    )
    require(
        [x.record.value for x in found if x.offset >= 3] == [b"3", b"4", b"5"],
        "KAF-FETCH-5",
        f"values from offset 3: {show_all(x.record.value for x in found if x.offset >= 3)}, "
        "expected '3', '4', '5'",
        fetched.records_at(*(f"{x.name}.value" for x in found if x.offset >= 3)),
    )


def _offsets_at(fetched: Fetched) -> Evidence:
    """Every fetched record's offset fields (the batch's base offset and the record's
    delta), or the records field when none decodes."""
    found = fetched.located("KAF-FETCH-5")
    if not found:
        return fetched.records_at()
    names = []
    for x in found:
        batch_name = x.name.split(".record[")[0].removesuffix(".decompressed")
        names += [f"{batch_name}.base_offset", f"{x.name}.offset_delta"]
    return fetched.records_at(*dict.fromkeys(names))


@case("kafka/fetch/6", "KAF-FETCH-5")
def test_a_fetch_with_max_wait_0_answers_what_is_there(target: CaseContext) -> None:
    """A Fetch with max_wait_ms 0 and min_bytes 0 still returns the records at the offset asked.

    KAF-FETCH-5: "a Fetch returns records from the offset asked ..."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "now")
        produce(target, k, topic, batch([b"here"]))
        fetched = fetch(target, k, topic, 0, 0, max_wait_ms=0, min_bytes=0)
    got = fetched.values("KAF-FETCH-5")
    require(
        [v for _, v in got] == [b"here"],
        "KAF-FETCH-5",
        f"max_wait 0 returned values {show_all(v for _, v in got)}, expected 'here'",
        fetched.values_at("KAF-FETCH-5"),
    )


@case("kafka/fetch/7", "KAF-FETCH-6")
@at_every_version("Fetch", since=3)
def test_a_first_batch_larger_than_max_bytes_is_still_returned(
    target: CaseContext, version: int
) -> None:
    """From Fetch v3, a first batch larger than max_bytes is still returned whole: all
    three records of one produced batch, fetched with max_bytes 1.

    KAF-FETCH-6: "from Fetch v3, a first batch larger than max_bytes or partition_max_bytes is still
    returned whole, so a consumer can always make progress."
    """
    need(target, "Fetch", version)
    sent = [b"x" * 100, b"y" * 100, b"z" * 100]
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "kip74")
        produce(target, k, topic, batch(sent), requirement="KAF-FETCH-6")
        got = fetch(
            target,
            k,
            topic,
            0,
            0,
            version=version,
            requirement="KAF-FETCH-6",
            max_bytes=1,
            partition_max_bytes=1,
        )
    values = [v for _, v in got.values("KAF-FETCH-6")]
    require(
        values == sent,
        "KAF-FETCH-6",
        f"Fetch v{version} with max_bytes 1: {len(values)} record(s) "
        f"({len(got.data)} bytes of records), expected the produced batch whole (its 3 "
        f"records of 100 bytes)",
        got.values_at("KAF-FETCH-6"),
    )


@case("kafka/fetch/8", "KAF-FETCH-7")
@at_every_version("Fetch")
def test_an_unknown_topic_is_error_3_or_100(target: CaseContext, version: int) -> None:
    """A Fetch of a missing topic or partition is UNKNOWN_TOPIC_OR_PARTITION (3), or
    UNKNOWN_TOPIC_ID (100) for a topic id from v13, and the connection stays open.

    KAF-FETCH-7: "a Fetch of a topic or partition that does not exist is answered
    UNKNOWN_TOPIC_OR_PARTITION (3) for it (UNKNOWN_TOPIC_ID (100) for a topic id, from v13), and the
    connection stays open."
    """
    need(target, "Fetch", version)
    with KafkaClient(target) as k:
        ref = str(uuid.uuid4()) if version >= 13 else target.name("nowhere")
        what = f"Fetch v{version} of unknown topic {ref}"
        reply = k.call(
            "Fetch",
            version,
            fetch_body(ref, 0, 0, version, max_wait_ms=0),
            "KAF-FETCH-7",
            what,
        )
        want = ["UNKNOWN_TOPIC_ID"] if version >= 13 else ["UNKNOWN_TOPIC_OR_PARTITION"]
        parts = [p for t in reply["responses"] for p in t["partitions"]]
        if parts:
            expect_code(parts[0], "error_code", want, "KAF-FETCH-7", what)
        elif reply.get("error_code", 0) != 0:  # v7+: refused as a whole, with its own code
            expect_code(reply, "error_code", want, "KAF-FETCH-7", what)
        else:
            whole = (
                f" and error_code {name_of(reply['error_code'])} for the whole answer"
                if "error_code" in reply
                else ""
            )
            raise Violation(
                "KAF-FETCH-7",
                f"{what}: the answer has no partition 0 of topic {ref}{whole}; expected "
                f"{name_of(CODES[want[0]])} for it",
                reply["responses"].at() + (reply.at("error_code") if whole else Evidence()),
            )
        k.call("ApiVersions", 0, {}, "KAF-FETCH-7", "ApiVersions after the refused Fetch")


@case("kafka/fetch/9", "KAF-FETCH-8")
@at_every_version("Fetch")
def test_a_full_fetch_answers_every_partition_asked(target: CaseContext, version: int) -> None:
    """A sessionless Fetch of two partitions answers both, the one with no records too.

    KAF-FETCH-8: "a Fetch outside a fetch session (any version before 7; from v7, session epoch -1
    or 0) answers every partition it asked for, each with its own error code: a partition left out
    of the answer is an error, never a success with no records."
    """
    need(target, "Fetch", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "both", partitions=2)
        produce(target, k, topic, batch([b"one"]), partition=1, requirement="KAF-FETCH-8")
        ref = topic_id(target, k, topic) if version >= 13 else topic
        body = fetch_body(ref, 0, 0, version)  # as a consumer asks: min_bytes 1, 100 ms
        second = {**body["topics"][0]["partitions"][0], "partition": 1}
        body["topics"][0]["partitions"].append(second)
        what = f"Fetch v{version} of partitions 0 and 1 of {topic}"
        reply = k.call("Fetch", version, body, "KAF-FETCH-8", what)
    parts = fetched_partitions(reply, topic, [0, 1], what, ref)
    for index in (0, 1):
        expect_code(parts[index], "error_code", "NONE", "KAF-FETCH-8", f"{what}, partition {index}")
