"""The mini-Kafka front-end of the reference broker: one frame -> engine call -> one reply.

Behaviour (SPEC.md numbers every rule; revision ``doc`` or ``real``):

* Frames come from a big-endian length-prefix deframer whose length counts its own 4
  bytes (MK-FRAME-1, -2), limited to ``--max-frame-bytes`` from the prefix.  A length
  below 4 or over the limit, an empty payload (length 4) and an unknown type byte close
  that connection, with nothing written: no reply type fits them.  Every other connection
  is served as before (MK-ROBUST-1..3), unlike the real server, which stops serving
  everyone (FACTS.md 4.3).
* A request whose type is known but whose fields are cut short or malformed is answered
  with its type's error path and the connection goes on (MK-ERR-2); bytes after the last
  field are ignored (MK-FRAME-5, -6: the real client pads CONSUME).
* A topic is an engine topic, created with one partition by its first PRODUCE
  (MK-PROD-4); a topic another protocol made with several partitions is used at
  partition 0.  CONSUME never creates one (MK-CONS-6).
* CONSUME returns at most ``min(batch size, --max-batch)`` messages and stops before the
  reply would pass the frame limit (PRODUCE refuses data one reply could not carry); an
  empty read answers next offset 1 in ``real`` (MK-CONS-8) and the requested offset in
  ``doc`` (MK-CONS-9).  ``doc`` refuses a
  negative offset, a batch size below 1 and a topic that is not UTF-8 with the error path
  (MK-CONS-11, MK-ERR-3); ``real`` reads them as the real server does (MK-CONS-10,
  MK-ERR-4).
* FLUSH forces the engine's journal to disk (``Engine.flush``; nothing to do in memory).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NoReturn

from conformance.engine import Engine, EngineError, NewRecord
from conformance.errors import ProtocolError
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.quirks import CRASH_EXIT_CODE, Quirks
from conformance.server import Outcome
from conformance.wire.framing import LengthPrefixDeframer

DEFAULT_MAX_BATCH = 10_000
PARTITION = 0
"""Mini-Kafka has no partitions: its topic is the engine topic's partition 0."""
CONSUMED_OVERHEAD = 12
"""Bytes of one CONSUME reply entry besides its data (u32 length, i64 offset)."""
CONSUME_OK_OVERHEAD = 4 + 1 + 1 + 8 + 4
"""Bytes of a CONSUME success frame besides its entries."""

Revision = Literal["doc", "real"]


@dataclass
class MiniKafkaConfig:
    revision: Revision = "doc"
    max_frame: int = codec.DEFAULT_MAX_FRAME
    max_batch: int = DEFAULT_MAX_BATCH
    quirks: Quirks = field(default_factory=Quirks)


