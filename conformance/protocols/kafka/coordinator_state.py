"""The classic consumer group's state machine, as data: states, events, the transition table.

A group is in one of five states (the strings DescribeGroups and ListGroups report):
Empty, PreparingRebalance, CompletingRebalance, Stable and Dead.  A new group starts
Empty; a group that does not exist reports Dead.  The events:

* ``member_joined``: a JoinGroup was accepted.  From Empty, CompletingRebalance and Stable
  it starts a rebalance; in PreparingRebalance the rebalance already under way goes on
  (a self-loop: its clock is not restarted).
* ``member_left``: a member left (LeaveGroup) or its session expired.  Same targets as
  ``member_joined``; the group never holds members in Empty.
* ``join_completed``: every member rejoined (and the join delay passed) or the rebalance
  timeout came; the generation is bumped, a protocol and a leader chosen.
* ``join_completed_empty``: the rebalance completed with no members left.
* ``leader_synced``: the leader's SyncGroup brought the assignment.
* ``deleted``: DeleteGroups of an Empty group.

:data:`TRANSITIONS` is the whole machine; an event not in it for the current state raises
:class:`InvalidTransition`, naming group, state and event.  That is a bug in the
coordinator: a legal request in the wrong state is answered with a Kafka error code
before any event is fired.

The module also holds the data the coordinator works on (:class:`Member`, :class:`Group`),
the results it hands out, :class:`Ticket` (a reply that may come later), and the pure
rules on that data: protocol compatibility and voting, Kafka's group summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
JOIN_COMPLETED = "join_completed"
JOIN_COMPLETED_EMPTY = "join_completed_empty"
LEADER_SYNCED = "leader_synced"
DELETED = "deleted"
EVENTS = (MEMBER_JOINED, MEMBER_LEFT, JOIN_COMPLETED, JOIN_COMPLETED_EMPTY, LEADER_SYNCED, DELETED)

TRANSITIONS: dict[tuple[str, str], str] = {
    (EMPTY, MEMBER_JOINED): PREPARING_REBALANCE,
    (EMPTY, DELETED): DEAD,
    (PREPARING_REBALANCE, MEMBER_JOINED): PREPARING_REBALANCE,
    (PREPARING_REBALANCE, MEMBER_LEFT): PREPARING_REBALANCE,
    (PREPARING_REBALANCE, JOIN_COMPLETED): COMPLETING_REBALANCE,
    (PREPARING_REBALANCE, JOIN_COMPLETED_EMPTY): EMPTY,
    (COMPLETING_REBALANCE, MEMBER_JOINED): PREPARING_REBALANCE,
    (COMPLETING_REBALANCE, MEMBER_LEFT): PREPARING_REBALANCE,
    (COMPLETING_REBALANCE, LEADER_SYNCED): STABLE,
    (STABLE, MEMBER_JOINED): PREPARING_REBALANCE,
    (STABLE, MEMBER_LEFT): PREPARING_REBALANCE,
}
"""``(state, event) -> next state``: every transition a classic group can make."""


class InvalidTransition(Exception):
    """An event fired in a state where the table has no transition for it (a coordinator bug)."""

    def __init__(self, group_id: str, state: str, event: str) -> None:
        super().__init__(
            f"group {group_id!r}: no transition for event {event!r} in state {state!r}"
        )
        self.group_id = group_id
        self.state = state
        self.event = event


def next_state(group_id: str, state: str, event: str) -> str:
    """The state ``event`` leads to from ``state``, or :class:`InvalidTransition`."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(group_id, state, event) from None


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: str
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[JoinedMember, ...]
    """Every member with its metadata for the chosen protocol, for the leader; empty else."""
    skip_assignment: bool = False
    """JoinGroup v9+ (KIP-814): the leader need not assign (a static leader replaced while
    the group is Stable keeps the assignment it gave)."""


@dataclass(frozen=True)
class SyncResult:
    error: str
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    members: tuple[MemberView, ...]


T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Ticket(Protocol[T_co]):
    """A reply that may come later: ``result()`` is None while waiting, and gives the
    result at the latest once the clock reaches ``deadline``.  A result never changes."""

    deadline: float

    def result(self) -> T_co | None: ...


