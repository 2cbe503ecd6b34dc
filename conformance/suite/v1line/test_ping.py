"""V1 line PING (SPEC.md, area "ping"): answered in ``doc``; in ``real`` an unknown command, as
the real broker has no PING (FACTS.md)."""

from __future__ import annotations

from conformance.protocols.v1line.errors import UNKNOWN_COMMAND
from conformance.suite.case import case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.verify import (
    call,
    expect_error,
    expect_ok,
    still_served,
)


@case("v1line/ping/1", "V1L-PING-1")
def test_ping_is_answered_on_a_fresh_connection_and_after_anything(target: CaseContext) -> None:
    """PING is answered with success on a new connection, after a PRODUCE and after an error
    (``doc`` only: the real broker has no PING, V1L-PING-3).

    V1L-PING-1: "`V1|<cid>|PING|` is answered with a success reply carrying its correlation id,
    on a fresh connection and after any other request."
    """
    with target.connect() as conn:
        expect_ok(target, conn, "PING", "", "V1L-PING-1", "PING on a fresh connection")
        topic = target.name("ping")
        call(target, conn, "PRODUCE", f"{topic} k:v", "V1L-PING-1", "PRODUCE")
        expect_ok(target, conn, "PING", "", "V1L-PING-1", "PING after a PRODUCE")
        call(target, conn, "CONSUME", f"{topic} x 0", "V1L-PING-1", "a bad CONSUME")
        expect_ok(target, conn, "PING", "", "V1L-PING-1", "PING after an error reply")


@case("v1line/ping/2", "V1L-PING-2")
def test_the_ping_reply_has_no_payload(target: CaseContext) -> None:
    """PING is answered exactly V1|<cid>|OK.

    V1L-PING-2: "the PING reply is exactly `V1|<cid>|OK` (no payload)."
    """
    with target.connect() as conn:
        got = expect_ok(target, conn, "PING", "", "V1L-PING-2", "PING")
        require(
            got.payload is None,
            "V1L-PING-2",
            f"PING answered {got.shown()}, expected exactly V1|{got.cid}|OK (no payload)",
            got.at("status"),
        )


@case("v1line/ping/3", "V1L-PING-3")
def test_ping_is_an_unknown_command_of_the_real_broker(target: CaseContext) -> None:
    """PING is answered V1|<cid>|ERR|UNKNOWN_COMMAND, on a fresh connection and after a PRODUCE,
    and the connection is still served.

    V1L-PING-3: "`V1|<cid>|PING|` is answered `V1|<cid>|ERR|UNKNOWN_COMMAND|<message>` with its
    correlation id, as any command the broker does not have, and the connection stays open."
    """
    with target.connect() as conn:
        expect_error(target, conn, "PING", "", UNKNOWN_COMMAND, "V1L-PING-3", "PING")
        call(target, conn, "PRODUCE", f"{target.name('ping')} k:v", "V1L-PING-3", "PRODUCE")
        expect_error(
            target, conn, "PING", "", UNKNOWN_COMMAND, "V1L-PING-3", "PING after a PRODUCE"
        )
        still_served(target, conn, "V1L-PING-3", "OFFSET after PING")
