"""Mini-Kafka's structure-aware mutators (the frame's length stays true; the payload lies)
and its own frame mutators.

Hand-made, each where it says the lie is (the pool's requests are :mod:`.codec`'s
dataclasses, :attr:`Pool.requests`):

* ``topic-length`` / ``data-length`` -- the i32 length of a topic (CONSUME, PRODUCE) or
  of PRODUCE's data lies: 0, one less or one more than true, past the payload, negative,
  int32's ends;
* ``cut`` -- a CONSUME or PRODUCE cut short inside or between its fields (the type byte
  kept), or a payload with no type byte at all (a frame of length 4);
* ``trailing`` -- bytes after the last field: the real client's ``3N+4`` zero bytes
  (FACTS.md 2.3), or a random few;
* ``type-byte`` -- a type byte that is no request type (0x00, the reply types, 0x07,
  0x80, 0x99, 0xFF ...) on a pool request's body, or another request type's byte on it;
* ``offset`` / ``batch-size`` -- a CONSUME's offset or batch size negative, zero, at the
  end of the read topic, or at int64's / int32's ends (a huge batch: 2^31-1);
* ``bad-utf8`` -- bytes that are not UTF-8 put into a topic;

On the request's scapy layer (:mod:`.layers`), as Cursus and Iggy do:

* ``layer-field`` -- one field of the layer or of a packet nested in it (the type byte,
  a length, a number, a topic or data) set to a boundary value of its type, every other
  length still computed;
* ``scapy-fuzz`` -- what scapy's ``fuzz()`` does, on one to three fields of the layer or
  of its nested packets (``fuzz()`` walks the top packet's only): each gets its field's
  random value, drawn with the module ``random`` seeded from the case.

None of them points a CONSUME at :data:`SINK_TOPIC` (the topic every pool PRODUCE
writes to, which grows with the campaign); a PRODUCE's body read as a CONSUME's
(``type-byte``) names it, but its offset is then the data's length times 2^32 and
more, past any end.  Frame mutators (:data:`FRAME_MUTATORS_MK`): the generic ones
(mini-Kafka is length-prefixed) and

* ``small-length`` -- a length field of 0 to 6 before a whole payload: below 4 no frame
  at all; 4 and 5 a frame of no or one byte, the rest read as the next length;
* ``mixed-burst`` -- several frames on one connection, valid and mutated in turn: a
  refused request must not cost the ones after it their replies.
"""

from __future__ import annotations

import random
import struct
from typing import Any

from scapy.fields import StrField
from scapy.packet import Packet

from conformance.fuzz.case import FrameMutator, FuzzProtocol, Pool, StructureMutator
from conformance.fuzz.draw import SCAPY_RANDOM
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.minikafka import codec, layers
from conformance.protocols.minikafka import messages as m
from conformance.wire.schema_layers import nested_packets

READ_TOPIC = "fuzz-read"
"""Written by the set-up (:data:`READ_RECORDS` records); the pool's CONSUMEs read it."""
SINK_TOPIC = "fuzz-sink"
"""The pool's PRODUCEs write to it; no CONSUME reads it."""
READ_RECORDS = 9
I32 = struct.Struct(">i")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
HEAD = 1
"""The type byte before a request's first field."""

Writes = tuple[tuple[bytes, ...], float]


def _pick(rng: random.Random, pool: Pool, *types: type) -> codec.Request:
    """One of the pool's requests of those types (any if the pool has none)."""
    picked = [r for r in pool.requests if isinstance(r, types)] or pool.requests
    request: codec.Request = rng.choice(picked)
    return request


def _raw(topic: str | bytes) -> bytes:
    return topic if isinstance(topic, bytes) else topic.encode("utf-8")


def _lie(rng: random.Random, true: int, left: int) -> int:
    """A value for an i32 length now ``true`` with ``left`` payload bytes after it."""
    return rng.choice(
        (0, max(true - 1, 0), true + 1, left + 1, left + rng.randint(2, 64), -1, -true - 1,
         I32_MIN, I32_MAX, 2**16)
    )  # fmt: skip


