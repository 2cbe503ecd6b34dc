"""The Cursus front-end, revision ``real``: decoded request -> engine call -> reply.

Behaviour (SPEC.md's CUR-R* requirements; FACTS.md has the real broker's source for each):

* a payload is read as the real broker reads it (:func:`real_codec.classify`): a batch, a
  command raw or in the ``[u16 topicLen][topic]`` envelope, or a refusal (``decode_failed``
  keeps the connection, ``malformed_input`` closes it); with ``--compression gzip`` a payload
  beginning 0x1F 0x8B is inflated first (CUR-RCONV-4);
* a batch gets the real JSON ack (empty ``leader``/``error`` left out), the bare text ``OK``
  at acks 0, or an ``ERROR:`` line (never an ack with status ERROR); idempotent batches, or
  batches to a topic created ``idempotent=true``, are deduplicated (DEDUPE_ONLY);
* CONSUME answers one batch in the real layout, from the group's committed offset when it
  has one, else from the asked offset; STREAM answers nothing and pushes batches, and an
  empty frame after ``keepalive_s`` seconds without a push;
* the commands of ``SERVED`` are answered ``OK key=value ...`` or ``ERROR: <code> ...``;
  the other known names ``ERROR: not_implemented command=<NAME>`` (CUR-RCONV-1).

Quirks are asked where they bend a rule (quirks.py); the fault quirks act as in revision doc.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.engine import DEDUPE_ONLY, EngineError, ProducerBatch
from conformance.protocols.cursus import real_groups
from conformance.protocols.cursus.codec import CursusError, inflate_gzip
from conformance.protocols.cursus.messages import GZIP_MAGIC, Batch, BatchAck, OkReply, TextReply
from conformance.protocols.cursus.real_codec import (
    RealRefusal,
    RealReply,
    atoi,
    classify,
    error,
    parse_uint,
    quoted,
)
from conformance.protocols.cursus.real_groups import Refuse
from conformance.protocols.cursus.real_messages import (
    ACKS_LEVELS,
    DEFAULT_GROUP,
    DEFAULT_PARTITIONS,
    SERVED,
    TOPIC_CHARS,
    TOPIC_NAME_LIMIT,
    Keepalive,
    RealCommand,
)
from conformance.protocols.cursus.records import consume_batch, to_record
from conformance.server import Outcome

if TYPE_CHECKING:
    from conformance.protocols.cursus.handler import CursusFrontend

TOPIC_POLICY = (
    ("cleanup_policy", "delete"),
    ("partitioner", "hash_key"),
    ("auth_policy", "open"),
    ("read_acl", ""),
    ("write_acl", ""),
    ("retention_hours", "0"),
    ("retention_bytes", "0"),
)
"""The policy words of CREATE and METADATA replies: the real broker's defaults."""


