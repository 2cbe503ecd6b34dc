"""The coordinator of KIP-848 consumer groups, I/O-free, driven by requests and a clock.

It follows Apache Kafka's group coordinator (``GroupMetadataManager.consumerGroupHeartbeat``,
``consumerGroupLeave``, ``ConsumerGroup``, ``CurrentAssignmentBuilder``):

1. a heartbeat with member epoch 0 joins (a member id is made for a v0 member that
   sent ""); a known member must come with its epoch: a greater one, or a smaller one
   that is not its previous epoch with owned partitions inside its assignment (a lost
   response), is FENCED_MEMBER_EPOCH; an unknown member id is UNKNOWN_MEMBER_ID;
2. a changed subscription (a new member, new topic names or assignor) or a change of
   the subscribed topics (created, grown) bumps the group epoch;
3. a group epoch ahead of the target assignment's computes a new target for every
   member with the group's assignor (:mod:`.consumer_group_assignors`);
4. the heartbeating member is reconciled towards its target (the table in
   :mod:`.consumer_group_state`): a partition is revoked first, and given to its new
   owner only once no other member owns it;
5. epoch -1 leaves (the member is removed and the group epoch bumped); -2 marks a
   static member as gone for now (it keeps its assignment until its instance id comes
   back with epoch 0, or its session expires);
6. a member that sends nothing for the session timeout, or keeps partitions past its
   rebalance timeout while they are being revoked, is removed as if it left.

Groups live here only while they are consumer groups: :meth:`ConsumerGroups.is_consumer`
tells the classic coordinator's handlers which group ids are taken.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.protocols.kafka import consumer_group_state as cgs
from conformance.protocols.kafka.consumer_group_assignors import ASSIGNORS, DEFAULT, Topics
from conformance.protocols.kafka.consumer_group_state import ConsumerGroup, Member, Partitions

SESSION_TIMEOUT_MS = 45_000
"""Kafka's default ``group.consumer.session.timeout.ms`` (``serve
--consumer-session-timeout-ms`` sets this broker's)."""
HEARTBEAT_INTERVAL_MS = 1_000
"""This broker's ``group.consumer.heartbeat.interval.ms`` (Kafka's default is 5 s)."""