def _with_i32(payload: bytes, at: int, value: int) -> bytes:
    return payload[:at] + I32.pack(value) + payload[at + 4 :]


# ----------------------------------------------------------------- structure


def topic_length(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool, codec.Consume, codec.Produce)
    payload = codec.encode_request(request)
    if len(payload) < HEAD + 4:
        return payload
    (true,) = I32.unpack_from(payload, HEAD)
    return _with_i32(payload, HEAD, _lie(rng, true, len(payload) - HEAD - 4))


def data_length(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool, codec.Produce)
    if not isinstance(request, codec.Produce):
        return codec.encode_request(request)
    payload = codec.encode_request(request)
    at = HEAD + 4 + len(_raw(request.topic))
    return _with_i32(payload, at, _lie(rng, len(request.data), len(request.data)))


def cut(rng: random.Random, pool: Pool) -> bytes:
    if rng.random() < 0.1:
        return b""  # no type byte: a frame of length 4
    payload = codec.encode_request(_pick(rng, pool, codec.Consume, codec.Produce))
    return payload[: rng.randrange(HEAD, len(payload))] if len(payload) > HEAD else payload


def trailing(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool)
    payload = codec.encode_request(request)
    if isinstance(request, codec.Consume) and rng.random() < 0.5:  # the real client's
        return payload + bytes(3 * len(_raw(request.topic)) + 4)
    return payload + rng.randbytes(rng.randint(1, 32))


UNKNOWN_TYPES = (0x00, 0x02, 0x04, 0x06, 0x07, 0x10, 0x50, 0x70, 0x7F, 0x80, 0x99, 0xFF)
"""Type bytes that are no request type: the reply types, later phases' Raft types, the
signed byte's edges, the real server's test's 0x99."""


def type_byte(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool)
    body = codec.encode_request(request)[HEAD:]
    if rng.random() < 0.7:
        return bytes([rng.choice(UNKNOWN_TYPES)]) + body
    others = [t for t in m.REPLY_TYPE if t != request.type]
    return bytes([rng.choice(others)]) + body


def _consume(rng: random.Random, pool: Pool) -> codec.Consume:
    request = _pick(rng, pool, codec.Consume)
    if isinstance(request, codec.Consume):
        return request
    return codec.Consume(READ_TOPIC, 0, 1)


def offset(rng: random.Random, pool: Pool) -> bytes:
    request = _consume(rng, pool)
    value = rng.choice(
        (-1, -2, I64_MIN, I64_MIN + 1, I64_MAX, 0, READ_RECORDS - 1, READ_RECORDS,
         READ_RECORDS + 1, 2**31, 2**32, -(2**32))
    )  # fmt: skip
    return codec.encode_request(codec.Consume(request.topic, value, request.batch_size))


def batch_size(rng: random.Random, pool: Pool) -> bytes:
    request = _consume(rng, pool)
    value = rng.choice((-1, -2, I32_MIN, I32_MIN + 1, 0, 1, I32_MAX, 2**16, 10_000, 10_001))
    return codec.encode_request(codec.Consume(request.topic, request.offset, value))


BAD_UTF8 = (
    b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\x80", b"\x80", b"\xf5\x80\x80\x80",
    b"\xe2\x82", b"\xef\xbf\xbd",
)  # fmt: skip
"""Not UTF-8 (a lone continuation, an overlong NUL, a surrogate, a cut sequence), and
U+FFFD itself, which ``real`` reads those as."""


def bad_utf8(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool, codec.Consume, codec.Produce)
    raw = _raw(request.topic) if isinstance(request, codec.Consume | codec.Produce) else b""
    at = rng.randint(0, len(raw))
    topic = raw[:at] + rng.choice(BAD_UTF8) + raw[at:]
    if isinstance(request, codec.Consume):
        return codec.encode_request(codec.Consume(topic, request.offset, request.batch_size))
    data = request.data if isinstance(request, codec.Produce) else b""
    return codec.encode_request(codec.Produce(topic, data))


# ------------------------------------------------------------------ on the layer


