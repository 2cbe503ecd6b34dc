"""Consumer groups: the one group model, its policies, the group state and the assignors.

One group model
===============
Four protocols have consumer groups.  Three of them let the server decide who reads which
partition (Cursus, the V1 line protocol, Iggy); one coordinator in the engine
(:mod:`conformance.engine.coordinator`) serves those three, and where their documents differ
the difference is data: a :class:`GroupPolicy` passed with each call, as an
:class:`~conformance.engine.log.IdempotencePolicy` is passed with each append.  One state,
one journal format, one set of assignors, one set of refusals.  The engine's own code names
no protocol: :data:`DEFAULT_GROUP_POLICY` is the plainest set of rules (it happens to be
Cursus's, whose front-end passes nothing); a front-end whose rules differ declares its
policy in its own package and passes it with each call.

What a policy decides, and the values the three documents call for:

================  ====================  ====================  ======================
field             Cursus (the default)  V1 line protocol      Iggy
================  ====================  ====================  ======================
member_ids        NUMBERED: ``c-1``,    GIVEN: the consumer   GIVEN: the member's
                  ``c-2`` from the      id (a member joining  number in its group
                  consumer id           again stays itself)   (the front-end numbers)
first_generation  1                     2 (the real broker)   1 (not on the wire)
reaping           SESSION: the          SESSION               CONNECTION: no
                  engine's session                            timeout; it leaves
                  timeout                                     when its connection
                                                              ends (its session
                                                              leaves what it joined)
creation          IMPLICIT: join,       IMPLICIT: JOIN        EXPLICIT: only
                  subscribe or commit                         create_group; a join
                  makes the group                             to a missing group
                                                              fails
commit_check      GENERATION            OWNERSHIP: the        GENERATION (its
                  (BATCH_COMMIT)        generation, and the   stored offset goes
                                        partition is the      through the
                                        member's              member-less commit)
assignor          None: the engine's    None, or the join's   roundrobin (the
                  ``--assignor``        ``assignor=``         partitions dealt
                                                              evenly)
================  ====================  ====================  ======================

A policy may also say that a group reads one topic (``one_topic``: V1, whose JOIN names the
topic of the whole group; a join naming another switches the group and drops its other
members), and carry ``session_timeout_s``, the session length of the members joined
under it (V1: the plug-in's ``--session-timeout-ms``; None, the others: the engine's
``--session-timeout``), and that a commit may store an offset below 0
(``negative_offsets``: Kafka, whose group coordinator stores any offset a client commits;
the others refuse it with OFFSET_OUT_OF_RANGE, so no front-end that cannot say a negative
offset is given one it wrote).

Where a document is silent (a V1 member joining again, what an Iggy stored offset
checks, Iggy's dealing order) the table holds the reference broker's choice, which the
front-end's SPEC.md records as a convention.

The assignor is chosen per group and may be changed by a join (``join_group(...,
assignor=)``, V1's ``assignor=round_robin|range``); a group without one uses the engine's.
A commit without a member (``Engine.commit``: Cursus COMMIT_OFFSET, Iggy's stored offset,
Kafka after its own coordinator has checked the member) checks nothing but the offset,
and under EXPLICIT creation that the group exists.

What the group itself remembers, durably (a ``GroupState`` in the journal): generation,
member counter, subscribed topics, members, which of them end with their connection, the
assignor's name; and its committed offsets.  What the call's policy decides is how that
state may change.  Group names are one namespace shared by every protocol, so offsets
committed over one protocol are read over another under the same group name.  A member
keeps the reaping it joined under: session expiry never touches a member bound to its
connection, and ``disconnect`` never touches a member with a session.  No connection
survives a restart, so recovery removes every member bound to one (one new generation
per group), while session members get a fresh session (session times are not durable).

Kafka stays apart (``conformance/protocols/kafka/coordinator.py``), for a reason in its
document, not one of taste: Kafka assigns on the client side.  The coordinator does not
deal partitions; it gathers the members' joins in a window (join delay, rebalance
timeout), holds each JoinGroup and SyncGroup open until the round completes (waiting
tickets), picks a leader and a protocol by the members' votes, stores the leader's
opaque assignment bytes, answers MEMBER_ID_REQUIRED first to a new member, and keeps a
session and a rebalance timeout per member, all as a five-state machine (Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead).  None of the three others has a
request that waits, a leader or a state beyond "members and a generation".  Folding
Kafka in would put timers, tickets and a transition table under every protocol, or grow
this policy a switch per Kafka rule, the contract that grows a hook per protocol which
STYLE.md warns against.  What Kafka shares is the committed-offset store: its
OffsetCommit, once its coordinator has accepted the member, goes to ``Engine.commit``,
and OffsetFetch reads ``Engine.committed``.  Its membership is not durable (its
coordinator lives in memory; after a restart clients rejoin, as after a coordinator
failover), its offsets are.

Assignors take a partition count and the member ids, sorted as strings (a front-end whose
ids are numbers, Iggy's member numbers, pads them to one width to deal in numeric order), and
return every member's partitions:
  * ``range``: contiguous ranges; the first ``partitions % members`` members get one extra;
  * ``roundrobin`` (``round_robin``, V1's spelling, is the same): partition p goes to
    member ``p % members``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Assignor = Callable[[int, Sequence[str]], dict[str, list[int]]]


def range_assign(partitions: int, members: Sequence[str]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {m: [] for m in members}
    if not members:
        return result
    each, extra = divmod(partitions, len(members))
    start = 0
    for i, member in enumerate(members):
        count = each + (1 if i < extra else 0)
        result[member] = list(range(start, start + count))
        start += count
    return result


def roundrobin_assign(partitions: int, members: Sequence[str]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {m: [] for m in members}
    if not members:
        return result
    for p in range(partitions):
        result[members[p % len(members)]].append(p)
    return result


ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "round_robin": roundrobin_assign,
}


def assignor_named(name: str) -> Assignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        known = ", ".join(sorted(ASSIGNORS))
        raise ValueError(f"unknown assignor {name!r}; known assignors: {known}") from None


# ------------------------------------------------------------------------ the policy


class MemberIds(enum.Enum):
    NUMBERED = "numbered"  # f"{consumer_id}-{n}", n from the group's counter, never reused
    GIVEN = "given"  # the consumer id is the member id


class Reaping(enum.Enum):
    SESSION = "session"  # removed when silent for longer than the engine's session timeout
    CONNECTION = "connection"  # removed by Engine.disconnect (and at recovery), never by time


class Creation(enum.Enum):
    IMPLICIT = "implicit"  # a join, a subscription or a commit creates the group
    EXPLICIT = "explicit"  # only create_group does; others refuse a missing group


class CommitCheck(enum.Enum):
    GENERATION = "generation"  # a known member at the group's generation
    OWNERSHIP = "ownership"  # that, and every partition committed is assigned to it


@dataclass(frozen=True, slots=True)
class GroupPolicy:
    """A protocol's rules for server-assigned groups (see the module's table)."""

    member_ids: MemberIds = MemberIds.NUMBERED
    first_generation: int = 1
    reaping: Reaping = Reaping.SESSION
    creation: Creation = Creation.IMPLICIT
    commit_check: CommitCheck = CommitCheck.GENERATION
    assignor: str | None = None  # a new group's assignor; None: the engine's
    one_topic: bool = False
    """A group reads one topic: a join naming another switches the group to it, drops
    every other member and starts a new generation (V1, as the real broker does); else a
    join's topic is one more subscription of the group."""
    session_timeout_s: float | None = None
    """How long a SESSION member joined under this policy may stay silent; None: the
    engine's.  Held in memory only, as session times are: a member recovered after a
    restart has the engine's until it joins again."""
    negative_offsets: bool = False
    """A commit may store an offset below 0 (Kafka's group coordinator stores whatever a
    client commits); else such a commit is OFFSET_OUT_OF_RANGE.  The partition must
    exist either way."""

    def __post_init__(self) -> None:
        if self.first_generation < 1:
            raise ValueError(f"first_generation must be at least 1, not {self.first_generation}")
        if self.session_timeout_s is not None and not self.session_timeout_s > 0:
            raise ValueError(f"session_timeout_s must be positive, not {self.session_timeout_s}")
        if self.assignor is not None:
            assignor_named(self.assignor)


