"""Iggy for the fuzzer: the valid pool, structure-aware mutators, the canary, requirements.

ORACLE (the harness's, :mod:`conformance.fuzz.harness`): every whole request frame is
answered -- Iggy has no silent command; an unknown code is answered 3 -- or the
connection is closed, within the deadline; the broker keeps accepting and serving; what
the canary wrote is read back.

The pool (:func:`pool`) holds a valid ``code + payload`` of every command of the
revision's table (:func:`conformance.protocols.iggy.codec.tables`), aimed at what
:meth:`IggyFuzzing.setup_payloads` creates: stream ``fuzz`` with topics ``fuzz`` (3
partitions) and ``fuzz-scratch`` and group ``fuzz-group``, named by string and by number
(classic: the ids a fresh broker assigns, 0 and 1; doc: the ids given, 1 and 2).
SEND_MESSAGES comes with every partitioning kind and (classic) user headers of every
kind, POLL_MESSAGES with every strategy and consumer kind.  Commands that destroy
(DELETE_STREAM, DELETE_TOPIC, DELETE_PARTITIONS) name their stream by string only, or by
an id no stream has: a bit flip of a small stream id could otherwise reach the canary's.

Structure-aware mutators: ``identifier`` (an Identifier's kind or length lies, a string
runs past the payload, bad UTF-8), ``partitioning`` (kind/length lies), ``batch`` (the
message count, the index table, a message's lengths or the metadata length lie; doc: a
message's length), ``headers`` (user-header TLV lies), ``strategy`` (polling strategy,
count, auto-commit, consumer kind and partition flag out of range), ``login`` (LOGIN_USER
fields out of range), ``unknown-code`` (a code the revision does not have) and ``cut``
(a payload cut short, framed for what is left).  Iggy is length-prefixed: the generic
frame mutators apply.

Login (classic, ``--login``): ``after`` -- the plug-in's opener logs each case's
connection in; ``before`` -- no case logs in (the gate is fuzzed); ``both`` -- each case
draws whether its connection logs in (``session_choice``: ``FuzzCase.session``, half
the cases), and one that does is logged in by the plug-in's opener with the campaign's
credentials at run time, so neither that LOGIN_USER nor the password is ever in a
case's bytes or a reproducer (a replay is given ``--password`` again; the pool's own
LOGIN_USER requests carry fixed credentials).  The fuzzer's own connections
(set-up, canary, probe) always log in (``own_options``).  Doc has no login.

Canary: stream and topic ``__conformance_canary`` (1 partition), named by string only.
SEND_MESSAGES is answered an empty OK, with no offset: the canary's write is followed on
its connection by a POLL of the partition's last messages (``canary_readback``), and the
offset acknowledged is the one of the message carrying the value just written.
"""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.messages import CODES, NAMES, identifier

FUZZ, SCRATCH, GROUP, MADE = "fuzz", "fuzz-scratch", "fuzz-group", "fuzz-made"
PARTITIONS = 3
CANARY = "__conformance_canary"
CANARY_DOC_ID = 0x7FFF_C4A1
"""Doc: the canary stream's and topic's id (the client gives it), far from the pool's."""
ABSENT_ID = 4_000_000_000
"""A numeric id no stream, topic or group has (the destructive commands' numeric target)."""
IDS = {"classic": (0, 1), "doc": (1, 2)}
"""Numeric ids of stream/topic ``fuzz`` and topic ``fuzz-scratch`` (group: the first)."""
READBACK = 100
"""How many of the canary partition's last messages are read back to find a write."""
SDK_VERSION = "0.10.0"
ORIGIN_US = 1_700_000_000_000_000
U32, U64 = struct.Struct("<I"), struct.Struct("<Q")

# user-header kinds (FACTS.md section 4): name -> (code, a valid value)
HEADER_KINDS: dict[str, tuple[int, bytes]] = {
    "raw": (1, b"\x00\xff"),
    "string": (2, "grüße".encode()),
    "bool": (3, b"\x01"),
    **{f"int{8 << i}": (4 + i, (-1 - i).to_bytes(1 << i, "little", signed=True)) for i in range(5)},
    **{
        f"uint{8 << i}": (9 + i, ((1 << (8 << i)) - 1 - i).to_bytes(1 << i, "little"))
        for i in range(5)
    },
    "float32": (14, struct.pack("<f", 1.5)),
    "float64": (15, struct.pack("<d", -2.25)),
}


def header_entry(key: bytes, kind: int, value: bytes, key_kind: int = 2) -> bytes:
    """One user header: ``u8 kind, u32 len, key`` then ``u8 kind, u32 len, value``."""
    return (
        bytes([key_kind]) + U32.pack(len(key)) + key + bytes([kind]) + U32.pack(len(value)) + value
    )


