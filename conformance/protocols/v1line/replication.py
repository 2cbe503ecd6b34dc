"""Replication of one V1 line partition, sans-IO: roles, the ISR, the high watermark, acks=all.

No sockets, threads or sleeps: every question that depends on time takes ``now`` (an
injected clock in milliseconds, which must not go back), so a test drives the lag timeout
by passing numbers.  The broker front-end keeps one :class:`PartitionReplication` per
partition beside the engine's log, calls :meth:`~PartitionReplication.appended` after each
append, and builds its replies from the values this module returns.

Offsets are the engine log's (consecutive from 0, V1L-PROD-2); ``hw`` and the leader's
last offset are the offset of a record, -1 when there is none (SPEC preamble, reply
payload grammar).  The leader is replica 0; followers are 1..replication_factor-1 and
start unseen (FACTS.md, replication).

Rules, with the requirements they implement:

* Role (V1L-REPL-1, -4, -5): every partition starts as leader; :meth:`check_produce`
  raises NOT_LEADER on a follower-role partition, before anything is appended.  Role
  names are the codec's business (exact in ``doc``, any case in ``real``); here a role
  is ``leader`` or ``follower``.  Turning follower keeps the log and the replicas'
  progress, so hw is unchanged (FACTS.md, replication).
* REPLICA_FETCH (V1L-REPL-6, -7, -15, -16): a replica id outside 1..replication_factor-1
  raises :class:`ReplicationError` ``BAD_REQUEST`` ``invalid replica id``; ``real``
  refuses a report to a follower-role partition (``partition is not leader``, V1L-REPL-16),
  ``doc`` records it (the document sets no condition).  The reported offset is clamped to
  the leader's last offset and a follower's progress never goes back; ``acked_offset``
  in the reply echoes the offset sent.
* ISR (V1L-REPL-10, -11, -15): the leader 0 always, listed first, followers ascending.
  ``doc`` (SPEC preamble, high watermark): a follower is in while its last report that
  reached the leader's last offset is at most ``lag_timeout_ms`` old, so a follower that
  stops reporting leaves after the lag timeout.  ``real`` (V1L-REPL-16, max lag 0): a
  follower is in while it has reported within the lag timeout *and* its offset is the
  leader's last offset, so it leaves at once when it lags.
* High watermark (V1L-REPL-13, -14, -15; V1L-CONS-2): the smallest offset the ISR has
  acknowledged, the leader counting its last offset.  In ``doc`` a record appended while an
  in-sync follower has not reported it stays above hw until that follower reports it or
  leaves the ISR (V1L-REPL-13).  In ``real`` only caught-up followers are in the ISR, so
  hw is always the leader's last offset (V1L-REPL-16).  Either way hw never passes the
  leader's last offset and never goes back: the ISR only loses members with time, gains
  one only at the leader's last offset, and no offset in it decreases.
* under_replicated (V1L-REPL-12, -16): the ISR is smaller than min ISR, in both
  revisions (the real broker's rule; it satisfies the document's).
* acks=all (V1L-REPL-8, -9): ready when hw has reached the produced offset and the ISR
  holds at least min ISR replicas; :meth:`acks_all_state` says ``timeout`` once
  ``ack_timeout_ms`` has passed since the append without it being ready.

Defaults are SPEC.md's serve options, from the real broker's config (FACTS.md):
replication factor 3, min ISR 2 (clamped to 1..replication factor, as the real broker
does), acks=all timeout 2000 ms, replica lag timeout 10000 ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from conformance.protocols.v1line.commands import PayloadValue, Revision
from conformance.protocols.v1line.errors import BAD_REQUEST, NOT_LEADER

Role = Literal["leader", "follower"]
AcksAllState = Literal["ready", "waiting", "timeout"]
LEADER_ID = 0

DEFAULT_REPLICATION_FACTOR = 3
DEFAULT_MIN_ISR = 2
DEFAULT_ACK_TIMEOUT_MS = 2000
DEFAULT_LAG_TIMEOUT_MS = 10_000


class ReplicationError(Exception):
    """A request the replication rules refuse; the handler answers ``code`` with the
    request's correlation id and ``message`` (the real broker's text, V1L-ENV-19)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ReplicationConfig:
    """A broker's replication options (SPEC preamble, serve options)."""

    replication_factor: int = DEFAULT_REPLICATION_FACTOR
    min_isr: int = DEFAULT_MIN_ISR
    ack_timeout_ms: int = DEFAULT_ACK_TIMEOUT_MS
    lag_timeout_ms: int = DEFAULT_LAG_TIMEOUT_MS
    revision: Revision = "doc"

    def __post_init__(self) -> None:
        if self.replication_factor < 1:
            raise ValueError(f"replication_factor {self.replication_factor} is below 1")
        if self.ack_timeout_ms < 0 or self.lag_timeout_ms < 0:
            raise ValueError("timeouts must not be negative")
        if self.revision not in ("doc", "real"):
            raise ValueError(f"unknown revision {self.revision!r}")

    @property
    def effective_min_isr(self) -> int:
        """min ISR clamped to 1..replication_factor, as the real broker does (FACTS.md)."""
        return max(1, min(self.min_isr, self.replication_factor))