class GroupError(Exception):
    """A heartbeat refused with a Kafka error (name) and message."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat, its fields as the request carries them."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Partitions | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Partitions | None


class ConsumerGroups:
    """Every consumer group of one broker.  ``topics(names)`` gives the (id, partition
    count) of each named topic that exists."""

    def __init__(
        self,
        clock: Callable[[], float],
        topics: Callable[[list[str]], Topics],
        *,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self.clock = clock
        self.topics = topics
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.groups: dict[str, ConsumerGroup] = {}

    # -- what others ask ---------------------------------------------------------------

    def is_consumer(self, group_id: str) -> bool:
        self.expire()
        return group_id in self.groups

    def group(self, group_id: str) -> ConsumerGroup | None:
        self.expire()
        return self.groups.get(group_id)

    def all(self) -> list[ConsumerGroup]:
        """Every consumer group, by group id (ListGroups)."""
        self.expire()
        return [g for _, g in sorted(self.groups.items())]

    def delete_if_empty(self, group_id: str) -> bool:
        """An empty consumer group is dropped (a classic join converts it, as Kafka's
        ``classicGroupJoinToClassicGroup`` does); False if it has members."""
        group = self.group(group_id)
        if group is not None and group.members:
            return False
        self.groups.pop(group_id, None)
        return True

    def check_commit(self, group_id: str, member_id: str, epoch: int, version: int) -> str:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``: NONE, UNKNOWN_MEMBER_ID,
        UNSUPPORTED_VERSION (a member of this protocol committing below v9) or
        STALE_MEMBER_EPOCH."""
        group = self.group(group_id)
        if group is None or (epoch < 0 and not group.members):
            return "NONE"
        member = group.members.get(member_id)
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        if version < 9:
            return "UNSUPPORTED_VERSION"
        return "NONE" if member.member_epoch == epoch else "STALE_MEMBER_EPOCH"

    def check_fetch(self, group_id: str, member_id: str | None, epoch: int) -> str:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``: NONE, UNKNOWN_MEMBER_ID or
        STALE_MEMBER_EPOCH (no member id and epoch -1: an admin's fetch, accepted)."""
        group = self.group(group_id)
        if group is None or (member_id is None and epoch < 0):
            return "NONE"
        member = group.members.get(member_id or "")
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        return "NONE" if member.member_epoch == epoch else "STALE_MEMBER_EPOCH"

    # -- the heartbeat -----------------------------------------------------------------

    def heartbeat(self, hb: Heartbeat, *, create: Callable[[], None]) -> HeartbeatResult:
        """Join, heartbeat or leave.  ``create`` is called before a new group is made
        (the handler lets the classic coordinator refuse or give up the group id)."""
        self.expire()
        now = self.clock()
        if hb.member_epoch in (cgs.LEAVE_EPOCH, cgs.STATIC_LEAVE_EPOCH):
            return self._leave(hb)
        joining = hb.member_epoch == cgs.JOIN_EPOCH
        group = self.groups.get(hb.group_id)
        if group is None:
            if not joining:
                raise GroupError("GROUP_ID_NOT_FOUND", f"Consumer group {hb.group_id} not found.")
            create()
            group = ConsumerGroup(hb.group_id)
        member_id = hb.member_id or str(uuid.uuid4())
        old = self._member(group, hb, member_id, joining)
        new = _updated(old, hb)
        bump = old.member_id not in group.members or _subscription(old) != _subscription(new)
        group.members.pop(old.member_id, None)
        group.members[new.member_id] = new
        self.groups[group.group_id] = group
        subscription = self.topics(sorted({n for m in group.members.values() for n in _wanted(m)}))
        if bump or dict(subscription) != group.subscription:
            group.subscription = dict(subscription)
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._assign(group)
        before = cgs.copy_partitions(new.assigned)
        self._reconcile(group, new, hb.owned, now)
        new.session_deadline = now + self.session_timeout_ms / 1000
        full = joining or (
            hb.rebalance_timeout_ms != -1
            and hb.subscribed_topic_names is not None
            and hb.owned is not None
        )
        changed = before != cgs.copy_partitions(new.assigned)
        return HeartbeatResult(
            new.member_id,
            new.member_epoch,
            self.heartbeat_interval_ms,
            cgs.copy_partitions(new.assigned) if full or changed else None,
        )

    def _member(self, group: ConsumerGroup, hb: Heartbeat, member_id: str, joining: bool) -> Member:
        if hb.instance_id is not None:
            return self._static_member(group, hb, member_id, joining)
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(
                    "UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group."
                )
            return Member(member_id)
        _check_epoch(member, hb.member_epoch, hb.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, hb: Heartbeat, member_id: str, joining: bool
    ) -> Member:
        existing = group.static_member(hb.instance_id)
        if joining:
            if existing is None:
                return group.members.get(member_id) or Member(member_id)
            if existing.member_epoch != cgs.STATIC_LEAVE_EPOCH:
                raise GroupError(
                    "UNRELEASED_INSTANCE_ID",
                    f"Instance id {hb.instance_id} is owned by member {existing.member_id}.",
                )
            # the instance comes back: a new member id takes over the old one's assignment
            group.members.pop(existing.member_id, None)
            target = group.target.pop(existing.member_id, {})
            group.target[member_id] = target
            replaced = _updated(existing, hb)
            replaced.member_id = member_id
            replaced.member_epoch = replaced.previous_member_epoch = 0
            group.members[member_id] = replaced
            return replaced
        if existing is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {hb.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(
                "FENCED_INSTANCE_ID",
                f"Static member {member_id} was fenced by {existing.member_id}.",
            )
        _check_epoch(existing, hb.member_epoch, hb.owned)
        return existing

    def _leave(self, hb: Heartbeat) -> HeartbeatResult:
        group = self.groups.get(hb.group_id)
        if group is None:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Consumer group {hb.group_id} not found.")
        if hb.instance_id is None:
            member = group.members.get(hb.member_id)
            if member is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Member {hb.member_id} is not a member.")
        else:
            member = group.static_member(hb.instance_id)
            if member is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {hb.instance_id} is unknown.")
            if member.member_id != hb.member_id:
                raise GroupError(
                    "FENCED_INSTANCE_ID",
                    f"Static member {hb.member_id} was fenced by {member.member_id}.",
                )
            if hb.member_epoch == cgs.STATIC_LEAVE_EPOCH:
                member.member_epoch = cgs.STATIC_LEAVE_EPOCH
                member.pending_revocation = {}
                return HeartbeatResult(member.member_id, cgs.STATIC_LEAVE_EPOCH, 0, None)
        self.remove(group, member.member_id)
        return HeartbeatResult(hb.member_id, hb.member_epoch, 0, None)

    def remove(self, group: ConsumerGroup, member_id: str) -> None:
        """A member leaves (or is fenced): its partitions are free, the epoch is bumped."""
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.subscription = dict(
            self.topics(sorted({n for m in group.members.values() for n in _wanted(m)}))
        )
        group.group_epoch += 1

    def expire(self) -> None:
        """Remove the members whose session or revocation time ran out."""
        now = self.clock()
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                late = member.revocation_deadline is not None and now > member.revocation_deadline
                if now > member.session_deadline or late:
                    self.remove(group, member.member_id)

    # -- assignment and reconciliation -------------------------------------------------

    def _assign(self, group: ConsumerGroup) -> None:
        assignor = ASSIGNORS[group.preferred_assignor(DEFAULT)]
        subscriptions = {m.member_id: _wanted(m) for m in group.members.values()}
        group.target = assignor(subscriptions, group.subscription, group.target)
        group.assignment_epoch = group.group_epoch

    def _reconcile(
        self, group: ConsumerGroup, member: Member, owned: Partitions | None, now: float
    ) -> None:
        epoch = group.assignment_epoch
        if member.reconciled_to(epoch):
            return
        if member.state == cgs.UNREVOKED_PARTITIONS:
            if _owns_any(owned, member.pending_revocation):
                return
            _next(group, member, member.member_epoch + 1, owned, epoch)
        else:
            _next(group, member, member.member_epoch, owned, epoch)
        if member.state == cgs.UNREVOKED_PARTITIONS:
            if member.revocation_deadline is None:
                member.revocation_deadline = now + max(member.rebalance_timeout_ms, 0) / 1000
        else:
            member.revocation_deadline = None


def _next(
    group: ConsumerGroup, member: Member, epoch: int, owned: Partitions | None, target_epoch: int
) -> None:
    """Kafka's ``CurrentAssignmentBuilder.computeNextAssignment``, one step."""
    target = group.target.get(member.member_id, {})
    assigned: Partitions = {}
    revoking: Partitions = {}
    pending: Partitions = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        want = target.get(topic, set())
        have = member.assigned.get(topic, set())
        keep = have & want
        if keep:
            assigned[topic] = keep
        if have - keep:
            revoking[topic] = have - keep
        free = {p for p in want - keep if group.partition_epoch(topic, p) == -1}
        unreleased = unreleased or free != want - keep
        if free:
            pending[topic] = free
    if revoking and _owns_any(owned, revoking):
        event, member.assigned, member.pending_revocation = cgs.REVOKE, assigned, revoking
        member.set_epoch(epoch)
    else:
        for topic, ps in pending.items():
            assigned.setdefault(topic, set()).update(ps)
        event = cgs.AWAIT_RELEASE if unreleased else cgs.RECONCILED
        member.assigned, member.pending_revocation = assigned, {}
        member.set_epoch(target_epoch)
    member.state = cgs.step(group.group_id, member.member_id, member.state, event)


def _owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
    """Does the member (by what it says it owns) still own any of ``partitions``?  A
    heartbeat that does not say (null) is taken to still own them, as Kafka does."""
    if owned is None:
        return True
    return any(owned.get(t, set()) & ps for t, ps in partitions.items())


def _check_epoch(member: Member, epoch: int, owned: Partitions | None) -> None:
    if epoch > member.member_epoch:
        raise GroupError(
            "FENCED_MEMBER_EPOCH",
            f"The member epoch {epoch} is greater than the coordinator's {member.member_epoch}.",
        )
    if epoch < member.member_epoch and (
        epoch != member.previous_member_epoch or not _subset(owned, member.assigned)
    ):
        raise GroupError(
            "FENCED_MEMBER_EPOCH",
            f"The member epoch {epoch} is smaller than the coordinator's {member.member_epoch}.",
        )


def _subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(t, set()) for t, ps in owned.items())


def _updated(member: Member, hb: Heartbeat) -> Member:
    """The member with what this heartbeat changed (null and -1 change nothing)."""
    new = Member(**{k: getattr(member, k) for k in member.__dataclass_fields__})
    new.assigned = cgs.copy_partitions(member.assigned)
    new.pending_revocation = cgs.copy_partitions(member.pending_revocation)
    if hb.instance_id is not None:
        new.instance_id = hb.instance_id
    if hb.rack_id is not None:
        new.rack_id = hb.rack_id
    if hb.rebalance_timeout_ms != -1:
        new.rebalance_timeout_ms = hb.rebalance_timeout_ms
    if hb.server_assignor is not None:
        new.server_assignor = hb.server_assignor
    if hb.subscribed_topic_names is not None:
        new.subscribed_topic_names = list(hb.subscribed_topic_names)
    if hb.subscribed_topic_regex is not None:
        new.subscribed_topic_regex = hb.subscribed_topic_regex or None
    new.client_id, new.client_host = hb.client_id, hb.client_host
    return new


def _subscription(member: Member) -> tuple[Any, ...]:
    return (
        sorted(member.subscribed_topic_names),
        member.subscribed_topic_regex,
        member.server_assignor,
    )


def _wanted(member: Member) -> list[str]:
    return sorted(set(member.subscribed_topic_names))


def named(partitions: Mapping[str, set[int]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Partitions as ConsumerGroupDescribe's ``TopicPartitions`` (with topic names)."""
    return [
        {"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
        for t, ps in sorted(partitions.items())
        if ps
    ]
