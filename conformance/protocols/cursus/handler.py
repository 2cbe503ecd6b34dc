"""The Cursus front-end of the reference broker: decoded request -> engine call -> reply.

Behaviour (revision ``doc``; SPEC.md lists every rule and convention by ID):

* a frame beginning with 0xBA7C is a batch and gets exactly one JSON ack, whatever its
  acks level; a frame beginning 0x1F 0x8B is inflated first when the broker runs with
  ``--compression gzip``; anything else is a text command;
* text commands reply ``OK [key=value ...]``, a JSON topic list (LIST), a batch
  (CONSUME; an empty one at or past the end, CUR-CONV-3), a special reply
  (REBALANCE_REQUIRED, GEN_MISMATCH), or ``ERROR: <CODE> <description>``; the
  connection stays open after an error;
* STREAM turns the connection into a push stream of batches from its offset on, even
  an offset past the end: the pushes start once messages reach it (CUR-CONV-10);
* a frame over the 64 MiB limit is refused from its prefix: ``ERROR: FRAME_TOO_LARGE``
  and the connection is closed.

The broker refuses only what a requirement or a written convention of SPEC.md refuses;
refusals.py lists every code it sends with the requirement it rests on.  In particular
idempotent batches are only deduplicated (engine policy ``DEDUPE_ONLY``: the document
states no sequence, epoch or range rule), any acks string is accepted, COMMIT and
BATCH_COMMIT take offsets past the high watermark, and names are any non-empty token.
Numbers are signed int64 (the codec reads ``-?[0-9]+``); what does not exist is refused
here or in the engine (CUR-ERR-6): a partition below 0 is UNKNOWN_PARTITION, an offset
below 0 OFFSET_OUT_OF_RANGE, a generation below 0 GEN_MISMATCH, and a partition count
below 1 (or above the engine's ``max_partitions``) BAD_ARGUMENT (CUR-CONV-11).

Quirks (deliberate violations, see quirks.py) are consulted where they bend a rule.
The fault quirks act here too: ``crash-on-negative-payload-len`` ends the process
(``os._exit``) from :meth:`CursusSession.handle`, ``hang-on-empty-frame`` answers an
empty frame with a stalled connection (``Outcome(stall=True)``), and
``burst-loses-acked`` is tripped by :meth:`CursusSession.received` and then makes
every produce acknowledge without appending (the tripped state is the frontend's, so
it holds for every connection until the broker stops).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from conformance.engine import DEDUPE_ONLY, Engine, EngineError, HeartbeatStatus, ProducerBatch
from conformance.errors import FrameTooLarge, ProtocolError
from conformance.protocols.cursus import codec
from conformance.protocols.cursus.codec import CursusError, error_reply
from conformance.protocols.cursus.layouts import REAL, layout
from conformance.protocols.cursus.messages import (
    FRAME_LIMIT,
    GEN_MISMATCH,
    REBALANCE_REQUIRED,
    Batch,
    BatchAck,
    Command,
    OkReply,
    Reply,
    SpecialReply,
    TopicList,
)
from conformance.protocols.cursus.quirks import CRASH_EXIT_CODE, Quirks
from conformance.protocols.cursus.real_messages import KEEPALIVE_S, Keepalive
from conformance.protocols.cursus.records import consume_batch, to_record
from conformance.server import Outcome
from conformance.wire.framing import LengthPrefixDeframer

if TYPE_CHECKING:
    from conformance.protocols.cursus.real_codec import RealReply
    from conformance.protocols.cursus.real_handler import RealSession

ENGINE_CODES = {
    "INVALID_PARTITIONS": "BAD_ARGUMENT",
    "INVALID_ARGUMENT": "BAD_ARGUMENT",
    "GENERATION_MISMATCH": GEN_MISMATCH,
}
"""Engine refusal -> the Cursus code it is sent as (any other engine code is sent as it is);
GENERATION_MISMATCH becomes the special reply GEN_MISMATCH."""


@dataclass
class CursusConfig:
    compression: str = "none"
    max_poll_records: int = 100
    frame_limit: int = FRAME_LIMIT
    quirks: Quirks = field(default_factory=Quirks)
    revision: str = "doc"
    keepalive_s: float = KEEPALIVE_S
    """Revision real: a STREAM with nothing to push sends an empty frame this often."""

    def __post_init__(self) -> None:
        if self.frame_limit == FRAME_LIMIT:  # the revision's own limit unless one is given
            self.frame_limit = layout(self.revision).frame_limit


class CursusFrontend:
    """Shared by every connection: the engine, the configuration, the advertised address."""

    name = "cursus"

    def __init__(self, engine: Engine, config: CursusConfig | None = None) -> None:
        self.engine = engine
        self.config = config or CursusConfig()
        self.leader = ""
        self.losing_acked = False  # burst-loses-acked has tripped: acks without appends
        self.layout = layout(self.config.revision)
        self.real = self.layout is REAL
        self.idempotent_topics: set[str] = set()  # revision real: CREATE ... idempotent=true

    def set_address(self, host: str, port: int) -> None:
        self.leader = f"{host}:{port}"

    def new_deframer(self) -> LengthPrefixDeframer:
        return codec.new_deframer(self.config.quirks.frame_limit(self.config.frame_limit))

    def new_session(self, peer: str) -> CursusSession | RealSession:
        if self.real:
            from conformance.protocols.cursus.real_handler import RealSession

            return RealSession(self, peer)
        return CursusSession(self, peer)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        if self.real:  # the real broker drops the connection without a word (FACTS 1.2)
            return Outcome([], close=True)
        code = "FRAME_TOO_LARGE" if isinstance(exc, FrameTooLarge) else "BAD_FRAME"
        return Outcome([self.frame_reply(error_reply(code, str(exc)))], close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        remove = self.engine.add_listener(lambda _topic, _partition: callback())
        if not self.real:
            return remove
        from conformance.protocols.cursus.real_handler import KeepaliveTicker

        ticker = KeepaliveTicker(callback, self.config.keepalive_s)

        def stop() -> None:
            ticker.stop()
            remove()

        return stop

    def frame_reply(self, reply: Reply | RealReply) -> bytes:
        if self.real:
            quirks = self.config.quirks
            if isinstance(reply, BatchAck) and quirks.keeps_empty_ack_fields():
                return codec.frame(codec.encode_ack(reply))
            assert not isinstance(reply, SpecialReply | TopicList)
            return codec.frame(quirks.reply_payload(reply, self.layout.encode_reply(reply)))
        assert not isinstance(reply, Keepalive)
        return codec.frame(self.config.quirks.reply_payload(reply, codec.encode_reply(reply)))


class CursusSession:
    def __init__(self, frontend: CursusFrontend, peer: str) -> None:
        self.frontend = frontend
        self.engine = frontend.engine
        self.config = frontend.config
        self.peer = peer

    def closed(self) -> None:
        pass

    def received(self, count: int) -> None:
        if self.config.quirks.trips_burst(count):
            self.frontend.losing_acked = True

    def handle(self, frame: bytes) -> Outcome:
        quirks = self.config.quirks
        if quirks.active:
            if quirks.crashes_on(frame):
                _crash("crash-on-negative-payload-len", "a message's payloadLen is negative")
            if quirks.hangs_on(frame):
                return Outcome(stall=True)
        if quirks.is_batch_prefix(frame):
            return self._reply(self._error_ack("BAD_MAGIC", "batch magic is not 0xBA7C"))
        try:
            request = codec.decode_request(
                frame,
                compression=quirks.compression(self.config.compression),
                limit=self.config.frame_limit,
            )
        except CursusError as exc:
            if codec.is_batch(frame) or exc.code == "MALFORMED_BATCH":
                return self._reply(self._error_ack(exc.code, str(exc)))
            return self._reply(error_reply(exc.code, str(exc)))
        if isinstance(request, Batch):
            return self._reply(self._produce(request))
        return self._command(request)

    def _reply(self, reply: Reply) -> Outcome:
        return Outcome([self.frontend.frame_reply(reply)])

    # ------------------------------------------------------------------ produce

    def _error_ack(self, code: str, text: str, batch: Batch | None = None) -> BatchAck:
        first = batch.messages[0] if batch and batch.messages else None
        return BatchAck(
            status="ERROR",
            last_offset=-1,
            producer_epoch=first.epoch if first else 0,
            producer_id=first.producer_id if first else "",
            seq_start=batch.seq_start if batch else 0,
            seq_end=batch.seq_end if batch else 0,
            leader=self.frontend.leader,
            error=text if text.startswith(code) else f"{code} {text}",
        )

    def _produce(self, batch: Batch) -> BatchAck:
        try:
            partition = codec.partition_number(batch)
        except CursusError as exc:
            return self._error_ack(exc.code, str(exc), batch)
        first = batch.messages[0] if batch.messages else None
        producer = None
        if batch.idempotent and first is not None:  # producer and epoch: CUR-CONV-8
            producer = ProducerBatch(first.producer_id, first.epoch, batch.seq_start, batch.seq_end)
        try:
            self.engine.topic(batch.topic)
            if not batch.messages:
                self.engine.high_watermark(batch.topic, partition)
                last, epoch = -1, 0
            elif self.frontend.losing_acked:  # fault quirk burst-loses-acked: ack, store nothing
                hwm = self.engine.high_watermark(batch.topic, partition)
                last = hwm + len(batch.messages) - 1
                epoch = first.epoch if first else 0
            else:
                records = [to_record(m) for m in batch.messages]
                result = self.engine.append(
                    batch.topic, partition, records, producer, policy=DEDUPE_ONLY
                )
                last = result.last_offset
                epoch = result.producer_epoch if producer else first.epoch if first else 0
        except EngineError as exc:
            return self._error_ack(ENGINE_CODES.get(exc.code, exc.code), str(exc), batch)
        ack = BatchAck(
            status="OK",
            last_offset=last,
            producer_epoch=epoch,
            producer_id=first.producer_id if first else "",
            seq_start=batch.seq_start,
            seq_end=batch.seq_end,
            leader=self.frontend.leader,
            error="",
        )
        return self.config.quirks.ack(ack, batch)

    # ----------------------------------------------------------------- commands

    def _command(self, cmd: Command) -> Outcome:
        handler = _COMMANDS[cmd.name]
        try:
            result = handler(self, cmd)
        except EngineError as exc:
            code = ENGINE_CODES.get(exc.code, exc.code)
            if code == GEN_MISMATCH:
                gen = self.engine.group_generation(cmd.text("group"))
                return self._reply(SpecialReply(GEN_MISMATCH, f"{GEN_MISMATCH} generation={gen}"))
            return self._reply(error_reply(code, str(exc)))
        except CursusError as exc:
            return self._reply(error_reply(exc.code, str(exc)))
        if isinstance(result, Outcome):
            return result
        return self._reply(result)

    def create(self, cmd: Command) -> Reply:
        partitions = self.config.quirks.partitions(cmd.number("partitions"))
        info = self.engine.create_topic(cmd.text("topic"), partitions)
        return OkReply((("topic", info.name), ("partitions", str(cmd.number("partitions")))))

    def delete(self, cmd: Command) -> Reply:
        self.engine.delete_topic(cmd.text("topic"))
        return OkReply((("topic", cmd.text("topic")),))

    def list_topics(self, cmd: Command) -> Reply:
        return TopicList(tuple(t.name for t in self.engine.list_topics()))

    def _read(self, topic: str, partition: int, offset: int) -> Batch:
        """The batch at ``offset``: empty at or past the end (CUR-CONV-3)."""
        hwm, limit = self.engine.high_watermark(topic, partition), self.config.max_poll_records
        records = self.engine.read(topic, partition, offset, limit) if offset < hwm else []
        return consume_batch(topic, partition, offset, records)

    def consume(self, cmd: Command) -> Reply:
        topic, partition, offset = cmd.text("topic"), cmd.number("partition"), cmd.number("offset")
        self.engine.check_offset(topic, partition, offset)  # exists, and not below 0
        return self._read(topic, partition, self.config.quirks.consume_offset(offset))

    def stream(self, cmd: Command) -> Outcome:
        topic, partition, offset = cmd.text("topic"), cmd.number("partition"), cmd.number("offset")
        self.engine.check_offset(topic, partition, offset)  # exists, and not below 0
        return Outcome(stream=_Stream(self, topic, partition, offset))  # past the end: waits

    def subscribe(self, cmd: Command) -> Reply:
        self.engine.subscribe(cmd.text("group"), cmd.text("topic"))
        return OkReply((("topic", cmd.text("topic")), ("group", cmd.text("group"))))

    def join_group(self, cmd: Command) -> Reply:
        joined = self.engine.join_group(
            cmd.text("group"), cmd.text("topic"), cmd.text("consumerId")
        )
        return OkReply((("generation", str(joined.generation)), ("member", joined.member_id)))

    def leave_group(self, cmd: Command) -> Reply:
        group, consumer = cmd.text("group"), cmd.text("consumerId")
        members = self.engine.members_of(group, consumer)
        if not members:
            raise CursusError(
                "UNKNOWN_MEMBER", f"no member of group {group!r} joined as {consumer!r}"
            )
        if not self.config.quirks.leave_keeps_members():
            for member in members:
                self.engine.leave_group(group, member)
        return OkReply()

    def sync_group(self, cmd: Command) -> Reply:
        group, topic = cmd.text("group"), cmd.text("topic")
        assigned = self.engine.sync_group(group, cmd.text("memberId"), cmd.number("generation"))
        parts = ",".join(str(p) for p in assigned.get(topic, []))
        gen = self.engine.group_generation(group)
        return OkReply((("generation", str(gen)), ("assignment", parts)))

    def heartbeat(self, cmd: Command) -> Reply:
        group = cmd.text("group")
        status = self.engine.heartbeat(group, cmd.text("memberId"), cmd.number("generation"))
        if status is HeartbeatStatus.REBALANCE_REQUIRED and not self.config.quirks.hide_rebalance():
            gen = self.engine.group_generation(group)
            return SpecialReply(REBALANCE_REQUIRED, f"{REBALANCE_REQUIRED} generation={gen}")
        return OkReply()

    def commit(self, cmd: Command) -> Reply:
        self.engine.commit(
            cmd.text("group"), cmd.text("topic"), cmd.number("partition"), cmd.number("offset")
        )
        return OkReply()

    def batch_commit(self, cmd: Command) -> Reply:
        offsets = dict(cmd.offsets())
        self.engine.commit_many(
            cmd.text("group"),
            cmd.text("topic"),
            offsets,
            cmd.text("memberId"),
            cmd.number("generation"),
        )
        return OkReply((("committed", str(len(offsets))),))

    def fetch_offset(self, cmd: Command) -> Reply:
        self.engine.high_watermark(cmd.text("topic"), cmd.number("partition"))  # validates both
        offset = self.engine.committed(
            cmd.text("group"), cmd.text("topic"), cmd.number("partition")
        )
        return OkReply((("offset", str(-1 if offset is None else offset)),))


def _crash(quirk: str, why: str) -> NoReturn:
    """End the process at once, as a crash would (no cleanup, no reply)."""
    sys.stderr.write(f"conformance: fault quirk {quirk} fired ({why}); the broker dies\n")
    sys.stderr.flush()
    os._exit(CRASH_EXIT_CODE)


class _Stream:
    """A STREAM subscription: pushes one batch per poll of whatever is new since the cursor."""

    def __init__(self, session: CursusSession, topic: str, partition: int, offset: int) -> None:
        self.session = session
        self.topic, self.partition, self.cursor = topic, partition, offset

    def poll(self) -> list[bytes]:
        engine = self.session.engine
        try:
            if self.cursor >= engine.high_watermark(self.topic, self.partition):
                return []
            batch = self.session._read(self.topic, self.partition, self.cursor)
        except EngineError:  # the topic went away: nothing more to push
            return []
        if not batch.messages:
            return []
        self.cursor = batch.messages[-1].offset + 1
        return [self.session.frontend.frame_reply(batch)]


_COMMANDS: dict[str, Callable[[CursusSession, Command], Reply | Outcome]] = {
    "CREATE": CursusSession.create,
    "DELETE": CursusSession.delete,
    "LIST": CursusSession.list_topics,
    "CONSUME": CursusSession.consume,
    "SUBSCRIBE": CursusSession.subscribe,
    "JOIN_GROUP": CursusSession.join_group,
    "LEAVE_GROUP": CursusSession.leave_group,
    "STREAM": CursusSession.stream,
    "COMMIT": CursusSession.commit,
    "HEARTBEAT": CursusSession.heartbeat,
    "BATCH_COMMIT": CursusSession.batch_commit,
    "SYNC_GROUP": CursusSession.sync_group,
    "FETCH_OFFSET": CursusSession.fetch_offset,
}
