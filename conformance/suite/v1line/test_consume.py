"""V1 line CONSUME: committed records from an offset, up to the high watermark (SPEC.md,
area "consume")."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.protocols.v1line.errors import BAD_REQUEST
from conformance.suite.case import case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    Produced,
    consume,
    lag_timeout,
    partitions_of,
    produce_committed,
    produce_to,
    report,
    two_in_one_partition,
)
from conformance.suite.v1line.verify import (
    Reply,
    call,
    expect_error,
    listed,
    still_served,
)

TRIES = 3
"""Attempts of a case whose few exchanges must end within the lag timeout to mean much."""


def produced_to(puts: list[Produced], values: list[str], partition: int) -> list[tuple[int, str]]:
    """(offset, value) of what was produced to ``partition``, in order."""
    return [(p.offset, v) for p, v in zip(puts, values, strict=True) if p.partition == partition]


@case("v1line/consume/1", "V1L-CONS-1")
def test_consume_lists_committed_records_from_the_offset_in_order(target: CaseContext) -> None:
    """Four committed records: CONSUME from the second lists the last three, in offset order.

    V1L-CONS-1: "`CONSUME <topic> <partition> <offset>` answers `messages=<offset>:<value>,...
    hw=<n>` listing the partition's committed records from that offset on, in offset order, each
    with the offset it was produced at."
    """
    with target.connect() as conn:
        topic = target.name("list")
        values = ["v0", "v1", "v2", "v3"]
        puts = produce_committed(target, conn, topic, "k", values, "V1L-CONS-1")
        partition = puts[0].partition
        mine = produced_to(puts, values, partition)
        start = mine[1][0] if len(mine) > 1 else mine[0][0]
        want = [(o, v) for o, v in mine if o >= start]
        got = consume(target, conn, topic, partition, start, "V1L-CONS-1")
        require(
            got.messages() == want,
            "V1L-CONS-1",
            f"CONSUME {topic} {partition} {start}: messages {listed(got.messages())}, expected"
            f" {listed(want)} (the records produced there, from offset {start})",
            got.at("messages", asked=("offset",)),
        )


def lagging_record(
    target: CaseContext, conn: Connection, topic: str, requirement: str
) -> tuple[Reply, Produced]:
    """Two records in one partition, follower 1 reports the second (it is in the ISR), then
    one more record is appended there that no follower has: in ``doc`` it stays above hw
    (V1L-REPL-13).  The follower's REPLICA_FETCH reply and the last record."""
    _, second = two_in_one_partition(target, conn, topic, "k", requirement)
    caught = report(target, conn, topic, second.partition, 1, second.offset, requirement)
    third = produce_to(target, conn, topic, second.partition, "k", "c", requirement)
    return caught, third


@case("v1line/consume/2", "V1L-CONS-2")
def test_consume_returns_nothing_above_the_hw_it_reports(target: CaseContext) -> None:
    """With a record no in-sync follower has, CONSUME from 0 returns no offset above its hw.

    V1L-CONS-2: "CONSUME never returns a record whose offset is above the hw it reports."
    """
    with target.connect() as conn:
        for attempt in range(TRIES):
            topic = target.name(f"abovehw{attempt}")
            start = time.monotonic()
            caught, last = lagging_record(target, conn, topic, "V1L-CONS-2")
            for offset in (0, last.offset):
                got = consume(target, conn, topic, last.partition, offset, "V1L-CONS-2")
                hw = got.number("hw")
                above = [o for o, _ in got.messages() if o > hw]
                require(
                    not above,
                    "V1L-CONS-2",
                    f"follower 1 in sync at offset {last.offset - 1}, offset {last.offset} not"
                    f" reported: CONSUME {topic} {last.partition} {offset} answered hw={hw} with"
                    f" messages {listed(got.messages())}, expected no record above offset {hw}"
                    f" (it returned offset {', '.join(map(str, above))})",
                    caught.at("isr", "hw", asked=("replica_id", "offset"))
                    + got.at("messages", "hw", asked=("partition", "offset")),
                )
            if time.monotonic() - start < lag_timeout(target):
                break  # else follower 1 may have left the ISR first: try again


def exactly_empty(got: Reply, what: str, requirement: str) -> None:
    """An OK reply whose ``messages=`` is empty, with ``hw=`` (the codec holds it to
    SPEC's grammar; keys the document does not declare may follow, seed: payloads "may
    evolve additively")."""
    require(
        got.ok and "hw" in got.values and not got.messages(),
        requirement,
        f"{what}: answered {got.shown()}, expected 'messages= hw=<n>'",
        got.at("status", "messages", "hw"),
    )


@case("v1line/consume/3", "V1L-CONS-3")
def test_nothing_committed_at_the_offset_is_exactly_messages_empty(target: CaseContext) -> None:
    """CONSUME of an empty partition, one past the last committed offset and far past it each
    answer 'messages= hw=<n>'.

    V1L-CONS-3: "when nothing is committed at the requested offset (an empty partition, an
    offset past hw) the reply is exactly `messages= hw=<n>`."
    """
    with target.connect() as conn:
        topic = target.name("empty")
        (put,) = produce_committed(target, conn, topic, "k", ["only"], "V1L-CONS-3")
        for partition in partitions_of(target, conn, topic, "V1L-CONS-3"):
            if partition != put.partition:
                args = f"{topic} {partition} 0"
                got = call(target, conn, "CONSUME", args, "V1L-CONS-3", f"CONSUME {args}")
                exactly_empty(got, f"CONSUME {args} (an empty partition)", "V1L-CONS-3")
        for offset in (put.offset + 1, put.offset + 1000):
            args = f"{topic} {put.partition} {offset}"
            got = call(target, conn, "CONSUME", args, "V1L-CONS-3", f"CONSUME {args}")
            exactly_empty(got, f"CONSUME {args} (past the last record)", "V1L-CONS-3")


VALUES = ["plain", "a=b", "[1]", '{"x":1}', "caf\u00e9", "", "x;y", "-"]


@case("v1line/consume/4", "V1L-CONS-4")
def test_the_value_returned_is_the_value_produced(target: CaseContext) -> None:
    """Values with '=', brackets, quotes, non-ASCII text or nothing at all come back as produced.

    V1L-CONS-4: "the value returned for an offset is exactly the value produced there (byte for
    byte, for values without `,`)."
    """
    with target.connect() as conn:
        topic = target.name("bytes")
        puts = produce_committed(target, conn, topic, "k", VALUES, "V1L-CONS-4")
        for put, value in zip(puts, VALUES, strict=True):
            got = consume(target, conn, topic, put.partition, put.offset, "V1L-CONS-4")
            first = got.messages()[:1]
            require(
                first == [(put.offset, value)],
                "V1L-CONS-4",
                f"CONSUME {topic} {put.partition} {put.offset}: messages {listed(got.messages())},"
                f" expected {listed([(put.offset, value)])} first",
                put.reply.at("offset") + got.at("messages"),
            )


@case("v1line/consume/5", "V1L-CONS-5")
def test_a_negative_offset_or_partition_does_not_stop_the_broker(target: CaseContext) -> None:
    """CONSUME at offset -1 or partition -1 is an error or empty, and the broker keeps serving.

    V1L-CONS-5: "a negative offset or partition is answered with an error or an empty
    `messages=` reply and never stops the broker from serving."
    """
    with target.connect() as conn:
        topic = target.name("negative")
        (put,) = produce_committed(target, conn, topic, "k", ["v"], "V1L-CONS-5")
        for args in (f"{topic} {put.partition} -1", f"{topic} -1 0"):
            got = call(target, conn, "CONSUME", args, "V1L-CONS-5", f"CONSUME {args}")
            if got.ok:
                require(
                    not got.messages(),
                    "V1L-CONS-5",
                    f"CONSUME {args}: messages {listed(got.messages())}, expected an error or none",
                    got.at("messages"),
                )
    with target.connect() as fresh:
        still_served(target, fresh, "V1L-CONS-5", "OFFSET on a new connection after")


@case("v1line/consume/6", "V1L-CONS-6")
def test_the_reference_brokers_consume_conventions(target: CaseContext) -> None:
    """CONSUME has no count limit, an unknown topic answers hw=-1, a partition past the topic's
    is BAD_REQUEST 'invalid partition'.

    V1L-CONS-6: "CONSUME returns every committed record from the offset (no count limit); an
    empty or unknown partition reports `hw=-1`; a partition outside the topic is answered
    BAD_REQUEST `invalid partition`."
    """
    with target.connect() as conn:
        topic = target.name("conv")
        values = [f"v{i}" for i in range(40)]
        puts = produce_committed(target, conn, topic, "k", values, "V1L-CONS-6")
        partition = puts[0].partition
        want = produced_to(puts, values, partition)
        got = consume(target, conn, topic, partition, want[0][0], "V1L-CONS-6")
        require(
            got.messages() == want,
            "V1L-CONS-6",
            f"CONSUME {topic} {partition} {want[0][0]}: {len(got.messages())} record(s), expected"
            f" all {len(want)} committed there",
            got.at("messages"),
        )
        unknown = target.name("never")
        none = consume(target, conn, unknown, 0, 0, "V1L-CONS-6")
        require(
            none.number("hw") == -1 and not none.messages(),
            "V1L-CONS-6",
            f"CONSUME {unknown} 0 0 (a topic never used): answered {none.shown()}, expected"
            " 'messages= hw=-1'",
            none.at("messages", "hw"),
        )
        args = f"{topic} 1000 0"
        bad = expect_error(
            target, conn, "CONSUME", args, BAD_REQUEST, "V1L-CONS-6", f"CONSUME {args}"
        )
        require(
            bad.message == "invalid partition",
            "V1L-CONS-6",
            f"CONSUME {args}: answered {bad.shown()}, expected the message 'invalid partition'",
            bad.at("message"),
        )
