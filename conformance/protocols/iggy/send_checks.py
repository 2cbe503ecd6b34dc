"""What the 0.8 server checks in a classic SEND_MESSAGES payload before it looks the stream
and topic up, in its order, on the raw bytes (sans-IO; no decoding by the schema).

The real server reads SEND_MESSAGES in stages and never through the request decoder
(SV = core/server/src, CM = core/common/src, apache/iggy at f5350d999):

1. ``SV/binary/handlers/messages/send_messages_handler.rs`` ``handle_send_messages``: the
   u32 metadata length (more than the payload: 3, InvalidCommand); the stream and topic
   Identifiers by ``Identifier::from_raw_bytes`` (CM/types/identifier/mod.rs: an unknown
   kind, a length byte or value cut short, a length 0, a numeric length other than 4 are
   all 6, InvalidIdentifier, never 3 or 4 as in other commands); the Partitioning by
   ``Partitioning::from_raw_bytes`` (CM/types/message/partitioning.rs and
   partitioning_kind.rs: anything wrong is 3); the u32 message count (cut short: 3); an
   index table of 16 bytes a message and the messages after it (sizes that do not fit the
   payload: 3).
2. ``IggyMessagesBatchMut::validate`` (CM/types/message/messages_batch_mut.rs): no message
   is 4009 (InvalidMessagesCount); then per message, in order, its index entry
   (``validate_index_at``: a non-zero u32 offset 4031 NonZeroOffset, a non-zero u64
   timestamp 4032 NonZeroTimestamp), the message (``validate_message_at``: its bytes are
   from the previous entry's position to its own, the last one's to the end of the
   messages whatever its position says (CM/types/message/message_boundaries.rs); fewer
   than its 64-byte header says it needs is 4033 MissingIndex; a payload over 64,000,000
   bytes 4022 TooBigMessagePayload; a user-header block over 100,000 bytes 4017
   TooBigUserHeaders), a header offset below the previous one (4100, InvalidOffset) and
   a position below the previous one (10011, CannotReadIndexPosition); last, the sizes the
   headers give (64 + payload + user headers) must add up to the bytes of the messages
   (4036, InvalidMessagesSize).

Only then does the server resolve the stream and topic (1009, 2010) and the partition.
:func:`refusal` gives the status of the first check that fails, or None;
:func:`as_decoded` rewrites the index table the way the server reads it (each entry's
position is where its message ends; the last one's is never read) so that the schema
decoder, which checks the table against the messages, accepts what the server accepts.
Both read the bytes only: a payload over 64 MB costs no copy before it is refused.
"""

from __future__ import annotations

import struct

from conformance.protocols.iggy import errors as st

INDEX_SIZE = 16
HEADER_SIZE = 64
MAX_PAYLOAD = 64_000_000
"""CM/types/message/iggy_message.rs ``MAX_PAYLOAD_SIZE``."""
MAX_USER_HEADERS = 100_000
"""CM/types/message/iggy_message.rs ``MAX_USER_HEADERS_SIZE``."""
_U32 = struct.Struct("<I")
_INDEX = struct.Struct("<IIQ")
_LENGTHS = struct.Struct("<II")  # user-headers length, payload length at header offset 48
_OFFSET = struct.Struct("<Q")  # the header's offset field at header offset 24


