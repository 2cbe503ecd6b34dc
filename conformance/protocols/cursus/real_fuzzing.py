"""Cursus revision real for the fuzzer: the pool, layer mutators, canary and requirements.

Oracle (conformance/fuzz/harness.py, the same for every protocol): within a deadline the
target answers each whole request (an ``ERROR:`` line counts) or closes the connection; it
never hangs, keeps accepting and answering new connections, and a canary produce/consume
round trip returns what was acknowledged.  A well-formed STREAM owes no reply.

The pool is drawn as revision doc's is (fuzzing.py: seeded Hypothesis draws, half of the
batches pointed at the fuzz topic ``fuzz``, partitions 0-2, the pool's STREAM reading 3), from
real_strategies.py, every request in the real layouts.  Mutators: ``field`` (one field of the
real batch header or of a message set to a boundary value of its type, lengths computed),
``scapy-fuzz`` (scapy's ``fuzz()`` on the header or one message, the magic pinned) and
``text-token`` (a word of a command dropped, doubled, given a boundary value or an overlong
name, made invalid UTF-8, its name lower-cased, or the envelope's topic length made to lie).
"""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from scapy.packet import Packet

from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.draw import draw as _draw
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.cursus import real_codec, real_layers, real_strategies
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.fuzzing import (
    BOUNDARY_NUMBERS,
    CANARY_TOPIC,
    FUZZ_PARTITIONS,
    FUZZ_TOPIC,
    NAME_LIMIT,
    POOL_BATCHES,
    POOL_COMMANDS,
    PRODUCED_PARTITIONS,
    STREAMED_PARTITION,
    _field_value,
    scapy_batch,
)
from conformance.protocols.cursus.messages import Batch, BatchAck, Message
from conformance.protocols.cursus.real_messages import RealCommand, command

Request = Batch | RealCommand


