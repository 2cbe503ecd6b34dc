"""Kafka committed offsets and ListOffsets (SPEC.md, area "offsets")."""

from __future__ import annotations

from conformance.evidence import Evidence, Judged, Node, combined
from conformance.protocols.kafka import records
from conformance.suite.case import case, require
from conformance.suite.kafka.cluster_admin_steps import list_offset
from conformance.suite.kafka.group_steps import commit_body, coordinator_ready, offset_fetch_at
from conformance.suite.kafka.steps import batch, create_topic, produce
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    find_partition,
    need,
    usable,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


def commit(
    target: CaseContext,
    k: KafkaClient,
    group: str,
    topic: str,
    offset: int,
    metadata: str,
    version: int | None = None,
    requirement: str = "KAF-OFFSET-1",
) -> tuple[Node, int]:
    """A simple commit (no member, generation -1) of partition 0: the partition's answer
    and the wire-log entry of the request (see :func:`committed`)."""
    v = version if version is not None else usable(target, "OffsetCommit")
    body = commit_body(group, topic, offset, metadata)
    what = f"OffsetCommit v{v} {group}"
    coordinator_ready(target, k, group)  # a fresh Kafka makes its coordinator first
    corr = k.send("OffsetCommit", v, body)
    reply = k.answer("OffsetCommit", v, corr, requirement, what)
    p = find_partition(reply["topics"], topic, 0, requirement, what)
    return p, k.requests[corr]


def committed(request: int, field: str) -> Evidence:
    """The OffsetCommit request ``request`` (a wire-log entry) with the field of its one
    partition judged (``committed_offset``, ``committed_metadata``): what was committed."""
    return Evidence((Judged(request, (f"topics[0].partitions[0].{field}",)),))


def fetch_committed(
    target: CaseContext,
    k: KafkaClient,
    group: str,
    topic: str,
    version: int | None = None,
    requirement: str = "KAF-OFFSET-1",
) -> Node:
    """OffsetFetch of partition 0: its entry (committed_offset, metadata, error_code)."""
    v = version if version is not None else usable(target, "OffsetFetch")
    return offset_fetch_at(k, v, group, topic, requirement)


@case("kafka/offsets/1", "KAF-OFFSET-1")
@at_every_version("OffsetCommit", since=2)
def test_a_committed_offset_is_fetched_back(target: CaseContext, version: int) -> None:
    """An offset committed by a group is what OffsetFetch returns for it afterwards.

    KAF-OFFSET-1: "an offset committed by a group (OffsetCommit) is what OffsetFetch returns for
    that group and partition afterwards ..."
    """
    need(target, "OffsetCommit", version)
    with KafkaClient(target) as k:
        topic, group = create_topic(target, k, "commit"), target.name("g")
        produce(target, k, topic, batch([b"a", b"b", b"c"]), requirement="KAF-OFFSET-1")
        answer, request = commit(target, k, group, topic, 2, "", version)
        expect_code(
            answer,
            "error_code",
            "NONE",
            "KAF-OFFSET-1",
            f"OffsetCommit v{version}",
        )
        got = fetch_committed(target, k, group, topic)
    require(
        got["committed_offset"] == 2,
        "KAF-OFFSET-1",
        f"OffsetCommit v{version} committed offset 2; OffsetFetch then answered "
        f"committed_offset {got['committed_offset']}, expected 2",
        committed(request, "committed_offset") + got.at("committed_offset"),
    )


@case("kafka/offsets/2", "KAF-OFFSET-1")
@at_every_version("OffsetFetch")
def test_a_partition_never_committed_is_minus_1(target: CaseContext, version: int) -> None:
    """A partition never committed is answered -1.

    KAF-OFFSET-1: "... a partition never committed is answered -1."
    """
    need(target, "OffsetFetch", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "never")
        got = fetch_committed(target, k, target.name("g"), topic, version)
    require(
        got["committed_offset"] == -1,
        "KAF-OFFSET-1",
        f"OffsetFetch v{version} of a partition never committed: committed_offset "
        f"{got['committed_offset']}, expected -1",
        got.at("committed_offset"),
    )


def _list_offsets(
    target: CaseContext,
    k: KafkaClient,
    topic: str,
    partition: int,
    timestamp: int,
    version: int,
    requirement: str,
) -> Node:
    what = f"ListOffsets v{version} {timestamp}"
    return list_offset(
        target, k, topic, partition, timestamp, requirement, version=version, what=what
    )


def _offset(p: Node, version: int) -> int | None:
    """The offset answered (v0: the first of ``old_style_offsets``; None when it is empty)."""
    if version == 0:
        return int(p["old_style_offsets"][0]) if p["old_style_offsets"] else None
    return int(p["offset"])


def _offset_at(p: Node, version: int) -> Evidence:
    """The field :func:`_offset` reads, and the timestamp its request asked for."""
    if version == 0:
        got = p.at("old_style_offsets", 0) if p["old_style_offsets"] else p.at("old_style_offsets")
    else:
        got = p.at("offset")
    return got.asked("topics[0].partitions[0].timestamp")


def _shown(offset: int | None) -> str:
    return "none (old_style_offsets is empty)" if offset is None else str(offset)