class Refused(Exception):
    """The status the server answers and why."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def _identifier_end(meta: bytes, pos: int, what: str) -> int:
    """Where the Identifier at ``pos`` ends; 6 for anything ``from_raw_bytes`` refuses."""
    if pos >= len(meta):
        raise Refused(st.INVALID_IDENTIFIER, f"the {what} Identifier is missing")
    kind = meta[pos]
    if kind not in (1, 2):
        raise Refused(st.INVALID_IDENTIFIER, f"the {what} Identifier has kind {kind}")
    if pos + 1 >= len(meta):
        raise Refused(st.INVALID_IDENTIFIER, f"the {what} Identifier has no length byte")
    length = meta[pos + 1]
    if pos + 2 + length > len(meta):
        raise Refused(st.INVALID_IDENTIFIER, f"the {what} Identifier's value is cut short")
    if length == 0 or (kind == 1 and length != 4):
        raise Refused(
            st.INVALID_IDENTIFIER, f"the {what} Identifier (kind {kind}) has length {length}"
        )
    return pos + 2 + length


def _partitioning_end(meta: bytes, pos: int) -> int:
    if pos + 2 > len(meta):
        raise Refused(st.INVALID_COMMAND, "the Partitioning is cut short")
    kind, length = meta[pos], meta[pos + 1]
    if kind not in (1, 2, 3) or (kind == 1 and length != 0) or (kind == 2 and length != 4):
        raise Refused(st.INVALID_COMMAND, f"a Partitioning of kind {kind} and length {length}")
    if pos + 2 + length > len(meta):
        raise Refused(st.INVALID_COMMAND, "the Partitioning's value is cut short")
    return pos + 2 + length


def layout(payload: bytes) -> tuple[int, int, int]:
    """(message count, where the index table starts, where the messages start), checked as
    the handler reads them (step 1 of the module doc); :class:`Refused` otherwise."""
    total = len(payload)
    if total < 4:
        raise Refused(st.INVALID_COMMAND, f"a payload of {total} bytes has no metadata length")
    (meta_size,) = _U32.unpack_from(payload)
    if meta_size > total - 4:
        raise Refused(
            st.INVALID_COMMAND, f"a metadata length of {meta_size} in a {total}-byte payload"
        )
    meta = payload[4 : 4 + meta_size]
    pos = _identifier_end(meta, 0, "stream")
    pos = _identifier_end(meta, pos, "topic")
    pos = _partitioning_end(meta, pos)
    if pos + 4 > len(meta):
        raise Refused(st.INVALID_COMMAND, "the metadata has no u32 message count")
    (count,) = _U32.unpack_from(meta, pos)
    index_at = 4 + meta_size
    if index_at + count * INDEX_SIZE > total:
        raise Refused(
            st.INVALID_COMMAND, f"{count} index entries do not fit a {total}-byte payload"
        )
    return count, index_at, index_at + count * INDEX_SIZE


def refusal(payload: bytes, check_index: bool = True) -> Refused | None:
    """The server's answer to a classic SEND_MESSAGES ``payload`` before any lookup, or None
    when it would go on to the stream and topic.  ``check_index`` False skips the checks
    of the index fields and of the total size (the quirk send-index-unchecked)."""
    try:
        _check(payload, check_index)
    except Refused as exc:
        return exc
    return None


def _check(payload: bytes, check_index: bool) -> None:
    count, index_at, start = layout(payload)
    if count == 0:
        raise Refused(st.INVALID_MESSAGES_COUNT, "a SEND_MESSAGES of no message")
    messages_len = len(payload) - start
    sizes, prev_offset, prev_position, begin = 0, 0, 0, 0
    for i in range(count):
        zero, position, timestamp = _INDEX.unpack_from(payload, index_at + i * INDEX_SIZE)
        if check_index and zero:
            raise Refused(st.NON_ZERO_OFFSET, f"index entry {i} has offset {zero}, not 0")
        if check_index and timestamp:
            raise Refused(st.NON_ZERO_TIMESTAMP, f"index entry {i} has timestamp {timestamp}")
        end = messages_len if i == count - 1 else position
        if not begin <= end <= messages_len or end - begin < HEADER_SIZE:
            raise Refused(st.MISSING_INDEX, f"message {i} has no room between its positions")
        at = start + begin
        headers_len, payload_len = _LENGTHS.unpack_from(payload, at + 48)
        size = HEADER_SIZE + payload_len + headers_len
        if size > end - begin:
            raise Refused(st.MISSING_INDEX, f"message {i} needs {size} bytes, has {end - begin}")
        if payload_len > MAX_PAYLOAD:
            raise Refused(st.TOO_BIG_MESSAGE_PAYLOAD, f"message {i}: a payload over 64,000,000")
        if headers_len > MAX_USER_HEADERS:
            raise Refused(st.TOO_BIG_USER_HEADERS, f"message {i}: user headers over 100,000")
        (offset,) = _OFFSET.unpack_from(payload, at + 24)
        if offset < prev_offset:
            raise Refused(st.INVALID_OFFSET, f"message {i}'s offset {offset} goes back")
        if position < prev_position:
            raise Refused(st.CANNOT_READ_INDEX_POSITION, f"index entry {i}'s position goes back")
        prev_offset, prev_position = offset, position
        sizes += size
        begin = end
    if check_index and sizes != messages_len:
        raise Refused(
            st.INVALID_MESSAGES_SIZE,
            f"the messages' headers add up to {sizes} bytes, {messages_len} were sent",
        )


def as_decoded(payload: bytes) -> bytes:
    """``payload`` with its index table as the server reads it, each entry ``0, the end of
    its message, 0`` (the ends from the messages' headers), for the schema decoder; the
    payload as it is when its layout does not read (the decoder then refuses it)."""
    try:
        count, index_at, start = layout(payload)
    except Refused:
        return payload
    table, end = bytearray(), 0
    for _ in range(count):
        at = start + end
        if at + HEADER_SIZE > len(payload):
            return payload
        headers_len, payload_len = _LENGTHS.unpack_from(payload, at + 48)
        end += HEADER_SIZE + payload_len + headers_len
        table += _INDEX.pack(0, end, 0)
    return payload[:index_at] + bytes(table) + payload[start:]