class RealSession:
    def __init__(self, frontend: CursusFrontend, peer: str) -> None:
        self.frontend = frontend
        self.engine = frontend.engine
        self.config = frontend.config
        self.quirks = frontend.config.quirks
        self.peer = peer

    def closed(self) -> None:
        pass

    def received(self, count: int) -> None:
        if self.quirks.trips_burst(count):
            self.frontend.losing_acked = True

    def _reply(self, reply: RealReply, *, close: bool = False) -> Outcome:
        return Outcome([self.frontend.frame_reply(reply)], close=close)

    def handle(self, frame: bytes) -> Outcome:
        if self.quirks.active and self.quirks.hangs_on(frame):
            return Outcome(stall=True)
        payload = frame
        compression = self.quirks.compression(self.config.compression)
        if compression == "gzip" and frame[:2] == GZIP_MAGIC:
            try:
                payload = inflate_gzip(frame, self.config.frame_limit)
            except CursusError as exc:
                return self._reply(error("decompress_failed", f"reason={quoted(str(exc))}"))
        got = classify(payload)
        if isinstance(got, RealRefusal):
            return self._reply(got.reply, close=got.close)
        try:
            if isinstance(got, Batch):
                return self._reply(self._produce(got))
            return self._command(got)
        except Refuse as exc:
            return self._reply(exc.reply)
        except EngineError as exc:
            return self._reply(error("broker_error", f"reason={quoted(str(exc))}"))

    # ------------------------------------------------------------------ produce

    def _produce(self, batch: Batch) -> RealReply:
        acks = batch.acks or "1"
        if acks.lower() not in ACKS_LEVELS:
            raise Refuse(error("invalid_acks", f"value={acks}"))
        topic, partition = batch.topic, int(batch.partition)
        if not self.engine.has_topic(topic):
            raise Refuse(error("topic_not_found", f"topic={topic}"))
        if not 0 <= partition < self.engine.topic(topic).partitions:
            raise Refuse(error("partition_not_found", f"partition={partition}"))
        if not batch.messages:
            raise Refuse(error("broker_error", 'reason="empty batch messages"'))
        first, last = batch.messages[0], batch.messages[-1]
        producer = None
        if (batch.idempotent or topic in self.frontend.idempotent_topics) and first.producer_id:
            producer = ProducerBatch(first.producer_id, first.epoch, first.seq_num, last.seq_num)
        if self.frontend.losing_acked:  # fault quirk burst-loses-acked: ack, store nothing
            hwm = self.engine.high_watermark(topic, partition) + len(batch.messages)
        else:
            records = [to_record(m) for m in batch.messages]
            self.engine.append(topic, partition, records, producer, policy=DEDUPE_ONLY)
            hwm = self.engine.high_watermark(topic, partition)
        if acks == "0":
            return TextReply("OK")
        ack = BatchAck(
            status="OK",
            last_offset=hwm - 1,
            producer_epoch=last.epoch,
            producer_id=last.producer_id,
            seq_start=first.seq_num,
            seq_end=last.seq_num,
        )
        return ack

    # ----------------------------------------------------------------- commands

    def _command(self, cmd: RealCommand) -> Outcome:
        served = SERVED.get(cmd.name)
        if served is None:
            return self._reply(error("not_implemented", f"command={cmd.name}"))
        has_args = bool(cmd.args or cmd.words)
        if served.exact == has_args:  # LIST takes nothing; CREATE needs something
            return self._reply(error("unknown_command", f"command={quoted(cmd.text())}"))
        result = _COMMANDS[cmd.name](self, cmd)
        return result if isinstance(result, Outcome) else self._reply(result)

    def create(self, cmd: RealCommand) -> RealReply:
        topic = cmd.get("topic")
        if not topic:
            return error("missing_topic", 'expected="CREATE topic=<name> [partitions=<N>]"')
        check_topic_name(topic)
        asked = cmd.get("partitions")
        count = DEFAULT_PARTITIONS if asked is None else atoi(asked)
        if count is None or count <= 0:
            return error("invalid_partitions", 'reason="must be a positive integer"')
        count = self.quirks.partitions(count)
        if not self.engine.has_topic(topic):
            self.engine.create_topic(topic, count)
        else:
            current = self.engine.topic(topic).partitions
            if count < current:
                why = f"cannot decrease partition count for topic '{topic}': {current} -> {count}"
                return error("create_topic_failed", f"topic={topic}", f"reason={quoted(why)}")
            if count > current:
                self.engine.add_partitions(topic, count - current)
        if (cmd.get("idempotent") or "").lower() == "true":
            self.frontend.idempotent_topics.add(topic)
        made = self.engine.topic(topic).partitions
        return OkReply((("topic", topic), ("partitions", str(made)), *TOPIC_POLICY))

    def delete(self, cmd: RealCommand) -> RealReply:
        topic = cmd.get("topic")
        if not topic:
            return error("missing_topic", 'expected="DELETE topic=<name>"')
        check_topic_name(topic)
        if not self.engine.has_topic(topic):
            return error("topic_not_found", f"topic={topic}")
        self.engine.delete_topic(topic)
        self.frontend.idempotent_topics.discard(topic)
        return OkReply((("topic", topic), ("deleted", "true")))

    def list_topics(self, cmd: RealCommand) -> RealReply:
        names = sorted(t.name for t in self.engine.list_topics())
        return OkReply((("count", str(len(names))), ("topics", ",".join(names))))

    def help(self, cmd: RealCommand) -> RealReply:
        return OkReply((("commands", ",".join(SERVED)),))

    def find_coordinator(self, cmd: RealCommand) -> RealReply:
        group = cmd.get("group")
        if not group:
            return error("missing_coordinator_key", "command=FIND_COORDINATOR")
        host, _, port = self.frontend.leader.rpartition(":")
        return OkReply(
            (
                ("coordinator_id", "standalone"),
                ("coordinator_type", "group"),
                ("host", host),
                ("port", port),
            )
        )

    def metadata(self, cmd: RealCommand) -> RealReply:
        topic = cmd.get("topic")
        if not topic:
            return error("missing_topic", "command=METADATA")
        if not self.engine.has_topic(topic):
            return error("topic_not_found", f"topic={topic}")
        n = self.engine.topic(topic).partitions
        return OkReply(
            (
                ("topic", topic),
                ("partitions", str(n)),
                ("leaders", ",".join([self.frontend.leader] * n)),
                ("epochs", ",".join(["0"] * n)),
                *TOPIC_POLICY,
            )
        )

    # ------------------------------------------------------------ reading

    def _where(self, cmd: RealCommand) -> tuple[str, int, str]:
        """Topic, partition and group of a CONSUME or STREAM; errors as the real broker
        wraps them (FACTS 5.3)."""
        topic, part_text = cmd.get("topic") or "", cmd.get("partition") or ""
        partition = atoi(part_text)
        if partition is None:
            raise failed(f"invalid partition value: {part_text}")
        gen = cmd.get("generation")
        if gen and atoi(gen) is None:
            raise failed(f"invalid generation value: {gen}")
        offset = cmd.get("offset")
        if offset and parse_uint(offset) is None:
            raise failed(f"invalid offset value: {offset}")
        if not self.engine.has_topic(topic):
            raise failed(f"topic '{topic}' does not exist")
        n = self.engine.topic(topic).partitions
        if not 0 <= partition < n:
            why = f"partition {partition} out of range for topic '{topic}' (0-{n - 1})"
            raise failed(why)
        group = cmd.get("group") or ""
        return topic, partition, DEFAULT_GROUP if group in ("", "-") else group

    def _start(self, topic: str, partition: int, group: str, asked: str | None) -> int:
        """The group's committed offset if it has one, else the asked one, else 0 (FACTS 5.2)."""
        committed = self.engine.committed(group, topic, partition)
        if committed is not None and not self.quirks.consume_ignores_commit():
            return committed
        return (parse_uint(asked) or 0) if asked else 0

    def read(self, topic: str, partition: int, offset: int, limit: int) -> Batch:
        hwm = self.engine.high_watermark(topic, partition)
        records = self.engine.read(topic, partition, offset, limit) if offset < hwm else []
        batch = consume_batch(topic, partition, offset, records, "surrogateescape")
        seqs = [m.seq_num for m in batch.messages] or [0]
        return Batch(topic, str(partition), "1", False, seqs[0], seqs[-1], batch.messages)

    def _limit(self, cmd: RealCommand) -> int:
        asked = atoi(cmd.get("batch"))
        return asked if asked is not None and asked > 0 else self.config.max_poll_records

    def consume(self, cmd: RealCommand) -> RealReply:
        for key in ("topic", "partition", "offset", "member"):
            if not cmd.get(key):
                return error("invalid_consume_syntax")
        topic, partition, group = self._where(cmd)
        start = self.quirks.consume_offset(self._start(topic, partition, group, cmd.get("offset")))
        return self.read(topic, partition, start, self._limit(cmd))

    def batch_commit(self, cmd: RealCommand) -> RealReply:
        return real_groups.batch_commit(self.engine, cmd, cmd.last)

    def leave_group(self, cmd: RealCommand) -> RealReply:
        keep = self.quirks.leave_keeps_members()
        return real_groups.leave_group(self.engine, cmd, keep=keep)

    def stream(self, cmd: RealCommand) -> RealReply | Outcome:
        for key in ("topic", "partition", "group"):
            if not cmd.get(key):
                return error("invalid_stream_syntax")
        topic, partition, group = self._where(cmd)
        start = self._start(topic, partition, group, cmd.get("offset"))
        return Outcome(stream=RealStream(self, topic, partition, start, self._limit(cmd)))


