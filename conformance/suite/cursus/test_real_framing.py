"""Cursus revision real: the 16 MiB frame limit (SPEC.md, area "rframing")."""

from __future__ import annotations

from conformance.client import PeerClosed, ReplyTimeout
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.real_messages import REAL_FRAME_LIMIT
from conformance.suite.case import Violation, case, require
from conformance.suite.cursus.verify import expect_close_or_error, reply_payload, shown
from conformance.suite.target import CaseContext


@case("cursus/rframing/1", "CUR-RFRAME-1")
def test_a_frame_of_exactly_16_mib_is_processed(target: CaseContext) -> None:
    """A frame of exactly 16 MiB is read whole and processed.

    CUR-RFRAME-1: "a frame whose length N is exactly 16 MiB (16777216) is read whole and its payload
    processed like any other (answered, not refused as too large)."
    """
    with target.connect() as conn:
        # 01000000 'LIST' and 16 MiB - 4 line feeds: a raw LIST the broker trims to its name
        payload = b"LIST" + b"\n" * (REAL_FRAME_LIMIT - 4)
        try:
            conn.send(codec.frame(payload), summary="16 MiB: LIST and line feeds")
        except (PeerClosed, ReplyTimeout) as exc:
            raise Violation(
                "CUR-RFRAME-1",
                "the target stopped reading or closed on a 16 MiB frame, expected it processed",
                exc.evidence,
            ) from None
        what = "a raw LIST padded with line feeds to exactly 16 MiB"
        read = reply_payload(target, conn, "CUR-RFRAME-1", what, max(target.timeout, 20.0))
        require(
            read.payload.startswith(b"OK"),
            "CUR-RFRAME-1",
            f"{what} was answered {shown(read)}, expected the LIST reply 'OK count=...'",
            read.at("word0"),
        )


@case("cursus/rframing/2", "CUR-RFRAME-2")
def test_a_length_of_16_mib_plus_one_closes_the_connection(target: CaseContext) -> None:
    """A 16 MiB + 1 length prefix, with no payload after it, is refused from the prefix alone.

    CUR-RFRAME-2: "a frame whose length N exceeds 16 MiB is refused from its prefix alone: the
    connection is closed without waiting for the payload (the real broker sends no reply; an
    `ERROR:` line before the close is tolerated)."
    """
    with target.connect() as conn:
        conn.send((REAL_FRAME_LIMIT + 1).to_bytes(4, "big"), summary="prefix 16 MiB + 1")
        expect_close_or_error(target, conn, "CUR-RFRAME-2", "a 16 MiB + 1 length prefix")


@case("cursus/rframing/3", "CUR-RFRAME-2")
def test_the_document_limit_of_64_mib_is_refused_too(target: CaseContext) -> None:
    """A 64 MiB length prefix (the document's limit) is over the real limit: refused.

    CUR-RFRAME-2: "a frame whose length N exceeds 16 MiB is refused from its prefix alone: the
    connection is closed without waiting for the payload ..."
    """
    with target.connect() as conn:
        conn.send((64 * 1024 * 1024).to_bytes(4, "big") + b"LIST", summary="prefix 64 MiB")
        expect_close_or_error(target, conn, "CUR-RFRAME-2", "a 64 MiB length prefix")
