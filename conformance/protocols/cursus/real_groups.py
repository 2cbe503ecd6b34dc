"""Group commands of the Cursus reference broker, revision ``real`` (FACTS.md section 3.3).

Behaviour notes:

* JOIN_GROUP makes the group on its first join (the topic must exist) and starts a new
  generation with every join, but for one naming ``generation=``: a known member resuming
  its session at that generation (``resumed=true``, nothing changes); the member id is the
  given one with ``-<n>`` appended (the real broker appends four random digits:
  CUR-RCONV-2); the reply is ``OK
  generation=G member=M assignments=[0 1 2]``.  A group reads one topic: a join, sync,
  heartbeat, leave or commit naming another gets ``topic_not_assigned_to_group``.
* SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, COMMIT_OFFSET and BATCH_COMMIT need the member's
  exact generation (``GEN_MISMATCH current=.. requested=..`` otherwise, whether older or
  newer); commits need the partition to be the member's (``NOT_OWNER``) and refuse an
  offset below the committed one (``offset_regression``).
* FETCH_OFFSET answers ``OK offset=0`` when nothing was committed.

Every refusal is raised as :class:`Refuse` carrying the ``ERROR:`` reply; the checks run in
the order the real broker's handlers run them, so the first problem is the one named.
"""

from __future__ import annotations

from conformance.engine import Engine, EngineError, GroupInfo, GroupPolicy
from conformance.engine.groups import CommitCheck
from conformance.protocols.cursus.messages import ErrorReply, OkReply
from conformance.protocols.cursus.real_codec import atoi, error, parse_uint, quoted
from conformance.protocols.cursus.real_messages import RealCommand

REAL_GROUPS = GroupPolicy(one_topic=True, commit_check=CommitCheck.OWNERSHIP)


class Refuse(Exception):
    """A command refused with ``reply`` (an ``ERROR:`` line)."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(reply.text)
        self.reply = reply


def need(cmd: RealCommand, key: str) -> str:
    """The value of ``key``; ``missing_<key> command=<NAME>`` when it is absent or empty."""
    value = cmd.get(key)
    if not value:
        raise Refuse(error(f"missing_{key}", f"command={cmd.name}"))
    return value


def generation_of(cmd: RealCommand) -> int:
    value = atoi(need(cmd, "generation"))
    if value is None:
        raise Refuse(error("invalid_generation", f"command={cmd.name}"))
    return value


def _group(engine: Engine, group: str) -> GroupInfo | None:
    try:
        return engine.group_info(group)
    except EngineError:
        return None


def check_topic(engine: Engine, group: str, topic: str) -> None:
    """A group that exists reads one topic (FACTS 3.3 topic_not_assigned_to_group)."""
    info = _group(engine, group)
    if info is not None and info.topics and topic not in info.topics:
        raise Refuse(
            error("topic_not_assigned_to_group", f"expected={info.topics[0]}", f"actual={topic}")
        )


def check_member(engine: Engine, group: str, member: str, generation: int) -> list[int]:
    """The member's partitions, when it is a member at exactly ``generation``."""
    info = _group(engine, group)
    if info is None:
        raise Refuse(error("group_not_found", f"group={group}"))
    found = [m for m in info.members if m.member_id == member]
    if not found:
        raise Refuse(error("member_not_found", f"member={member}", f"group={group}"))
    if generation >= 0 and generation != info.generation:
        raise Refuse(
            error(
                "GEN_MISMATCH",
                f"current={info.generation}",
                f"requested={generation}",
                f"group={group}",
                f"member={member}",
            )
        )
    return sorted(p for parts in found[0].assignment.values() for p in parts)


def assignments(parts: list[int]) -> str:
    """Go's ``%v`` of an int slice: ``[0 1 2]`` (FACTS 3.3)."""
    return "[" + " ".join(str(p) for p in parts) + "]"


def join_group(engine: Engine, cmd: RealCommand) -> OkReply:
    topic, group, member = need(cmd, "topic"), need(cmd, "group"), need(cmd, "member")
    check_topic(engine, group, topic)
    if cmd.get("generation"):  # a known member resuming its session: no new generation
        generation = atoi(cmd.get("generation"))
        if generation is None:
            raise Refuse(error("invalid_generation", "command=JOIN_GROUP"))
        parts = check_member(engine, group, member, generation)
        engine.heartbeat(group, member, engine.group_generation(group))
        return OkReply(
            (
                ("generation", str(generation)),
                ("member", member),
                ("assignments", assignments(parts)),
                ("resumed", "true"),
            )
        )
    if not engine.has_topic(topic) and _group(engine, group) is None:
        raise Refuse(error("topic_not_found", f"topic={topic}"))
    joined = engine.join_group(group, topic, member, policy=REAL_GROUPS)
    parts = check_member(engine, group, joined.member_id, joined.generation)
    return OkReply(
        (
            ("generation", str(joined.generation)),
            ("member", joined.member_id),
            ("assignments", assignments(parts)),
        )
    )


