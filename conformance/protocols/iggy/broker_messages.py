"""POLL_MESSAGES and the consumer offsets of the Iggy front-end.

Behaviour (sources at apache/iggy f5350d999; FACTS.md section 4 where it says so):

* poll (SV/streaming/partitions/ops.rs ``poll_messages``, SV/shard/handlers.rs): offset
  (nothing past the current offset), timestamp (the first message at or after the value,
  µs), first (0), last (the last ``count``), next (the stored offset + 1, or 0 when none
  is stored); count 0 returns nothing and commits nothing, only the partition and its
  current offset (SV/shard/handlers.rs, PollMessages: ``args.count == 0``); with
  auto_commit the offset of the last message returned is stored.  A group's Next and
  auto-commit read and store the group's offset, one per group and partition
  (SV/streaming/partitions/ops.rs ``consumer_group_offsets``, SV/shard/system/messages.rs
  ``auto_commit_consumer_offset_from_local_partition``).  A consumer (kind 1) without a
  partition reads partition 0; a group member (kind 2) without one reads its partitions
  in turn, one per poll; a partition not its own (named, SV/metadata/reader.rs
  ``resolve_consumer_group_partition``), or none dealt to it, is the empty reply
  ``partition 0, offset 0, count 0`` (SV/shard/system/messages.rs ``poll_messages``); a
  non-member is 5006, an unknown group 5000.
* offsets: kept per (consumer kind, consumer id or group id, partition), durable (each
  store, auto-commit and delete is written through: broker_state.py).  STORE and DELETE
  resolve the partition as the real server does (``resolve_consumer_with_partition_id``
  with no advance, SV/shard/system/utils.rs, SV/metadata/reader.rs): a consumer's is the
  one given or 0; a group's needs membership (5006) and is the partition given if the
  member holds it, else the member's current one, and one not held, or none at all, is
  3022 (NotResolvedConsumer).  A partition the topic lacks is 3007; store past the
  partition's current offset, or on a partition that never had a message, is 4100
  (``validate_partition_offset``); delete with none stored is 3021 (ConsumerOffsetNotFound,
  SV/shard/system/consumer_offsets.rs ``delete_consumer_offset_base``).  GET answers the
  empty reply for everything it cannot find, stream and topic included, and for a group
  needs no membership and reads partition given-or-0
  (SV/binary/handlers/consumer_offsets/get_consumer_offset_handler.rs).

SEND_MESSAGES is broker_send.py's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import xxhash

from conformance.protocols.iggy import batch, broker_groups
from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    GroupEntry,
    OffsetKey,
    Refusal,
    StreamEntry,
    TopicEntry,
    engine_topic,
    from_record,
    identifier,
)

if TYPE_CHECKING:
    from conformance.protocols.iggy.handler import IggySession

OFFSET, TIMESTAMP, FIRST, LAST, NEXT = 1, 2, 3, 4, 5


def partition_size(session: IggySession, stream: StreamEntry, topic: TopicEntry, p: int) -> int:
    """Bytes stored in partition ``p`` as Iggy counts them (64 + payload + user headers),
    its records appended since the last count added first, whichever protocol wrote them."""
    if p >= len(topic.sizes):
        return 0
    name = engine_topic(stream.id, topic.id)
    del topic.counted[len(topic.sizes) :]
    topic.counted += [0] * (len(topic.sizes) - len(topic.counted))
    offset, hwm = topic.counted[p], session.engine.high_watermark(name, p)
    while offset < hwm and (batch := session.engine.read(name, p, offset, 1000)):
        topic.sizes[p] += sum(from_record(r).size for r in batch)
        offset = batch[-1].offset + 1
    topic.counted[p] = offset
    return topic.sizes[p]


# ------------------------------------------------------------------ poll


def _partition_given(body: dict[str, Any]) -> int | None:
    if "partition_flag" in body:
        return int(body["partition_id"]) if body["partition_flag"] == 1 else None
    value = body.get("partition_id")
    return None if value is None else int(value)


def _consumer(body: dict[str, Any]) -> tuple[int, Any]:
    consumer = body["consumer"]
    kind = int(consumer.get("kind", 0))
    value = consumer.get("value", consumer.get("id"))
    return kind, value


def _group_partition(
    session: IggySession,
    stream: StreamEntry,
    topic: TopicEntry,
    group: GroupEntry,
    given: int | None,
    advance: bool,
) -> int | None:
    """The partition a member (5006 if the session is not one) reads or stores for as
    ``resolve_consumer_group_partition`` picks it (SV/metadata/reader.rs): ``given`` if it
    is in the member's list, else None; without one the member's current partition, None
    if it has none.  ``advance``: the member moves on to its next partition (POLL)."""
    member, owned = broker_groups.member_partitions(session, stream, topic, group)
    if given is not None:
        if advance and session.quirks.polls_any_partition():
            return given
        return given if given in owned else None
    if not owned:
        return None
    turn = group.cursors.get(member, 0)
    if advance:
        group.cursors[member] = turn + 1
    return owned[turn % len(owned)]


def _poll_target(
    session: IggySession, body: dict[str, Any]
) -> tuple[StreamEntry, TopicEntry, int | None, OffsetKey | None]:
    """The partition a consumer polls and its offset key; (None, None): nothing to read."""
    stream, topic = session.topic(body)
    kind, value = _consumer(body)
    given = _partition_given(body)
    if kind == 2:
        _, _, group = session.group({**body, "group": value})
        p = _group_partition(session, stream, topic, group, given, advance=True)
        held_as = session.quirks.group_offset_kind()  # 2: the group's offset (IGG-GROUP-12)
        return stream, topic, p, None if p is None else (held_as, group.id, p)
    p = 0 if given is None else given
    if not 0 <= p < len(topic.partitions):
        raise Refusal(st.PARTITION_NOT_FOUND, f"topic {topic.id} has no partition {p}")
    return stream, topic, p, (1, identifier(value)[1], p)


def poll_messages(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, p, key = _poll_target(session, body)
    if p is None or key is None:
        return {"partition_id": 0, "current_offset": 0, "messages": []}
    name = engine_topic(stream.id, topic.id)
    hwm = session.engine.high_watermark(name, p)
    current = max(hwm - 1, 0)
    strategy, count = body["strategy"], session.quirks.poll_count(int(body["count"]), hwm)
    kind, value = int(strategy.get("kind", 0)), int(strategy.get("value", 0))
    if kind == OFFSET:
        start = value
    elif kind == TIMESTAMP:
        start = _first_at(session, name, p, hwm, value)
    elif kind == FIRST:
        start = 0
    elif kind == LAST:
        start = max(hwm - count, 0)
    elif kind == NEXT:
        stored = topic.offsets.get(key)
        start = 0 if stored is None else session.quirks.next_start(stored)
    else:
        raise Refusal(st.INVALID_COMMAND, f"no polling strategy {kind}")
    records = session.engine.read(name, p, start, count) if count and start < hwm else []
    if body.get("auto_commit") and records:
        topic.offsets[key] = records[-1].offset
        session.registry.save_offset(stream, topic, key)
    polled = [_polled(session, from_record(r)) for r in records]
    return {"partition_id": p, "current_offset": current, "messages": polled}


def _first_at(session: IggySession, name: str, p: int, hwm: int, ts: int) -> int:
    """The first offset whose server timestamp (µs) is at or after ``ts`` (timestamps
    never go down in a partition: binary search); ``hwm`` when there is none."""
    lo, hi = 0, hwm
    while lo < hi:
        mid = (lo + hi) // 2
        if from_record(session.engine.read(name, p, mid, 1)[0]).timestamp < ts:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _polled(session: IggySession, m: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "checksum": 0,
        "id": m.id,
        "offset": m.offset,
        "timestamp": m.timestamp,
        "origin_timestamp": m.origin_timestamp,
        "reserved": 0,
        "payload": m.payload,
        "headers": m.headers,
    }
    out = bytearray()
    batch.encode_message(out, msg)
    checksum = xxhash.xxh3_64_intdigest(bytes(out[8:]))
    if not session.classic:  # doc's checksum is a u32: the low half of classic's
        msg["state"] = 0
        checksum &= 0xFFFFFFFF
    msg["checksum"] = session.quirks.checksum(checksum)
    return msg


# ------------------------------------------------------------------ offsets


def _offset_target(
    session: IggySession, body: dict[str, Any]
) -> tuple[StreamEntry, TopicEntry, int, OffsetKey]:
    """STORE and DELETE: the partition and offset key, resolved as the real server's
    ``resolve_consumer_with_partition_id(.., false)`` does (SV/shard/system/utils.rs): a
    consumer's partition is the one given or 0; a group's needs the session to be a member
    (5006; an unknown group 5000) and is the partition given if the member holds it, else
    the member's current one; none resolved is 3022 (NotResolvedConsumer,
    SV/shard/system/consumer_offsets.rs).  A partition the topic lacks is 3007."""
    stream, topic = session.topic(body)
    kind, value = _consumer(body)
    given = _partition_given(body)
    if kind == 2:
        _, _, group = session.group({**body, "group": value})
        p = _group_partition(session, stream, topic, group, given, advance=False)
        if p is None:
            raise Refusal(
                st.NOT_RESOLVED_CONSUMER,
                f"group {group.id}: partition {given} is not among the member's partitions"
                if given is not None
                else f"group {group.id}: the member holds no partition",
            )
        key: OffsetKey = (2, group.id, p)
    else:
        p = 0 if given is None else given
        key = (1, identifier(value)[1], p)
    if not 0 <= p < len(topic.partitions):
        raise Refusal(st.PARTITION_NOT_FOUND, f"topic {topic.id} has no partition {p}")
    return stream, topic, p, key


def store_consumer_offset(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, p, key = _offset_target(session, body)
    offset = int(body["offset"])
    hwm = session.engine.high_watermark(engine_topic(stream.id, topic.id), p)
    empty = hwm == 0 and session.quirks.refuses_empty_partition_offsets()
    if session.quirks.checks_stored_offset() and (empty or offset > max(hwm - 1, 0)):
        raise Refusal(
            st.INVALID_OFFSET, f"offset {offset} is past partition {p}'s current {hwm - 1}"
        )
    topic.offsets[key] = offset
    session.registry.save_offset(stream, topic, key)
    return {}


def get_consumer_offset(session: IggySession, body: dict[str, Any]) -> dict[str, Any] | None:
    """Never an error past the decode and the login gate: an unknown stream, topic, group
    or partition, and no offset stored, are all the empty reply (SV/binary/handlers/
    consumer_offsets/get_consumer_offset_handler.rs).  A group's offset needs no
    membership and its partition is the one given or 0 (SV/shard/system/
    consumer_offsets.rs ``get_consumer_offset``)."""
    try:
        stream, topic = session.topic(body)
    except Refusal:
        return None
    kind, value = _consumer(body)
    given = _partition_given(body)
    p = 0 if given is None else given
    key: OffsetKey
    if kind == 2:
        gkind, gvalue = identifier(value)
        group = session.registry.group_by(topic, gkind, gvalue, session.quirks.resolves_names())
        if group is None:
            return None
        key = (2, group.id, p)
    else:
        key = (1, identifier(value)[1], p)
    stored = topic.offsets.get(key)
    if not 0 <= p < len(topic.partitions) or stored is None:
        return None
    hwm = session.engine.high_watermark(engine_topic(stream.id, topic.id), p)
    return {"partition_id": p, "current_offset": max(hwm - 1, 0), "stored_offset": stored}


def delete_consumer_offset(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, _, key = _offset_target(session, body)
    if key not in topic.offsets:
        raise Refusal(st.CONSUMER_OFFSET_NOT_FOUND, "no offset stored for this consumer")
    del topic.offsets[key]
    session.registry.save_offset(stream, topic, key)
    return {}
