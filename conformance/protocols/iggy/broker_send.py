"""SEND_MESSAGES of the Iggy front-end.

Behaviour (sources at apache/iggy f5350d999; FACTS.md section 4 where it says so):

* the batch is judged before the stream and topic are looked up, as the real server does
  (in classic on the raw bytes, by the dispatcher: send_checks.py): an empty batch is
  4009 (InvalidMessagesCount, CM messages_batch_mut.rs ``validate``), a payload over
  64,000,000 bytes 4022, a user-header block over 100,000 bytes 4017 (same file).  An
  empty payload is stored: the server's batch validation has no lower bound (the 4025 of
  FACTS.md is the client-side builder's).
* then the stream (1009) and topic (2010), then the partition: balanced (a per-topic
  counter, from 0, modulo the partition count), partition id (3007 if there is none
  such), or messages key (XXH32 seed 0 of the key, modulo the count).  A balanced send to
  a topic of 0 partitions is 2010 (the real server's ``get_next_partition_id`` finds
  none, SV/metadata/reader.rs, and SV/binary/handlers/messages/send_messages_handler.rs
  answers TopicIdNotFound); a messages-key send there is 3008 (the real server divides
  by the partition count 0, SV/streaming/topics/helpers.rs: no answer to copy).
* a user-header block that is not a sequence of whole ``kind, u32 length, bytes`` entries
  in pairs, kinds 1..15, lengths 1..255, is refused with 4 (InvalidFormat) and nothing of
  the batch is stored: the rule of ``validate_user_headers``
  (BP/primitives/user_headers.rs), which the real server's send path does not call (it
  stores such a block as sent); SPEC.md IGG-HDR-2 makes refusing it this broker's
  convention (MAY).
* id 0 -> a random non-zero u128; the server timestamp is µs; the reply is empty.  A
  balanced send writes the topic's counter through after its append.
* the quirk partition-send-new-client: after a send to a partition id the connection goes
  on as a new client (:func:`_registered_again`).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    Refusal,
    TopicEntry,
    engine_topic,
    now_us,
    to_record,
)

if TYPE_CHECKING:
    from conformance.protocols.iggy.handler import IggySession

MAX_PAYLOAD = 64_000_000
MAX_USER_HEADERS = 100_000


def _new_id() -> int:
    while True:
        value = uuid.uuid4().int
        if value:
            return value


HEADER_KINDS = range(1, 16)
"""raw, string, bool, int8..int128, uint8..uint128, float32, float64 (FACTS.md section 4)."""


def header_block_problem(block: bytes) -> str | None:
    """Why ``block`` is not a well-formed user-header block, or None (an empty block is)."""
    pos, fields = 0, 0
    while pos < len(block):
        kind = block[pos]
        if kind not in HEADER_KINDS:
            return f"kind {kind} at byte {pos} (kinds are 1..15)"
        if len(block) - pos < 5:
            return f"a field at byte {pos} is cut before its length"
        length = int.from_bytes(block[pos + 1 : pos + 5], "little")
        if not 1 <= length <= 255:
            return f"a field of {length} bytes at byte {pos} (1..255)"
        if pos + 5 + length > len(block):
            return f"a field of {length} bytes at byte {pos} runs past the block"
        pos += 5 + length
        fields += 1
    if fields % 2:
        return f"{fields} fields: a key without its value"
    return None


def send_messages(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    if not messages:  # the batch first, then the lookups (classic: send_checks.py)
        raise Refusal(st.INVALID_MESSAGES_COUNT, "a SEND_MESSAGES without messages")
    for m in messages:
        if len(m.get("payload", b"")) > MAX_PAYLOAD:
            raise Refusal(st.TOO_BIG_MESSAGE_PAYLOAD, "a payload over 64,000,000 bytes")
        if len(m.get("headers", b"")) > MAX_USER_HEADERS:
            raise Refusal(st.TOO_BIG_USER_HEADERS, "a user-header block over 100,000 bytes")
    stream, topic = session.topic(body)
    for m in messages:
        problem = header_block_problem(bytes(m.get("headers", b"")))
        if problem is not None:
            raise Refusal(st.INVALID_FORMAT, f"a malformed user-header block: {problem}")
    balanced = topic.balanced
    partition = _choose_partition(session, topic, body["partitioning"])
    ts = now_us()
    records = [
        to_record(
            int(m.get("id", 0)) or _new_id(),
            int(m.get("origin_timestamp", 0)),
            ts,
            bytes(m.get("payload", b"")),
            bytes(m.get("headers", b"")),
        )
        for m in messages
    ]
    session.engine.append(engine_topic(stream.id, topic.id), partition, records)
    if topic.balanced != balanced:
        session.registry.save_balanced(stream, topic)
    if body["partitioning"].get("kind") == 2 and session.quirks.partition_send_new_client():
        _registered_again(session)
    return {}


def _registered_again(session: IggySession) -> None:
    """The quirk partition-send-new-client, a socket migration gone wrong: the connection
    goes on as a new client (another client id, the same user), and its old record's group
    memberships are left behind, never left."""
    old = session.client
    session.client = session.registry.add_client(old.address)  # the next free id
    session.client.user_id = old.user_id
    session.registry.clients.pop(old.id, None)


def _choose_partition(session: IggySession, topic: TopicEntry, partitioning: Any) -> int:
    count = len(topic.partitions)
    kind = partitioning.get("kind") if isinstance(partitioning, dict) else None
    value = partitioning.get("value") if isinstance(partitioning, dict) else None
    if kind == 2:
        if not isinstance(value, int) or not 0 <= value < count:
            raise Refusal(st.PARTITION_NOT_FOUND, f"topic {topic.id} has no partition {value}")
        return value
    if count == 0 and kind == 3:  # the real server divides by 0 here; refused instead
        raise Refusal(st.NO_PARTITIONS, f"topic {topic.id} has no partitions")
    if count == 0:  # the real server's next balanced partition is none: TopicIdNotFound
        raise Refusal(
            session.quirks.balanced_without_partitions(),
            f"topic {topic.id} has no partition to balance over",
        )
    if kind == 3:
        return session.quirks.key_partition(bytes(value or b""), count)
    chosen = topic.balanced % count
    topic.balanced += 1
    return chosen