def header_block(kinds: Sequence[str]) -> bytes:
    """A valid user-header block with one header of each kind, sorted by key."""
    return b"".join(header_entry(k.encode(), *HEADER_KINDS[k]) for k in sorted(kinds))


def request(name: str, body: Mapping[str, Any], revision: str) -> bytes:
    """``code + payload`` of a request (what the generic code frames)."""
    return U32.pack(CODES[name]) + codec.encode_request(name, body, revision)


# ------------------------------------------------------------------ the pool


def _refs(revision: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Streams, topics and groups of the pool, by number and by name."""
    first = IDS[revision][0]
    streams = [identifier(first), identifier(FUZZ)]
    topics = [identifier(first), identifier(FUZZ)]
    return streams, topics, [identifier(first), identifier(GROUP)]


def _messages(revision: str, i: int) -> list[dict[str, Any]]:
    payloads = [b"fuzz %d" % i, b"x" * (1 + i % 40), "ünïcode".encode()][: 1 + i % 3]
    ids = [0, i + 1, (1 << 128) - 1 - i]
    if revision == "doc":
        return [{"id": ids[(i + j) % 3], "payload": p} for j, p in enumerate(payloads)]
    kinds = list(HEADER_KINDS)
    out = []
    for j, p in enumerate(payloads):
        picked = [kinds[(9 * i + 3 * j + k) % len(kinds)] for k in range(3 if (i + j) % 4 else 0)]
        headers = header_block(sorted(set(picked))) if picked else b""
        out.append(
            {
                "id": ids[(i + j) % 3],
                "origin_timestamp": ORIGIN_US + i,
                "payload": p,
                "headers": headers,
            }
        )
    return out


def _partitionings(revision: str) -> list[dict[str, Any]]:
    return [
        {"kind": 1, "value": {}},
        *({"kind": 2, "value": p} for p in range(PARTITIONS)),
        {"kind": 3, "value": b"key-1"},
        {"kind": 3, "value": b"\x00" * 255},
    ]


def _consumers(revision: str) -> list[dict[str, Any]]:
    if revision == "doc":
        return [
            {"kind": 1, "value": 0},
            {"kind": 1, "value": 7},
            {"kind": 2, "value": IDS["doc"][0]},
        ]
    return [
        {"kind": 1, "value": identifier(0)},
        {"kind": 1, "value": identifier("fuzz-consumer")},
        {"kind": 2, "value": identifier(GROUP)},
    ]


def _partition(revision: str, p: int | None) -> dict[str, Any]:
    if revision == "doc":
        return {"partition_id": p or 0}
    return {"partition_flag": 0 if p is None else 1, "partition_id": p or 0}


def _group(revision: str, ref: Any) -> dict[str, Any]:
    if revision == "doc":
        return {"consumer_group_id": IDS["doc"][0] if ref is None else ref}
    return {"group": ref}


STRATEGIES = ((1, 0), (2, ORIGIN_US), (3, 0), (4, 0), (5, 0))
"""Offset, timestamp, first, last, next: (kind, value)."""


def _strategies(n: int) -> list[tuple[int, int]]:
    """Two strategies in turn (all five over the pool's polls)."""
    return [STRATEGIES[n % 5], STRATEGIES[(n + 1) % 5]]


def _bodies(revision: str) -> list[tuple[str, dict[str, Any]]]:
    streams, topics, groups = _refs(revision)
    first, second = IDS[revision]
    doc = revision == "doc"
    out: list[tuple[str, dict[str, Any]]] = [
        (name, {}) for name in ("ping", "get_stats", "get_me", "get_clients", "get_streams")
    ]
    out += [("get_cluster_metadata", {})]
    out += [("get_client", {"client_id": c}) for c in (0, 1, 2**32 - 1)]
    if not doc:
        out += [("logout_user", {})]
        out += [
            ("login_user", {"username": u, "password": p, "version": v, "context": c})
            for u, p, v, c in (
                ("iggy", "iggy", SDK_VERSION, ""),
                ("iggy", "wrong", "", "ctx"),
                ("nobody", "iggy", SDK_VERSION, ""),
            )
        ]
        out += [("create_stream", {"name": n}) for n in (MADE, FUZZ)]
    else:
        out += [
            ("create_stream", {"stream_id": i, "name": n})
            for i, n in ((second + 1, MADE), (first, FUZZ))
        ]
    out += [("get_stream", {"stream": s}) for s in (*streams, identifier(ABSENT_ID))]
    out += [("delete_stream", {"stream": s}) for s in (identifier(MADE), identifier(ABSENT_ID))]
    for s in streams:
        out += [("get_topics", {"stream": s})]
        if doc:
            out += [
                (
                    "create_topic",
                    {"stream": s, "topic_id": second + 1, "partitions_count": 2, "name": MADE},
                )
            ]
        else:
            out += [
                (
                    "create_topic",
                    {
                        "stream": s,
                        "partitions_count": 2,
                        "compression": 1,
                        "message_expiry": 0,
                        "max_topic_size": 0,
                        "replication_factor": 1,
                        "name": MADE,
                    },
                )
            ]
        for t in topics:
            st = {"stream": s, "topic": t}
            out += [("get_topic", st), ("get_consumer_groups", st)]
            out += [
                (c, {**st, **_group(revision, g)})
                for g in (groups if not doc else [None])
                for c in ("get_consumer_group", "join_consumer_group", "leave_consumer_group")
            ]
            out += [
                ("send_messages", {**st, "partitioning": p, "messages": _messages(revision, i)})
                for i, p in enumerate(_partitionings(revision))
            ]
            for consumer in _consumers(revision):
                for p in (None, 1) if not doc else (1,):
                    head = {"consumer": consumer, **st, **_partition(revision, p)}
                    out += [
                        ("get_consumer_offset", head),
                        ("store_consumer_offset", {**head, "offset": 0}),
                    ]
                    if not doc:  # doc keeps classic's layout for it (below)
                        out += [("delete_consumer_offset", head)]
                    out += [
                        (
                            "poll_messages",
                            {
                                **head,
                                "strategy": {"kind": k, "value": v},
                                "count": 1 + k * 3,
                                "auto_commit": k % 2 == 0,
                            },
                        )
                        for k, v in _strategies(sum(n == "poll_messages" for n, _ in out))
                    ]
    named = {"stream": identifier(FUZZ), "topic": identifier(FUZZ)}
    if doc:
        consumer = {"kind": 1, "value": identifier(0)}
        head = {"consumer": consumer, **named, "partition_flag": 1, "partition_id": 0}
        out += [("delete_consumer_offset", head)]
    made_group = {"consumer_group_id": first + 1} if doc else {"name": MADE}
    out += [("create_consumer_group", {**named, **made_group})]
    gone = (
        [{"consumer_group_id": first + 1}, {"consumer_group_id": ABSENT_ID}]
        if doc
        else [{"group": identifier(MADE)}, {"group": identifier(ABSENT_ID)}]
    )
    out += [("delete_consumer_group", {**named, **g}) for g in gone]
    out += [
        ("delete_topic", {"stream": identifier(FUZZ), "topic": t})
        for t in (identifier(MADE), identifier(ABSENT_ID))
    ]
    out += [("delete_topic", {"stream": identifier(ABSENT_ID), "topic": identifier(first)})]
    for t in (identifier(SCRATCH), identifier(second)):
        for c in (1, 2):
            out += [
                (n, {"stream": identifier(FUZZ), "topic": t, "partitions_count": c})
                for n in ("create_partitions", "delete_partitions")
            ]
    return out  # fmt: skip


@functools.lru_cache(maxsize=8)
def pool(revision: str, seed: int) -> Pool:
    """Every request of the revision's pool (the seed only orders it: its payloads are
    the same for every seed, the cases are not)."""
    table = codec.tables(revision)[0]
    bodies = [(n, b) for n, b in _bodies(revision) if n in table]
    random.Random(f"iggy-pool:{revision}:{seed}").shuffle(bodies)
    return Pool([request(n, b, revision) for n, b in bodies], bodies)


# ------------------------------------------------------------------ mutators

SENTINEL = "zz-sentinel-identifier-zz"
SENTINEL_BYTES = bytes([2, len(SENTINEL)]) + SENTINEL.encode()
KEY_SENTINEL = b"zz-sentinel-key-zz"
INTERESTING_U32 = (0, 1, 2**31 - 1, 2**31, 2**32 - 1)
INTERESTING_U64 = (0, 1, 2**63, 2**64 - 1)


def _of(pool: Pool, rng: random.Random, *names: str) -> tuple[str, dict[str, Any]]:
    picked = [r for r in pool.requests if r[0] in names] or pool.requests
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


def _identifier_lie(rng: random.Random, after: int) -> bytes:
    """A lying Identifier (``after``: the payload bytes that follow it)."""
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
        return b"\x01\x04" + U32.pack(rng.choice(INTERESTING_U32))
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
        return _replace(payload, SENTINEL_BYTES, _identifier_lie(rng, after), name, revision)

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
    return mutators


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


# ------------------------------------------------------------------ requirements

COMMAND_REQUIREMENTS = {
    "ping": "IGG-SYS-1", "get_stats": "IGG-SYS-2", "get_me": "IGG-SYS-3",
    "get_client": "IGG-SYS-4", "get_clients": "IGG-SYS-4", "get_cluster_metadata": "IGG-FRAME-2",
    "login_user": "IGG-LOGIN-3", "logout_user": "IGG-LOGIN-5",
    "create_stream": "IGG-STREAM-1", "get_stream": "IGG-STREAM-3", "get_streams": "IGG-STREAM-4",
    "delete_stream": "IGG-STREAM-5", "create_topic": "IGG-TOPIC-1", "get_topic": "IGG-TOPIC-4",
    "get_topics": "IGG-TOPIC-5", "delete_topic": "IGG-TOPIC-6",
    "create_partitions": "IGG-PART-1", "delete_partitions": "IGG-PART-2",
    "send_messages": "IGG-SEND-1", "poll_messages": "IGG-POLL-1",
    "get_consumer_offset": "IGG-OFF-1", "store_consumer_offset": "IGG-OFF-1",
    "delete_consumer_offset": "IGG-OFF-5", "create_consumer_group": "IGG-GROUP-1",
    "get_consumer_group": "IGG-GROUP-2", "get_consumer_groups": "IGG-GROUP-3",
    "join_consumer_group": "IGG-GROUP-4", "leave_consumer_group": "IGG-GROUP-5",
    "delete_consumer_group": "IGG-GROUP-6",
}  # fmt: skip
"""The requirement of each command whose request, decoded, was left unanswered."""
UNGATED = frozenset({"ping", "login_user"})


def unanswered(revision: str, login: str) -> Callable[[bytes], str]:
    """The requirement a whole request left without a reply breaks."""
    classic = revision == "classic"

    def blame(payload: bytes) -> str:
        if len(payload) < 4:
            return "IGG-FRAME-5" if classic else "IGG-FRAME-2"
        name = NAMES.get(U32.unpack_from(payload)[0])
        if name is None or name not in codec.tables(revision)[0]:
            return "IGG-FRAME-7"
        try:
            codec.decode_request(payload, revision, strict=False)
        except IggyError:
            return "IGG-FRAME-8" if classic else "IGG-FRAME-2"
        if classic and login == "before" and name not in UNGATED:
            return "IGG-LOGIN-2"
        if name == "send_messages" and not classic:
            return "IGG-SEND-8"
        return COMMAND_REQUIREMENTS.get(name, "IGG-FRAME-2")

    return blame


def serving_of(revision: str) -> Callable[[Sequence[bytes]], str]:
    """The requirement of a broker that stopped serving after ``frames``: IGG-FRAME-7 when
    one of them has an unknown code, else IGG-FRAME-8 (classic: a payload that does not
    decode, or any other) / IGG-FRAME-7 (doc, which has no requirement on payloads)."""
    table = codec.tables(revision)[0]

    def blame(frames: Sequence[bytes]) -> str:
        for frame in frames:
            if len(frame) >= 4 and NAMES.get(U32.unpack_from(frame)[0]) not in table:
                return "IGG-FRAME-7"
        return "IGG-FRAME-8" if revision == "classic" else "IGG-FRAME-7"

    return blame


def blame(revision: str, login: str) -> Blame:
    classic = revision == "classic"
    return Blame(
        corruption="IGG-POLL-9",  # a polled message carries the payload as sent
        # the broker keeps serving: after a payload that does not decode (classic), after
        # an unknown code (doc has no such requirement on payloads)
        serving="IGG-FRAME-8" if classic else "IGG-FRAME-7",
        bad_reply="IGG-FRAME-2",
        oversize="IGG-FRAME-6" if classic else "IGG-FRAME-1",
        partial="IGG-FRAME-4",
        unanswered=unanswered(revision, login),
        serving_of=serving_of(revision),
        unopened=unanswered(revision, "before"),  # a case not logged in (--login both)
    )


# ------------------------------------------------------------------ the part


class IggyFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of Iggy at one revision,
    with the ``fuzz`` option values (``login``; the credentials are the opener's)."""

    canary_topic = CANARY
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS  # length-prefixed

    def __init__(self, options: Mapping[str, Any] | None = None, revision: str = "classic") -> None:
        options = options or {}
        self.revision = revision
        self.classic = revision == "classic"
        self.login = str(options.get("login") or "both") if self.classic else "none"
        self.structure_mutators: Mapping[str, StructureMutator] = make_mutators(revision)
        self.blame = blame(revision, self.login)
        self.own_options: Mapping[str, Any] = {"login": "after"}
        """The fuzzer's own connections log in whatever ``--login`` says (classic)."""
        self.session_choice = self.login == "both"
        """``--login both``: each case draws whether its connection logs in."""
        self._written = b""
        self._read_from = 0

    def pool(self, seed: int) -> Pool:
        return pool(self.revision, seed)

    def owes_reply(self, payload: bytes) -> bool:
        return True  # every request is answered, an unknown code with status 3

    def _request(self, name: str, body: Mapping[str, Any]) -> bytes:
        return request(name, body, self.revision)

    def setup_payloads(self) -> Sequence[bytes]:
        first, second = IDS[self.revision]
        if self.classic:
            streams: list[dict[str, Any]] = [{"name": FUZZ}, {"name": CANARY}]
            topic: dict[str, Any] = {"compression": 1, "message_expiry": 0, "max_topic_size": 0}
            topic["replication_factor"] = 1
            topics = [{**topic, "name": n} for n in (FUZZ, SCRATCH)]
            canary = {**topic, "partitions_count": 1, "name": CANARY}
            group: dict[str, Any] = {"name": GROUP}
        else:
            streams = [
                {"stream_id": first, "name": FUZZ},
                {"stream_id": CANARY_DOC_ID, "name": CANARY},
            ]
            topics = [{"topic_id": i, "name": n} for i, n in ((first, FUZZ), (second, SCRATCH))]
            canary = {"topic_id": CANARY_DOC_ID, "partitions_count": 1, "name": CANARY}
            group = {"consumer_group_id": first}
        out = [self._request("create_stream", streams[0])]
        for t in topics:
            out.append(
                self._request(
                    "create_topic",
                    {**t, "stream": identifier(FUZZ), "partitions_count": PARTITIONS},
                )
            )
        named = {"stream": identifier(FUZZ), "topic": identifier(FUZZ)}
        out.append(self._request("create_consumer_group", {**named, **group}))
        out.append(self._request("create_stream", streams[1]))
        out.append(self._request("create_topic", {**canary, "stream": identifier(CANARY)}))
        return out  # fmt: skip

    # ---------------------------------------------------------------- the canary

    def _canary_head(self) -> dict[str, Any]:
        consumer: dict[str, Any] = {"kind": 1, "value": 0 if not self.classic else identifier(0)}
        return {
            "consumer": consumer,
            "stream": identifier(CANARY),
            "topic": identifier(CANARY),
            **_partition(self.revision, 0),
        }

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        self._written = values[-1] if values else b""
        messages: list[dict[str, Any]] = [{"id": 0, "payload": bytes(v)} for v in values]
        if self.classic:
            messages = [{**m, "origin_timestamp": ORIGIN_US} for m in messages]
        body = {
            "stream": identifier(CANARY),
            "topic": identifier(CANARY),
            "partitioning": {"kind": 2, "value": 0},
        }
        return self._request("send_messages", {**body, "messages": messages})

    def canary_readback(self) -> Sequence[bytes]:
        """The partition's last :data:`READBACK` messages: where the write just made is."""
        strategy = {"kind": 4, "value": 0}
        return [
            self._request(
                "poll_messages",
                {
                    **self._canary_head(),
                    "strategy": strategy,
                    "count": READBACK,
                    "auto_commit": False,
                },
            )
        ]

    def _polled(self, reply: bytes) -> list[dict[str, Any]]:
        try:
            status, payload = codec.split_reply(reply)
            got = (
                codec.decode_reply("poll_messages", payload, self.revision) if status == 0 else None
            )
        except IggyError:
            return []
        return list(got["messages"]) if got else []

    def canary_acked(self, reply: bytes) -> int | None:
        """The offset of the value just written, read from the readback's reply (the
        write's own reply is an empty OK); None if it is not there."""
        for m in reversed(self._polled(reply)):
            if m.get("payload") == self._written:
                return int(m["offset"])
        return None

    def canary_consume(self, offset: int) -> bytes:
        self._read_from = offset
        strategy = {"kind": 1, "value": offset}
        return self._request(
            "poll_messages",
            {**self._canary_head(), "strategy": strategy, "count": 1000, "auto_commit": False},
        )

    def canary_values(self, reply: bytes) -> list[bytes]:
        """The payloads from the offset asked, by offset (a missing one reads b"")."""
        by_offset = {int(m["offset"]): bytes(m["payload"]) for m in self._polled(reply)}
        later = [o for o in by_offset if o >= self._read_from]
        if not later:
            return []
        return [by_offset.get(o, b"") for o in range(self._read_from, max(later) + 1)]  # fmt: skip
