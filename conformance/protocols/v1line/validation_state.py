"""What V1 clients were told, across connections: the group members' generations and
assignments, and the partitions set to follower role; the checks that need it (SPEC.md,
``client: groups`` and ``client: replication``), sans-IO.

A member is a (group, consumer id) pair.  It learns its generation and assignment only
from the broker's answers to *its own* JOIN and SYNC (V1L-CLI-11, -12): a rebalance it
was not told about (another member joined) does not make its generation stale in its
eyes, so using it is no violation; the broker's GENERATION_MISMATCH is how it learns, and
from then on it must JOIN before its next member command (V1L-CLI-14).  A member the
broker already had before this session (a broker restarted on its data directory) is
taken at the generation the broker holds for it (``held``), so a client that outlives a
restart is judged by what it was given then.

Session (V1L-CLI-13): the time between a member's JOIN, SYNC or HEARTBEAT requests and its
next member command, against the broker's session timeout; a JOIN after a long silence is
a new start and never late.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.errors import ProtocolError
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import ErrReply, OkReply
from conformance.protocols.v1line.errors import GENERATION_MISMATCH
from conformance.protocols.v1line.validation_lines import Line

GENERATION = "V1L-CLI-11"
OWNED = "V1L-CLI-12"
SESSION = "V1L-CLI-13"
REJOIN = "V1L-CLI-14"
LEADER_ONLY = "V1L-CLI-16"
PROGRESS = "V1L-CLI-17"

MEMBER_COMMANDS = ("SYNC", "HEARTBEAT", "LEAVE", "COMMIT")
"""The commands a member sends with its generation."""
KEEP_ALIVE = ("JOIN", "SYNC", "HEARTBEAT")
MAX_TRACKED = 100_000
"""Members, partitions and replicas remembered at most (a client naming more is judged
without what it was told about the rest)."""


@dataclass
class Member:
    generation: int | None = None
    """The generation of the broker's latest JOIN or SYNC answer to this member."""
    assigned: tuple[int, ...] | None = None
    alive_at: float | None = None
    """When it last sent JOIN, SYNC or HEARTBEAT (monotonic seconds)."""
    must_join: bool = False
    """Answered GENERATION_MISMATCH and has not sent JOIN since."""
    left: bool = False