@dataclass
class Follower:
    """What the leader knows of one follower: its acknowledged offset (-1 before any
    report), when it last reported, and when a report last reached the leader's last
    offset (None: never)."""

    offset: int = -1
    reported_at: float | None = None
    caught_up_at: float | None = None


@dataclass
class PartitionReplication:
    """The replication state of one partition on this broker (leader 0's view)."""

    topic: str
    partition: int
    config: ReplicationConfig = field(default_factory=ReplicationConfig)
    role: Role = "leader"
    leader_last_offset: int = -1
    followers: dict[int, Follower] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.leader_last_offset < -1:
            raise ValueError(f"leader_last_offset {self.leader_last_offset} is below -1")
        for rid in range(1, self.config.replication_factor):
            self.followers.setdefault(rid, Follower())

    # ------------------------------------------------------------------ events

    def appended(self, last_offset: int) -> None:
        """The leader's log now ends at ``last_offset`` (a log never shrinks)."""
        if last_offset < self.leader_last_offset:
            raise ValueError(
                f"{self.topic}/{self.partition}: last offset {last_offset} is below "
                f"{self.leader_last_offset}: the log never shrinks"
            )
        self.leader_last_offset = last_offset

    def set_role(self, role: str) -> None:
        """SET_PARTITION_ROLE (V1L-REPL-1, -5); the codec has already matched the role."""
        if role not in ("leader", "follower"):
            raise ReplicationError(BAD_REQUEST, "invalid role")
        self.role = "leader" if role == "leader" else "follower"

    def check_produce(self) -> None:
        """Raise NOT_LEADER when this partition may not take a PRODUCE (V1L-REPL-4)."""
        if self.role != "leader":
            raise ReplicationError(NOT_LEADER, "partition leader unavailable on this broker")

    def check_replica_id(self, replica_id: int) -> None:
        """A follower's id is in 1..replication_factor-1 (V1L-REPL-7); 0 is the leader."""
        if not 1 <= replica_id < self.config.replication_factor:
            raise ReplicationError(BAD_REQUEST, "invalid replica id")

    def report(self, replica_id: int, offset: int, now: float) -> dict[str, PayloadValue]:
        """REPLICA_FETCH: record the follower's progress and return the reply's values
        (V1L-REPL-6); raises :class:`ReplicationError` BAD_REQUEST on a bad replica id
        (V1L-REPL-7) and, in ``real``, on a follower-role partition (V1L-REPL-16)."""
        self.check_replica_id(replica_id)
        if self.config.revision == "real" and self.role != "leader":
            raise ReplicationError(BAD_REQUEST, "partition is not leader")
        follower = self.followers[replica_id]
        # Progress never goes back and never passes what the leader has (V1L-REPL-15).
        follower.offset = max(follower.offset, min(offset, self.leader_last_offset))
        follower.reported_at = now
        if follower.offset >= self.leader_last_offset:
            follower.caught_up_at = now
        return {
            "replica": replica_id,
            "acked_offset": offset,
            "hw": self.hw(now),
            "isr": self.isr(now),
            "under_replicated": self.under_replicated(now),
        }

    # ----------------------------------------------------------------- queries

    def in_sync(self, replica_id: int, now: float) -> bool:
        """Whether follower ``replica_id`` is in the ISR at ``now`` (per revision)."""
        f = self.followers[replica_id]
        lag = self.config.lag_timeout_ms
        if self.config.revision == "real":
            return (
                f.reported_at is not None
                and now - f.reported_at <= lag
                and f.offset >= self.leader_last_offset
            )
        return f.caught_up_at is not None and now - f.caught_up_at <= lag

    def isr(self, now: float) -> tuple[int, ...]:
        """The in-sync replicas: the leader 0 first, then followers ascending."""
        return (LEADER_ID, *(r for r in sorted(self.followers) if self.in_sync(r, now)))

    def hw(self, now: float) -> int:
        """The offset of the last committed record, -1 when none (V1L-REPL-13, -16)."""
        offsets = [self.followers[r].offset for r in self.isr(now) if r != LEADER_ID]
        return min([self.leader_last_offset, *offsets])

    def under_replicated(self, now: float) -> bool:
        """The ISR is smaller than min ISR (V1L-REPL-12, -16)."""
        return len(self.isr(now)) < self.config.effective_min_isr

    def acks_all_ready(self, offset: int, now: float) -> bool:
        """acks=all may answer for ``offset``: hw reached it and min ISR holds (V1L-REPL-9)."""
        return self.hw(now) >= offset and len(self.isr(now)) >= self.config.effective_min_isr

    def acks_all_state(self, offset: int, started: float, now: float) -> AcksAllState:
        """A PRODUCE acks=all appended at ``started``: ``ready`` to answer, still
        ``waiting``, or ``timeout`` (REPLICATION_TIMEOUT, never before ``ack_timeout_ms``,
        V1L-REPL-8)."""
        if self.acks_all_ready(offset, now):
            return "ready"
        if now - started >= self.config.ack_timeout_ms:
            return "timeout"
        return "waiting"

    def role_reply(self, now: float) -> dict[str, PayloadValue]:
        """SET_PARTITION_ROLE's reply values: ``topic partition role hw`` (V1L-REPL-1)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "role": self.role,
            "hw": self.hw(now),
        }
