"""Iggy user headers (classic only): every kind back byte for byte, malformed blocks
refused (SPEC.md, area "headers")."""

from __future__ import annotations

import struct

from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    FIRST,
    ident,
    message,
    poll,
    poll_body,
    polled,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import call
from conformance.suite.target import CaseContext

STRING = 2
VALUES: tuple[tuple[str, int, bytes], ...] = (
    ("a-raw", 1, b"\x00\xff\x10"),
    ("b-string", 2, "héllo".encode()),
    ("c-bool", 3, b"\x01"),
    ("d-int8", 4, struct.pack("<b", -5)),
    ("e-int16", 5, struct.pack("<h", -300)),
    ("f-int32", 6, struct.pack("<i", -70000)),
    ("g-int64", 7, struct.pack("<q", -(1 << 40))),
    ("h-int128", 8, (-(1 << 100)).to_bytes(16, "little", signed=True)),
    ("i-uint8", 9, struct.pack("<B", 250)),
    ("j-uint16", 10, struct.pack("<H", 65000)),
    ("k-uint32", 11, struct.pack("<I", 4_000_000_000)),
    ("l-uint64", 12, struct.pack("<Q", 1 << 63)),
    ("m-uint128", 13, ((1 << 127) + 5).to_bytes(16, "little")),
    ("n-float32", 14, struct.pack("<f", 1.5)),
    ("o-float64", 15, struct.pack("<d", -2.25)),
)
"""One header of each kind (FACTS.md section 4), keys sorted as the 0.8 client sends them."""


def entry(key_kind: int, key: bytes, value_kind: int, value: bytes) -> bytes:
    """``u8 kind, u32 len, key, u8 kind, u32 len, value``."""
    return (
        struct.pack("<BI", key_kind, len(key))
        + key
        + struct.pack("<BI", value_kind, len(value))
        + value
    )


def block(entries: tuple[tuple[str, int, bytes], ...]) -> bytes:
    return b"".join(entry(STRING, k.encode(), kind, v) for k, kind, v in entries)


@case("iggy/headers/1", "IGG-HDR-1")
def test_headers_of_every_kind_come_back_byte_for_byte(target: CaseContext) -> None:
    """A message with one user header of each of the 15 kinds is polled with the same header bytes.

    IGG-HDR-1: "a message's user-header block (entries of u8 key kind, u32 key length, key, u8
    value kind, u32 value length, value) comes back in the polled message byte for byte, for
    every kind: raw, string, bool, int8 to int128, uint8 to uint128, float32, float64 (codes 1
    to 15)."
    """
    headers = block(VALUES)
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "headers")
        send_messages(
            target,
            conn,
            sid,
            tid,
            to_partition(0),
            [message(target, b"h", headers=headers)],
            "IGG-HDR-1",
        )
        got = poll(target, conn, poll_body(target, sid, tid, 0, FIRST, 0, 1))
        back = polled(got)[0]["headers"] if polled(got) else b""
        require(
            back == headers,
            "IGG-HDR-1",
            f"the polled header block is {len(back)} bytes, not the {len(headers)} sent"
            + ("" if len(back) != len(headers) else " (same length, other bytes)"),
            got.at("messages[0].headers", asked=("messages[0].headers",)),
        )


BAD_BLOCKS = (
    ("a header value of kind 0", entry(STRING, b"k", 0, b"v")),
    ("a header key of kind 0", entry(0, b"k", STRING, b"v")),
    ("an empty header key", entry(STRING, b"", STRING, b"v")),
    ("an empty header value", entry(STRING, b"k", STRING, b"")),
)


@case("iggy/headers/2", "IGG-HDR-2")
def test_a_header_of_kind_0_or_empty_key_or_value_is_refused(target: CaseContext) -> None:
    """Header blocks with kind 0 or an empty key or value are each refused with a non-zero status.

    IGG-HDR-2: "a SEND_MESSAGES whose user-header block is not a well-formed entry sequence (a
    kind byte 0 or above 15, an empty key or value, a length running past the block) is refused
    with a non-zero status and nothing of it is stored."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "badheaders")
        for what, headers in BAD_BLOCKS:
            body = {
                "stream": ident(sid),
                "topic": ident(tid),
                "partitioning": to_partition(0),
                "messages": [message(target, b"bad", headers=headers)],
            }
            reply = call(
                target, conn, "send_messages", body, "IGG-HDR-2", f"SEND_MESSAGES with {what}"
            )
            require(
                reply.status != 0,
                "IGG-HDR-2",
                f"SEND_MESSAGES with {what}: status 0, expected a refusal",
                reply.at("status"),
            )
