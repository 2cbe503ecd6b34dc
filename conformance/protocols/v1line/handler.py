"""The V1 line front-end of the reference broker: one request line -> engine call -> one reply line.

Behaviour (SPEC.md numbers every rule; revision ``doc`` or ``real``):

* Lines come from the shared :class:`~conformance.wire.framing.LineDeframer`; a line over
  64 KiB closes the connection without a reply (V1L-ENV-13), as the real broker's
  scanner does.  Every other line gets exactly one reply, in order (V1L-ENV-1): a parse
  error with correlation id 0 (V1L-ENV-11), an unknown command or an argument error
  with the request's (V1L-ENV-14, -15); the connection stays open (V1L-ENV-12).
* Topics are created on first use with ``partitions`` partitions (3, the real broker's);
  PRODUCE places a record by the FNV-1a 32-bit hash of its key (V1L-PROD-10) and stores
  its value; the key chooses the partition only (FACTS.md, PRODUCE).
* Replication: one :class:`~.replication.PartitionReplication` per partition beside the
  engine's log, in memory (the broker forgets roles and followers' progress when it
  stops; the log and the groups are the engine's, durable with ``--data-dir``).  CONSUME
  returns records up to its high watermark only (V1L-CONS-2).  PRODUCE ``acks=all``
  appends, then waits (a :class:`~conformance.server.Pending` polled on every
  REPLICA_FETCH and every tick) until the record is committed with min ISR in sync, or
  answers REPLICATION_TIMEOUT after the acks=all timeout (V1L-REPL-8, -9); the record
  stays appended either way, as in the real broker.
* Groups (broker_groups.py) are the engine's, under :meth:`V1Config.policy`; every group
  refusal is GENERATION_MISMATCH (V1L-GRP-9, -10, -13, V1L-OFF-2..4).
* Durability (V1L-DUR-1..6, broker_files.py): with a data directory, ``groups.json`` and
  ``offsets.json`` are a view of the engine, rewritten atomically after every change and
  before the reply; the engine's journal, written first, is what a restart recovers from.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from conformance.engine import (
    CommitCheck,
    Creation,
    Engine,
    EngineError,
    GroupPolicy,
    MemberIds,
    NewRecord,
    Reaping,
)
from conformance.errors import ProtocolError
from conformance.exits import UsageError
from conformance.protocols.v1line import codec, durable
from conformance.protocols.v1line.broker_files import GroupFilesView
from conformance.protocols.v1line.broker_groups import GroupCommands, Refused
from conformance.protocols.v1line.commands import KeyValue, PayloadValue, Request, Revision
from conformance.protocols.v1line.errors import (
    BAD_REQUEST,
    REPLICATION_TIMEOUT,
    BadRequest,
    UnknownCommand,
    V1LineError,
    error_line,
)
from conformance.protocols.v1line.quirks import CRASH_EXIT_CODE, Quirks
from conformance.protocols.v1line.replication import (
    DEFAULT_ACK_TIMEOUT_MS,
    DEFAULT_LAG_TIMEOUT_MS,
    DEFAULT_MIN_ISR,
    DEFAULT_REPLICATION_FACTOR,
    PartitionReplication,
    ReplicationConfig,
    ReplicationError,
)
from conformance.server import Outcome
from conformance.wire.framing import LineDeframer

DEFAULT_PARTITIONS = 3
DEFAULT_SESSION_TIMEOUT_MS = 10_000


def fnv1a32(data: bytes) -> int:
    """The FNV-1a 32-bit hash (offset basis 2166136261, prime 16777619)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _clock_ms() -> float:
    return time.monotonic() * 1000.0


