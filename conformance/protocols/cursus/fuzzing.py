"""Cursus for the fuzzer: framing, the valid pool, layer mutators, canary, requirements.

The pool is drawn from the Hypothesis strategies of :mod:`strategies` with a
``ConjectureData`` seeded from the campaign seed and a provider that ignores the
constants Hypothesis collects from imported modules (so the same pool in every
process).  Half of its batches are pointed at the fuzz topic ``fuzz`` (4 partitions,
created before the campaign; batches go to 0-2, the pool's STREAM reads 3) so that
mutated batches reach the engine and not only the topic check.

Structure-aware mutators on the scapy layers of :mod:`layers`:

* ``field`` -- one field of the batch header or of one message (length fields and the
  message count included) is set to a boundary value of its type; every other length is
  still computed, so the frame stays well formed;
* ``scapy-fuzz`` -- scapy's ``fuzz()`` on the batch header or on one message, with the
  module ``random`` seeded from the case (scapy draws from it) and the magic pinned;
* ``text-token`` -- a text command with one token dropped, doubled, replaced by a
  boundary number, stretched past the name limit, or made invalid UTF-8.

Silent by design: ``STREAM`` owes no reply (it turns the connection into a push
stream); the harness judges it by its own rule.  The canary writes to the reserved topic
``__conformance_canary``, which no fuzz case names.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from scapy.fields import FieldLenField, StrLenField
from scapy.packet import Packet, fuzz

from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.draw import SCAPY_RANDOM as _SCAPY_RANDOM
from conformance.fuzz.draw import draw as _draw
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.cursus import codec, layers, strategies
from conformance.protocols.cursus.messages import (
    MAGIC,
    Batch,
    Command,
    Message,
)

POOL_BATCHES = 48
POOL_COMMANDS = 48
FUZZ_TOPIC = "fuzz"
FUZZ_PARTITIONS = 4
PRODUCED_PARTITIONS = 3
STREAMED_PARTITION = 3
"""The pool's batches write to partitions 0-2; its STREAM reads partition 3 from offset 0,
which only a mutated batch ever writes to: a stream from 0 of a partition that grows with
the campaign would make every STREAM case cost more than the last."""
CANARY_TOPIC = "__conformance_canary"
NAME_LIMIT = 249


@functools.lru_cache(maxsize=8)
def _pool(seed: int) -> Pool:
    requests: list[Batch | Command] = []
    for i in range(POOL_BATCHES):
        batch: Batch = _draw(f"pool:{seed}:batch:{i}", strategies.produce_batches())
        if i % 2 == 0:
            batch = replace(batch, topic=FUZZ_TOPIC, partition=str(i // 2 % PRODUCED_PARTITIONS))
        requests.append(batch)
    for i in range(POOL_COMMANDS):
        requests.append(_draw(f"pool:{seed}:command:{i}", strategies.commands()))
    requests += [
        Command("LIST"),
        Command("CONSUME", (FUZZ_TOPIC, 0, 0)),
        Command("STREAM", (FUZZ_TOPIC, STREAMED_PARTITION, 0)),
    ]
    requests = [r for r in requests if not _names_canary(r)]
    return Pool([codec.encode_request(r) for r in requests], requests)


def _names_canary(req: Batch | Command) -> bool:
    if isinstance(req, Batch):
        return req.topic == CANARY_TOPIC
    return CANARY_TOPIC in req.args


# ------------------------------------------------------------------ field values


def _int_values(size: int, signed: bool, current: int) -> list[int]:
    bits = size * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    out = [0, 1, hi, lo, current + 1, current - 1, hi // 2 + 1]
    if signed:
        out += [-1, -2]
    return [v for v in out if lo <= v <= hi]


def _str_values(rng: random.Random, current: bytes) -> list[bytes]:
    return [
        b"",
        b"\xff\xfe",
        b"\x00",
        current * 2,
        b"A" * (NAME_LIMIT + rng.randint(1, 64)),
        bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))),
    ]


def _field_value(rng: random.Random, pkt: Packet, fld: Any) -> Any:
    current = pkt.getfieldval(fld.name)
    if isinstance(fld, StrLenField):
        return rng.choice(_str_values(rng, current or b""))
    if isinstance(fld, FieldLenField):
        current = fld.i2m(pkt, current)  # the length or count it would compute
    size = fld.sz
    signed = fld.fmt[-1].islower()
    return rng.choice(_int_values(size, signed, int(current or 0)))


def _batch_targets(header: Packet) -> list[tuple[Packet, Any]]:
    targets = [(header, f) for f in header.fields_desc if f.name not in ("magic", "messages")]
    for msg in header.messages:
        targets += [(msg, f) for f in msg.fields_desc]
    return targets


def _requests(pool: Pool, kind: type) -> list[Any]:
    return [r for r in pool.requests if isinstance(r, kind)] or pool.requests


def field(rng: random.Random, pool: Pool) -> bytes:
    batch = rng.choice(_requests(pool, Batch))
    if not isinstance(batch, Batch):
        return text_token(rng, pool)
    header = layers.batch_layer(batch)
    pkt, fld = rng.choice(_batch_targets(header))
    pkt.setfieldval(fld.name, _field_value(rng, pkt, fld))
    return bytes(header)


def scapy_fuzz(rng: random.Random, pool: Pool) -> bytes:
    batch = rng.choice(_requests(pool, Batch))
    if not isinstance(batch, Batch):
        return text_token(rng, pool)
    return scapy_batch(rng, layers.batch_layer(batch))


def scapy_batch(rng: random.Random, header: Packet) -> bytes:
    """A batch layer (either revision's) with scapy's ``fuzz()`` on it or on one of its
    messages, its magic kept, built under a seed drawn from ``rng`` (scapy draws its values
    when the packet is built).  ValueError or struct.error when a drawn value cannot be
    built."""
    state = rng.getrandbits(64)
    with _SCAPY_RANDOM:
        random.seed(state)
        if header.messages and rng.random() < 0.5:
            at = rng.randrange(len(header.messages))
            header.messages[at] = fuzz(header.messages[at])
        else:
            header = fuzz(header)
            header.magic = MAGIC
        return bytes(header)


BOUNDARY_NUMBERS = ("-1", "0", "2147483648", "9223372036854775808", "1e3", "0x10", "+1", "")


def text_token(rng: random.Random, pool: Pool) -> bytes:
    cmd = rng.choice(_requests(pool, Command))
    if not isinstance(cmd, Command):
        return b"LIST"
    tokens = codec.encode_command(cmd).split(b" ")
    op = rng.randrange(6)
    at = rng.randrange(len(tokens))
    if op == 0 and len(tokens) > 1:
        del tokens[at]
    elif op == 1:
        tokens.insert(at, tokens[at])
    elif op == 2:
        tokens[at] = rng.choice(BOUNDARY_NUMBERS).encode()
    elif op == 3:
        tokens[at] = b"n" * (NAME_LIMIT + rng.randint(1, 64))
    elif op == 4:
        tokens[at] = tokens[at] + b"\xc3\x28"
    else:
        tokens[0] = tokens[0].lower()
    return b" ".join(tokens)


STRUCTURE_MUTATORS: dict[str, StructureMutator] = {
    "field": field,
    "scapy-fuzz": scapy_fuzz,
    "text-token": text_token,
}


def _unanswered(payload: bytes) -> str:
    """The requirement of a whole request left without a reply."""
    if not _owes_reply(payload):
        return "CUR-STREAM-1"  # an open stream owes a close after our half-close
    return "CUR-ACK-1" if codec.is_batch(payload) else "CUR-TEXT-1"


def _owes_reply(payload: bytes) -> bool:
    """Every request but a well-formed STREAM (a malformed one owes its error reply)."""
    if not payload.startswith(b"STREAM"):
        return True
    try:
        return codec.parse_command(payload).name != "STREAM"
    except codec.CursusError:
        return True


BLAME = Blame(
    corruption="CUR-BATCH-2",  # every message of an acknowledged batch is stored
    serving="CUR-FRAME-5",  # the broker keeps serving other connections
    bad_reply="CUR-FRAME-1",
    oversize="CUR-FRAME-3",  # a prefix over the limit must be refused from the prefix
    partial="CUR-FRAME-4",
    unanswered=_unanswered,
)


class CursusFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of Cursus."""

    canary_topic = CANARY_TOPIC
    structure_mutators: Mapping[str, StructureMutator] = STRUCTURE_MUTATORS
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS  # lying lengths mean something
    blame = BLAME

    def pool(self, seed: int) -> Pool:
        return _pool(seed)

    def owes_reply(self, payload: bytes) -> bool:
        return _owes_reply(payload)

    def setup_payloads(self) -> Sequence[bytes]:
        return [
            codec.encode_command(Command("CREATE", (FUZZ_TOPIC, FUZZ_PARTITIONS))),
            codec.encode_command(Command("CREATE", (CANARY_TOPIC, 1))),
        ]

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        msgs = tuple(
            Message(offset=0, seq_num=i, producer_id="canary", key="", epoch=0, payload=v)
            for i, v in enumerate(values)
        )
        batch = Batch(CANARY_TOPIC, "0", "1", False, 0, max(len(msgs) - 1, 0), msgs)
        return codec.encode_batch(batch)

    def canary_acked(self, reply: bytes) -> int | None:
        try:
            ack = codec.decode_ack(reply)
        except codec.CursusError:
            return None
        return ack.last_offset if ack.status == "OK" else None

    def canary_consume(self, offset: int) -> bytes:
        return codec.encode_command(Command("CONSUME", (CANARY_TOPIC, 0, offset)))

    def canary_values(self, reply: bytes) -> list[bytes]:
        try:
            got = codec.decode_reply(reply)
        except codec.CursusError:
            return []
        return [m.payload for m in got.messages] if isinstance(got, Batch) else []
