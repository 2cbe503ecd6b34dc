"""The engine's group coordinator: server-assigned consumer groups and committed offsets.

The one group model and its policies are described in :mod:`conformance.engine.groups`;
this module applies them.  Every change is a ``GroupState``, ``DeleteGroup`` or ``Commit``
operation handed to ``write`` (the engine's journal-then-apply path), so what recovery
rebuilds is what was acknowledged.  :class:`~conformance.engine.engine.Engine` exposes
every public method here under the same name.

The rules, whatever the policy:

* **Join** adds the member (or, with GIVEN ids, finds it already there: then nothing
  changes unless the join names another assignor or topic) and moves the group to
  ``max(generation + 1, policy.first_generation)``; the join's topic is subscribed (under
  ``one_topic`` it replaces the group's topic, and a switch drops the other members).
* **Leave**, **session expiry** and **disconnect** remove members: one new generation per
  group touched.  A leave may carry a generation, which must then be the group's.
* **Sync** answers the member's share of every subscribed topic, computed by the group's
  assignor over the members sorted by id, and needs the group's generation; **heartbeat**
  answers REBALANCE_REQUIRED for an older generation, refuses one ahead or below 0.
  Both refresh the member's session.
* Sessions need no timer: ``expire_members`` runs at the start of every group and offset
  operation and drops SESSION members silent for longer than their policy's
  ``session_timeout_s`` (else the engine's) by ``clock``.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.engine.errors import (
    GENERATION_MISMATCH,
    GROUP_EXISTS,
    INVALID_ARGUMENT,
    PARTITION_NOT_OWNED,
    UNKNOWN_GROUP,
    UNKNOWN_MEMBER,
    EngineError,
)
from conformance.engine.groups import (
    ASSIGNORS,
    DEFAULT_GROUP_POLICY,
    CommitCheck,
    Creation,
    Group,
    GroupPolicy,
    Member,
    MemberIds,
    assignor_named,
)
from conformance.engine.ops import Commit, DeleteGroup, Op
from conformance.engine.records import GroupInfo, HeartbeatStatus, JoinResult, MemberInfo
from conformance.engine.state import State, group_state, member_entries


class GroupCoordinator:
    """Server-assigned groups over the engine's state.

    ``partitions(topic)`` is the topic's partition count (UNKNOWN_TOPIC if there is none),
    ``check_offset(topic, partition, offset)`` refuses a partition or offset the log
    cannot name, ``assignor`` is the engine's default assignor."""

    def __init__(
        self,
        state: State,
        write: Callable[[Op], None],
        partitions: Callable[[str], int],
        check_offset: Callable[[str, int, int], None],
        *,
        session_timeout_s: float,
        assignor: str,
        clock: Callable[[], float],
    ) -> None:
        assignor_named(assignor)
        self._groups = state.groups
        self._write = write
        self._partitions = partitions
        self._check_offset = check_offset
        self._timeout = session_timeout_s
        self._assignor = assignor
        self._clock = clock

    # ------------------------------------------------------------------- lookups

    def _group(self, name: str) -> Group:
        try:
            return self._groups[name]
        except KeyError:
            raise EngineError(UNKNOWN_GROUP, f"there is no group {name!r}") from None

    def _implicit(self, name: str, policy: GroupPolicy) -> Group:
        """The group, or a new one (not yet stored) where a request may create it."""
        _need_name("group", name)
        g = self._groups.get(name)
        if g is not None:
            return g
        if policy.creation is Creation.EXPLICIT:
            raise EngineError(
                UNKNOWN_GROUP, f"there is no group {name!r}; groups here are created explicitly"
            )
        return Group(name, assignor=policy.assignor or "")

    def _member(self, group: Group, member_id: str) -> Member:
        try:
            return group.members[member_id]
        except KeyError:
            raise EngineError(
                UNKNOWN_MEMBER, f"group {group.name!r} has no member {member_id!r}"
            ) from None

    def _check_generation(self, group: Group, member_id: str, generation: int) -> Member:
        member = self._member(group, member_id)
        if generation != group.generation:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} of group {group.name!r} is at generation {generation}; "
                f"the group is at generation {group.generation}",
            )
        return member

    def _assignment(self, g: Group, topic: str) -> dict[str, list[int]]:
        assign = ASSIGNORS[g.assignor or self._assignor]
        return assign(self._partitions(topic), g.sorted_members())

    # -------------------------------------------------------------- the groups

    def create_group(
        self, group: str, topic: str, *, policy: GroupPolicy = DEFAULT_GROUP_POLICY
    ) -> GroupInfo:
        """A new group reading ``topic``, with no members (GROUP_EXISTS if there is one)."""
        self.expire_members()
        self._partitions(topic)
        _need_name("group", group)
        if group in self._groups:
            raise EngineError(GROUP_EXISTS, f"group {group!r} already exists")
        new = Group(group, assignor=policy.assignor or "")
        self._write(group_state(new, subscriptions=[topic]))
        return self.group_info(group)

    def delete_group(self, group: str) -> None:
        """The group, its members and its committed offsets are gone."""
        self.expire_members()
        self._group(group)
        self._write(DeleteGroup(group))

    def group_info(self, group: str) -> GroupInfo:
        self.expire_members()
        return self._info(self._group(group))

    def _info(self, g: Group) -> GroupInfo:
        shares = {t: self._assignment(g, t) for t in g.subscriptions}
        members = tuple(
            MemberInfo(m, g.members[m].consumer_id, {t: shares[t][m] for t in g.subscriptions})
            for m in g.sorted_members()
        )
        assignor = g.assignor or self._assignor
        return GroupInfo(g.name, g.generation, assignor, tuple(g.subscriptions), members)

    def list_groups(self) -> list[GroupInfo]:
        """Every group, sessions expired once (not once per group: a listing stays linear)."""
        self.expire_members()
        return [self._info(self._groups[name]) for name in sorted(self._groups)]

    def subscribe(
        self, group: str, topic: str, *, policy: GroupPolicy = DEFAULT_GROUP_POLICY
    ) -> None:
        self.expire_members()
        self._partitions(topic)
        g = self._implicit(group, policy)
        if group not in self._groups or topic not in g.subscriptions:
            self._write(group_state(g, subscriptions=[*g.subscriptions, topic]))

    def join_group(
        self,
        group: str,
        topic: str,
        consumer_id: str,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
        assignor: str | None = None,
    ) -> JoinResult:
        """Join ``consumer_id`` to ``group``; ``assignor`` (a name) becomes the group's."""
        self.expire_members()
        self._partitions(topic)
        _need_name("consumer id", consumer_id)
        if assignor is not None and assignor not in ASSIGNORS:
            known = ", ".join(sorted(ASSIGNORS))
            raise EngineError(
                INVALID_ARGUMENT, f"there is no assignor {assignor!r}; there are {known}"
            )
        g = self._implicit(group, policy)
        chosen = g.assignor if assignor is None else assignor
        switching = policy.one_topic and bool(g.subscriptions) and g.subscriptions != [topic]
        if policy.one_topic:
            subscriptions = [topic]
        elif topic in g.subscriptions:
            subscriptions = g.subscriptions
        else:
            subscriptions = [*g.subscriptions, topic]
        if policy.member_ids is MemberIds.GIVEN:
            member_id, counter = consumer_id, g.counter
            again = g.members.get(member_id)
            if again is not None and (chosen, subscriptions) == (g.assignor, g.subscriptions):
                again.last_seen = self._clock()
                again.timeout_s = policy.session_timeout_s
                return JoinResult(member_id, g.generation, tuple(g.sorted_members()))
        else:
            counter = g.counter + 1
            member_id = f"{consumer_id}-{counter}"
        members = [] if switching else member_entries(g, without=[member_id])
        members.append((member_id, consumer_id, policy.reaping))
        generation = max(g.generation + 1, policy.first_generation)
        self._write(
            group_state(
                g,
                generation=generation,
                counter=counter,
                subscriptions=subscriptions,
                members=members,
                assignor=chosen,
            )
        )
        joined = self._groups[group].members[member_id]
        joined.last_seen, joined.timeout_s = self._clock(), policy.session_timeout_s
        return JoinResult(member_id, generation, tuple(sorted(m for m, _, _ in members)))

    def members_of(self, group: str, consumer_id: str) -> list[str]:
        self.expire_members()
        g = self._groups.get(group)
        return g.members_of(consumer_id) if g is not None else []

    def leave_group(self, group: str, member_id: str, generation: int | None = None) -> None:
        """``member_id`` leaves; with ``generation``, only from that generation."""
        self.expire_members()
        g = self._group(group)
        if generation is None:
            self._member(g, member_id)
        else:
            self._check_generation(g, member_id, generation)
        self._remove_members(g, [member_id])

    def disconnect(self, consumer_id: str) -> list[str]:
        """``consumer_id``'s connection ended: it leaves every group it joined under
        CONNECTION reaping.  Returns those groups' names."""
        left = []
        for g in list(self._groups.values()):
            gone = g.bound_to(consumer_id)
            if gone:
                self._remove_members(g, gone)
                left.append(g.name)
        return sorted(left)

    def forget_connections(self) -> None:
        """No connection outlives the process: at recovery every CONNECTION member goes."""
        for g in list(self._groups.values()):
            gone = g.bound_to(None)
            if gone:
                self._remove_members(g, gone)

    def _remove_members(self, g: Group, gone: list[str]) -> None:
        members = member_entries(g, without=gone)
        self._write(group_state(g, generation=g.generation + 1, members=members))

    def group_generation(self, group: str) -> int:
        self.expire_members()
        return self._group(group).generation

    def sync_group(self, group: str, member_id: str, generation: int) -> dict[str, list[int]]:
        self.expire_members()
        g = self._group(group)
        member = self._check_generation(g, member_id, generation)
        member.last_seen = self._clock()
        return {topic: self._assignment(g, topic)[member_id] for topic in g.subscriptions}

    def heartbeat(self, group: str, member_id: str, generation: int) -> HeartbeatStatus:
        self.expire_members()
        g = self._group(group)
        member = self._member(g, member_id)
        if generation < 0:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} sent generation {generation}, below 0: no group has "
                f"it ({group!r} is at generation {g.generation})",
            )
        if generation > g.generation:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} sent generation {generation}, ahead of group "
                f"{group!r} at generation {g.generation}",
            )
        member.last_seen = self._clock()
        if generation < g.generation:
            return HeartbeatStatus.REBALANCE_REQUIRED
        return HeartbeatStatus.OK

    def expire_members(self) -> list[str]:
        """Remove SESSION members whose session ran out (one new generation per group)."""
        now = self._clock()
        removed: list[str] = []
        for g in list(self._groups.values()):
            gone = g.expired(now, self._timeout)
            if gone:
                self._remove_members(g, gone)
                removed += gone
        return removed

    # ------------------------------------------------------------------ offsets

    def commit(
        self,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
    ) -> None:
        """A commit without a member: only the offset is checked (and, under EXPLICIT
        creation, that the group exists)."""
        self.expire_members()
        self._check_offset(topic, partition, _checked(offset, policy))
        g = self._implicit(group, policy)
        if group not in self._groups and g.assignor:
            self._write(group_state(g))  # a new group keeps the policy's assignor
        self._write(Commit(group, topic, ((partition, offset),)))

    def commit_many(
        self,
        group: str,
        topic: str,
        offsets: dict[int, int],
        member_id: str,
        generation: int,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
    ) -> None:
        """Commit every offset or none: all are checked (member, generation, each offset,
        and under OWNERSHIP each partition) before anything is written."""
        self.expire_members()
        g = self._group(group)
        self._check_generation(g, member_id, generation)
        self._partitions(topic)
        pairs = tuple(sorted(offsets.items()))
        for partition, offset in pairs:
            self._check_offset(topic, partition, _checked(offset, policy))
        if policy.commit_check is CommitCheck.OWNERSHIP:
            owned = self._assignment(g, topic)[member_id] if topic in g.subscriptions else []
            for partition, _ in pairs:
                if partition not in owned:
                    raise EngineError(
                        PARTITION_NOT_OWNED,
                        f"member {member_id!r} of group {group!r} is assigned partitions "
                        f"{owned} of {topic!r} at generation {g.generation}, not {partition}",
                    )
        if pairs:
            self._write(Commit(group, topic, pairs))

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        g = self._groups.get(group)
        return None if g is None else g.offsets.get(topic, {}).get(partition)

    def committed_all(self, group: str) -> dict[str, dict[int, int]]:
        """Every offset ``group`` committed: topic -> partition -> offset."""
        g = self._groups.get(group)
        return {} if g is None else {t: dict(p) for t, p in g.offsets.items() if p}


def _checked(offset: int, policy: GroupPolicy) -> int:
    """The offset a commit's check sees: one below 0 passes as 0 where the policy stores it."""
    return 0 if offset < 0 and policy.negative_offsets else offset


def _need_name(what: str, name: str) -> None:
    if not name:
        raise EngineError(INVALID_ARGUMENT, f"the {what} name must not be empty")