class ClientState:
    def __init__(
        self, session_timeout_s: float, held: Callable[[str, str], int | None] | None = None
    ) -> None:
        self.session_timeout_s = session_timeout_s
        self.held = held
        self.members: dict[tuple[str, str], Member] = {}
        self.followers: set[tuple[str, int]] = set()
        self.progress: dict[tuple[str, int, int], int] = {}

    # ---------------------------------------------------------------- requests

    def request(self, line: Line, now: float) -> None:
        """Check ``line`` (already read) against what its client was told; add to it."""
        if not line.complete:
            return
        command = line.command
        if command == "JOIN":
            member = self._member(line)
            if member is not None:
                member.must_join = member.left = False
                member.alive_at = now
        elif command in MEMBER_COMMANDS:
            self._member_command(line, now)
        elif command == "REPLICA_FETCH":
            self._replica_fetch(line)

    def _key(self, line: Line) -> tuple[str, str]:
        return str(line.values["group"]), str(line.values["consumer_id"])

    def _member(self, line: Line) -> Member | None:
        key = self._key(line)
        member = self.members.get(key)
        if member is None and len(self.members) < MAX_TRACKED:
            member = self.members[key] = Member()
        return member

    def _member_command(self, line: Line, now: float) -> None:
        group, consumer = self._key(line)
        generation = line.values["generation"]
        assert isinstance(generation, int)
        line.check(GENERATION, REJOIN, SESSION)
        member = self.members.get((group, consumer))
        if member is None or (member.generation is None and not member.left):
            held = self.held(group, consumer) if self.held is not None else None
            if held is None:
                line.broke(
                    GENERATION,
                    f"consumer {consumer!r} has no JOIN answer from this broker in group "
                    f"{group!r}: it is not a member",
                    "consumer_id",
                )
                return
            member = self.members.setdefault((group, consumer), Member())
            member.generation = held
        late = None if member.alive_at is None else now - member.alive_at
        if late is not None and late > self.session_timeout_s and not member.left:
            line.broke(
                SESSION,
                f"{line.command} {late:.1f} s after the member's last JOIN, SYNC or HEARTBEAT; "
                f"the session timeout is {self.session_timeout_s:g} s",
            )
        if line.command in KEEP_ALIVE:
            member.alive_at = now
        self._generation(line, member, group, consumer, generation)

    def _generation(
        self, line: Line, member: Member, group: str, consumer: str, generation: int
    ) -> None:
        if member.left:
            line.broke(
                GENERATION,
                f"consumer {consumer!r} left group {group!r} (LEAVE answered left=true) "
                "and has not joined again",
                "consumer_id",
            )
        elif member.must_join:
            line.broke(
                REJOIN,
                f"the broker answered GENERATION_MISMATCH to consumer {consumer!r} of group "
                f"{group!r} and it has not sent JOIN since",
                "generation",
            )
        elif member.generation is not None and generation != member.generation:
            how = "stale" if generation < member.generation else "never given"
            line.broke(
                GENERATION,
                f"generation {generation} is {how}: the broker's latest JOIN or SYNC answer "
                f"to {consumer!r} in group {group!r} gave generation {member.generation}",
                "generation",
            )
        elif line.command == "COMMIT" and member.assigned is not None:
            line.check(OWNED)
            partition = line.values["partition"]
            if partition not in member.assigned:
                shown = " ".join(map(str, member.assigned))
                line.broke(
                    OWNED,
                    f"partition {partition} is not in {consumer!r}'s assignment [{shown}] "
                    f"(generation {member.generation})",
                    "partition",
                )

    def _replica_fetch(self, line: Line) -> None:
        topic, partition = str(line.values["topic"]), line.values["partition"]
        replica, offset = line.values["replica_id"], line.values["offset"]
        assert isinstance(partition, int) and isinstance(replica, int)
        assert isinstance(offset, int)
        line.check(LEADER_ONLY, PROGRESS)
        if (topic, partition) in self.followers:
            line.broke(
                LEADER_ONLY,
                f"partition {topic}/{partition} was set to follower role on this broker "
                "(SET_PARTITION_ROLE answered role=follower)",
                "partition",
            )
        key = (topic, partition, replica)
        before = self.progress.get(key)
        if before is not None and offset < before:
            line.broke(
                PROGRESS,
                f"replica {replica} reports offset {offset} for {topic}/{partition} after "
                f"reporting {before}",
                "offset",
            )
        if len(self.progress) < MAX_TRACKED or key in self.progress:
            self.progress[key] = max(offset, before if before is not None else offset)

    # ----------------------------------------------------------------- replies

    def reply(self, line: Line, payload: bytes) -> None:
        """The client got ``payload`` in answer to ``line``: learn what it was told."""
        if not line.complete:
            return
        try:
            reply = codec.parse_reply(payload)
        except ProtocolError:
            return
        command = line.command
        if isinstance(reply, ErrReply):
            if reply.code == GENERATION_MISMATCH and command in MEMBER_COMMANDS:
                member = self.members.get(self._key(line))
                if member is not None:
                    member.must_join = True
            return
        assert isinstance(reply, OkReply)
        if command in ("JOIN", "SYNC"):
            self._assignment(line, reply)
        elif command == "LEAVE":
            member = self.members.get(self._key(line))
            if member is not None:
                member.left, member.generation, member.assigned = True, None, None
        elif command == "SET_PARTITION_ROLE":
            key = (str(line.values["topic"]), int(str(line.values["partition"])))
            if line.values["role"] == "follower":
                if len(self.followers) < MAX_TRACKED:
                    self.followers.add(key)
            else:
                self.followers.discard(key)

    def _assignment(self, line: Line, reply: OkReply) -> None:
        member = self._member(line)
        if member is None or reply.payload is None:
            return
        try:
            values = codec.decode_payload(str(line.command), reply.payload)
        except ProtocolError:
            return
        generation, assigned = values.get("generation"), values.get("assigned")
        if isinstance(generation, int) and not isinstance(generation, bool):
            member.generation = generation
            member.left = False
        if isinstance(assigned, tuple):
            member.assigned = tuple(a for a in assigned if isinstance(a, int))
