"""V1 line PING (SPEC.md, area "ping")."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.target import CaseContext
from conformance.suite.v1line.verify import call, expect_ok, expect_parse_error, real


@case("v1line/ping/1", "V1L-PING-1")
def test_ping_is_answered_on_a_fresh_connection_and_after_anything(target: CaseContext) -> None:
    """PING is answered with success on a new connection, after a PRODUCE, an error and (in
    real, where the connection outlives it) a parse error.

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
        if real(target):  # in doc a broker may close after a parse error (V1L-ENV-12)
            expect_parse_error(target, conn, b"V1|5\n", "V1L-PING-1", "the line 'V1|5'")
            expect_ok(target, conn, "PING", "", "V1L-PING-1", "PING after a parse error")


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
