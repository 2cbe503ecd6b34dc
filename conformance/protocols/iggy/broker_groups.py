"""The consumer groups of the Iggy front-end: CREATE / GET / DELETE / JOIN / LEAVE
CONSUMER_GROUP, GET_CONSUMER_GROUPS, and which partitions a member holds.

Behaviour (sources at apache/iggy f5350d999):

* ids: classic, the lowest free group id from 0; doc, the id the client gave, its name that
  id in decimal.  A name in use in the topic (doc: an id in use) is 5004; an unknown group
  5000; GET_CONSUMER_GROUP of an unknown group is the empty reply.
* members are numbered within their group as the real server numbers them
  (SV/metadata/absorb.rs ``JoinConsumerGroup``): a joining client gets one more than the
  highest member number in the group, 0 when the group has none; a client already a member
  joins as a no-op (status 0).  GET_CONSUMER_GROUP's Member record carries that number as
  its id (SV/binary/handlers/consumer_groups/get_consumer_group_handler.rs) and lists the
  members in ascending number (the real server lists them in slab order, the same until a
  freed slot is reused).
* partitions are dealt round-robin over the members in that order, partition i to the
  (i mod m)-th listed member, again after every join and leave (SPEC.md IGG-GROUP-10, our
  convention: :data:`~conformance.protocols.iggy.broker_state.GROUP_POLICY`); the quirk
  group-all-partitions gives every member every partition.
* DELETE_CONSUMER_GROUP removes the group's stored offsets with it (SV/shard/execution.rs
  ``execute_delete_consumer_group``: ``delete_consumer_group_offsets``).
* LEAVE_CONSUMER_GROUP by a client that is not a member is 5006
  (SV/shard/system/consumer_groups.rs ``leave_consumer_group``).  A session remembers the
  groups it joined and leaves them when its connection ends (:func:`leave_all`).
  Membership is not durable: a group's key holds its name only (broker_state.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    GROUP_POLICY,
    GroupEntry,
    Refusal,
    StreamEntry,
    TopicEntry,
    engine_group,
    engine_topic,
    lowest_free,
    member_key,
)

if TYPE_CHECKING:
    from conformance.protocols.iggy.handler import IggySession

log = logging.getLogger("conformance.iggy")


def partitions_of(
    session: IggySession, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
) -> dict[int, list[int]]:
    """Each member's partitions (member number -> partition ids), in member order."""
    frozen = session.frontend.frozen_lists.get(engine_group(stream.id, topic.id, group.id))
    if frozen is not None:  # the quirk groups-not-redealt: as before the partitions changed
        return {m: list(p) for m, p in frozen.items()}
    info = session.engine.group_info(engine_group(stream.id, topic.id, group.id))
    every = list(range(len(topic.partitions)))
    return {
        int(m.member_id): every
        if session.quirks.every_partition()
        else list(m.assignment.get(engine_topic(stream.id, topic.id), []))
        for m in info.members
    }


def freeze_lists(session: IggySession, stream: StreamEntry, topic: TopicEntry) -> None:
    """Before the topic's partitions change: with the quirk groups-not-redealt, each group
    keeps its members' lists as they are now until its next join or leave."""
    if session.quirks.redeals_groups():
        return
    for group in topic.groups.values():
        name = engine_group(stream.id, topic.id, group.id)
        if name not in session.frontend.frozen_lists:
            session.frontend.frozen_lists[name] = partitions_of(session, stream, topic, group)


def member_partitions(
    session: IggySession, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
) -> tuple[int, list[int]]:
    """The session's member number in ``group`` and its partitions; 5006 if none."""
    member = group.member_of(session.client.id)
    if member is None:
        raise Refusal(
            st.CONSUMER_GROUP_MEMBER_NOT_FOUND,
            f"client {session.client.id} is not a member of consumer group {group.id}",
        )
    return member, partitions_of(session, stream, topic, group).get(member, [])


def group_record(
    session: IggySession, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
) -> dict[str, Any]:
    shares = partitions_of(session, stream, topic, group)
    return {
        "id": group.id,
        "partitions_count": len(topic.partitions),
        "members_count": len(shares),
        "name": group.name,
        "members": [{"id": m, "partitions": p} for m, p in shares.items()],
    }


def create_consumer_group(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic = session.topic(body)
    gid = body.get("consumer_group_id")
    name = body.get("name", str(gid))
    if any(g.name == name for g in topic.groups.values()) or gid in topic.groups:
        raise Refusal(st.CONSUMER_GROUP_NAME_ALREADY_EXISTS, f"consumer group {name!r} exists")
    if gid is None:
        gid = lowest_free(topic.groups)
    group = GroupEntry(gid, name)
    session.engine.create_group(
        engine_group(stream.id, topic.id, gid),
        engine_topic(stream.id, topic.id),
        policy=GROUP_POLICY,
    )
    topic.groups[gid] = group
    session.registry.save_group(stream, topic, group)
    return group_record(session, stream, topic, group)


def get_consumer_group(session: IggySession, body: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return group_record(session, *session.group(body))
    except Refusal:
        return None


def get_consumer_groups(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic = session.topic(body)
    groups = sorted(topic.groups.values(), key=lambda g: g.id)
    records = [group_record(session, stream, topic, g) for g in groups]
    for r in records:
        r.pop("members")
    return {"groups": records}


def delete_consumer_group(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, group = session.group(body)
    kept = {k: v for k, v in topic.offsets.items() if k[:2] == (2, group.id)}
    session.registry.forget_group(stream, topic, group)
    if not session.quirks.group_offsets_deleted():  # group-offsets-outlive-group
        topic.offsets.update(kept)
        for key in kept:
            session.registry.save_offset(stream, topic, key)
    del topic.groups[group.id]
    drop_group(session, stream, topic, group)
    return {}


def drop_group(
    session: IggySession, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
) -> None:
    """The engine's group goes, and with it every membership (a session that joined it
    finds none to leave)."""
    session.engine.delete_group(engine_group(stream.id, topic.id, group.id))
    group.members.clear()
    group.cursors.clear()
    session.frontend.frozen_lists.pop(engine_group(stream.id, topic.id, group.id), None)


def join_consumer_group(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, group = session.group(body)
    if group.member_of(session.client.id) is not None:
        return {}
    member = group.next_member()
    name = engine_group(stream.id, topic.id, group.id)
    session.engine.join_group(
        name, engine_topic(stream.id, topic.id), member_key(member), policy=GROUP_POLICY
    )
    group.members[member] = session.client.id
    session.frontend.frozen_lists.pop(name, None)
    session.joined.append((name, group))
    return {}


def leave_consumer_group(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic, group = session.group(body)
    member = group.member_of(session.client.id)
    if member is None:
        raise Refusal(st.CONSUMER_GROUP_MEMBER_NOT_FOUND, f"not a member of group {group.id}")
    _leave(session, engine_group(stream.id, topic.id, group.id), group, member)
    return {}


def _leave(session: IggySession, name: str, group: GroupEntry, member: int) -> None:
    del group.members[member]
    group.cursors.pop(member, None)
    session.frontend.frozen_lists.pop(name, None)
    session.engine.leave_group(name, member_key(member))


def leave_all(session: IggySession) -> None:
    """The connection ended: leave every group the session is still a member of."""
    for name, group in session.joined:
        member = group.member_of(session.client.id)
        if member is None:  # left, or the group was deleted
            continue
        try:
            _leave(session, name, group, member)
        except Exception:  # the engine may be closed at shutdown
            log.debug("iggy: client %s failed to leave %s", session.client.id, name, exc_info=True)
    session.joined.clear()
