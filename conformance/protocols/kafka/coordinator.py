"""Kafka's classic group coordinator, sans-IO: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups and the membership check of OffsetCommit.

No sockets, no threads, no timers: the clock is injected, and time only moves when a
request arrives, :meth:`Coordinator.tick` is called, or a waiting :class:`Ticket` is
polled.  Every request first catches up with the clock (expired sessions, rebalances whose
time came), then answers.  Errors are Kafka error names (``"NONE"`` for success).  The
state machine itself (states, events, the transition table) is in
:mod:`.coordinator_state`; what runs between requests (sessions, rebalances, the
replacement of a static member, the group store) in :mod:`.coordinator_core`; this module
applies the rules of each request:

* **Join.**  An empty group id is INVALID_GROUP_ID; a session timeout outside
  [min, max] INVALID_SESSION_TIMEOUT; no protocols or no protocol type
  INCONSISTENT_GROUP_PROTOCOL; a non-empty member id for a group that does not exist
  UNKNOWN_MEMBER_ID; a protocol type other than the members' or no protocol in common
  with the other members INCONSISTENT_GROUP_PROTOCOL; then a non-empty member id is
  checked as Kafka's ``ClassicGroup.validateMember`` does (a group instance id held by
  another member id FENCED_INSTANCE_ID, one the group does not know or a member id it
  does not have UNKNOWN_MEMBER_ID), unless it is a pending member id.  A new dynamic
  member with ``require_known_member_id`` (JoinGroup v4+) is answered at once with
  MEMBER_ID_REQUIRED and a member id, kept pending for its session timeout.  A static
  member (a group instance id, KIP-345) joining with an empty member id takes the place
  of the member that holds its instance id (:mod:`.coordinator_core`); one the group does
  not know joins as a new member, never asked for a member id.  A member joining again
  with the same protocols in CompletingRebalance, or in Stable when it is not the
  leader, is answered at once from the current generation (as Kafka does: a resent join
  must not start a rebalance).  Any other accepted join starts a rebalance (or joins the
  one under way) and waits.
* **Rebalance.**  See :mod:`.coordinator_core`.  The generation goes up by one; the
  protocol is chosen by votes (:func:`.coordinator_state.select_protocol`).  The leader's
  answer lists every member's metadata.  A member joining again while its join waits gets
  REBALANCE_IN_PROGRESS on the older join.
* **Sync.**  Unknown group or member UNKNOWN_MEMBER_ID, a fenced group instance id
  FENCED_INSTANCE_ID, another generation ILLEGAL_GENERATION, a protocol type or name other
  than the group's INCONSISTENT_GROUP_PROTOCOL, a rebalance under way
  REBALANCE_IN_PROGRESS.  The leader's sync stores the assignment (b"" for members it
  leaves out) and makes the group Stable, answering every waiting sync; a follower waits
  for it, for its session timeout at most (then REBALANCE_IN_PROGRESS).  In Stable a sync
  is answered at once.
* **Heartbeat** answers like sync, with NONE in CompletingRebalance and Stable.
* **Leave** (Kafka's ``classicGroupLeaveToClassicGroup``), member by member: an empty
  member id with a group instance id removes that static member (UNKNOWN_MEMBER_ID if
  there is none); a pending member id is dropped; any other is checked as a join is
  (FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID).  Each member leaves at once, so the same member
  named twice is UNKNOWN_MEMBER_ID the second time.
* **Sessions.**  Any request of a member refreshes its session.  A member not waiting in a
  join or sync and silent for its session timeout is removed, as is a member that leaves;
  a removal starts a rebalance, which ends at once (Empty, generation + 1) if nobody is
  left.
* **Commit** (:meth:`Coordinator.check_commit`), as Kafka: a negative generation commits
  to an Empty group (one that does not exist is made, Empty); a generation of 0 or more to
  a group that does not exist is ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from v9); else a
  commit naming a member, a generation or a group instance id is checked as a sync is;
  one naming none of them UNKNOWN_MEMBER_ID; CompletingRebalance REBALANCE_IN_PROGRESS;
  Stable and PreparingRebalance accept it.
* **Describe** shows protocol, member metadata and assignments in Stable only, as Kafka.

``on_change`` is called after every request or tick that changed a state or answered a
waiting ticket (never in the middle of one), so the server can poll its waiting replies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from conformance.protocols.kafka.coordinator_core import CoordinatorCore, Store, new_member_id
from conformance.protocols.kafka.coordinator_state import (
    COMPLETING_REBALANCE,
    DEAD,
    DELETED,
    EMPTY,
    LEADER_SYNCED,
    MEMBER_JOINED,
    PREPARING_REBALANCE,
    STABLE,
    STATES,
    TRANSITIONS,
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
    static_member_id,
    sync_error,
    validate_member,
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
    "Store",
    "SyncResult",
    "Ticket",
]


class Coordinator(CoordinatorCore):
    """Every classic group of one broker, driven by requests and an injected clock."""

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
        skip_assignment: bool = False,
    ) -> Ticket[JoinResult]:
        """``skip_assignment``: the join may be answered so (JoinGroup v9+, KIP-814)."""
        with self._step() as now:

            def refuse(error: str, mid: str = member_id) -> Ticket[JoinResult]:
                return self._answered(now, join_error(error, mid))

            if not group_id:
                return refuse("INVALID_GROUP_ID")
            if not self._min_session_ms <= session_timeout_ms <= self._max_session_ms:
                return refuse("INVALID_SESSION_TIMEOUT")
            if not protocols or not protocol_type:
                return refuse("INCONSISTENT_GROUP_PROTOCOL")
            wanted = tuple((name, bytes(meta)) for name, meta in protocols)
            group = self._groups.get(group_id)
            if group is None and member_id:
                return refuse("UNKNOWN_MEMBER_ID")
            if group is not None and not compatible(group, member_id, protocol_type, protocols):
                return refuse("INCONSISTENT_GROUP_PROTOCOL")
            pending = group is not None and member_id in group.pending
            if pending and group_instance_id is not None:
                # Kafka's classicGroupJoinExistingMember throws IllegalStateException: a
                # pending member id is only ever handed to a dynamic member
                return refuse("UNKNOWN_SERVER_ERROR")
            if group is not None and member_id and not pending:
                error = validate_member(group, member_id, group_instance_id)
                if error != "NONE":
                    return refuse(error)
            if group is None:
                group = self._new_group(group_id)
            self._live.add(group_id)
            if not member_id and group_instance_id is not None:
                held_by = static_member_id(group, group_instance_id)
                if held_by is not None:
                    return self._replace_static(
                        group,
                        held_by,
                        now,
                        protocols=wanted,
                        session_timeout_ms=session_timeout_ms,
                        rebalance_timeout_ms=rebalance_timeout_ms,
                        skip_assignment=skip_assignment,
                    )
            if not member_id and require_known_member_id:
                new_id = new_member_id(client_id)
                group.pending[new_id] = now + session_timeout_ms / 1000
                return refuse("MEMBER_ID_REQUIRED", new_id)
            member_id = member_id or new_member_id(client_id, group_instance_id)
            group.pending.pop(member_id, None)
            old = group.members.get(member_id)
            if (
                old is not None
                and old.protocols == wanted
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
                wanted,
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
            return self._wait_join(group, member, now)

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        *,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: Mapping[str, bytes] = {},
        group_instance_id: str | None = None,
    ) -> Ticket[SyncResult]:
        with self._step() as now:
            error, group, member = self._check_member(
                group_id, member_id, generation, now, group_instance_id
            )
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

    def heartbeat(
        self, group_id: str, member_id: str, generation: int, group_instance_id: str | None = None
    ) -> str:
        with self._step() as now:
            error, group, _ = self._check_member(
                group_id, member_id, generation, now, group_instance_id
            )
            if group is not None and error == "NONE" and group.state == PREPARING_REBALANCE:
                return "REBALANCE_IN_PROGRESS"
            return error

    def leave(self, group_id: str, members: Sequence[str | tuple[str, str | None]]) -> list[str]:
        """Each member's error, in order (see the module docstring); a member is a member
        id, or a ``(member id, group instance id)`` pair."""
        with self._step() as now:
            if not group_id:
                return ["INVALID_GROUP_ID"] * len(members)
            group = self._groups.get(group_id)
            if group is None:
                return ["UNKNOWN_MEMBER_ID"] * len(members)
            errors: list[str] = []
            left = False
            for entry in members:
                member_id, instance_id = (entry, None) if isinstance(entry, str) else entry
                if not member_id:
                    gone = static_member_id(group, instance_id) if instance_id is not None else None
                    error = "NONE" if gone is not None else "UNKNOWN_MEMBER_ID"
                elif group.pending.pop(member_id, None) is not None:
                    gone, error = None, "NONE"
                else:
                    error = validate_member(group, member_id, instance_id)
                    gone = member_id if error == "NONE" else None
                if gone is not None:
                    self._drop(group, gone)
                    left = True
                errors.append(error)
            if left:
                self._after_removal(group, now)
            return errors

    def check_commit(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        *,
        version: int | None = None,
        group_instance_id: str | None = None,
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
                group = self._new_group(group_id)
            if generation < 0 and group.state == EMPTY:
                return "NONE"
            if generation < 0 and not member_id and group_instance_id is None:
                return "UNKNOWN_MEMBER_ID"  # a simple commit to a group with members
            error, group, _ = self._check_member(
                group_id, member_id, generation, now, group_instance_id
            )
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