def failed(reason: str) -> Refuse:
    """A CONSUME or STREAM error as the real broker wraps it (FACTS 5.3)."""
    return Refuse(error("command_failed", f"reason={quoted(reason)}"))


def check_topic_name(topic: str) -> None:
    """FACTS 3.3: 1-249 ASCII letters, digits, '.', '_', '-', '='; not '.' or '..'."""
    why = None
    if len(topic.encode("utf-8", "surrogateescape")) > TOPIC_NAME_LIMIT:
        why = f"topic name exceeds {TOPIC_NAME_LIMIT} bytes"
    elif topic in (".", ".."):
        why = f"invalid topic name {quoted(topic)}"
    elif not set(topic) <= TOPIC_CHARS:
        why = f"topic name {quoted(topic)} contains unsupported characters"
    if why is not None:
        raise Refuse(error("invalid_topic_name", f"topic={quoted(topic)}", f"reason={quoted(why)}"))


class RealStream:
    """A STREAM: one batch per poll of what is new since the cursor; an empty frame once no
    push went out for the keepalive interval (the frontend wakes every stream that often)."""

    def __init__(
        self, session: RealSession, topic: str, partition: int, offset: int, limit: int
    ) -> None:
        self.session = session
        self.topic, self.partition, self.cursor, self.limit = topic, partition, offset, limit
        self.last_push = time.monotonic()

    def poll(self) -> list[bytes]:
        s = self.session
        try:
            if self.cursor < s.engine.high_watermark(self.topic, self.partition):
                batch = s.read(self.topic, self.partition, self.cursor, self.limit)
                if batch.messages:
                    self.cursor = batch.messages[-1].offset + 1
                    self.last_push = time.monotonic()
                    return [s.frontend.frame_reply(batch)]
        except EngineError:  # the topic went away: keepalives only
            pass
        if time.monotonic() - self.last_push >= s.config.keepalive_s:
            self.last_push = time.monotonic()
            return [s.frontend.frame_reply(s.quirks.keepalive(Keepalive()))]
        return []