class MiniKafkaFrontend:
    """Shared by every connection: the engine and the configuration."""

    name = "minikafka"

    def __init__(self, engine: Engine, config: MiniKafkaConfig | None = None) -> None:
        self.engine = engine
        self.config = config or MiniKafkaConfig()
        self.stopped = False
        """The fault quirk stop-on-unknown-type has tripped: every frame stalls its connection."""

    def set_address(self, host: str, port: int) -> None:
        pass

    def new_deframer(self) -> LengthPrefixDeframer:
        return codec.new_deframer(self.config.max_frame)

    def new_session(self, peer: str) -> MiniKafkaSession:
        return MiniKafkaSession(self)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        """A length below 4 or over the limit: the connection is closed, nothing written."""
        if self.stopped:
            return Outcome(stall=True)
        return Outcome(close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        return self.engine.add_listener(lambda _t, _p: callback())


class MiniKafkaSession:
    def __init__(self, frontend: MiniKafkaFrontend) -> None:
        self.frontend = frontend
        self.engine = frontend.engine
        self.config = frontend.config
        self.quirks = frontend.config.quirks

    def closed(self) -> None:
        pass

    def received(self, count: int) -> None:
        pass

    def handle(self, frame: bytes) -> Outcome:
        if self.frontend.stopped:  # stop-on-unknown-type has tripped: serve no one
            return Outcome(stall=True)
        real = self.config.revision == "real"
        try:
            request = codec.decode_request(frame, strict=False, lenient_utf8=real)
        except codec.MiniKafkaError as exc:
            return self._refused(frame, exc)
        try:
            if isinstance(request, codec.Produce):
                reply: codec.Reply = self.produce(request)
            elif isinstance(request, codec.Consume):
                reply = self.consume(request)
            else:
                reply = self.flush()
        except EngineError as exc:  # a limit of the engine (an empty name): refused, not closed
            reply = codec.failure_for(request.type, exc.message)
        return Outcome([self._framed(reply)])

    def _refused(self, frame: bytes, exc: codec.MiniKafkaError) -> Outcome:
        if isinstance(exc, codec.UnknownType) and "stop-on-unknown-type" in self.quirks:
            print("quirk stop-on-unknown-type: no connection is served any more", file=sys.stderr)
            self.frontend.stopped = True
            return Outcome(stall=True)
        if exc.type is None:  # no type byte, or one no reply answers: close
            return Outcome(close=True)
        return Outcome([self._framed(codec.failure_for(exc.type, exc.message))])

    def _framed(self, reply: codec.Reply) -> bytes:
        payload = codec.encode_reply(reply)
        if isinstance(reply, codec.FlushOk) and "flush-without-success-byte" in self.quirks:
            payload = payload[:1]
        return codec.frame(payload)

    # ------------------------------------------------------------------- requests

    def produce(self, request: codec.Produce) -> codec.Reply:
        topic = str(request.topic)
        most = self.config.max_frame - CONSUME_OK_OVERHEAD - CONSUMED_OVERHEAD
        if len(request.data) > most:  # a CONSUME reply could never carry it
            return codec.failure_for(
                m.PRODUCE_REQUEST,
                f"data of {len(request.data)} bytes is over {most}, the most one CONSUME reply "
                f"of at most {self.config.max_frame} bytes can carry",
            )
        if not self.engine.has_topic(topic):
            self.engine.create_topic(topic, 1)
        record = NewRecord(None, request.data)
        return codec.ProduceOk(self.engine.append(topic, PARTITION, [record]).base_offset)

    def consume(self, request: codec.Consume) -> codec.Reply:
        topic, offset, batch = str(request.topic), request.offset, request.batch_size
        real = self.config.revision == "real"
        if batch < 0 and "crash-on-negative-batch" in self.quirks:
            _crash("crash-on-negative-batch", f"CONSUME with batch size {batch}")
        if not real and (offset < 0 or batch < 1):
            what = f"offset {offset} is negative" if offset < 0 else f"batch size {batch} < 1"
            return codec.failure_for(m.CONSUME_REQUEST, f"invalid CONSUME: {what}")
        if not self.engine.has_topic(topic):
            if "unknown-topic-error" in self.quirks:
                return codec.failure_for(m.CONSUME_REQUEST, f"unknown topic {topic!r}")
            return self._empty(offset)
        end = self.engine.high_watermark(topic, PARTITION)
        if offset < 0 or batch < 1 or offset >= end:
            return self._empty(offset)
        wanted = end - offset
        if "batch-size-ignored" not in self.quirks:
            wanted = min(wanted, batch, self.config.max_batch)
        records = self.engine.read(topic, PARTITION, offset, wanted)
        items: list[codec.Consumed] = []
        room = self.config.max_frame - CONSUME_OK_OVERHEAD
        for record in records:
            data = record.value or b""
            room -= CONSUMED_OVERHEAD + len(data)
            if room < 0 and items:  # the first always fits, unless another protocol wrote it
                break
            items.append(codec.Consumed(record.offset, data))
        last = items[-1].offset
        following = last if "next-offset-of-last" in self.quirks else last + 1
        return codec.ConsumeOk(following, tuple(items))

    def _empty(self, offset: int) -> codec.Reply:
        """An empty read: next offset 1 in ``real`` (FACTS.md 2.11), else where to read next."""
        return codec.ConsumeOk(1 if self.config.revision == "real" else max(offset, 0))

    def flush(self) -> codec.Reply:
        try:
            self.engine.flush()
        except OSError as exc:
            return codec.failure_for(m.FLUSH_REQUEST, f"flush failed: {exc.strerror or exc}")
        return codec.FlushOk()


def _crash(quirk: str, why: str) -> NoReturn:
    print(f"quirk {quirk}: {why}; exiting", file=sys.stderr, flush=True)
    os._exit(CRASH_EXIT_CODE)


__all__ = ["MiniKafkaConfig", "MiniKafkaFrontend", "MiniKafkaSession"]
