"""The consumer group of KIP-848 as data: a member's reconciliation states and their
transition table, the group states, and the records the coordinator keeps.

A member of a consumer group is always in one of four reconciliation states (Apache
Kafka's ``MemberState``, group-coordinator ``modern/consumer/CurrentAssignmentBuilder``):

* ``STABLE``: the member owns exactly its target assignment at the target's epoch;
* ``UNREVOKED_PARTITIONS``: the new target takes partitions away; the member keeps its
  epoch and is told only the partitions it keeps, until a heartbeat shows it no longer
  owns the revoked ones;
* ``UNRELEASED_PARTITIONS``: the member is at the target epoch, but some partitions of
  its target are still owned by another member (not yet revoked there): it is given
  them only once they are released;
* ``UNKNOWN``: a member state read back that makes no sense (never entered here).

Each reconciliation step ends in one of three events, and :data:`TRANSITIONS` is the
whole machine: ``revoke`` (partitions to give up, still owned), ``await_release`` (target
partitions still held by others) and ``reconciled``.  A step out of a state the table
does not list raises :class:`InvalidTransition`, naming group, member, state and event.

The group's state (the string ConsumerGroupDescribe and ListGroups report) is derived,
as Kafka's ``ConsumerGroup`` derives it: Empty with no members, Assigning while the group
epoch is ahead of the target assignment's, Reconciling while a member is not yet stable
at the target's epoch, else Stable.  A group that does not exist is Dead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STABLE = "STABLE"
UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"
UNKNOWN = "UNKNOWN"
MEMBER_STATES = (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN)

REVOKE = "revoke"
AWAIT_RELEASE = "await_release"
RECONCILED = "reconciled"
EVENTS = (REVOKE, AWAIT_RELEASE, RECONCILED)

TRANSITIONS: dict[tuple[str, str], str] = {
    (STABLE, REVOKE): UNREVOKED_PARTITIONS,
    (STABLE, AWAIT_RELEASE): UNRELEASED_PARTITIONS,
    (STABLE, RECONCILED): STABLE,
    (UNREVOKED_PARTITIONS, REVOKE): UNREVOKED_PARTITIONS,
    (UNREVOKED_PARTITIONS, AWAIT_RELEASE): UNRELEASED_PARTITIONS,
    (UNREVOKED_PARTITIONS, RECONCILED): STABLE,
    (UNRELEASED_PARTITIONS, REVOKE): UNREVOKED_PARTITIONS,
    (UNRELEASED_PARTITIONS, AWAIT_RELEASE): UNRELEASED_PARTITIONS,
    (UNRELEASED_PARTITIONS, RECONCILED): STABLE,
}
"""(member state, event) -> the member's next state."""

GROUP_EMPTY = "Empty"
GROUP_ASSIGNING = "Assigning"
GROUP_RECONCILING = "Reconciling"
GROUP_STABLE = "Stable"
GROUP_DEAD = "Dead"
GROUP_STATES = (GROUP_EMPTY, GROUP_ASSIGNING, GROUP_RECONCILING, GROUP_STABLE, GROUP_DEAD)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

Partitions = dict[str, set[int]]
"""Partitions by topic id."""


class InvalidTransition(Exception):
    """A reconciliation step the table does not allow: a bug in the coordinator."""

    def __init__(self, group_id: str, member_id: str, state: str, event: str) -> None:
        super().__init__(f"group {group_id!r}, member {member_id!r}: no {event!r} in state {state}")
        self.group_id, self.member_id, self.state, self.event = group_id, member_id, state, event


def step(group_id: str, member_id: str, state: str, event: str) -> str:
    """The state after ``event`` in ``state`` (InvalidTransition if the table lacks it)."""
    target = TRANSITIONS.get((state, event))
    if target is None:
        raise InvalidTransition(group_id, member_id, state, event)
    return target


@dataclass
class Member:
    """One member of a consumer group, as the coordinator knows it."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    session_deadline: float = 0.0
    revocation_deadline: float | None = None

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.member_epoch:
            self.previous_member_epoch = self.member_epoch
            self.member_epoch = epoch

    def reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch


@dataclass
class ConsumerGroup:
    """One consumer group: its epochs, members, target assignment and topic snapshot."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    """The target assignment, by member id."""
    subscription: dict[str, tuple[str, int]] = field(default_factory=dict)
    """The subscribed topics' (id, partition count) by name, when the epoch was bumped."""

    def static_member(self, instance_id: str | None) -> Member | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def partition_epoch(self, topic_id: str, partition: int) -> int:
        """The epoch of the member that owns (or still has to revoke) the partition, -1."""
        for m in self.members.values():
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(
                topic_id, ()
            ):
                return m.member_epoch
        return -1

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members name (Kafka's ``computePreferredServerAssignor``)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])

    @property
    def state(self) -> str:
        if not self.members:
            return GROUP_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GROUP_ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GROUP_RECONCILING
        return GROUP_STABLE


def copy_partitions(partitions: Partitions) -> Partitions:
    return {t: set(ps) for t, ps in partitions.items() if ps}


def as_wire(partitions: Partitions) -> list[dict[str, object]]:
    """Partitions as the ``TopicPartitions`` array of the heartbeat response."""
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(partitions.items()) if ps]


def from_wire(topic_partitions: list[dict[str, object]] | None) -> Partitions | None:
    if topic_partitions is None:
        return None
    out: Partitions = {}
    for tp in topic_partitions:
        parts = tp.get("partitions") or []
        assert isinstance(parts, list)
        out.setdefault(str(tp.get("topic_id")), set()).update(int(p) for p in parts)
    return out
