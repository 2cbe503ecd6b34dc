"""Payloads the 0.8 server cannot take, each with the status it answers (IGG-FRAME-8): 3
when the payload does not decode (core/binary_protocol/src/codec.rs ``read_*`` run short,
an unknown discriminant in core/binary_protocol/src/primitives/), 4 when a decoded field
fails validation (core/server/src/binary/dispatch.rs ``decode``).  Sent raw, each decoded
in a comment."""

from __future__ import annotations

from conformance.client import Connection
from conformance.protocols.iggy.messages import CODES
from conformance.suite.iggy.verify import read, require_status, send_raw
from conformance.suite.target import CaseContext

POLL_TAIL = bytes.fromhex(
    "01 04 01000000"  # stream: numeric, length 4, 1
    " 01 04 01000000"  # topic: numeric, length 4, 1
    " 00 00000000"  # no partition
)
POLL_END = bytes.fromhex("01000000 00")  # count 1, no auto-commit
BAD_PAYLOADS = (
    ("get_stream", b"\x01", 3, "GET_STREAM with one byte (short)"),
    # kind 1, length 2, its value bytes missing: cut short before validation
    ("get_stream", b"\x01\x02", 3, "GET_STREAM with a numeric identifier cut short"),
    ("get_stream", b"\x01\x02\x07\x00", 4, "GET_STREAM with a numeric identifier of length 2"),
    ("get_stream", b"\x01\x03\x07\x00\x00", 4, "GET_STREAM with a numeric identifier of length 3"),
    (
        "poll_messages",  # consumer kind 3 (numeric id 1), strategy offset 0
        bytes.fromhex("03 01 04 01000000")
        + POLL_TAIL
        + bytes.fromhex("01 0000000000000000")
        + POLL_END,
        3,
        "POLL_MESSAGES with consumer kind 3",
    ),
    (
        "poll_messages",  # consumer 1 (kind 1, numeric id 1), strategy kind 9, value 0
        bytes.fromhex("01 01 04 01000000")
        + POLL_TAIL
        + bytes.fromhex("09 0000000000000000")
        + POLL_END,
        3,
        "POLL_MESSAGES with strategy kind 9",
    ),
    ("create_stream", b"\x02\xff\xfe", 3, "CREATE_STREAM with a name that is not UTF-8"),
    ("create_stream", b"\x00", 4, "CREATE_STREAM with an empty name"),
)


def refuse_malformed(ctx: CaseContext, conn: Connection, requirement: str) -> None:
    """Send each of :data:`BAD_PAYLOADS` and require its status, blaming ``requirement``."""
    for name, payload, status, what in BAD_PAYLOADS:
        send_raw(conn, CODES[name], payload, what)
        reply = read(ctx, conn, name, requirement, what)
        require_status(reply, status, requirement, what)
