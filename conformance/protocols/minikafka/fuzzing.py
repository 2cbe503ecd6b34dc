"""Mini-Kafka for the fuzzer: the valid pool, mutators, the canary, requirements.

ORACLE (the harness's, :mod:`conformance.fuzz.harness`, on frames ``[i32 length
counting its own 4 bytes][payload]``): every whole request frame is answered by one
reply frame within the deadline, in order (MK-FRAME-3); the connection may close before
that only after a frame no reply fits or that only a SHOULD asks to answer
(:meth:`MiniKafkaFuzzing.may_close`; any other close with a request unanswered is the
finding DROPPED): a length below 5 (no type byte, MK-ROBUST-2), an unknown type byte
(MK-ROBUST-1), and a known type whose fields do not decode (cut short, a lying length;
in ``doc`` also a topic that is not UTF-8 and bytes after the last field: MK-ERR-2,
-ERR-3 are SHOULDs, MK-FRAME-6 a MAY).  A length over the limit closes the connection
(after the frames before it are answered).  The broker keeps accepting and serving new
connections; what the canary wrote reads back.  Mini-Kafka has no silent request.

The pool is drawn from :mod:`.strategies` per request type with
:func:`conformance.fuzz.draw.draw`, seeded from the revision, the campaign seed, the
type and the draw's number: a pure function of (revision, seed).  Most draws
(:data:`PINNED`) are aimed at what :meth:`MiniKafkaFuzzing.setup_payloads` makes:

* PRODUCE writes to ``fuzz-sink``, which nothing reads back (a topic that grows with the
  campaign would make every read of it cost more than the last);
* CONSUME reads ``fuzz-read`` (nine records written by the set-up) at a small offset
  and batch size.

The rest keep their drawn topics and numbers (negative offsets and batch sizes among
them, any int64 and int32), but a CONSUME's drawn topic is never one a pool PRODUCE
writes to.  Mutators: :mod:`.fuzz_mutators`.  Canary: PRODUCE to
``__conformance_canary`` (no case names it: the generic generator renames it), whose
success reply names the offset, then CONSUME from that offset.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from conformance.errors import ProtocolError
from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.draw import draw
from conformance.protocols.minikafka import codec, strategies
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.fuzz_mutators import (
    FRAME_MUTATORS_MK,
    READ_RECORDS,
    READ_TOPIC,
    SINK_TOPIC,
    STRUCTURE_MUTATORS,
)

Revision = Literal["doc", "real"]
CANARY = "__conformance_canary"
CANARY_BATCH = 1000
"""Messages one canary CONSUME reads back at most (a check reads every acked one)."""
PINNED = 0.85
DATA_MAX = 64
DRAWS = {m.PRODUCE_REQUEST: 24, m.CONSUME_REQUEST: 24, m.FLUSH_REQUEST: 2}
"""Draws per request type: produce and consume most (every FLUSH is the same byte)."""


def _aim(request: codec.Request, rng: random.Random, n: int) -> codec.Request:
    """``request`` pointed at the fuzz set-up (see the module doc)."""
    if isinstance(request, codec.Produce):
        return codec.Produce(SINK_TOPIC, request.data[:DATA_MAX])
    if isinstance(request, codec.Consume):
        return codec.Consume(READ_TOPIC, rng.randrange(READ_RECORDS + 3), 1 + n % 16)
    return request


def _drawn(revision: Revision, seed: int, kind: int, n: int) -> codec.Request:
    key = f"minikafka-pool:{revision}:{seed}:{kind}:{n}"
    rng = random.Random(key)
    request: codec.Request = draw(key, strategies.requests(kind))
    if rng.random() < PINNED:
        return _aim(request, rng, n)
    if isinstance(request, codec.Produce):
        return replace(request, data=request.data[:DATA_MAX])
    return request


@functools.lru_cache(maxsize=8)
def pool(revision: Revision, seed: int) -> Pool:
    """The pool of ``revision`` for the campaign ``seed`` (see the module doc)."""
    drawn = [_drawn(revision, seed, k, n) for k, count in DRAWS.items() for n in range(count)]
    written = {r.topic for r in drawn if isinstance(r, codec.Produce)} | {SINK_TOPIC}
    kept = [
        r
        for r in drawn
        if CANARY.encode() not in codec.encode_request(r)
        and not (isinstance(r, codec.Consume) and r.topic in written)
    ]
    return Pool([codec.encode_request(r) for r in kept], kept)


# ------------------------------------------------------------------ requirements


def _decoded(payload: bytes, revision: Revision) -> codec.Request | codec.MiniKafkaError:
    """What the broker of ``revision`` reads ``payload`` as (trailing bytes ignored)."""
    try:
        return codec.decode_request(payload, strict=False, lenient_utf8=revision == "real")
    except codec.MiniKafkaError as exc:
        return exc


def _negative(request: codec.Request) -> bool:
    return isinstance(request, codec.Consume) and (request.offset < 0 or request.batch_size < 1)


def _strict(payload: bytes) -> bool:
    """Whether ``payload`` holds nothing after its last field."""
    try:
        codec.decode_request(payload, strict=True, lenient_utf8=True)
    except codec.MiniKafkaError:
        return False
    return True


TYPE_REQUIREMENTS = {
    m.CONSUME_REQUEST: "MK-CONS-1",
    m.PRODUCE_REQUEST: "MK-PROD-1",
    m.FLUSH_REQUEST: "MK-FLUSH-1",
}
"""The requirement of each request type whose request, decoded, was left unanswered."""


def unanswered(revision: Revision) -> Callable[[bytes], str]:
    """The requirement a whole request frame left without a reply breaks."""
    negative = "MK-CONS-10" if revision == "real" else "MK-CONS-11"

    def blame(payload: bytes) -> str:
        got = _decoded(payload, revision)
        if isinstance(got, codec.EmptyPayload):
            return "MK-ROBUST-2"
        if isinstance(got, codec.UnknownType):
            return "MK-ROBUST-1"
        if isinstance(got, codec.MiniKafkaError):
            if revision == "real":
                return "MK-ROBUST-3"
            return "MK-ERR-3" if "UTF-8" in got.message else "MK-ERR-2"
        if _negative(got):
            return negative
        if not _strict(payload):
            return "MK-FRAME-5" if revision == "real" else "MK-FRAME-6"
        return TYPE_REQUIREMENTS[got.type]

    return blame


def serving_of(revision: Revision) -> Callable[[Sequence[bytes]], str]:
    """The requirement of a broker that stopped serving (or died) after ``frames``.

    Frames are read in order, as a broker reads them (the caller leaves out those that
    were answered): the first that is an unknown type byte (MK-ROBUST-1), a frame with no
    type byte (MK-ROBUST-2), a request cut short or malformed (MK-ROBUST-3) or a CONSUME
    with a negative offset or batch size (real: MK-CONS-10, doc: MK-CONS-11) decides:
    the real server stops at the first request it cannot handle and never reads the ones
    after it.  Else that every request is answered (MK-FRAME-3)."""
    negative = "MK-CONS-10" if revision == "real" else "MK-CONS-11"

    def blame(frames: Sequence[bytes]) -> str:
        for payload in frames:
            got = _decoded(payload, revision)
            if isinstance(got, codec.UnknownType):
                return "MK-ROBUST-1"
            if isinstance(got, codec.EmptyPayload):
                return "MK-ROBUST-2"
            if isinstance(got, codec.MiniKafkaError):
                return "MK-ROBUST-3"
            if _negative(got):
                return negative
        return "MK-FRAME-3"

    return blame


def blame(revision: Revision) -> Blame:
    return Blame(
        corruption="MK-CONS-2",  # each message read holds the data produced at its offset
        serving="MK-ROBUST-2",  # no whole frame: a length below 4, or over the limit
        bad_reply="MK-FRAME-1",  # a reply is [i32 length counting itself][payload]
        oversize="MK-FRAME-2",  # the length field, its own 4 bytes counted, is read as such
        partial="MK-FRAME-2",  # a frame is length - 4 bytes after its length: a cut one
        unanswered=unanswered(revision),
        serving_of=serving_of(revision),
    )


# ------------------------------------------------------------------ the part


class MiniKafkaFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of mini-Kafka at one
    revision (``fuzz`` takes no mini-Kafka option: the limits are the broker's)."""

    canary_topic = CANARY
    structure_mutators: Mapping[str, StructureMutator] = STRUCTURE_MUTATORS
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS_MK

    def __init__(self, options: Mapping[str, Any] | None = None, revision: str = "doc") -> None:
        self.revision: Revision = "real" if revision == "real" else "doc"
        self.blame = blame(self.revision)
        self._read_from = 0

    def pool(self, seed: int) -> Pool:
        return pool(self.revision, seed)

    def owes_reply(self, payload: bytes) -> bool:
        return True  # every request frame is answered (MK-FRAME-3), or the connection closed

    def may_close(self, sent: bytes) -> bool:
        """Whether the connection may close before every whole frame of ``sent`` is
        answered: when one of them is no request a MUST asks to answer (see the module
        doc).  A frame that decodes (a negative offset, an empty topic, a topic that is
        not UTF-8 in ``real``) owes its reply: MK-FRAME-3."""
        deframer = codec.new_deframer()
        try:
            frames = deframer.feed(sent)
        except ProtocolError:
            return True
        for payload in frames:
            got = _decoded(payload, self.revision)
            if isinstance(got, codec.MiniKafkaError):
                return True
            if self.revision == "doc" and not _strict(payload):
                return True
        return False

    def setup_payloads(self) -> Sequence[bytes]:
        out = [
            codec.encode_request(codec.Produce(READ_TOPIC, b"v%d" % i)) for i in range(READ_RECORDS)
        ]
        out.append(codec.encode_request(codec.Produce(SINK_TOPIC, b"first")))
        return out

    # ---------------------------------------------------------------- the canary

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        """A PRODUCE of the last of ``values`` (a PRODUCE carries one message)."""
        return codec.encode_request(codec.Produce(CANARY, values[-1] if values else b""))

    def canary_acked(self, reply: bytes) -> int | None:
        try:
            got = codec.decode_reply(reply)
        except codec.MiniKafkaError:
            return None
        return got.offset if isinstance(got, codec.ProduceOk) else None

    def canary_consume(self, offset: int) -> bytes:
        self._read_from = offset
        return codec.encode_request(codec.Consume(CANARY, offset, CANARY_BATCH))

    def canary_values(self, reply: bytes) -> list[bytes]:
        """The data from the offset asked, by offset (a missing one reads b"")."""
        try:
            got = codec.decode_reply(reply)
        except codec.MiniKafkaError:
            return []
        if not isinstance(got, codec.ConsumeOk):
            return []
        by_offset = {c.offset: c.data for c in got.messages}
        end = self._read_from + CANARY_BATCH  # a reply's offsets past it are not read
        later = [o for o in by_offset if self._read_from <= o < end]
        if not later:
            return []
        return [by_offset.get(o, b"") for o in range(self._read_from, max(later) + 1)]