def sync_group(engine: Engine, cmd: RealCommand) -> OkReply:
    topic, group, member = need(cmd, "topic"), need(cmd, "group"), need(cmd, "member")
    check_topic(engine, group, topic)
    generation = generation_of(cmd)
    parts = check_member(engine, group, member, generation)
    return OkReply(
        (("generation", str(generation)), ("member", member), ("assignments", assignments(parts)))
    )


def heartbeat(engine: Engine, cmd: RealCommand) -> OkReply:
    topic, group, member = need(cmd, "topic"), need(cmd, "group"), need(cmd, "member")
    check_topic(engine, group, topic)
    generation = generation_of(cmd)
    check_member(engine, group, member, generation)
    engine.heartbeat(group, member, engine.group_generation(group))
    return OkReply((("member", member), ("generation", str(generation))))


def leave_group(engine: Engine, cmd: RealCommand, *, keep: bool = False) -> OkReply:
    topic, group, member = need(cmd, "topic"), need(cmd, "group"), need(cmd, "member")
    generation = generation_of(cmd)
    check_topic(engine, group, topic)
    check_member(engine, group, member, generation)
    if not keep:
        engine.leave_group(group, member)
    return OkReply((("group", group), ("member", member), ("left", "true")))


def _regression(engine: Engine, group: str, topic: str, partition: int, offset: int) -> None:
    current = engine.committed(group, topic, partition)
    if current is not None and offset < current:
        why = (
            f"offset regression group={group} topic={topic} partition={partition} "
            f"current={current} got={offset}"
        )
        raise Refuse(error("offset_regression", f"reason={quoted(why)}"))


def _owner(member: str, group: str, generation: int, partition: int, owned: list[int]) -> None:
    if partition not in owned:
        raise Refuse(
            error(
                "NOT_OWNER",
                f"partition={partition}",
                f"member={member}",
                f"group={group}",
                f"generation={generation}",
            )
        )


def commit_offset(engine: Engine, cmd: RealCommand) -> OkReply:
    topic = need(cmd, "topic")
    partition = atoi(need(cmd, "partition"))
    if partition is None or partition < 0:
        raise Refuse(error("invalid_partition"))
    group = need(cmd, "group")
    offset = parse_uint(need(cmd, "offset"))
    if offset is None:
        raise Refuse(error("invalid_offset"))
    check_topic(engine, group, topic)
    member = need(cmd, "member")
    generation = generation_of(cmd)
    owned = check_member(engine, group, member, generation)
    _owner(member, group, generation, partition, owned)
    _regression(engine, group, topic, partition, offset)
    engine.commit_many(group, topic, {partition: offset}, member, generation, policy=REAL_GROUPS)
    return OkReply()


def batch_commit(engine: Engine, cmd: RealCommand, last_word: str) -> OkReply:
    """``last_word``: the command's last whitespace-separated word, the entries (FACTS 3.3)."""
    topic, group, member = need(cmd, "topic"), need(cmd, "group"), need(cmd, "member")
    generation = generation_of(cmd)
    check_topic(engine, group, topic)
    offsets: dict[int, int] = {}
    owned: list[int] | None = None
    for entry in (e.strip() for e in last_word.split(",")):
        shown = quoted(entry)
        pair = entry.split(":")
        if len(pair) != 2:
            raise Refuse(error("invalid_batch_commit_entry", f"entry={shown}"))
        p = atoi(pair[0][1:]) if pair[0].startswith("P") else None
        if p is None or p < 0:
            raise Refuse(error("invalid_partition", f"entry={shown}"))
        o = parse_uint(pair[1])
        if o is None:
            raise Refuse(error("invalid_offset", f"entry={shown}"))
        if owned is None:
            owned = check_member(engine, group, member, generation)
        _owner(member, group, generation, p, owned)
        if p in offsets:
            raise Refuse(
                error("duplicate_partition", f"partition={p}", f"group={group}", f"topic={topic}")
            )
        offsets[p] = o
    for p, o in offsets.items():
        _regression(engine, group, topic, p, o)
    engine.commit_many(group, topic, offsets, member, generation, policy=REAL_GROUPS)
    return OkReply((("batched", str(len(offsets))),))


def fetch_offset(engine: Engine, cmd: RealCommand) -> OkReply:
    topic = need(cmd, "topic")
    partition = atoi(need(cmd, "partition"))
    if partition is None:
        raise Refuse(error("invalid_partition"))
    group = need(cmd, "group")
    if _group(engine, group) is None:
        raise Refuse(error("group_not_found", f"group={group}"))
    check_topic(engine, group, topic)
    offset = engine.committed(group, topic, partition)
    return OkReply((("offset", str(0 if offset is None else offset)),))