DEFAULT_GROUP_POLICY = GroupPolicy()
"""Numbered member ids, generations from 1, session reaping, groups made by their first
join or commit, commits checked against the generation, the engine's assignor."""


# ------------------------------------------------------------------------- the state


@dataclass
class Member:
    consumer_id: str
    last_seen: float
    reaping: Reaping = Reaping.SESSION
    timeout_s: float | None = None  # the policy's session timeout; None: the engine's


@dataclass
class Group:
    name: str
    generation: int = 0
    counter: int = 0
    subscriptions: list[str] = field(default_factory=list)
    members: dict[str, Member] = field(default_factory=dict)
    assignor: str = ""  # "" : the engine's
    # topic -> partition -> committed offset
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)

    def sorted_members(self) -> list[str]:
        return sorted(self.members)

    def members_of(self, consumer_id: str) -> list[str]:
        return sorted(m for m, mem in self.members.items() if mem.consumer_id == consumer_id)

    def expired(self, now: float, timeout_s: float) -> list[str]:
        return sorted(
            m
            for m, mem in self.members.items()
            if mem.reaping is Reaping.SESSION and now - mem.last_seen > (mem.timeout_s or timeout_s)
        )

    def bound_to(self, consumer_id: str | None) -> list[str]:
        """Members bound to their connection: ``consumer_id``'s, or everyone's (None)."""
        return sorted(
            m
            for m, mem in self.members.items()
            if mem.reaping is Reaping.CONNECTION and consumer_id in (None, mem.consumer_id)
        )

    def forget_partitions(self, topic: str, remaining: int) -> None:
        """The topic now has ``remaining`` partitions: offsets of the others are gone."""
        offsets = self.offsets.get(topic)
        if offsets:
            for p in [p for p in offsets if p >= remaining]:
                del offsets[p]

    def forget_topic(self, topic: str) -> None:
        if topic in self.subscriptions:
            self.subscriptions.remove(topic)
        self.offsets.pop(topic, None)
