"""The messages of SEND_MESSAGES and POLL_MESSAGES: a layout the schema machinery cannot
express, encoded and decoded here (sans-IO).

Each message is a 64-byte header, then its payload, then its user-header block (payload
BEFORE headers), with both lengths in the header, far from the bytes they count
(BP/message_layout.rs, BP/requests/messages/send_messages.rs; FACTS.md section 4):

====  =====================  ==========================================
off   field                  a client sends
====  =====================  ==========================================
0     u64 checksum           0 (the server computes XXH3-64)
8     u128 id                its id, or 0 (the server assigns one)
24    u64 offset             0
32    u64 timestamp          0
40    u64 origin_timestamp   its clock, µs
48    u32 user_headers_len   bytes of the user-header block
52    u32 payload_len
56    u64 reserved           0
====  =====================  ==========================================

A SEND_MESSAGES request puts an index table before the messages: per message 16 bytes,
``u32 0``, ``u32`` the cumulative end of the messages so far (this one included), ``u64
0``.  The index is derived from the messages when encoding and checked against them when
decoding: an entry that differs is an :class:`~.errors.IggyError`, so that a decoded
request re-encodes to the same bytes.  A POLL_MESSAGES reply has no index: its messages
follow its ``u32 messages_count``.

A message is a dict: ``checksum``, ``id``, ``offset``, ``timestamp``,
``origin_timestamp``, ``reserved`` (ints, 0 when left out), ``payload`` and ``headers``
(bytes; the user-header block kept raw, see :data:`USER_HEADERS`).  Every count and length
is checked against the bytes left before anything is read for it.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from conformance.annotation import shifted
from conformance.plugin import FieldSpan
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.messages import message
from conformance.wire.schema import UINT8, Bytes, Repeated, f, struct_of
from conformance.wire.schema_types import shown

HEADER = struct.Struct("<Q16sQQQIIQ")
HEADER_SIZE = HEADER.size  # 64
INDEX = struct.Struct("<IIQ")
INDEX_SIZE = INDEX.size  # 16
U128 = (1 << 128) - 1
INT_FIELDS = ("checksum", "id", "offset", "timestamp", "origin_timestamp", "reserved")

USER_HEADERS = message(
    "UserHeaders",
    [
        f(
            "entries",
            Repeated(
                struct_of(
                    "UserHeader",
                    f("key_kind", UINT8),
                    f("key", Bytes("key", prefix="u32")),
                    f("value_kind", UINT8),
                    f("value", Bytes("value", prefix="u32")),
                )
            ),
        )
    ],
    "A message's user-header block: entries of u8 kind, u32 length, bytes for the key and"
    " the value, to the end of the block (CM/wire_conversions.rs, BP/primitives/user_headers.rs)",
)
"""The user-header block, declared for those who want its entries (the batch keeps it raw)."""


def message_size(msg: Mapping[str, Any]) -> int:
    return HEADER_SIZE + len(msg.get("payload", b"")) + len(msg.get("headers", b""))


def encode_message(out: bytearray, msg: Mapping[str, Any]) -> None:
    """One message: its header (lengths computed), payload, then user headers."""
    payload, headers = bytes(msg.get("payload", b"")), bytes(msg.get("headers", b""))
    ints = [int(msg.get(k, 0)) for k in INT_FIELDS]
    if not 0 <= ints[1] <= U128:
        raise ValueError(f"message id {ints[1]} does not fit a u128")
    out += HEADER.pack(
        ints[0],
        ints[1].to_bytes(16, "little"),
        ints[2],
        ints[3],
        ints[4],
        len(headers),
        len(payload),
        ints[5],
    )
    out += payload
    out += headers


def decode_message(data: bytes, pos: int, what: str) -> tuple[dict[str, Any], int]:
    """The message at ``data[pos:]`` and the offset after it."""
    if len(data) - pos < HEADER_SIZE:
        raise IggyError(f"{what}: a 64-byte header at offset {pos}, {len(data) - pos} left")
    checksum, raw_id, offset, ts, origin, hlen, plen, reserved = HEADER.unpack_from(data, pos)
    start = pos + HEADER_SIZE
    if plen + hlen > len(data) - start:
        raise IggyError(
            f"{what}: payload {plen} + headers {hlen} bytes at offset {start},"
            f" {len(data) - start} left"
        )
    end = start + plen + hlen
    msg = {
        "checksum": checksum,
        "id": int.from_bytes(raw_id, "little"),
        "offset": offset,
        "timestamp": ts,
        "origin_timestamp": origin,
        "reserved": reserved,
        "payload": data[start : start + plen],
        "headers": data[start + plen : end],
    }
    return msg, end


def encode_send_tail(messages: Sequence[Mapping[str, Any]]) -> bytes:
    """The index table and the messages of a SEND_MESSAGES request."""
    out, end = bytearray(), 0
    for msg in messages:
        end += message_size(msg)
        out += INDEX.pack(0, end, 0)
    for msg in messages:
        encode_message(out, msg)
    return bytes(out)


def decode_send_tail(
    data: bytes, pos: int, count: int, *, whole: bool = True
) -> list[dict[str, Any]]:
    """``count`` index entries and messages from ``data[pos:]``, to its end exactly
    (``whole``) or ignoring bytes after the last one."""
    if count * (INDEX_SIZE + HEADER_SIZE) > len(data) - pos:
        raise IggyError(f"{count} messages claimed, {len(data) - pos} bytes left")
    index = [INDEX.unpack_from(data, pos + i * INDEX_SIZE) for i in range(count)]
    pos += count * INDEX_SIZE
    messages, base = [], pos
    for i in range(count):
        msg, pos = decode_message(data, pos, f"messages[{i}]")
        if index[i] != (0, pos - base, 0):
            raise IggyError(
                f"index[{i}] is {index[i]}, expected (0, {pos - base}, 0):"
                " the messages end elsewhere"
            )
        messages.append(msg)
    if whole and pos != len(data):
        raise IggyError(f"{len(data) - pos} bytes after the last message")
    return messages


def encode_polled(messages: Sequence[Mapping[str, Any]]) -> bytes:
    """The messages of a POLL_MESSAGES reply (after its ``messages_count``)."""
    out = bytearray()
    for msg in messages:
        encode_message(out, msg)
    return bytes(out)


def decode_polled(data: bytes, pos: int, count: int) -> list[dict[str, Any]]:
    """``count`` messages from ``data[pos:]``, to its end exactly."""
    if count * HEADER_SIZE > len(data) - pos:
        raise IggyError(f"{count} messages claimed, {len(data) - pos} bytes left")
    messages = []
    for i in range(count):
        msg, pos = decode_message(data, pos, f"messages[{i}]")
        messages.append(msg)
    if pos != len(data):
        raise IggyError(f"{len(data) - pos} bytes after the last message")
    return messages


# ------------------------------------------------------------------ annotation

HEADER_FIELDS = (
    ("checksum", 0, 8),
    ("id", 8, 24),
    ("offset", 24, 32),
    ("timestamp", 32, 40),
    ("origin_timestamp", 40, 48),
    ("headers length", 48, 52),
    ("payload length", 52, 56),
    ("reserved", 56, 64),
)
"""A message header's fields as the annotation names them (``messages[i].<name>``)."""