@case("kafka/offsets/3", "KAF-OFFSET-2")
@at_every_version("ListOffsets", since=1)
def test_latest_and_earliest_offsets(target: CaseContext, version: int) -> None:
    """ListOffsets -1 answers the high watermark, -2 the earliest offset.

    KAF-OFFSET-2: "ListOffsets with timestamp -1 answers the partition's latest offset (the high
    watermark) and with -2 its earliest offset."
    """
    need(target, "ListOffsets", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "latest")
        produce(target, k, topic, batch([b"a", b"b", b"c", b"d"]), requirement="KAF-OFFSET-2")
        latest = _list_offsets(target, k, topic, 0, -1, version, "KAF-OFFSET-2")
        earliest = _list_offsets(target, k, topic, 0, -2, version, "KAF-OFFSET-2")
    expect_code(latest, "error_code", "NONE", "KAF-OFFSET-2", "ListOffsets -1")
    got = (_offset(latest, version), _offset(earliest, version))
    wrong = [(a, p) for a, p, want in ((got[0], latest, 4), (got[1], earliest, 0)) if a != want]
    require(
        not wrong,
        "KAF-OFFSET-2",
        f"v{version}: latest {_shown(got[0])} and earliest {_shown(got[1])}, expected 4 and 0",
        combined(_offset_at(p, version) for _, p in wrong),
    )


@case("kafka/offsets/4", "KAF-OFFSET-3")
def test_commit_metadata_is_fetched_back(target: CaseContext) -> None:
    """The metadata string committed with an offset is returned with it.

    KAF-OFFSET-3: "the metadata string committed with an offset is returned by OffsetFetch with that
    offset."
    """
    with KafkaClient(target) as k:
        topic, group = create_topic(target, k, "meta"), target.name("g")
        produce(target, k, topic, batch([b"a"]), requirement="KAF-OFFSET-3")
        answer, request = commit(target, k, group, topic, 1, "checkpoint-7")
        expect_code(
            answer,
            "error_code",
            "NONE",
            "KAF-OFFSET-1",
            "commit",
        )
        got = fetch_committed(target, k, group, topic)
    require(
        got["metadata"] == "checkpoint-7",
        "KAF-OFFSET-3",
        f"OffsetCommit committed metadata 'checkpoint-7'; OffsetFetch then answered metadata "
        f"{show(got['metadata'])}, expected 'checkpoint-7'",
        committed(request, "committed_metadata") + got.at("metadata"),
    )


@case("kafka/offsets/5", "KAF-OFFSET-4")
@at_every_version("ListOffsets", since=1)
def test_an_offset_by_timestamp_is_the_first_at_or_after_it(
    target: CaseContext, version: int
) -> None:
    """ListOffsets T answers the first offset whose timestamp is T or later, -1 if none.

    KAF-OFFSET-4: "ListOffsets with a timestamp T (T >= 0) answers the first offset whose record
    timestamp is T or later, and offset -1 when no record is that late."
    """
    need(target, "ListOffsets", version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "time")
        data = records.encode_batch(
            records.make_batch([b"a", b"b", b"c"], timestamps=[1000, 2000, 3000])
        )
        produce(target, k, topic, data, requirement="KAF-OFFSET-4")
        at_p = _list_offsets(target, k, topic, 0, 1500, version, "KAF-OFFSET-4")
        late_p = _list_offsets(target, k, topic, 0, 9999, version, "KAF-OFFSET-4")
    got = (_offset(at_p, version), _offset(late_p, version))
    wrong = [p for a, p, want in ((got[0], at_p, 1), (got[1], late_p, -1)) if a != want]
    require(
        not wrong,
        "KAF-OFFSET-4",
        f"v{version}: timestamp 1500 -> offset {_shown(got[0])}, 9999 -> offset "
        f"{_shown(got[1])}; expected 1 and -1",
        combined(_offset_at(p, version) for p in wrong),
    )


@case("kafka/offsets/6", "KAF-OFFSET-5")
def test_list_offsets_of_an_unknown_partition_is_error_3(target: CaseContext) -> None:
    """ListOffsets for a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION (3).

    KAF-OFFSET-5: "ListOffsets for a partition that does not exist is answered
    UNKNOWN_TOPIC_OR_PARTITION (3) for it."
    """
    v = usable(target, "ListOffsets", lowest=1)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "lo")
        p = _list_offsets(target, k, topic, 9, -1, v, "KAF-OFFSET-5")
    expect_code(p, "error_code", "UNKNOWN_TOPIC_OR_PARTITION", "KAF-OFFSET-5", "partition 9")


@case("kafka/offsets/7", "KAF-OFFSET-6")
def test_an_offset_below_0_is_stored_and_fetched_back(target: CaseContext) -> None:
    """A simple commit of offset -5 is answered error 0, and OffsetFetch returns -5.

    KAF-OFFSET-6: "OffsetCommit stores any offset a client commits, one below 0 included (error 0
    for that partition), and OffsetFetch then returns that offset as committed."
    """
    req = "KAF-OFFSET-6"
    with KafkaClient(target) as k:
        topic, group = create_topic(target, k, "below"), target.name("g")
        answer, request = commit(target, k, group, topic, -5, "", requirement=req)
        expect_code(answer, "error_code", "NONE", req, "OffsetCommit of offset -5")
        got = fetch_committed(target, k, group, topic, requirement=req)
    require(
        got["committed_offset"] == -5,
        req,
        f"offset -5 was committed (error 0); OffsetFetch then answered committed_offset "
        f"{got['committed_offset']}, expected -5",
        committed(request, "committed_offset") + got.at("committed_offset"),
    )
