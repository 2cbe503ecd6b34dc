"""The machinery of the classic group coordinator (:mod:`.coordinator`): the step every
request takes (catch up with the clock, then notify), sessions, rebalances, the
replacement of a static member, and what is written to the group store.

:class:`CoordinatorCore` holds the groups and the rules that run between requests;
:class:`.coordinator.Coordinator` adds the requests.  The rules, as Kafka's classic group
coordinator (``GroupMetadataManager``, ``ClassicGroup``) has them:

* **A rebalance completes** when every member has rejoined and the join delay has passed,
  or when the rebalance timeout comes.  Then dynamic members that did not rejoin are
  removed; static members (a group instance id) stay (``completeClassicGroupJoin``).  The
  leader is the old one if it rejoined, else the first member that did
  (``ClassicGroup.maybeElectNewJoinedLeader``); when no member rejoined, the completion
  is tried again a rebalance timeout later (until sessions remove the silent members).
* **A static member replaced** (``updateStaticMemberThenRebalanceOrCompleteJoin``,
  ``ClassicGroup.replaceStaticMember``): the old member id is dropped (a join or sync it
  was waiting in is answered FENCED_INSTANCE_ID), the new one takes its place with its
  client id, host, assignment and leadership, and the protocols and timeouts of the new
  join.  In Stable, if the protocol the group would choose stays the same, there is no
  rebalance: the join is answered at once, at the current generation (see
  :func:`.coordinator_state.replaced` for what the leader is told); else, and in
  CompletingRebalance, a rebalance starts; in PreparingRebalance the join waits for it.
* **What is stored** (with a :class:`Store`, as Kafka writes its GroupMetadataValue
  records to __consumer_offsets): a new group (Empty, generation 0), a rebalance that
  left the group Empty, the leader's assignment (Stable), a static member replaced without
  a rebalance; a deleted group is removed.  A group that is rebalancing when the broker
  stops comes back as it was last stored: Kafka writes nothing in between.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar

from conformance.protocols.kafka.coordinator_state import (
    DELETED,
    JOIN_COMPLETED,
    JOIN_COMPLETED_EMPTY,
    LEADER_SYNCED,
    MEMBER_JOINED,
    MEMBER_LEFT,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    JoinResult,
    Member,
    PendingTicket,
    join_error,
    listing,
    next_state,
    replaced,
    select_protocol,
    sync_error,
    validate_member,
)

R = TypeVar("R")

STORED_AT = (JOIN_COMPLETED_EMPTY, LEADER_SYNCED)
"""The events after which a group is written to the store (Kafka's GroupMetadataValue:
``completeClassicGroupJoin`` of an emptied group, the leader's assignment)."""


class Store(Protocol):
    """Where the classic groups are kept across a restart (:mod:`.group_store`)."""

    def load(self, now: float) -> dict[str, Group]: ...

    def save(self, group: Group) -> None: ...

    def forget(self, group_id: str) -> None: ...


class CoordinatorCore:
    """Every classic group of one broker, and the rules that run between requests."""

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
        self.store: Store | None = None

    def attach(self, store: Store, *, load: bool = True) -> None:
        """Keep the groups in ``store`` from now on; with ``load``, first take back the
        groups it holds (a group of the same id made meanwhile is kept).  As Kafka loads
        __consumer_offsets: a group with members is Stable, its members' sessions start
        again now (``GroupMetadataManager.onLoaded``)."""
        self.store = store
        if not load:
            return
        for group_id, group in store.load(self._clock()).items():
            if group_id not in self._groups:
                self._groups[group_id] = group
                if group.members:
                    self._live.add(group_id)

    # -- the step -----------------------------------------------------------------------

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

    def tick(self) -> None:
        """Catch up with the clock: expire waits and sessions, complete due rebalances."""
        with self._step():
            pass

    # -- small helpers ------------------------------------------------------------------

    def _fire(self, group: Group, event: str) -> None:
        group.state = next_state(group.group_id, group.state, event)
        self._dirty = True
        if event in STORED_AT:
            self._save(group)
        elif event == DELETED and self.store is not None:
            self.store.forget(group.group_id)

    def _save(self, group: Group) -> None:
        if self.store is not None:
            self.store.save(group)

    def _new_group(self, group_id: str) -> Group:
        """A new group, Empty at generation 0, stored as Kafka writes its first record."""
        group = self._groups[group_id] = Group(group_id)
        self._dirty = True
        self._save(group)
        return group

    def _resolve(self, ticket: PendingTicket[R], value: R) -> None:
        if ticket.resolve(value):
            self._dirty = True

    def _answered(self, now: float, value: R) -> PendingTicket[R]:
        return PendingTicket(now, self.tick, value)

    def _check_member(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        now: float,
        instance_id: str | None = None,
    ) -> tuple[str, Group | None, Member | None]:
        """The checks sync, heartbeat and commit share (``ClassicGroup.validateMember``,
        then the generation); refreshes the member's session."""
        if not group_id:
            return "INVALID_GROUP_ID", None, None
        group = self._groups.get(group_id)
        if group is None:
            return "UNKNOWN_MEMBER_ID", None, None
        error = validate_member(group, member_id, instance_id)
        if error != "NONE":
            return error, group, None
        member = group.members[member_id]
        member.last_seen = now
        if generation != group.generation:
            return "ILLEGAL_GENERATION", group, member
        return "NONE", group, member

    # -- sessions and rebalances --------------------------------------------------------

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

    def _remove(self, group: Group, member_ids: Sequence[str], now: float) -> None:
        for mid in member_ids:
            self._drop(group, mid)
        self._after_removal(group, now)

    def _drop(self, group: Group, member_id: str) -> None:
        """The member is gone; a join or sync it waits in is answered UNKNOWN_MEMBER_ID."""
        member = group.members.pop(member_id)
        if member.join_ticket is not None:
            self._resolve(member.join_ticket, join_error("UNKNOWN_MEMBER_ID", member_id))
        if member.sync_ticket is not None:
            self._resolve(member.sync_ticket, sync_error("UNKNOWN_MEMBER_ID"))

    def _after_removal(self, group: Group, now: float) -> None:
        """Members were removed: a rebalance starts (or goes on), and may end at once."""
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

    def _wait_join(self, group: Group, member: Member, now: float) -> PendingTicket[JoinResult]:
        """``member`` waits in the rebalance under way (a join it waited in before is
        answered REBALANCE_IN_PROGRESS); its ticket."""
        if member.join_ticket is not None:
            self._resolve(member.join_ticket, join_error("REBALANCE_IN_PROGRESS", member.member_id))
        deadline = max(now + member.rebalance_timeout_s, group.rebalance_deadline)
        ticket = PendingTicket[JoinResult](deadline + self._join_delay_s, self.tick)
        member.join_ticket = ticket
        self._maybe_complete_join(group, now)
        return ticket

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
        return JoinResult(
            "NONE",
            group.generation,
            group.protocol_type,
            group.protocol_name,
            group.leader,
            member.member_id,
            listing(group) if member.member_id == group.leader else (),
        )

    def _complete_join(self, group: Group, now: float) -> None:
        for mid in [
            mid
            for mid, m in group.members.items()
            if m.join_ticket is None and m.group_instance_id is None
        ]:
            del group.members[mid]
        joined = [m for m in group.members.values() if m.join_ticket is not None]
        if group.members and not joined:
            # only static members left and none rejoined: tried again later
            timeouts = (m.rebalance_timeout_s for m in group.members.values())
            group.rebalance_deadline = now + max(timeouts, default=0.0)
            return
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.leader = None
            self._fire(group, JOIN_COMPLETED_EMPTY)
            return
        old_leader = group.members.get(group.leader or "")
        leader = old_leader if old_leader is not None and old_leader.join_ticket else joined[0]
        group.leader = leader.member_id
        group.protocol_name = select_protocol(list(group.members.values()), leader)
        group.protocol_type = leader.protocol_type
        self._fire(group, JOIN_COMPLETED)
        for m in group.members.values():
            m.assignment = b""
            m.last_seen = now
        for m in joined:
            ticket, m.join_ticket = m.join_ticket, None
            assert ticket is not None
            self._resolve(ticket, self._current(group, m))

    # -- static members -----------------------------------------------------------------

    def _replace_static(
        self,
        group: Group,
        old_id: str,
        now: float,
        *,
        protocols: tuple[tuple[str, bytes], ...],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        skip_assignment: bool,
    ) -> PendingTicket[JoinResult]:
        """A static member joins again with an unknown member id: it takes ``old_id``'s
        place (Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin``)."""
        current_leader = group.leader
        old = group.members.pop(old_id)
        if old.join_ticket is not None:
            self._resolve(old.join_ticket, join_error("FENCED_INSTANCE_ID", old_id))
        if old.sync_ticket is not None:
            self._resolve(old.sync_ticket, sync_error("FENCED_INSTANCE_ID"))
        instance = old.group_instance_id
        assert instance is not None
        new_id = new_member_id(old.client_id, instance)
        member = group.members[new_id] = Member(
            new_id,
            instance,
            old.client_id,
            old.client_host,
            old.protocol_type,
            protocols,
            session_timeout_s=session_timeout_ms / 1000,
            rebalance_timeout_s=rebalance_timeout_ms / 1000,
            last_seen=now,
            assignment=old.assignment,
        )
        if group.leader == old_id:
            group.leader = member.member_id
        self._dirty = True
        if group.state == STABLE:
            leader = group.members[group.leader or member.member_id]
            if select_protocol(list(group.members.values()), leader) == group.protocol_name:
                self._save(group)
                return self._answered(now, replaced(group, member, current_leader, skip_assignment))
        if group.state != PREPARING_REBALANCE:
            self._prepare_rebalance(group, now, MEMBER_JOINED)
        return self._wait_join(group, member, now)


def new_member_id(client_id: str, instance_id: str | None = None) -> str:
    """Kafka's ``ClassicGroup.generateMemberId``: the group instance id (else the client
    id) and a UUID."""
    return f"{instance_id or client_id or 'member'}-{uuid.uuid4()}"