class KeepaliveTicker:
    """Wakes the server's push streams every ``interval`` seconds (revision real: a STREAM
    with nothing new sends a keepalive), on the running event loop; none without one."""

    def __init__(self, callback: Callable[[], None], interval: float) -> None:
        self.callback, self.interval = callback, interval
        self.handle: asyncio.TimerHandle | None = None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None
        self._schedule()

    def _schedule(self) -> None:
        if self.loop is not None and self.interval > 0:
            self.handle = self.loop.call_later(self.interval / 2, self._tick)

    def _tick(self) -> None:
        self.callback()
        self._schedule()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.loop = None


def _wrap(fn: Callable[..., RealReply]) -> Callable[[RealSession, RealCommand], RealReply]:
    return lambda session, cmd: fn(session.engine, cmd)


_COMMANDS: dict[str, Callable[[RealSession, RealCommand], RealReply | Outcome]] = {
    "CREATE": RealSession.create,
    "DELETE": RealSession.delete,
    "LIST": RealSession.list_topics,
    "HELP": RealSession.help,
    "CONSUME": RealSession.consume,
    "STREAM": RealSession.stream,
    "FIND_COORDINATOR": RealSession.find_coordinator,
    "METADATA": RealSession.metadata,
    "JOIN_GROUP": _wrap(real_groups.join_group),
    "SYNC_GROUP": _wrap(real_groups.sync_group),
    "HEARTBEAT": _wrap(real_groups.heartbeat),
    "LEAVE_GROUP": lambda session, cmd: session.leave_group(cmd),
    "COMMIT_OFFSET": _wrap(real_groups.commit_offset),
    "BATCH_COMMIT": lambda session, cmd: session.batch_commit(cmd),
    "FETCH_OFFSET": _wrap(real_groups.fetch_offset),
}
assert set(_COMMANDS) == set(SERVED), set(_COMMANDS) ^ set(SERVED)