@dataclass
class V1Config:
    revision: Revision = "doc"
    replication_factor: int = DEFAULT_REPLICATION_FACTOR
    min_isr: int = DEFAULT_MIN_ISR
    ack_timeout_ms: int = DEFAULT_ACK_TIMEOUT_MS
    replica_lag_timeout_ms: int = DEFAULT_LAG_TIMEOUT_MS
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    partitions: int = DEFAULT_PARTITIONS
    quirks: Quirks = field(default_factory=Quirks)

    def replication(self) -> ReplicationConfig:
        return ReplicationConfig(
            replication_factor=self.replication_factor,
            min_isr=self.min_isr,
            ack_timeout_ms=self.ack_timeout_ms,
            lag_timeout_ms=self.quirks.lag_timeout_ms(self.replica_lag_timeout_ms),
            revision=self.revision,
        )

    def policy(self) -> GroupPolicy:
        """The V1 column of groups.py's table."""
        return GroupPolicy(
            member_ids=MemberIds.GIVEN,
            first_generation=2 if self.revision == "real" else 1,
            reaping=Reaping.SESSION,
            creation=Creation.IMPLICIT,
            commit_check=(
                CommitCheck.GENERATION
                if "commit-any-partition" in self.quirks
                else CommitCheck.OWNERSHIP
            ),
            assignor="round_robin",
            one_topic=True,
            session_timeout_s=self.session_timeout_ms / 1000.0,
        )