def _boundaries(size: int, signed: bool, current: int) -> list[int]:
    bits = size * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    out = [0, 1, -1, hi, lo, current + 1, current - 1, hi // 2 + 1, 255, 256]
    return [v for v in out if lo <= v <= hi]


def _strings(current: bytes) -> list[bytes]:
    return [b"", b"\xff\xfe", b"\x00", current * 2, b"n" * 300, b"\xc3\x28", b"a/../b"]


def _targets(pkt: Packet) -> list[tuple[Packet, Any]]:
    """The fields of ``pkt`` and its nested packets that hold a number or bytes."""
    out = []
    for p in nested_packets(pkt):
        for fld in p.fields_desc:
            value = p.getfieldval(fld.name)
            if isinstance(value, Packet | list):
                continue
            sized = bool(getattr(fld, "sz", None))
            if isinstance(fld, StrField) or isinstance(value, bytes) or sized:
                out.append((p, fld))
    return out


def _value(rng: random.Random, pkt: Packet, fld: Any) -> Any:
    current = pkt.getfieldval(fld.name)
    if isinstance(fld, StrField) or isinstance(current, bytes):
        return rng.choice(_strings(current or b""))
    if current is None:  # a length or kind computed at build time
        current = fld.i2m(pkt, current)
    signed = str(getattr(fld, "fmt", ">I"))[-1:].islower()
    return rng.choice(_boundaries(fld.sz, signed, int(current or 0)))


def layer_field(rng: random.Random, pool: Pool) -> bytes:
    request = _pick(rng, pool, codec.Consume, codec.Produce)
    pkt = layers.request_packet(request)
    target, fld = rng.choice(_targets(pkt))
    target.setfieldval(fld.name, _value(rng, target, fld))
    try:
        return bytes(pkt)
    except (ValueError, struct.error):  # a value its field cannot hold after all
        return codec.encode_request(request)


def scapy_fuzz(rng: random.Random, pool: Pool) -> bytes:
    """scapy's ``fuzz()`` of one to three fields of the layer or its nested packets: each
    given its field's ``randval()`` (``fuzz()`` itself walks only the top packet's)."""
    request = _pick(rng, pool, codec.Consume, codec.Produce)
    pkt = layers.request_packet(request)
    fields = [
        (p, fld)
        for p in nested_packets(pkt)
        for fld in p.fields_desc
        if not isinstance(p.getfieldval(fld.name), Packet | list)
    ]
    chosen = rng.sample(fields, min(len(fields), rng.randint(1, 3)))
    state = rng.getrandbits(64)
    with SCAPY_RANDOM:  # scapy draws from the module random, at build time
        random.seed(state)
        for p, fld in chosen:
            p.fields[fld.name] = fld.randval()
        try:
            return bytes(pkt)
        except Exception:  # a drawn value its field cannot build: the request
            return codec.encode_request(request)


STRUCTURE_MUTATORS: dict[str, StructureMutator] = {
    "topic-length": topic_length,
    "data-length": data_length,
    "cut": cut,
    "trailing": trailing,
    "type-byte": type_byte,
    "offset": offset,
    "batch-size": batch_size,
    "bad-utf8": bad_utf8,
    "layer-field": layer_field,
    "scapy-fuzz": scapy_fuzz,
}


# ----------------------------------------------------------------- frames


def small_length(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> Writes:
    payload = rng.choice(pool.payloads)
    return (proto.frame(payload, length=rng.randint(0, 6)),), 0.0


MIXED_MAX = 8


def mixed_burst(rng: random.Random, proto: FuzzProtocol, pool: Pool) -> Writes:
    frames = []
    for _ in range(rng.randint(2, MIXED_MAX)):
        if rng.random() < 0.5:
            frames.append(proto.frame(rng.choice(pool.payloads)))
        else:
            name = rng.choice(sorted(STRUCTURE_MUTATORS))
            frames.append(proto.frame(STRUCTURE_MUTATORS[name](rng, pool)))
    return (b"".join(frames),), 0.0


FRAME_MUTATORS_MK: dict[str, FrameMutator] = {
    **FRAME_MUTATORS,
    "small-length": small_length,
    "mixed-burst": mixed_burst,
}