@functools.lru_cache(maxsize=8)
def _pool(seed: int) -> Pool:
    requests: list[Request] = []
    for i in range(POOL_BATCHES):
        batch: Batch = _draw(f"real:{seed}:batch:{i}", real_strategies.produce_batches())
        if i % 2 == 0:
            batch = replace(batch, topic=FUZZ_TOPIC, partition=str(i // 2 % PRODUCED_PARTITIONS))
        requests.append(batch)
    for i in range(POOL_COMMANDS):
        requests.append(_draw(f"real:{seed}:command:{i}", real_strategies.commands()))
    requests += [
        command("LIST"),
        command("CONSUME", topic=FUZZ_TOPIC, partition=0, offset=0, member="fuzz"),
        command("STREAM", topic=FUZZ_TOPIC, partition=STREAMED_PARTITION, group="fuzz"),
    ]
    requests = [r for r in requests if not _names_canary(r)]
    return Pool([_encode(r) for r in requests], requests)


def _encode(req: Request) -> bytes:
    if isinstance(req, Batch):
        return real_codec.encode_batch(req)
    return real_codec.encode_command(req)


def _names_canary(req: Request) -> bool:
    if isinstance(req, Batch):
        return req.topic == CANARY_TOPIC
    return CANARY_TOPIC in req.text()


def _of(pool: Pool, kind: type) -> list[Any]:
    return [r for r in pool.requests if isinstance(r, kind)] or pool.requests


def _targets(header: Packet) -> list[tuple[Packet, Any]]:
    targets = [(header, f) for f in header.fields_desc if f.name not in ("magic", "messages")]
    for msg in header.messages:
        targets += [(msg, f) for f in msg.fields_desc]
    return targets


def field(rng: random.Random, pool: Pool) -> bytes:
    batch = rng.choice(_of(pool, Batch))
    if not isinstance(batch, Batch):
        return text_token(rng, pool)
    header = real_layers.batch_layer(batch)
    pkt, fld = rng.choice(_targets(header))
    value = _field_value(rng, pkt, fld)
    if fld.name == "acks":  # its length is a u8: longer text cannot be written
        value = value[:255]
    pkt.setfieldval(fld.name, value)
    return bytes(header)


FUZZ_TRIES = 4
"""Draws of scapy's ``fuzz()`` before a case gives up and sends its batch unmutated: a drawn
string longer than its length field's width (acks: a u8) cannot be built."""


def scapy_fuzz(rng: random.Random, pool: Pool) -> bytes:
    batch = rng.choice(_of(pool, Batch))
    if not isinstance(batch, Batch):
        return text_token(rng, pool)
    for _ in range(FUZZ_TRIES):
        try:
            return scapy_batch(rng, real_layers.batch_layer(batch))
        except (ValueError, struct.error):
            continue
    return real_codec.encode_batch(batch)


def text_token(rng: random.Random, pool: Pool) -> bytes:
    cmd = rng.choice(_of(pool, RealCommand))
    if not isinstance(cmd, RealCommand):
        return real_codec.envelope("LIST")
    words = cmd.text().encode("utf-8", "surrogateescape").split(b" ")
    op = rng.randrange(7)
    at = rng.randrange(len(words))
    if op == 0 and len(words) > 1:
        del words[at]
    elif op == 1:
        words.insert(at, words[at])
    elif op == 2:
        key = words[at].partition(b"=")[0] if b"=" in words[at] else b""
        value = rng.choice(BOUNDARY_NUMBERS).encode()
        words[at] = key + b"=" + value if key else value
    elif op == 3:
        words[at] = b"n" * (NAME_LIMIT + rng.randint(1, 64))
    elif op == 4:
        words[at] = words[at] + b"\xc3\x28"
    elif op == 5:
        words[0] = words[0].lower()
    text = b" ".join(words)
    if cmd.raw:
        return text
    topic = cmd.topic.encode("utf-8", "surrogateescape")
    length = len(topic) + (rng.choice((1, 7, 4096)) if op == 6 else 0)
    return length.to_bytes(2, "big") + topic + text


STRUCTURE_MUTATORS: dict[str, StructureMutator] = {
    "field": field,
    "scapy-fuzz": scapy_fuzz,
    "text-token": text_token,
}


def _owes_reply(payload: bytes) -> bool:
    """Every request but a STREAM the real broker starts (it has topic, partition, group)."""
    got = real_codec.classify(payload)
    if not isinstance(got, RealCommand) or got.name != "STREAM":
        return True
    return not all(got.get(k) for k in ("topic", "partition", "group"))


def _unanswered(payload: bytes) -> str:
    if not _owes_reply(payload):
        return "CUR-RSTREAM-1"
    return "CUR-RACK-1" if real_codec.is_batch(payload) else "CUR-RTEXT-1"


BLAME = Blame(
    corruption="CUR-RBATCH-1",  # every message of an acknowledged batch is stored
    serving="CUR-FRAME-5",
    bad_reply="CUR-FRAME-1",
    oversize="CUR-RFRAME-2",  # a prefix over 16 MiB is refused from the prefix
    partial="CUR-FRAME-4",
    unanswered=_unanswered,
)


class RealFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of Cursus revision real."""

    canary_topic = CANARY_TOPIC
    structure_mutators: Mapping[str, StructureMutator] = STRUCTURE_MUTATORS
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS
    blame = BLAME

    def pool(self, seed: int) -> Pool:
        return _pool(seed)

    def owes_reply(self, payload: bytes) -> bool:
        return _owes_reply(payload)

    def setup_payloads(self) -> Sequence[bytes]:
        return [
            real_codec.envelope(f"CREATE topic={FUZZ_TOPIC} partitions={FUZZ_PARTITIONS}"),
            real_codec.envelope(f"CREATE topic={CANARY_TOPIC} partitions=1"),
        ]

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        msgs = tuple(
            Message(seq_num=i + 1, producer_id="canary", payload=v) for i, v in enumerate(values)
        )
        seqs = [m.seq_num for m in msgs] or [0]
        return real_codec.encode_batch(
            Batch(CANARY_TOPIC, "0", "1", False, seqs[0], seqs[-1], msgs)
        )

    def canary_acked(self, reply: bytes) -> int | None:
        try:
            ack = real_codec.decode_reply(reply)
        except CursusError:
            return None
        return ack.last_offset if isinstance(ack, BatchAck) and ack.status == "OK" else None

    def canary_consume(self, offset: int) -> bytes:
        cmd = command("CONSUME", topic=CANARY_TOPIC, partition=0, offset=offset, member="canary")
        return real_codec.encode_command(cmd)

    def canary_values(self, reply: bytes) -> list[bytes]:
        try:
            got = real_codec.decode_reply(reply)
        except CursusError:
            return []
        return [m.payload for m in got.messages] if isinstance(got, Batch) else []