class V1Frontend:
    """Shared by every connection: the engine, the partitions' replication, the files."""

    name = "v1line"

    def __init__(self, engine: Engine, config: V1Config | None = None) -> None:
        self.engine = engine
        self.config = config or V1Config()
        self.policy = self.config.policy()
        self.replication_config = self.config.replication()
        self.clock: Callable[[], float] = _clock_ms
        self._replicas: dict[tuple[str, int], PartitionReplication] = {}
        self._listeners: list[Callable[[], None]] = []
        self.stopped = False
        """The fault quirk stop-on-empty-key has tripped: every line stalls its connection."""
        if self.config.partitions > engine.max_partitions:
            raise UsageError(
                f"--partitions {self.config.partitions} is above this broker's limit of "
                f"{engine.max_partitions} partitions per topic (--max-partitions)"
            )
        self.files: GroupFilesView | None = None
        if engine.data_dir:
            self.files = GroupFilesView(engine, durable.GroupFiles(engine.data_dir))
            self.files.check()
            self.files.save()

    def save_durable(self) -> None:
        """Rewrite the group files that no longer match the engine (none without a data dir)."""
        if self.files is not None:
            self.files.save()

    # ---------------------------------------------------------------- the server's

    def set_address(self, host: str, port: int) -> None:
        pass

    def new_deframer(self) -> LineDeframer:
        return codec.FRAMING.deframer("request")

    def new_session(self, peer: str) -> V1Session:
        return V1Session(self)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        """A line over 64 KiB: the connection is closed, nothing is answered (V1L-ENV-13)."""
        return Outcome(close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        remove_engine = self.engine.add_listener(lambda _t, _p: callback())
        self._listeners.append(callback)

        def remove() -> None:
            remove_engine()
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def changed(self) -> None:
        for callback in list(self._listeners):
            callback()

    # ---------------------------------------------------------------- partitions

    def partition_count(self, topic: str, *, create: bool) -> int:
        """The topic's partition count; 0 for an unknown topic unless ``create``."""
        if self.engine.has_topic(topic):
            return self.engine.topic(topic).partitions
        if not create:
            return 0
        return self.engine.create_topic(topic, self.config.partitions).partitions

    def replica(self, topic: str, partition: int) -> PartitionReplication:
        """The partition's replication state, its leader's last offset brought up to the
        log's: a record another protocol appended is the leader's too (docs/cross-protocol.md),
        held to the same hw rules as one appended by PRODUCE."""
        key = (topic, partition)
        last = self.engine.high_watermark(topic, partition) - 1
        rep = self._replicas.get(key)
        if rep is None:
            rep = PartitionReplication(
                topic, partition, self.replication_config, leader_last_offset=last
            )
            self._replicas[key] = rep
        elif last > rep.leader_last_offset:
            rep.appended(last)
        return rep


@dataclass
class AcksAllWait:
    """A PRODUCE acks=all waiting for its record to be committed (server Pending)."""

    frontend: V1Frontend
    replica: PartitionReplication
    correlation_id: str
    partition: int
    offset: int
    started_ms: float
    deadline: float
    """The server's clock (``time.monotonic()`` seconds); the replication rules use the
    front-end's (``clock``, milliseconds), which a test may replace."""
    abandon_on_eof: bool = False
    """A V1 broker answers every line it read (V1L-ENV-1), a half-closed peer's too."""

    def poll(self, now: float) -> list[bytes] | None:
        now_ms = self.frontend.clock()
        if now >= self.deadline:  # the server's deadline: answer now, whatever the clock says
            now_ms = max(now_ms, self.started_ms + self.replica.config.ack_timeout_ms)
        state = self.replica.acks_all_state(self.offset, self.started_ms, now_ms)
        if state == "waiting":
            return None
        if state == "timeout":
            return [error_line(self.correlation_id, REPLICATION_TIMEOUT, "acks=all timeout")]
        values = {"partition": self.partition, "offset": self.offset}
        values["hw"] = self.replica.hw(now_ms)
        return [codec.encode_result(self.correlation_id, "PRODUCE", values)]


class V1Session(GroupCommands):
    def __init__(self, frontend: V1Frontend) -> None:
        self.frontend = frontend
        self.engine = frontend.engine
        self.config = frontend.config
        self.quirks = frontend.config.quirks

    def closed(self) -> None:
        pass

    def received(self, count: int) -> None:
        pass

    def handle(self, frame: bytes) -> Outcome:
        quirks = self.quirks
        if quirks.active:
            if self.frontend.stopped:  # stop-on-empty-key has tripped: serve no one
                return Outcome(stall=True)
            if quirks.crashes_on(frame):
                _crash("crash-on-negative-offset", "CONSUME with a negative offset")
        try:
            request = codec.parse_request(frame, revision=self.config.revision)
        except V1LineError as exc:
            return Outcome([self._refusal(exc)])
        if quirks.active and "stop-on-empty-key" in quirks and _empty_key(request):
            print("quirk stop-on-empty-key: no connection is served any more", file=sys.stderr)
            self.frontend.stopped = True
            return Outcome(stall=True)
        try:
            return self.dispatch(request)
        except Refused as exc:
            return Outcome([error_line(request.correlation_id, exc.code, exc.message)])
        except ReplicationError as exc:
            return Outcome([error_line(request.correlation_id, exc.code, exc.message)])
        except EngineError as exc:  # a limit of the engine (a name, a count): refused, not closed
            return Outcome([error_line(request.correlation_id, BAD_REQUEST, exc.message)])

    def _refusal(self, exc: V1LineError) -> bytes:
        quirks = self.quirks
        if isinstance(exc, UnknownCommand) and "unknown-command-bad-request" in quirks:
            return error_line(exc.correlation_id, BAD_REQUEST, "invalid command")
        if (
            isinstance(exc, UnknownCommand)
            and self.config.revision == "real"  # (doc's unknown 'ping' stays unknown)
            and exc.command.upper() == "PING"
            and "answers-ping" in quirks
        ):
            return codec.encode_result(exc.correlation_id, "PING", {})
        if (
            isinstance(exc, BadRequest)
            and "parse-error-echoes-cid" in quirks
            and exc.message == "unsupported version"
            and exc.request_correlation_id
        ):
            return error_line(exc.request_correlation_id, BAD_REQUEST, exc.message)
        return exc.reply_line()

    def ok(self, request: Request, values: dict[str, PayloadValue]) -> Outcome:
        return Outcome([codec.encode_result(request.correlation_id, request.command, values)])

    def dispatch(self, request: Request) -> Outcome:
        handler = getattr(self, "do_" + request.command.lower())
        outcome: Outcome = handler(request, *request.args)
        return outcome

    # ------------------------------------------------------------------- commands

    def do_ping(self, request: Request) -> Outcome:
        return self.ok(request, {})

    def _partition(self, topic: str, partition: int, *, create: bool = True) -> None:
        count = self.frontend.partition_count(topic, create=create)
        if not 0 <= partition < count:
            raise Refused(BAD_REQUEST, "invalid partition")

    def do_produce(
        self, request: Request, topic: str, message: KeyValue, acks: str | None
    ) -> Outcome:
        count = self.frontend.partition_count(topic, create=True)
        partition = fnv1a32(message.key.encode()) % count
        rep = self.frontend.replica(topic, partition)
        if "follower-accepts-produce" not in self.quirks:
            rep.check_produce()
        record = NewRecord(message.key.encode(), message.value.encode())
        offset = self.engine.append(topic, partition, [record]).base_offset
        rep.appended(offset)
        now = self.frontend.clock()
        if acks == "all" and "acks-all-no-wait" not in self.quirks:
            wait = AcksAllWait(
                self.frontend,
                rep,
                request.correlation_id,
                partition,
                offset,
                now,
                time.monotonic() + rep.config.ack_timeout_ms / 1000.0,
            )
            replies = wait.poll(time.monotonic())
            return Outcome(replies) if replies is not None else Outcome(pending=wait)
        return self.ok(request, {"partition": partition, "offset": offset, "hw": rep.hw(now)})

    def do_consume(self, request: Request, topic: str, partition: int, offset: int) -> Outcome:
        count = self.frontend.partition_count(topic, create=False)
        if count == 0:
            return self.ok(request, {"messages": (), "hw": -1})
        self._partition(topic, partition, create=False)
        rep = self.frontend.replica(topic, partition)
        hw = rep.hw(self.frontend.clock())
        last = rep.leader_last_offset if "consume-past-hw" in self.quirks else hw
        items: tuple[tuple[int, str], ...] = ()
        if 0 <= offset <= last:
            records = self.engine.read(topic, partition, offset, last - offset + 1)
            items = tuple((r.offset, shown_value(r.value)) for r in records)
        return self.ok(request, {"messages": items, "hw": hw})

    def do_set_partition_role(
        self, request: Request, topic: str, partition: int, role: str
    ) -> Outcome:
        self._partition(topic, partition)
        rep = self.frontend.replica(topic, partition)
        rep.set_role(role)
        self.frontend.changed()
        return self.ok(request, rep.role_reply(self.frontend.clock()))

    def do_replica_fetch(
        self, request: Request, topic: str, partition: int, replica_id: int, offset: int
    ) -> Outcome:
        self._partition(topic, partition)
        rep = self.frontend.replica(topic, partition)
        values = rep.report(replica_id, offset, self.frontend.clock())
        self.frontend.changed()
        return self.ok(request, values)


def shown_value(value: bytes | None) -> str:
    """A record's value as CONSUME writes it: its UTF-8 text, with U+FFFD for each byte
    that is not UTF-8 and for each space and newline (a value from another protocol may
    hold them; a reply is one line of space-separated fields; no V1 PRODUCE can store
    either, so V1's own values are unchanged), None as empty (docs/cross-protocol.md;
    SPEC.md V1L-CROSS-1)."""
    text = (value or b"").decode("utf-8", "replace")
    return text.replace(" ", "\ufffd").replace("\n", "\ufffd")


def _empty_key(request: Request) -> bool:
    if request.command != "PRODUCE":
        return False
    message = request.args[1]
    return isinstance(message, KeyValue) and message.key == ""


def _crash(quirk: str, why: str) -> NoReturn:
    print(f"quirk {quirk}: {why}; exiting", file=sys.stderr, flush=True)
    os._exit(CRASH_EXIT_CODE)


__all__ = ["V1Config", "V1Frontend", "V1Session", "fnv1a32", "shown_value"]
