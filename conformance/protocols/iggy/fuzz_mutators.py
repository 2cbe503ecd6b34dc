"""Iggy's structure-aware mutators (the framing stays valid; the payload lies).

Hand-made, each where it says the lie is:

* ``identifier`` -- an Identifier's kind or length lies, a string runs past the payload,
  bad UTF-8, an empty name, a numeric one at a boundary;
* ``partitioning`` -- SEND_MESSAGES' partitioning kind or length lies;
* ``batch`` -- the message count, the index table, a message's lengths or the metadata
  length lie (doc: a message's length, a message cut, bytes after the last);
* ``headers`` -- a user-header block whose lengths are true carries a lie (classic);
* ``strategy`` -- polling strategy, count, auto-commit, consumer kind and partition flag
  out of range;
* ``login`` -- LOGIN_USER fields out of range (classic);
* ``unknown-code`` -- a code the revision does not have;
* ``cut`` -- a payload cut short, framed for what is left.

On the request's scapy layer (:mod:`.layers`), as Cursus and Kafka do:

* ``layer-field`` -- one field of the request's layer or of a packet nested in it
  (identifiers, partitioning, strategy, index entries; lengths, sizes and kinds
  included) set to a boundary value of its type, every other length still computed;
* ``scapy-fuzz`` -- scapy's ``fuzz()`` on the layer after a few fields are forgotten,
  with the module ``random`` seeded from the case (scapy draws from it).

Neither takes a request that destroys (:data:`DESTROYING`): a boundary value of its
stream id may be the canary stream's (classic: 1).

The pool's requests are :mod:`.fuzz_pool`'s ``(name, body)`` pairs.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Mapping
from typing import Any

from scapy.fields import StrField
from scapy.packet import Packet, fuzz

from conformance.fuzz.case import Pool, StructureMutator
from conformance.fuzz.draw import SCAPY_RANDOM
from conformance.protocols.iggy import codec, layers
from conformance.protocols.iggy.fuzz_pool import SDK_VERSION, U32, request
from conformance.protocols.iggy.messages import CODES, NAMES, identifier
from conformance.wire.schema_layers import nested_packets

U64 = struct.Struct("<Q")
DESTROYING = ("delete_stream", "delete_topic", "delete_partitions")
"""Requests whose identifiers keep to names and absent ids (a small number could name the
canary's stream): the layer mutators leave them out, ``identifier`` plants no small id."""


def header_entry(key: bytes, kind: int, value: bytes, key_kind: int = 2) -> bytes:
    """One user header: ``u8 kind, u32 len, key`` then ``u8 kind, u32 len, value``."""
    return (
        bytes([key_kind]) + U32.pack(len(key)) + key + bytes([kind]) + U32.pack(len(value)) + value
    )


SENTINEL = "zz-sentinel-identifier-zz"
SENTINEL_BYTES = bytes([2, len(SENTINEL)]) + SENTINEL.encode()
KEY_SENTINEL = b"zz-sentinel-key-zz"
INTERESTING_U32 = (0, 1, 2**31 - 1, 2**31, 2**32 - 1)
INTERESTING_U64 = (0, 1, 2**63, 2**64 - 1)


def _of(pool: Pool, rng: random.Random, *names: str) -> tuple[str, dict[str, Any]]:
    """One of the pool's requests of those commands (a SEND_MESSAGES with messages)."""
    picked = [
        r for r in pool.requests if r[0] in names and r[1].get("messages", True)
    ] or pool.requests
    name, body = rng.choice(picked)
    return str(name), dict(body)


def _replace(payload: bytes, old: bytes, new: bytes, name: str, revision: str) -> bytes:
    """``old`` replaced by ``new`` in ``payload``, classic SEND_MESSAGES' metadata length
    kept true (so that only the planted lie lies)."""
    at = payload.index(old)
    out = payload[:at] + new + payload[at + len(old) :]
    if name == "send_messages" and revision == "classic":
        (meta,) = U32.unpack_from(out, 4)
        out = out[:4] + U32.pack(meta + len(new) - len(old)) + out[8:]
    return out


def _identifier_lie(rng: random.Random, after: int, destroys: bool = False) -> bytes:
    """A lying Identifier (``after``: the payload bytes that follow it; ``destroys``: in
    a request that destroys, where a small number could name the canary's stream)."""
    name = rng.choice([b"fuzz", b"a", b"x" * 255, b""])
    op = rng.randrange(7)
    if op == 0:  # an unknown kind
        return bytes([rng.choice((0, 3, 0x7F, 0xFF)), 4]) + U32.pack(0)
    if op == 1:  # a numeric one of the wrong length
        n = rng.choice((0, 1, 2, 3, 5, 8, 255))
        return bytes([1, n]) + bytes(min(n, rng.choice((n, 4))))
    if op == 2:  # an empty string
        return b"\x02\x00"
    if op == 3:  # a string whose length runs past the payload
        short = name[: rng.randint(0, 3)]
        return bytes([2, min(255, len(short) + after + rng.randint(1, 16))]) + short
    if op == 4:  # bad UTF-8
        return b"\x02\x03\xc3\x28\xff"
    if op == 5:  # a numeric one at a boundary
        picked = [v for v in INTERESTING_U32 if v >= 2**31 or not destroys]
        return b"\x01\x04" + U32.pack(rng.choice(picked))
    return bytes([2, len(name)]) + name  # a name that may exist or not, or be empty


def _with_sentinel(body: dict[str, Any], rng: random.Random) -> bool:
    """Put the sentinel in one Identifier of ``body``; False if it has none."""
    slots: list[tuple[dict[str, Any], str]] = [
        (body, k) for k in ("stream", "topic", "group") if k in body
    ]
    consumer = body.get("consumer")
    if isinstance(consumer, dict) and isinstance(consumer.get("value"), dict):
        consumer = body["consumer"] = dict(consumer)
        slots.append((consumer, "value"))
    if not slots:
        return False
    holder, key = rng.choice(slots)
    holder[key] = identifier(SENTINEL)
    return True


def make_mutators(revision: str) -> dict[str, StructureMutator]:
    """The structure mutators of ``revision`` (see the module doc)."""
    doc = revision == "doc"
    classic_codes = set(CODES.values())
    table = codec.tables(revision)[0]
    absent = sorted(c for c in classic_codes if NAMES[c] not in table)
    frame_codes = (0, 2, 9, 13, 99, 103, 606, 1000, 0xFFFF, 2**31, 2**32 - 1, *absent)

    def identifier_lie(rng: random.Random, pool: Pool) -> bytes:
        ids = [r for r in pool.requests if any(k in r[1] for k in ("stream", "consumer"))]
        name, body = rng.choice(ids)
        body = dict(body)
        if not _with_sentinel(body, rng):
            return request(name, body, revision)
        payload = request(name, body, revision)
        after = len(payload) - payload.index(SENTINEL_BYTES) - len(SENTINEL_BYTES)
        return _replace(
            payload, SENTINEL_BYTES, _identifier_lie(rng, after, name in DESTROYING), name, revision
        )

    def partitioning(rng: random.Random, pool: Pool) -> bytes:
        name, body = _of(pool, rng, "send_messages")
        body["partitioning"] = {"kind": 3, "value": KEY_SENTINEL}
        payload = request(name, body, revision)
        old = bytes([3, len(KEY_SENTINEL)]) + KEY_SENTINEL
        lie = rng.choice(
            [
                bytes([rng.choice((0, 4, 0xFF)), 0]),
                b"\x01" + bytes([rng.choice((1, 4, 255))]) + b"\x00" * rng.choice((1, 4)),
                bytes([2, rng.choice((0, 1, 3, 5, 8, 255))]) + U32.pack(rng.choice((0, 7))),
                b"\x03\x00",
                b"\x03\xff" + b"k" * rng.randint(0, 8),
            ]
        )  # fmt: skip
        return _replace(payload, old, lie, name, revision)

    def batch(rng: random.Random, pool: Pool) -> bytes:
        name, body = _of(pool, rng, "send_messages")
        payload = request(name, body, revision)
        return (_doc_batch if doc else _classic_batch)(rng, payload, body)

    def headers(rng: random.Random, pool: Pool) -> bytes:
        if doc:
            return batch(rng, pool)
        name, body = _of(pool, rng, "send_messages")
        messages = [dict(m) for m in body["messages"]]
        messages[rng.randrange(len(messages))]["headers"] = _header_lie(rng)
        return request(name, {**body, "messages": messages}, revision)

    def strategy(rng: random.Random, pool: Pool) -> bytes:
        name, body = _of(pool, rng, "poll_messages", "get_consumer_offset", "store_consumer_offset")
        if not doc and rng.random() < 0.3:
            body["partition_flag"] = rng.choice((2, 0x80, 0xFF))
        payload = bytearray(request(name, body, revision))
        op = rng.randrange(5)
        if op == 0:  # the consumer's kind
            payload[4] = rng.choice((0, 3, 0x7F, 0xFF))
        elif name == "poll_messages" and op == 1:
            payload[-14] = rng.choice((0, 6, 0x7F, 0xFF))
        elif name == "poll_messages" and op == 2:
            payload[-13:-5] = U64.pack(rng.choice(INTERESTING_U64))
        elif name == "poll_messages" and op == 3:
            payload[-5:-1] = U32.pack(rng.choice(INTERESTING_U32))
        elif name == "poll_messages":
            payload[-1] = rng.choice((2, 0x80, 0xFF))
        return bytes(payload)

    def login(rng: random.Random, pool: Pool) -> bytes:
        body = {"username": "iggy", "password": "iggy", "version": SDK_VERSION, "context": ""}
        field = rng.choice(("username", "password", "version", "context"))
        body[field] = rng.choice(("", "ab", "u" * 51, "p" * 101, "z" * 255, "\u00e9" * 127))
        payload = U32.pack(CODES["login_user"]) + _login_payload(body)
        if rng.random() < 0.3:  # a u32 length that runs past the payload
            cut = len(payload) - len(body["context"]) - 4
            payload = payload[:cut] + U32.pack(rng.choice((5, 2**31, 2**32 - 1)))
        return payload

    def unknown_code(rng: random.Random, pool: Pool) -> bytes:
        body = rng.choice([b"", rng.randbytes(rng.randint(1, 32)), rng.choice(pool.payloads)[4:]])
        return U32.pack(rng.choice(frame_codes)) + body

    def cut(rng: random.Random, pool: Pool) -> bytes:
        payload = rng.choice([p for p in pool.payloads if len(p) > 4] or pool.payloads)
        return payload[: rng.randrange(4, len(payload))] if len(payload) > 4 else payload

    mutators: dict[str, StructureMutator] = {
        "identifier": identifier_lie,
        "partitioning": partitioning,
        "batch": batch,
        "headers": headers,
        "strategy": strategy,
        "unknown-code": unknown_code,
        "cut": cut,
    }
    if not doc:
        mutators["login"] = login
    return {**mutators, **layer_mutators(revision)}


def _login_payload(body: Mapping[str, Any]) -> bytes:
    """LOGIN_USER's payload by hand: its u8 lengths may not hold what is put in them."""
    out = b""
    for k in ("username", "password"):
        raw = str(body[k]).encode()
        out += bytes([len(raw) & 0xFF]) + raw
    for k in ("version", "context"):
        raw = str(body[k]).encode()
        out += U32.pack(len(raw)) + raw
    return out


def _classic_batch(rng: random.Random, payload: bytes, body: Mapping[str, Any]) -> bytes:
    out = bytearray(payload)
    (meta,) = U32.unpack_from(out, 4)
    count_at, index_at = 4 + meta, 8 + meta
    n = len(body["messages"])
    op = rng.randrange(6)
    if op == 0:  # the message count
        out[count_at : count_at + 4] = U32.pack(rng.choice((0, n - 1, n + 1, 2**31, 2**32 - 1)))
    elif op == 1:  # the metadata length
        out[4:8] = U32.pack(rng.choice((0, 1, meta - 1, meta + 1, 2**32 - 1)))
    elif op in (2, 3):  # an index entry
        at = index_at + 16 * rng.randrange(n) + rng.choice((0, 4, 8)) * (op - 2)
        (now,) = U32.unpack_from(out, at)
        out[at : at + 4] = U32.pack(rng.choice((0, 1, now - 1, now + 1, 2**32 - 1)) & 0xFFFFFFFF)
    elif op == 4:  # a message's header or payload length
        pos = index_at + 16 * n
        for m in body["messages"][: rng.randrange(n)]:
            pos += 64 + len(m.get("payload", b"")) + len(m.get("headers", b""))
        at = pos + rng.choice((48, 52))
        (now,) = U32.unpack_from(out, at)
        out[at : at + 4] = U32.pack(
            rng.choice((0, now - 1, now + 1, 2**31, 2**32 - 1)) & 0xFFFFFFFF
        )
    else:  # the last message cut short, the count and index kept
        del out[len(out) - rng.randint(1, 64) :]
    return bytes(out)


def _doc_batch(rng: random.Random, payload: bytes, body: Mapping[str, Any]) -> bytes:
    head = len(request("send_messages", {**body, "messages": []}, "doc"))
    out = bytearray(payload)
    pos = head
    for m in body["messages"][: rng.randrange(len(body["messages"]))]:
        pos += 20 + len(m["payload"])
    op = rng.randrange(3)
    if op == 0:
        (now,) = U32.unpack_from(out, pos + 16)
        out[pos + 16 : pos + 20] = U32.pack(
            rng.choice((0, now - 1, now + 1, 2**31, 2**32 - 1)) & 0xFFFFFFFF
        )
    elif op == 1:  # a message cut inside its id or length
        del out[pos + rng.randint(1, 19) :]
    else:  # bytes after the last message
        out += rng.randbytes(rng.randint(1, 19))
    return bytes(out)


def _header_lie(rng: random.Random) -> bytes:
    good = header_entry(b"ok", 2, b"v")
    lies = [
        header_entry(b"k", rng.choice((0, 16, 0xFF)), b"v"),
        header_entry(b"k", 2, b"v", key_kind=rng.choice((0, 16, 0xFF))),
        header_entry(b"", 2, b"v"),
        header_entry(b"k", 2, b""),
        header_entry(b"k" * 256, 2, b"v"),
        header_entry(b"k", 1, b"v" * 256),
        header_entry(b"k", 3, b"\x01\x00"),
        header_entry(b"k", 6, b"\x01\x02\x03"),
        header_entry(b"k", 13, b"\x00" * 15),
        header_entry(b"k", 2, b"\xc3\x28"),
        good[: rng.randrange(1, len(good))],
        b"\x02" + U32.pack(rng.choice((2**31, 2**32 - 1, 1000))) + b"k",
        good + good,
        bytes([2]) + U32.pack(1) + b"k",
    ]
    return rng.choice(lies)


# ------------------------------------------------------------------ on the layers


def _boundaries(size: int, signed: bool, current: int) -> list[int]:
    bits = size * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    out = [0, 1, hi, lo, current + 1, current - 1, hi // 2 + 1, 255, 256]
    return [v for v in out if lo <= v <= hi]


def _strings(current: bytes) -> list[bytes]:
    """Odd bytes for a string field: 255 at most, as u8 lengths count them (a length
    itself is a field of its own to lie with)."""
    return [b"", b"\xff\xfe", b"\x00", (current * 2)[:255], b"n" * 255, b"\xc3\x28"]


def _targets(pkt: Packet) -> list[tuple[Packet, Any]]:
    """The fields of ``pkt`` and its nested packets that hold a number or bytes."""
    out = []
    for p in nested_packets(pkt):
        for fld in p.fields_desc:
            value = p.getfieldval(fld.name)
            if isinstance(value, (Packet, list)):
                continue
            text = isinstance(fld, StrField) or isinstance(value, bytes)
            if text or getattr(fld, "sz", 0) in (1, 2, 4, 8, 16):
                out.append((p, fld))
    return out


def _value(rng: random.Random, pkt: Packet, fld: Any) -> Any:
    current = pkt.getfieldval(fld.name)
    if isinstance(fld, StrField) or isinstance(current, bytes):
        return rng.choice(_strings(current or b""))
    if current is None:  # a length or count computed at build time
        current = fld.i2m(pkt, current)
    signed = str(getattr(fld, "fmt", "<I"))[-1:].islower()
    return rng.choice(_boundaries(fld.sz, signed, int(current or 0)))


def _layered(rng: random.Random, pool: Pool, revision: str) -> tuple[str, Any, Packet]:
    requests = [r for r in pool.requests if r[1] and r[0] not in DESTROYING]  # fields
    name, body = rng.choice(requests or pool.requests)
    return str(name), body, layers.request_packet(name, body, revision)


def layer_mutators(revision: str) -> dict[str, StructureMutator]:
    """``layer-field`` and ``scapy-fuzz`` of ``revision`` (see the module doc)."""

    def layer_field(rng: random.Random, pool: Pool) -> bytes:
        name, body, pkt = _layered(rng, pool, revision)
        targets = _targets(pkt)
        if targets:
            target, fld = rng.choice(targets)
            target.setfieldval(fld.name, _value(rng, target, fld))
        try:
            return U32.pack(CODES[name]) + bytes(pkt)
        except ValueError:  # a value its field cannot hold after all: the request
            return request(name, body, revision)

    def scapy_fuzz(rng: random.Random, pool: Pool) -> bytes:
        name, body, pkt = _layered(rng, pool, revision)
        state = rng.getrandbits(64)
        nested = nested_packets(pkt)
        with SCAPY_RANDOM:
            random.seed(state)
            forgettable = [
                (p, f)
                for p in nested
                for f in sorted(p.fields)
                if not isinstance(p.fields[f], Packet)
            ]
            for p, f in rng.sample(forgettable, min(len(forgettable), rng.randint(1, 3))):
                p.fields.pop(f, None)  # forgotten fields are fuzz()'s to draw
            try:
                return U32.pack(CODES[name]) + bytes(fuzz(pkt))
            except Exception:  # a drawn union kind with no branch to build: the request
                return request(name, body, revision)

    return {"layer-field": layer_field, "scapy-fuzz": scapy_fuzz}