def annotate_index(data: bytes, pos: int, count: int, spans: list[FieldSpan]) -> int:
    """The spans of the index table of ``count`` entries at ``pos`` (``index[i].zero``,
    ``index[i].position``, ``index[i].reserved``), as far as the data goes; the offset
    after it."""
    for i in range(count):
        if len(data) - pos < INDEX_SIZE:
            if pos < len(data):
                spans.append(FieldSpan(f"index[{i}]", pos, len(data), data[pos:]))
            return len(data)
        zero, position, reserved = INDEX.unpack_from(data, pos)
        for name, start, end, value in (
            ("zero", 0, 4, zero),
            ("position", 4, 8, position),
            ("reserved", 8, 16, reserved),
        ):
            spans.append(FieldSpan(f"index[{i}].{name}", pos + start, pos + end, value))
        pos += INDEX_SIZE
    return pos


def annotate_messages(
    data: bytes, pos: int, count: int, spans: list[FieldSpan]
) -> tuple[tuple[int, int], ...]:
    """The spans of ``count`` messages at ``pos`` (``messages[i].id``, ``messages[i].payload
    length``, ``messages[i].payload``, the user-header block's entries as
    ``messages[i].headers.entries[j].key``...), walked as far as the data goes (a header
    cut short is one ``messages[i]`` span, a length past the data gives its value the
    rest); the span of each message, for its count.  Never raises."""
    items: list[tuple[int, int]] = []
    for i in range(count):
        if pos >= len(data):
            break
        at = f"messages[{i}]"
        if len(data) - pos < HEADER_SIZE:
            spans.append(FieldSpan(at, pos, len(data), data[pos:]))
            items.append((pos, len(data)))
            break
        unpacked = HEADER.unpack_from(data, pos)
        values = [*unpacked[:1], int.from_bytes(unpacked[1], "little"), *unpacked[2:]]
        hlen, plen = values[5], values[6]
        p_start = pos + HEADER_SIZE
        p_end = min(p_start + plen, len(data))
        h_end = min(p_end + hlen, len(data))
        for (name, start, end), value in zip(HEADER_FIELDS, values, strict=True):
            counts = None
            if name == "payload length":
                counts = (p_start, p_end)
            elif name == "headers length":
                counts = (p_end, h_end)
            spans.append(
                FieldSpan(f"{at}.{name}", pos + start, pos + end, value, counts, order="little")
            )
        spans.append(FieldSpan(f"{at}.payload", p_start, p_end, shown(data[p_start:p_end])))
        _annotate_headers(data, p_end, h_end, f"{at}.headers", spans)
        items.append((pos, h_end))
        pos = h_end
    return tuple(items)


def _annotate_headers(data: bytes, start: int, end: int, at: str, spans: list[FieldSpan]) -> None:
    """A user-header block: its entries when it has any (tolerantly), else one span."""
    block = data[start:end]
    inner = USER_HEADERS.annotate(block, 0, tolerant=True) if block else []
    if not inner:
        spans.append(FieldSpan(at, start, end, shown(block)))
        return
    spans += [replace(s, name=f"{at}.{s.name}") for s in shifted(inner, start)]
