"""Mini-Kafka FLUSH: its exact reply, and that it changes nothing CONSUME returns (SPEC.md,
area "flush").  MK-FLUSH-3 (what survives a crash) needs a crash the suite cannot cause."""

from __future__ import annotations

from conformance.protocols.minikafka import codec
from conformance.suite.case import case, require
from conformance.suite.minikafka.steps import flush, produce, produce_all, read_back, require_data
from conformance.suite.minikafka.verify import read, send
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


@case("minikafka/flush/1", "MK-FLUSH-1")
def test_flush_is_answered_000000060601_and_the_connection_serves_on(
    target: CaseContext,
) -> None:
    """FLUSH 0000000505 is answered 000000060601, twice, and a PRODUCE after it is answered.

    MK-FLUSH-1: "a FLUSH `0000000505` is answered `000000060601` exactly (success), and the
    connection goes on serving."
    """
    with target.connect() as conn:
        flush(target, conn)
        flush(target, conn)
        # served: a reply frame comes (what it holds is MK-PROD-1's business)
        send(conn, codec.Produce(target.name("after-flush"), b"x"))
        read(target, conn, "MK-FLUSH-1", "PRODUCE after two FLUSHes")


@case("minikafka/flush/2", "MK-FLUSH-2")
def test_flush_changes_nothing_consume_returns(target: CaseContext) -> None:
    """Three messages read the same before and after a FLUSH; the next PRODUCE gets offset 3.

    MK-FLUSH-2: "a FLUSH does not change what CONSUME returns: every message produced before it
    is read back the same after it."
    """
    with target.connect() as conn:
        topic = target.name("flushed")
        puts = produce_all(target, conn, topic, [b"a", b"\x00b", b""])
        before = read_back(target, conn, topic, 0, 3)
        require_data(before, puts, "MK-CONS-2", f"CONSUME {show(topic)} before FLUSH")
        flush(target, conn)  # a FLUSH reply it cannot read is MK-FLUSH-1's
        after = read_back(target, conn, topic, 0, 3)
        require_data(after, puts, "MK-FLUSH-2", f"CONSUME {show(topic)} after FLUSH")
        put = produce(target, conn, topic, b"d")
        require(
            put.offset == 3,
            "MK-FLUSH-2",
            f"PRODUCE after FLUSH to {show(topic)}, which held offsets 0..2: offset {put.offset},"
            " expected 3",
            put.reply.at("offset"),
        )
