"""Kafka's classic group coordinator, sans-IO: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups and the membership check of OffsetCommit.

No sockets, no threads, no timers: the clock is injected, and time only moves when a
request arrives, :meth:`Coordinator.tick` is called, or a waiting :class:`Ticket` is
polled.  Every request first catches up with the clock (expired sessions, rebalances whose
time came), then answers.  Errors are Kafka error names (``"NONE"`` for success).  The
state machine itself (states, events, the transition table) is in
:mod:`.coordinator_state`; this module applies the rules:

* **Join.**  An empty group id is INVALID_GROUP_ID; a session timeout outside
  [min, max] INVALID_SESSION_TIMEOUT; no protocols or no protocol type
  INCONSISTENT_GROUP_PROTOCOL; a non-empty member id the group does not know
  UNKNOWN_MEMBER_ID; a protocol type other than the members' or no protocol in common
  with the other members INCONSISTENT_GROUP_PROTOCOL.  A new member with
  ``require_known_member_id`` (JoinGroup v4+) is answered at once with MEMBER_ID_REQUIRED
  and a member id, kept pending for its session timeout.  A member joining again with
  the same protocols in CompletingRebalance, or in Stable when it is not the leader, is
  answered at once from the current generation (as Kafka does: a resent join must not
  start a rebalance).  Any other accepted join starts a rebalance (or joins the one
  under way) and waits.
* **Rebalance.**  It completes when every member has rejoined and ``join_delay_s`` has
  passed since it began, or when the rebalance timeout (the largest of the members' at
  its start) passes; members that did not rejoin are dropped then.  The generation goes
  up by one; the leader is the old one if still a member, else the first to have joined;
  the protocol is chosen by votes (:func:`.coordinator_state.select_protocol`).  The
  leader's answer lists every member's metadata.  A member joining again while its join
  waits gets REBALANCE_IN_PROGRESS on the older join.
* **Sync.**  Unknown group or member UNKNOWN_MEMBER_ID, another generation
  ILLEGAL_GENERATION, a protocol type or name other than the group's
  INCONSISTENT_GROUP_PROTOCOL, a rebalance under way REBALANCE_IN_PROGRESS.  The leader's
  sync stores the assignment (b"" for members it leaves out) and makes the group Stable,
  answering every waiting sync; a follower waits for it, for its session timeout at most
  (then REBALANCE_IN_PROGRESS).  In Stable a sync is answered at once.
* **Heartbeat** answers like sync, with NONE in CompletingRebalance and Stable.
* **Sessions.**  Any request of a member refreshes its session.  A member not waiting in a
  join or sync and silent for its session timeout is removed, as is a member that leaves;
  a removal starts a rebalance, which ends at once (Empty, generation + 1) if nobody is
  left.
* **Commit** (:meth:`Coordinator.check_commit`), as Kafka: a negative generation commits
  to an Empty group (one that does not exist is made, Empty); a generation of 0 or more to
  a group that does not exist is ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from v9); else
  unknown member UNKNOWN_MEMBER_ID, another generation ILLEGAL_GENERATION,
  CompletingRebalance REBALANCE_IN_PROGRESS; Stable and PreparingRebalance accept it.
* **Describe** shows protocol, member metadata and assignments in Stable only, as Kafka.

``on_change`` is called after every request or tick that changed a state or answered a
waiting ticket (never in the middle of one), so the server can poll its waiting replies.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from conformance.protocols.kafka.coordinator_state import (
    COMPLETING_REBALANCE,
    DEAD,
    DELETED,
    EMPTY,
    JOIN_COMPLETED,
    JOIN_COMPLETED_EMPTY,
    LEADER_SYNCED,
    MEMBER_JOINED,
    MEMBER_LEFT,
    PREPARING_REBALANCE,
    STABLE,
    STATES,
    TRANSITIONS,
    Group,
    GroupView,
    InvalidTransition,
    JoinedMember,
    JoinResult,
    Member,
    MemberView,
    PendingTicket,
    SyncResult,
    Ticket,
    assigned,
    compatible,
    join_error,
    next_state,
    select_protocol,
    sync_error,
    view,
)

__all__ = [
    "STATES",
    "TRANSITIONS",
    "Coordinator",
    "GroupView",
    "InvalidTransition",
    "JoinResult",
    "JoinedMember",
    "MemberView",
    "SyncResult",
    "Ticket",
]

R = TypeVar("R")


class Coordinator:
    """Every classic group of one broker, driven by requests and an injected clock."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        join_delay_s: float = 0.3,
        min_session_timeout_ms: int = 1000,
        max_session_timeout_ms: int = 1_800_000,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._clock = clock
        self._join_delay_s = join_delay_s
        self._min_session_ms = min_session_timeout_ms
        self._max_session_ms = max_session_timeout_ms
        self._on_change = on_change
        self._groups: dict[str, Group] = {}
        self._dirty = False
        self._notifying = False
        self._live: set[str] = set()
        """Groups with members or pending member ids: the ones a step must look at."""

    # -- requests -----------------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str,
        *,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str = "",
        client_host: str = "",
        group_instance_id: str | None = None,
        require_known_member_id: bool = False,
    ) -> Ticket[JoinResult]:
        with self._step() as now:

            def refuse(error: str, mid: str = member_id) -> Ticket[JoinResult]:
                return self._answered(now, join_error(error, mid))

            if not group_id:
                return refuse("INVALID_GROUP_ID")
            if not self._min_session_ms <= session_timeout_ms <= self._max_session_ms:
                return refuse("INVALID_SESSION_TIMEOUT")
            if not protocols or not protocol_type:
                return refuse("INCONSISTENT_GROUP_PROTOCOL")
            group = self._groups.get(group_id)
            known = group is not None and member_id in group.members
            if member_id and not known and (group is None or member_id not in group.pending):
                return refuse("UNKNOWN_MEMBER_ID")
            if group is not None and not compatible(group, member_id, protocol_type, protocols):
                return refuse("INCONSISTENT_GROUP_PROTOCOL")
            if group is None:
                group = self._groups[group_id] = Group(group_id)
                self._dirty = True
            self._live.add(group_id)
            if not member_id and require_known_member_id:
                new_id = _new_member_id(client_id)
                group.pending[new_id] = now + session_timeout_ms / 1000
                return refuse("MEMBER_ID_REQUIRED", new_id)
            if not known:
                member_id = member_id or _new_member_id(client_id)
                group.pending.pop(member_id, None)
            old = group.members.get(member_id)
            same = old is not None and old.protocols == tuple(
                (name, bytes(meta)) for name, meta in protocols
            )
            if (
                same
                and old is not None
                and group.state in (COMPLETING_REBALANCE, STABLE)
                and (group.state == COMPLETING_REBALANCE or member_id != group.leader)
            ):
                # Kafka: a member joining again unchanged (a client that resent its join)
                # gets the current generation back; only a change starts a rebalance
                old.last_seen = now
                return self._answered(now, self._current(group, old))

            member = group.members[member_id] = Member(  # an old member keeps its place
                member_id,
                group_instance_id,
                client_id,
                client_host,
                protocol_type,
                tuple((name, bytes(meta)) for name, meta in protocols),
                session_timeout_s=session_timeout_ms / 1000,
                rebalance_timeout_s=rebalance_timeout_ms / 1000,
                last_seen=now,
            )
            if old is not None:
                member.join_ticket, member.sync_ticket = old.join_ticket, old.sync_ticket
            group.protocol_type = protocol_type
            if group.state == PREPARING_REBALANCE:
                self._fire(group, MEMBER_JOINED)
            else:
                self._prepare_rebalance(group, now, MEMBER_JOINED)
            if member.join_ticket is not None:
                self._resolve(member.join_ticket, join_error("REBALANCE_IN_PROGRESS", member_id))
            deadline = max(now + member.rebalance_timeout_s, group.rebalance_deadline)
            ticket = PendingTicket[JoinResult](deadline + self._join_delay_s, self.tick)
            member.join_ticket = ticket
            self._maybe_complete_join(group, now)
            return ticket

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        *,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: Mapping[str, bytes] = {},
    ) -> Ticket[SyncResult]:
        with self._step() as now:
            error, group, member = self._check_member(group_id, member_id, generation, now)
            if group is not None and error == "NONE":
                if (protocol_type is not None and protocol_type != group.protocol_type) or (
                    protocol_name is not None and protocol_name != group.protocol_name
                ):
                    error = "INCONSISTENT_GROUP_PROTOCOL"
                elif group.state == PREPARING_REBALANCE:
                    error = "REBALANCE_IN_PROGRESS"
            if group is None or member is None or error != "NONE":
                return self._answered(now, sync_error(error))
            if group.state == COMPLETING_REBALANCE and member_id == group.leader:
                for mid, m in group.members.items():
                    m.assignment = bytes(assignments.get(mid, b""))
                self._fire(group, LEADER_SYNCED)
                for m in group.members.values():
                    if m.sync_ticket is not None:
                        self._resolve(m.sync_ticket, assigned(group, m))
                        m.sync_ticket = None
            if group.state == STABLE:
                return self._answered(now, assigned(group, member))
            if member.sync_ticket is not None:
                self._resolve(member.sync_ticket, sync_error("REBALANCE_IN_PROGRESS"))
            ticket = PendingTicket[SyncResult](now + member.session_timeout_s, self.tick)
            member.sync_ticket = ticket
            return ticket

    def heartbeat(self, group_id: str, member_id: str, generation: int) -> str:
        with self._step() as now:
            error, group, _ = self._check_member(group_id, member_id, generation, now)
            if group is not None and error == "NONE" and group.state == PREPARING_REBALANCE:
                return "REBALANCE_IN_PROGRESS"
            return error

    def leave(self, group_id: str, member_ids: Sequence[str]) -> dict[str, str]:
        """Each member's error: NONE, or UNKNOWN_MEMBER_ID for one the group does not know."""
        with self._step() as now:
            if not group_id:
                return dict.fromkeys(member_ids, "INVALID_GROUP_ID")
            group = self._groups.get(group_id)
            if group is None:
                return dict.fromkeys(member_ids, "UNKNOWN_MEMBER_ID")
            errors: dict[str, str] = {}
            gone: list[str] = []
            for mid in member_ids:
                if mid in errors:
                    continue
                if mid in group.members:
                    gone.append(mid)
                elif group.pending.pop(mid, None) is None:
                    errors[mid] = "UNKNOWN_MEMBER_ID"
                    continue
                errors[mid] = "NONE"
            if gone:
                self._remove(group, gone, now)
            return errors

    def check_commit(
        self, group_id: str, member_id: str, generation: int, *, version: int | None = None
    ) -> str:
        """May an OffsetCommit (at ``version``, None: before v9) from this member commit now?
        NONE or the error it gets, as Kafka's ``OffsetMetadataManager.validateOffsetCommit``
        and ``ClassicGroup.validateOffsetCommit`` decide.  A simple commit (a negative
        generation) to a group that does not exist makes it, Empty, as Kafka does."""
        with self._step() as now:
            if not group_id:
                return "INVALID_GROUP_ID"
            group = self._groups.get(group_id)
            if group is None:
                if generation >= 0:
                    old = version is None or version < 9
                    return "ILLEGAL_GENERATION" if old else "GROUP_ID_NOT_FOUND"
                group = self._groups[group_id] = Group(group_id)
                self._dirty = True
            if generation < 0 and group.state == EMPTY:
                return "NONE"
            if generation < 0 and not member_id:
                return "UNKNOWN_MEMBER_ID"  # a simple commit to a group with members
            error, group, _ = self._check_member(group_id, member_id, generation, now)
            if group is not None and error == "NONE" and group.state == COMPLETING_REBALANCE:
                return "REBALANCE_IN_PROGRESS"
            return error

    def describe(self, group_id: str) -> GroupView:
        with self._step():
            group = self._groups.get(group_id)
            return view(group) if group is not None else GroupView(group_id, DEAD, "", "", ())

    def list_groups(self, states: Sequence[str] = ()) -> list[GroupView]:
        """Every group, by group id; only those in ``states`` (any case) if given."""
        with self._step():
            wanted = {s.lower() for s in states}
            return [
                view(g)
                for _, g in sorted(self._groups.items())
                if not wanted or g.state.lower() in wanted
            ]

    def forget_empty(self, group_id: str) -> str:
        """DeleteGroups: an Empty group becomes Dead and is forgotten (NONE); a group with
        members is NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND."""
        with self._step():
            group = self._groups.get(group_id)
            if group is None:
                return "GROUP_ID_NOT_FOUND"
            if group.state != EMPTY:
                return "NON_EMPTY_GROUP"
            self._fire(group, DELETED)
            del self._groups[group_id]
            return "NONE"

    def rebalance(self, group_id: str) -> bool:
        """Start a rebalance of a group with members, as a member joining would (a fault on
        demand, ``serve --validate``): its members learn it from their next heartbeat
        (REBALANCE_IN_PROGRESS) and join again for the next generation.  False if the group
        has no members or is already rebalancing."""
        with self._step() as now:
            group = self._groups.get(group_id)
            if group is None or group.state not in (STABLE, COMPLETING_REBALANCE):
                return False
            self._prepare_rebalance(group, now, MEMBER_JOINED)
            return True

    def tick(self) -> None:
        """Catch up with the clock: expire waits and sessions, complete due rebalances."""
        with self._step():
            pass

    # -- the machinery ------------------------------------------------------------------

    @contextmanager
    def _step(self) -> Iterator[float]:
        now = self._clock()
        # only groups with members (or member ids handed out) have anything to expire: a
        # broker that saw thousands of groups (a fuzz campaign) does not walk the empty ones
        for group_id in list(self._live):
            group = self._groups.get(group_id)
            if group is not None:
                self._expire(group, now)
            if group is None or not (group.members or group.pending):
                self._live.discard(group_id)
        try:
            yield now
        finally:
            self._notify()

    def _notify(self) -> None:
        # A listener may poll tickets (and so tick) from inside on_change: those nested
        # changes are reported by this loop, not by a nested call.
        if self._notifying:
            return
        self._notifying = True
        try:
            while self._dirty:
                self._dirty = False
                self._on_change()
        finally:
            self._notifying = False

    def _fire(self, group: Group, event: str) -> None:
        group.state = next_state(group.group_id, group.state, event)
        self._dirty = True

    def _resolve(self, ticket: PendingTicket[R], value: R) -> None:
        if ticket.resolve(value):
            self._dirty = True

    def _answered(self, now: float, value: R) -> PendingTicket[R]:
        return PendingTicket(now, self.tick, value)

    def _check_member(
        self, group_id: str, member_id: str, generation: int, now: float
    ) -> tuple[str, Group | None, Member | None]:
        """The checks sync, heartbeat and commit share; refreshes the member's session."""
        if not group_id:
            return "INVALID_GROUP_ID", None, None
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return "UNKNOWN_MEMBER_ID", group, None
        member.last_seen = now
        if generation != group.generation:
            return "ILLEGAL_GENERATION", group, member
        return "NONE", group, member

    def _expire(self, group: Group, now: float) -> None:
        for member in group.members.values():
            if member.sync_ticket is not None and now >= member.sync_ticket.deadline:
                self._resolve(member.sync_ticket, sync_error("REBALANCE_IN_PROGRESS"))
                member.sync_ticket = None
                member.last_seen = now
        for mid, expiry in list(group.pending.items()):
            if now >= expiry:
                del group.pending[mid]
        silent = [
            m.member_id
            for m in group.members.values()
            if not m.waiting() and now >= m.last_seen + m.session_timeout_s
        ]
        if silent:
            self._remove(group, silent, now)
        self._maybe_complete_join(group, now)

    def _remove(self, group: Group, member_ids: list[str], now: float) -> None:
        for mid in member_ids:
            member = group.members.pop(mid)
            if member.join_ticket is not None:
                self._resolve(member.join_ticket, join_error("UNKNOWN_MEMBER_ID", mid))
            if member.sync_ticket is not None:
                self._resolve(member.sync_ticket, sync_error("UNKNOWN_MEMBER_ID"))
        if group.state == PREPARING_REBALANCE:
            self._fire(group, MEMBER_LEFT)
        else:
            self._prepare_rebalance(group, now, MEMBER_LEFT)
        self._maybe_complete_join(group, now)

    def _prepare_rebalance(self, group: Group, now: float, event: str) -> None:
        self._fire(group, event)
        group.rebalance_started = now
        timeouts = (m.rebalance_timeout_s for m in group.members.values())
        group.rebalance_deadline = now + max(timeouts, default=0.0)
        for member in group.members.values():
            if member.sync_ticket is not None:
                self._resolve(member.sync_ticket, sync_error("REBALANCE_IN_PROGRESS"))
                member.sync_ticket = None

    def _maybe_complete_join(self, group: Group, now: float) -> None:
        if group.state != PREPARING_REBALANCE:
            return
        members = group.members.values()
        everyone = all(m.join_ticket is not None for m in members)
        if (
            not members
            or (everyone and now >= group.rebalance_started + self._join_delay_s)
            or now >= group.rebalance_deadline
        ):
            self._complete_join(group, now)

    def _current(self, group: Group, member: Member) -> JoinResult:
        """The current generation's join result for ``member``."""
        assert group.protocol_name is not None and group.leader is not None
        listing = tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
            for m in group.members.values()
        )
        return JoinResult(
            "NONE",
            group.generation,
            group.protocol_type,
            group.protocol_name,
            group.leader,
            member.member_id,
            listing if member.member_id == group.leader else (),
        )

    def _complete_join(self, group: Group, now: float) -> None:
        for mid in [mid for mid, m in group.members.items() if m.join_ticket is None]:
            del group.members[mid]
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.leader = None
            self._fire(group, JOIN_COMPLETED_EMPTY)
            return
        members = list(group.members.values())
        leader = group.members.get(group.leader or "", members[0])
        group.leader = leader.member_id
        group.protocol_name = select_protocol(members, leader)
        group.protocol_type = leader.protocol_type
        self._fire(group, JOIN_COMPLETED)
        for m in members:
            m.assignment = b""
            m.last_seen = now
            ticket, m.join_ticket = m.join_ticket, None
            assert ticket is not None  # every member left rejoined
            self._resolve(ticket, self._current(group, m))


def _new_member_id(client_id: str) -> str:
    return f"{client_id or 'member'}-{uuid.uuid4()}"