class PendingTicket(Generic[T]):
    """The coordinator's ticket: resolved once; ``result()`` lets the coordinator catch up
    with its clock first (:meth:`Coordinator.tick`), so polling it is enough."""

    __slots__ = ("_catch_up", "_value", "deadline")

    def __init__(
        self, deadline: float, catch_up: Callable[[], None], value: T | None = None
    ) -> None:
        self.deadline = deadline
        self._catch_up = catch_up
        self._value = value

    def result(self) -> T | None:
        if self._value is None:
            self._catch_up()
        return self._value

    @property
    def done(self) -> bool:
        return self._value is not None

    def resolve(self, value: T) -> bool:
        """Give the result; False (and nothing changes) if it was already given."""
        if self._value is not None:
            return False
        self._value = value
        return True


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_s: float
    rebalance_timeout_s: float
    last_seen: float
    assignment: bytes = b""
    join_ticket: PendingTicket[JoinResult] | None = None
    sync_ticket: PendingTicket[SyncResult] | None = None

    def names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol_name: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol_name), b"")

    def waiting(self) -> bool:
        """In a JoinGroup or SyncGroup that has not been answered yet (kept alive meanwhile)."""
        return self.join_ticket is not None or self.sync_ticket is not None


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    """In the order they joined (the first is the leader when the old one is gone)."""
    pending: dict[str, float] = field(default_factory=dict)
    """Member ids handed out with MEMBER_ID_REQUIRED, to the time they expire."""
    rebalance_started: float = 0.0
    rebalance_deadline: float = 0.0


def static_member_id(group: Group, instance_id: str) -> str | None:
    """The member id a static member (its group instance id) has in the group, if any."""
    return next(
        (mid for mid, m in group.members.items() if m.group_instance_id == instance_id), None
    )


def validate_member(group: Group, member_id: str, instance_id: str | None) -> str:
    """Kafka's ``ClassicGroup.validateMember``: a group instance id the group does not know
    is UNKNOWN_MEMBER_ID, one held by another member id FENCED_INSTANCE_ID; then a member
    id the group does not have is UNKNOWN_MEMBER_ID; NONE otherwise."""
    if instance_id is not None:
        holder = static_member_id(group, instance_id)
        if holder is None:
            return "UNKNOWN_MEMBER_ID"
        if holder != member_id:
            return "FENCED_INSTANCE_ID"
    return "NONE" if member_id in group.members else "UNKNOWN_MEMBER_ID"


def common_protocols(members: Iterable[Member]) -> set[str] | None:
    """The protocol names every member supports; None when there are no members."""
    common: set[str] | None = None
    for m in members:
        common = m.names() if common is None else common & m.names()
    return common


def select_protocol(members: list[Member], leader: Member) -> str:
    """Each member votes for its first-listed protocol that all support; the most votes
    win, ties going to the one the leader lists first."""
    common = common_protocols(members) or set()
    votes: dict[str, int] = {}
    for m in members:
        vote = next((name for name, _ in m.protocols if name in common), None)
        if vote is not None:
            votes[vote] = votes.get(vote, 0) + 1
    best = max(votes.values(), default=0)
    order = [name for name, _ in leader.protocols]
    tied = sorted((n for n, v in votes.items() if v == best), key=order.index)
    return tied[0] if tied else order[0]


def compatible(
    group: Group, member_id: str, protocol_type: str, protocols: Sequence[tuple[str, bytes]]
) -> bool:
    """Kafka's rule: same protocol type as the other members, and a protocol in common."""
    others = [m for mid, m in group.members.items() if mid != member_id]
    common = common_protocols(others)
    if common is None:
        return True
    same_type = all(m.protocol_type == protocol_type for m in others)
    return same_type and bool(common & {name for name, _ in protocols})


def join_error(error: str, member_id: str) -> JoinResult:
    return JoinResult(error, -1, None, None, "", member_id, ())


def sync_error(error: str) -> SyncResult:
    return SyncResult(error, None, None, b"")


def assigned(group: Group, member: Member) -> SyncResult:
    return SyncResult("NONE", group.protocol_type, group.protocol_name, member.assignment)


def listing(group: Group) -> tuple[JoinedMember, ...]:
    """Every member with its metadata for the chosen protocol (what the leader gets)."""
    return tuple(
        JoinedMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
        for m in group.members.values()
    )


def replaced(
    group: Group, member: Member, current_leader: str | None, skip_assignment: bool
) -> JoinResult:
    """The answer to a static member replaced in Stable, as Kafka's
    ``updateStaticMemberThenRebalanceOrCompleteJoin`` gives it: from JoinGroup v9
    (``skip_assignment``, ``JoinGroupRequest.supportsSkippingAssignment``) the leader is
    named as it now is, and a replaced leader gets every member and ``skip_assignment`` (it
    keeps the assignment it gave); before v9 the leader named is the one before the
    replacement (a replaced leader's new id is not named: it syncs as a follower) and no
    member is listed."""
    leads = skip_assignment and member.member_id == group.leader
    return JoinResult(
        "NONE",
        group.generation,
        group.protocol_type,
        group.protocol_name,
        (group.leader if skip_assignment else current_leader) or "",
        member.member_id,
        listing(group) if leads else (),
        skip_assignment=leads,
    )


def view(group: Group) -> GroupView:
    """Kafka's summary: protocol, metadata and assignments only when Stable."""
    stable = group.state == STABLE
    members = tuple(
        MemberView(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.metadata(group.protocol_name) if stable else b"",
            m.assignment if stable else b"",
        )
        for m in group.members.values()
    )
    name = (group.protocol_name or "") if stable else ""
    return GroupView(group.group_id, group.state, group.protocol_type or "", name, members)
