"""Iggy's pool of valid requests for the fuzzer, drawn from its Hypothesis strategies.

Every request is drawn from :func:`.strategies.request_values` (SEND_MESSAGES from
:func:`.strategies.send_messages`) for its command and revision, with
:func:`conformance.fuzz.draw.draw` seeded from the campaign seed, the command and the
draw's number: the pool is a pure function of (revision, seed).  Most draws
(:data:`PINNED`) are then aimed at what :meth:`.fuzzing.IggyFuzzing.setup_payloads`
creates -- stream ``fuzz`` with topics ``fuzz`` (3 partitions) and ``fuzz-scratch`` and
group ``fuzz-group``, named by string or by number (classic: the ids a fresh broker
assigns, 0 and 1; doc: the ids given, 1 and 2) -- so that they reach the engine and not
only the lookup; the rest keep the drawn identifiers (unknown streams, odd names).
Pinned as well, so that the pool stays valid and cheap: kinds and flags (consumer 1/2,
partition flag 0/1, polling strategy 1..5 in turn, partitioning kind 1/2/3 in turn),
partition ids (below 3), counts (partitions 0..3, poll 1..100), compression and
replication factor.  Classic SEND_MESSAGES also gets a header block drawn per kind, so
that the pool carries user headers of every kind (FACTS.md section 4).

Guards: the commands that destroy (DELETE_STREAM, DELETE_TOPIC, DELETE_PARTITIONS) name
their stream by string only, or by an id no stream has (:data:`ABSENT_ID`): a bit flip of
a small stream id could otherwise reach the canary's; and they, DELETE_CONSUMER_GROUP
too, never name what the set-up made (only ``fuzz-made``, an absent id, or a drawn name).
No pool request names the canary.

Hand-built, where no strategy can reach: LOGIN_USER with the default credentials
(``iggy``/``iggy``) and with a wrong password -- a drawn one never logs in.
"""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from conformance.fuzz.case import Pool
from conformance.fuzz.draw import draw
from conformance.protocols.iggy import codec, strategies
from conformance.protocols.iggy.messages import CODES, identifier

FUZZ, SCRATCH, GROUP, MADE = "fuzz", "fuzz-scratch", "fuzz-group", "fuzz-made"
PROTECTED = frozenset({FUZZ, SCRATCH, GROUP})
"""What the set-up made: no destroying request names it."""
PARTITIONS = 3
CANARY = "__conformance_canary"
CANARY_DOC_ID = 0x7FFF_C4A1
"""Doc: the canary stream's and topic's id (the client gives it), far from the pool's."""
ABSENT_ID = 4_000_000_000
"""A numeric id no stream, topic or group has (the destructive commands' numeric target)."""
IDS = {"classic": (0, 1), "doc": (1, 2)}
"""Numeric ids of stream/topic ``fuzz`` and topic ``fuzz-scratch`` (group: the first)."""
SDK_VERSION = "0.10.0"
U32 = struct.Struct("<I")
PINNED = 0.875
"""The share of draws whose identifiers are pointed at the fuzz set-up."""
DRAWS = {"send_messages": 30, "poll_messages": 30}
"""Draws per command (others: :data:`DRAWS_DEFAULT`; the offset commands twice that)."""
DRAWS_DEFAULT = 4
OFFSETS = ("get_consumer_offset", "store_consumer_offset", "delete_consumer_offset")
DESTROYING = ("delete_stream", "delete_topic", "delete_partitions", "delete_consumer_group")
HEADER_KIND_CODES = tuple(range(1, 16))


def request(name: str, body: Mapping[str, Any], revision: str) -> bytes:
    """``code + payload`` of a request (what the generic code frames)."""
    return U32.pack(CODES[name]) + codec.encode_request(name, body, revision)


def _draws(name: str) -> int:
    return DRAWS.get(name, 2 * DRAWS_DEFAULT if name in OFFSETS else DRAWS_DEFAULT)


class _Aim:
    """The fuzz set-up's streams, topics and groups, as one draw names them."""

    def __init__(self, revision: str, rng: random.Random) -> None:
        self.doc = revision == "doc"
        self.first, self.second = IDS[revision]
        self.rng = rng

    def pick(self, number: int, name: str) -> dict[str, Any]:
        return identifier(self.rng.choice((number, name)))

    def stream(self) -> dict[str, Any]:
        return self.pick(self.first, FUZZ)

    def topic(self) -> dict[str, Any]:
        if self.rng.random() < 0.25:
            return self.pick(self.second, SCRATCH)
        return self.pick(self.first, FUZZ)

    def group(self) -> Any:
        return self.first if self.doc else self.pick(self.first, GROUP)

    def gone(self, drawn: Any) -> Any:
        """What a destroying request names: ``fuzz-made``, an absent id, or a drawn name
        (never a number an existing stream or topic may have, never the set-up's)."""
        if isinstance(drawn, dict):  # an Identifier
            value = drawn.get("value")
            ok = drawn.get("kind") == 2 and value not in PROTECTED and value != CANARY
            return self.rng.choice([identifier(MADE), identifier(ABSENT_ID), *([drawn] * ok)])
        made = self.first + 1  # doc: the group id a pinned CREATE_CONSUMER_GROUP gives
        ok = drawn != self.first and drawn != CANARY_DOC_ID
        return self.rng.choice([made, ABSENT_ID, *([drawn] * ok)])


