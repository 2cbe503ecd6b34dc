"""The ``doc`` revision's layouts (the seed's, :mod:`conformance.protocols.iggy.doc`),
each a hand-written byte string checked both ways: decoded to its body, the body
encoded to the bytes, whole and with trailing bytes (refused strictly, ignored leniently
where the layout has an end), and cut short (an IggyError)."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.annotate import annotate
from conformance.protocols.iggy.errors import IggyError, UnknownCommand
from conformance.protocols.iggy.messages import CODES

S1 = {"kind": 1, "value": 1}
T2 = {"kind": 2, "value": "t"}
S1_BYTES = "01 04 01000000"  # Identifier numeric 1
T2_BYTES = "02 01 74"  # Identifier "t"
CONSUMER_BYTES = "01 07000000"  # Consumer kind 1, u32 id 7 (seed l.55-58)

REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    ("create_stream", {"stream_id": 5, "name": "s"}, "05000000 01 73"),
    (
        "create_topic",
        {"stream": S1, "topic_id": 2, "partitions_count": 3, "name": "t"},
        S1_BYTES + " 02000000 03000000 01 74",
    ),
    (
        "poll_messages",
        {
            "consumer": {"kind": 1, "value": 7},
            "stream": S1,
            "topic": T2,
            "partition_id": 1,
            "strategy": {"kind": 1, "value": 9},
            "count": 10,
            "auto_commit": True,
        },
        CONSUMER_BYTES + S1_BYTES + T2_BYTES + "01000000 01 0900000000000000 0a000000 01",
    ),
    (
        "get_consumer_offset",
        {"consumer": {"kind": 2, "value": 7}, "stream": S1, "topic": T2, "partition_id": 0},
        "02 07000000" + S1_BYTES + T2_BYTES + "00000000",
    ),
    (
        "store_consumer_offset",
        {
            "consumer": {"kind": 1, "value": 7},
            "stream": S1,
            "topic": T2,
            "partition_id": 2,
            "offset": 3,
        },
        CONSUMER_BYTES + S1_BYTES + T2_BYTES + "02000000 0300000000000000",
    ),
    *[
        (
            name,
            {"stream": S1, "topic": T2, "consumer_group_id": 4},
            S1_BYTES + T2_BYTES + "04000000",
        )
        for name in (
            "get_consumer_group",
            "create_consumer_group",
            "delete_consumer_group",
            "join_consumer_group",
            "leave_consumer_group",
        )
    ],
    (
        "send_messages",
        {
            "stream": S1,
            "topic": T2,
            "partitioning": {"kind": 2, "value": 1},
            "messages": [{"id": 1 << 100, "payload": b"ab"}, {"id": 3, "payload": b""}],
        },
        S1_BYTES
        + T2_BYTES
        + "02 04 01000000"  # partitioning: partition id 1
        + "00000000000000000000000010000000 02000000 6162"  # u128 id 2**100, length 2, "ab"
        + "03000000000000000000000000000000 00000000",  # id 3, length 0
    ),
    (
        "send_messages",
        {"stream": S1, "topic": T2, "partitioning": {"kind": 1, "value": {}}, "messages": []},
        S1_BYTES + T2_BYTES + "01 00",  # balanced, no messages
    ),
    # unchanged from classic: one of them
    ("get_stream", {"stream": S1}, S1_BYTES),
]

POLLED = {
    "partition_id": 1,
    "current_offset": 4,
    "messages": [
        {"offset": 4, "state": 1, "timestamp": 6, "id": 7, "checksum": 8, "payload": b"xy"}
    ],
}
POLLED_BYTES = (
    "01000000 0400000000000000 01000000"  # partition 1, current offset 4, 1 message
    "0400000000000000 01 0600000000000000"  # offset 4, state 1, timestamp 6
    "07000000000000000000000000000000 08000000"  # id 7, checksum 8
    "02000000 7879"  # (no headers) length 2, "xy"
)


def _frame(name: str, payload: bytes) -> bytes:
    return struct.pack("<I", CODES[name]) + payload


@pytest.mark.parametrize(("name", "body", "wire"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_a_doc_request_both_ways(name: str, body: dict[str, Any], wire: str) -> None:
    raw = bytes.fromhex(wire)
    assert codec.encode_request(name, body, "doc") == raw
    assert codec.decode_request(_frame(name, raw), "doc") == (name, body)
    for end in range(len(raw)):
        with contextlib.suppress(IggyError):  # cut short: an error, or fewer messages
            got = codec.decode_request(_frame(name, raw[:end]), "doc")
            assert name == "send_messages" and len(got[1]["messages"]) < len(body["messages"])
    if name != "send_messages":  # its messages run to the end: no trailing bytes
        with pytest.raises(IggyError):
            codec.decode_request(_frame(name, raw + b"\0"), "doc")
        assert codec.decode_request(_frame(name, raw + b"\0"), "doc", strict=False) == (
            name,
            body,
        )
    got = annotate(_frame(name, raw), "request")
    assert got.summary.startswith(name.upper()) and "malformed" not in got.summary
    assert sum(s.end - s.start for s in got.fields) == len(raw) + 4


def test_the_doc_poll_reply_both_ways() -> None:
    raw = bytes.fromhex(POLLED_BYTES)
    assert codec.encode_reply("poll_messages", POLLED, "doc") == raw
    assert codec.decode_reply("poll_messages", raw, "doc") == POLLED
    for end in range(len(raw)):
        with pytest.raises(IggyError):
            codec.decode_reply("poll_messages", raw[:end], "doc")
    got = annotate(b"\0\0\0\0" + raw, "reply", [_frame("poll_messages", b"")])
    names = [s.name for s in got.fields]
    assert "messages count" in names and "messages[0].state" in names


def test_a_classic_message_dict_encodes_in_doc() -> None:
    """The broker hands doc the messages it stores (classic's keys): doc takes its own."""
    stored = {**POLLED["messages"][0], "origin_timestamp": 5, "headers": b"", "reserved": 0}
    assert codec.encode_reply("poll_messages", {**POLLED, "messages": [stored]}, "doc") == (
        bytes.fromhex(POLLED_BYTES)
    )


def test_doc_has_no_login_and_classic_layouts_elsewhere() -> None:
    for name in ("login_user", "logout_user"):
        with pytest.raises(UnknownCommand):
            codec.decode_request(_frame(name, b""), "doc")
    assert codec.tables("doc")[1]["get_stream"] is codec.tables("classic")[1]["get_stream"]
    classic = bytes.fromhex("01" + "01 04 07000000" + S1_BYTES + T2_BYTES + "01 02000000")
    body = codec.decode_request_payload("get_consumer_offset", classic, "classic")
    assert body["consumer"] == {"kind": 1, "value": {"kind": 1, "value": 7}}
    with pytest.raises(IggyError):  # the same bytes are not doc's (5 bytes too many)
        codec.decode_request_payload("get_consumer_offset", classic, "doc")
    with pytest.raises(ValueError, match="revision"):
        codec.tables("seed")
