"""V1 line PRODUCE: appending, offsets, the payload and the ack mode (SPEC.md, area
"produce")."""

from __future__ import annotations

from conformance.protocols.v1line.errors import BAD_REQUEST
from conformance.suite.case import case, require
from conformance.suite.shown import show
from conformance.suite.target import CaseContext
from conformance.suite.v1line.acks import produce_acks_all
from conformance.suite.v1line.steps import (
    Produced,
    consume,
    nothing_appended,
    produce,
    produce_committed,
    replicate,
)
from conformance.suite.v1line.verify import (
    evidence_of,
    expect_error,
    listed,
    real,
)


def fnv1a32(data: bytes) -> int:
    """FNV-1a 32-bit (offset basis 2166136261, prime 16777619): the real broker's placement."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


@case("v1line/produce/1", "V1L-PROD-1")
def test_produce_appends_and_answers_partition_offset_hw(target: CaseContext) -> None:
    """PRODUCE to a new topic answers partition, offset and hw, and CONSUME finds the record.

    V1L-PROD-1: "`PRODUCE <topic> <key>:<value>` on a leader partition appends the record and
    answers `partition=<n> offset=<n> hw=<n>`, creating the topic on first use."
    """
    with target.connect() as conn:
        topic = target.name("new")
        put = produce(target, conn, topic, "user1", "created", "V1L-PROD-1")
        require(
            put.partition >= 0 and put.offset >= 0,
            "V1L-PROD-1",
            f"PRODUCE answered partition={put.partition} offset={put.offset}, expected a"
            " partition and an offset of 0 or more",
            put.reply.at("partition", "offset"),
        )
        replicate(target, conn, topic, put.partition, put.offset, "V1L-PROD-1")
        got = consume(target, conn, topic, put.partition, put.offset, "V1L-PROD-1")
        require(
            got.messages()[:1] == [(put.offset, "created")],
            "V1L-PROD-1",
            f"CONSUME {topic} {put.partition} {put.offset}: messages {listed(got.messages())},"
            f" expected '{put.offset}:created' (the record PRODUCE appended)",
            put.reply.at("partition", "offset") + got.at("messages"),
        )


@case("v1line/produce/2", "V1L-PROD-2")
def test_offsets_within_a_partition_are_consecutive(target: CaseContext) -> None:
    """Twelve records with six keys: in each partition the offsets go up by one.

    V1L-PROD-2: "each append to a partition gets the offset one above the previous append's, so
    offsets within a partition are consecutive."
    """
    with target.connect() as conn:
        topic = target.name("offsets")
        puts = [produce(target, conn, topic, f"k{i % 6}", f"v{i}", "V1L-PROD-2") for i in range(12)]
        last: dict[int, int] = {}
        previous: dict[int, Produced] = {}
        for put in puts:
            if put.partition in last:
                want = last[put.partition] + 1
                require(
                    put.offset == want,
                    "V1L-PROD-2",
                    f"PRODUCE to partition {put.partition} got offset {put.offset}, expected"
                    f" {want} (the previous append there got {last[put.partition]})",
                    previous[put.partition].reply.at("partition", "offset")
                    + put.reply.at("partition", "offset"),
                )
            last[put.partition] = put.offset
            previous[put.partition] = put


@case("v1line/produce/3", "V1L-PROD-3")
def test_a_payload_without_a_colon_is_bad_request(target: CaseContext) -> None:
    """PRODUCE of 'novalue' (no ':') is answered BAD_REQUEST.

    V1L-PROD-3: "a payload without `:` is answered BAD_REQUEST."
    """
    with target.connect() as conn:
        topic = target.name("nocolon")
        for payload in ("novalue", "k=v"):
            expect_error(
                target,
                conn,
                "PRODUCE",
                f"{topic} {payload}",
                BAD_REQUEST,
                "V1L-PROD-3",
                f"PRODUCE {topic} {payload}",
            )


@case("v1line/produce/4", "V1L-PROD-4")
def test_the_first_colon_splits_key_from_value(target: CaseContext) -> None:
    """PRODUCE of 'k:a:b:c' stores the value 'a:b:c', which CONSUME returns whole.

    V1L-PROD-4: "the first `:` separates key from value; a value containing further `:` is
    stored whole and CONSUME returns it byte for byte."
    """
    with target.connect() as conn:
        topic = target.name("colons")
        (put,) = produce_committed(target, conn, topic, "k", ["a:b:c"], "V1L-PROD-4")
        got = consume(target, conn, topic, put.partition, put.offset, "V1L-PROD-4")
        require(
            got.messages()[:1] == [(put.offset, "a:b:c")],
            "V1L-PROD-4",
            f"PRODUCE {topic} k:a:b:c, then CONSUME {topic} {put.partition} {put.offset}:"
            f" messages {listed(got.messages())}, expected '{put.offset}:a:b:c'",
            put.reply.at("offset") + got.at("messages"),
        )


@case("v1line/produce/5", "V1L-PROD-5")
def test_acks_0_1_all_are_accepted_and_others_refused(target: CaseContext) -> None:
    """acks=0, acks=1 and acks=all are accepted; acks=2, acks=, ack=1 are BAD_REQUEST and
    append nothing.

    V1L-PROD-5: "`acks=0`, `acks=1` and `acks=all` are accepted; any other third arg (`acks=2`,
    `acks=`, `ack=1`, a second word of a value) is answered BAD_REQUEST and nothing is
    appended."
    """
    with target.connect() as conn, target.connect() as other:
        topic = target.name("acks")
        for acks in ("0", "1"):
            produce(target, conn, topic, "k", f"with-{acks}", "V1L-PROD-5", acks=acks)
        reply = produce_acks_all(target, conn, other, topic, "k", "all", "V1L-PROD-5").reply
        require(
            reply.ok or reply.code == "REPLICATION_TIMEOUT",
            "V1L-PROD-5",
            f"PRODUCE {topic} k:all acks=all: answered {reply.shown()}, expected it accepted"
            " (OK, or REPLICATION_TIMEOUT)",
            reply.at("status", "code"),
        )
        before = produce(target, conn, topic, "k", "before", "V1L-PROD-5")
        for bad in ("acks=2", "acks=", "ack=1", "second-word"):
            args = f"{topic} k:v {bad}"
            expect_error(
                target, conn, "PRODUCE", args, BAD_REQUEST, "V1L-PROD-5", f"PRODUCE {args}"
            )
        nothing_appended(target, conn, topic, "k", before, "V1L-PROD-5", "four refused PRODUCEs")


@case("v1line/produce/6", "V1L-PROD-6")
def test_the_ack_mode_is_matched_exactly(target: CaseContext) -> None:
    """acks=ALL and ACKS=1 are answered BAD_REQUEST.

    V1L-PROD-6: "the ack mode is matched exactly: `acks=ALL` and `ACKS=1` are answered
    BAD_REQUEST."
    """
    with target.connect() as conn:
        topic = target.name("exact")
        for bad in ("acks=ALL", "ACKS=1"):
            args = f"{topic} k:v {bad}"
            expect_error(
                target, conn, "PRODUCE", args, BAD_REQUEST, "V1L-PROD-6", f"PRODUCE {args}"
            )


@case("v1line/produce/7", "V1L-PROD-7")
def test_more_than_three_args_is_bad_request_and_appends_nothing(target: CaseContext) -> None:
    """A value with a space in it, or a word after the ack mode, is BAD_REQUEST and appends
    nothing.

    V1L-PROD-7: "more than three args (a value with a space in it, an extra word after the ack
    mode) is answered BAD_REQUEST and nothing is appended."
    """
    with target.connect() as conn:
        topic = target.name("extra")
        before = produce(target, conn, topic, "k", "before", "V1L-PROD-7")
        for args in (f"{topic} k:two words acks=1", f"{topic} k:v acks=1 extra"):
            expect_error(
                target, conn, "PRODUCE", args, BAD_REQUEST, "V1L-PROD-7", f"PRODUCE {args}"
            )
        nothing_appended(target, conn, topic, "k", before, "V1L-PROD-7", "two refused PRODUCEs")


@case("v1line/produce/8", "V1L-PROD-8")
def test_acks_0_answers_like_acks_1(target: CaseContext) -> None:
    """PRODUCE acks=0 is answered at once with partition, offset and hw, as acks=1 is.

    V1L-PROD-8: "`acks=0` is answered with the same success payload as `acks=1`, as soon as the
    leader has appended."
    """
    with target.connect() as conn:
        topic = target.name("acks0")
        one = produce(target, conn, topic, "k", "one", "V1L-PROD-8", acks="1")
        zero = produce(target, conn, topic, "k", "zero", "V1L-PROD-8", acks="0")
        require(
            set(zero.reply.values) == set(one.reply.values),
            "V1L-PROD-8",
            f"acks=0 answered {zero.reply.shown()}, acks=1 {one.reply.shown()}: expected the"
            " same keys",
            evidence_of(one.reply, zero.reply, fields=("partition", "offset", "hw")),
        )
        if zero.partition == one.partition:
            require(
                zero.offset == one.offset + 1,
                "V1L-PROD-8",
                f"acks=0 got offset {zero.offset} in partition {zero.partition}, expected"
                f" {one.offset + 1} (appended right after the acks=1 record)",
                evidence_of(one.reply, zero.reply, fields=("partition", "offset")),
            )


@case("v1line/produce/9", "V1L-PROD-9")
def test_records_with_one_key_go_to_one_partition(target: CaseContext) -> None:
    """Five records with the key 'same' all go to the same partition.

    V1L-PROD-9: "records with the same key go to the same partition."
    """
    with target.connect() as conn:
        topic = target.name("samekey")
        puts = [produce(target, conn, topic, "same", f"v{i}", "V1L-PROD-9") for i in range(5)]
        seen = sorted({p.partition for p in puts})
        require(
            len(seen) == 1,
            "V1L-PROD-9",
            f"five records with the key 'same' went to partitions {', '.join(map(str, seen))},"
            " expected one",
            evidence_of(*(p.reply for p in puts), fields=("partition",)),
        )


@case("v1line/produce/10", "V1L-PROD-10")
def test_the_reference_brokers_placement_and_default_ack_mode(target: CaseContext) -> None:
    """Without acks PRODUCE answers at once; the partition is FNV-1a 32 of the key modulo 3.

    V1L-PROD-10: "PRODUCE without an ack arg behaves as `acks=1`; the partition is the FNV-1a
    32-bit hash of the key modulo the topic's partition count; `ACKS=ALL` is accepted in
    `real`."
    """
    partitions = 3  # the reference broker's default: a topic's count is not on the wire
    with target.connect() as conn, target.connect() as other:
        topic = target.name("fnv")
        for key in ("user1", "orders", "a", "zz-top", "k7"):
            put = produce(target, conn, topic, key, "v", "V1L-PROD-10")
            want = fnv1a32(key.encode()) % partitions
            require(
                put.partition == want,
                "V1L-PROD-10",
                f"PRODUCE with key {show(key)} went to partition {put.partition}, expected"
                f" {want} (FNV-1a 32 of the key modulo {partitions})",
                put.reply.at("partition", asked=("message",)),
            )
        if real(target):
            reply = produce_acks_all(
                target, conn, other, topic, "user1", "upper", "V1L-PROD-10", acks="ACKS=ALL"
            ).reply
            require(
                reply.ok or reply.code == "REPLICATION_TIMEOUT",
                "V1L-PROD-10",
                f"PRODUCE {topic} user1:upper ACKS=ALL: answered {reply.shown()}, expected it"
                " accepted as acks=all (OK, or REPLICATION_TIMEOUT)",
                reply.at("status", "code", asked=("acks",)),
            )