def _aim(name: str, body: dict[str, Any], aim: _Aim, pinned: bool, n: int) -> dict[str, Any]:
    """``body`` (drawn) aimed at the fuzz set-up (see the module doc)."""
    rng, out = aim.rng, dict(body)
    destroys = name in DESTROYING
    if "stream" in out:
        if name == "delete_stream":
            out["stream"] = aim.gone(out["stream"])
        elif destroys:  # the stream by string only
            out["stream"] = (
                identifier(FUZZ)
                if pinned or out["stream"]["kind"] == 1
                else aim.gone(out["stream"])
            )
        elif pinned:
            out["stream"] = aim.stream()
    if "topic" in out:
        if name == "delete_topic":
            out["topic"] = aim.gone(out["topic"])
        elif name in ("create_partitions", "delete_partitions"):
            out["topic"] = aim.pick(aim.second, SCRATCH)
        elif pinned:
            out["topic"] = aim.topic()
    if "group" in out:
        out["group"] = (
            aim.gone(out["group"]) if destroys else aim.group() if pinned else out["group"]
        )
    if "consumer_group_id" in out and name != "create_consumer_group":
        drawn = out["consumer_group_id"]
        out["consumer_group_id"] = aim.gone(drawn) if destroys else aim.group() if pinned else drawn
    if pinned and name == "create_consumer_group":
        out.update({"consumer_group_id": aim.first + 1} if aim.doc else {"name": MADE})
    if pinned and name in ("create_stream", "create_topic"):
        out["name"] = MADE
        for key in ("stream_id", "topic_id"):
            if key in out:
                out[key] = aim.second + 1
    if "consumer" in out:
        kind = 1 + n % 2
        value = out["consumer"]["value"] if kind == 1 else aim.group()
        if kind == 1 and not aim.doc and not isinstance(value, dict):
            value = identifier(int(value) & 0xFFFFFFFF)
        if kind == 1 and aim.doc and isinstance(value, dict):
            value = rng.randrange(8)
        out["consumer"] = {"kind": kind, "value": value}
    if "partition_flag" in out:
        out["partition_flag"] = rng.randrange(2)
    if "partition_id" in out and (pinned or out["partition_id"] >= 2**31):
        out["partition_id"] = rng.randrange(PARTITIONS)
    if "strategy" in out:
        out["strategy"] = {"kind": 1 + n % 5, "value": out["strategy"]["value"]}
    if "count" in out:
        out["count"] = 1 + out["count"] % 100
    if "partitions_count" in out:
        out["partitions_count"] %= 4 if name == "create_topic" else 3
    if "offset" in out:
        out["offset"] %= 10
    if "compression" in out:
        out["compression"] = 1 + out["compression"] % 2
    if "replication_factor" in out:
        out["replication_factor"] = 1
    return out


def _partitioning(seed: str, drawn: dict[str, Any], n: int, pinned: bool) -> dict[str, Any]:
    """Partitioning kind 1, 2 and 3 in turn (the drawn value where it is of that kind)."""
    kind = 1 + n % 3
    if kind == 1:
        return {"kind": 1, "value": {}}
    if kind == 2:
        value = drawn["value"] if drawn["kind"] == 2 and not pinned else n % PARTITIONS
        return {"kind": 2, "value": value}
    key = drawn["value"] if drawn["kind"] == 3 else draw(seed, st.binary(min_size=1, max_size=255))
    return {"kind": 3, "value": key}


def _headers(seed: str, n: int) -> bytes:
    """A header block with two kinds, drawn per kind (every kind over the pool's sends)."""
    entries = []
    for j, kind in enumerate((HEADER_KIND_CODES[n % 15], HEADER_KIND_CODES[(n + 7) % 15])):
        key = b"k%d" % j
        value = draw(f"{seed}:h{j}", strategies.header_value(kind))
        entries.append({"key_kind": 2, "key": key, "value_kind": kind, "value": value})
    return strategies.header_block(entries)


def _drawn(revision: str, seed: int, name: str, n: int) -> dict[str, Any]:
    key = f"iggy-pool:{revision}:{seed}:{name}:{n}"
    rng = random.Random(key)
    pinned = rng.random() < PINNED
    if name == "send_messages":
        body = dict(draw(key, strategies.send_messages(revision)))
        body["partitioning"] = _partitioning(f"{key}:key", body["partitioning"], n, pinned)
        if revision == "classic" and body["messages"] and n % 2 == 0:
            messages = [dict(m) for m in body["messages"]]
            messages[0]["headers"] = _headers(key, n // 2)
            body["messages"] = messages
    else:
        body = dict(draw(key, strategies.request_values(name, revision)))
    return _aim(name, body, _Aim(revision, rng), pinned, n)


def _hand_built(revision: str) -> list[tuple[str, dict[str, Any]]]:
    if revision == "doc":
        return []
    return [
        ("login_user", {"username": "iggy", "password": p, "version": SDK_VERSION, "context": ""})
        for p in ("iggy", "wrong")
    ]


def _names_canary(body: Mapping[str, Any]) -> bool:
    return CANARY in repr(body) or CANARY_DOC_ID in (body.get("stream_id"), body.get("topic_id"))


@functools.lru_cache(maxsize=8)
def pool(revision: str, seed: int) -> Pool:
    """The pool of ``revision`` for the campaign ``seed`` (see the module doc)."""
    table = codec.tables(revision)[0]
    bodies = [
        (name, _drawn(revision, seed, name, n)) for name in table for n in range(_draws(name))
    ]
    bodies = [(n, b) for n, b in [*bodies, *_hand_built(revision)] if not _names_canary(b)]
    return Pool([request(n, b, revision) for n, b in bodies], bodies)
