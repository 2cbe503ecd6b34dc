"""Kafka for the fuzzer: framing, the valid pool, structure-aware mutators, canary.

The pool (a function of the campaign seed) holds two kinds of valid requests:

* requests a client would send, built from the declared schemas with values drawn per
  seed: produce of real record batches (every codec, idempotent or not) to the fuzz
  topic ``fuzz`` (3 partitions, created before the campaign), fetches and offset lookups
  on it, metadata, group and offset requests of the group ``fuzz-group``, ApiVersions
  at every version;
* requests drawn from the Hypothesis strategies derived from the schemas
  (:mod:`conformance.wire.schema_strategies`), for every API at its lowest and highest
  version: odd but well-formed values in every field.

Structure-aware mutators (the schema's frame annotator tells where each field is):

* ``field`` -- one fixed-width field, or a length or count, set to a boundary value of
  its width (0, 1, -1, the extremes);
* ``varint-stretch`` -- one unsigned varint of a flexible request (an array's count, a
  tagged-field count) written again with redundant continuation bytes, within the five
  bytes allowed or past them;
* ``stale-crc`` -- a byte of a produced record batch changed after its CRC, which is
  left stale on purpose;
* ``record-field`` -- the record count or a byte of the records of a batch changed and
  the CRC computed again, so the damage reaches the record decoder;
* ``scapy-fuzz`` -- scapy's ``fuzz()`` on the request body's layer (derived from the
  schema), the header kept.

Silent by design (:meth:`KafkaFuzzing.owes_reply`): a Produce with acks 0 (Kafka sends
no response), JoinGroup and SyncGroup (they wait for other members by design) and a
Fetch that may wait longer than a deadline.  The canary produces to the reserved topic
``__conformance_canary`` with Produce v3 and reads it back with Fetch v4 (both in every
revision, response header v0).
"""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from crc32c import crc32c
from hypothesis import strategies as st
from scapy.packet import Packet, fuzz

from conformance.errors import ProtocolError
from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.draw import SCAPY_RANDOM, draw
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.plugin import FieldSpan
from conformance.protocols.kafka import codec
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.apis import APIS, REQUEST_HEADER, request_header_version
from conformance.protocols.kafka.fuzz_families import family_requests
from conformance.wire.schema_layers import nested_packets, packet
from conformance.wire.schema_strategies import values

FUZZ_TOPIC = "fuzz"
FUZZ_PARTITIONS = 3
FUZZ_GROUP = "fuzz-group"
CANARY_TOPIC = "__conformance_canary"
LONG_WAIT_MS = 500
"""A Fetch that may wait longer than this (max_wait_ms, with min_bytes > 0) owes no reply
within a fuzz deadline: it waits by design."""
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PRODUCE, FETCH, JOIN_GROUP, SYNC_GROUP = 0, 1, 11, 14
DELETE_TOPICS = 20
_I32 = struct.Struct(">i")


def _request(key: int, version: int, body: Mapping[str, Any], corr: int) -> bytes:
    return codec.encode_request(key, version, body, correlation_id=corr, client_id="fuzz")


def _batch(rng: random.Random, idempotent: bool) -> bytes:
    n = rng.randint(1, 5)
    return rec.encode_batch(
        rec.make_batch(
            [bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) for _ in range(n)],
            keys=[None if rng.random() < 0.3 else b"k%d" % i for i in range(n)],
            headers=[[("h", b"v")] if rng.random() < 0.5 else [] for _ in range(n)],
            compression=rng.choice(CODECS),
            base_timestamp=1_700_000_000_000,
            producer_id=rng.randint(1, 1 << 40) if idempotent else -1,
            producer_epoch=0 if idempotent else -1,
            base_sequence=0 if idempotent else -1,
        )
    )


def _client_requests(seed: int) -> list[tuple[int, int, dict[str, Any]]]:
    rng = random.Random(f"kafka-pool:{seed}")
    out: list[tuple[int, int, dict[str, Any]]] = []
    for version in (3, 7, 9, 11):
        for _ in range(4):
            part = {
                "index": rng.randrange(FUZZ_PARTITIONS),
                "records": _batch(rng, rng.random() < 0.3),
            }
            topic = {"name": FUZZ_TOPIC, "partition_data": [part]}
            out.append(
                (
                    PRODUCE,
                    version,
                    {"acks": rng.choice((-1, 1)), "timeout_ms": 1000, "topic_data": [topic]},
                )
            )
    for version in (0, 4, 11, 12):
        parts = [
            {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 16}
            for p in range(FUZZ_PARTITIONS)
        ]
        out.append(
            (
                FETCH,
                version,
                {
                    "replica_id": -1,
                    "max_wait_ms": rng.randint(0, 50),
                    "min_bytes": rng.choice((0, 1)),
                    "max_bytes": 1 << 20,
                    "topics": [{"topic": FUZZ_TOPIC, "partitions": parts}],
                },
            )
        )
    for version in (0, 1, 4, 9, 12):
        out.append(
            (3, version, {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": False})
        )
    for version in (1, 7):
        out.append(
            (
                2,
                version,
                {
                    "replica_id": -1,
                    "topics": [
                        {
                            "name": FUZZ_TOPIC,
                            "partitions": [
                                {"partition_index": 0, "timestamp": t} for t in (-1, -2)
                            ],
                        }
                    ],
                },
            )
        )
    for version in (2, 8):
        commit: dict[str, Any] = {"partition_index": 0, "committed_metadata": "m"}
        parts = [{**commit, "committed_offset": rng.randint(0, 9)}]
        out.append(
            (
                8,
                version,
                {
                    "group_id": FUZZ_GROUP,
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "topics": [{"name": FUZZ_TOPIC, "partitions": parts}],
                },
            )
        )
    out.append(
        (
            9,
            0,
            {"group_id": FUZZ_GROUP, "topics": [{"name": FUZZ_TOPIC, "partition_indexes": [0, 1]}]},
        )
    )
    out.append((9, 8, {"groups": [{"group_id": FUZZ_GROUP, "topics": None}]}))
    out.append((10, 0, {"key": FUZZ_GROUP}))
    out.append((10, 4, {"key_type": 0, "coordinator_keys": [FUZZ_GROUP]}))
    out.append((12, 0, {"group_id": FUZZ_GROUP, "generation_id": 1, "member_id": "nobody"}))
    out.append((13, 0, {"group_id": FUZZ_GROUP, "member_id": "nobody"}))
    out.append((15, 0, {"groups": [FUZZ_GROUP]}))
    out.append((16, 0, {}))
    out.append((22, 0, {"transactional_id": None, "transaction_timeout_ms": 1000}))
    protocols = [{"name": "range", "metadata": b"\x00\x01"}]
    out.append(
        (
            JOIN_GROUP,
            0,
            {
                "group_id": f"{FUZZ_GROUP}-{seed}",
                "session_timeout_ms": 6000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": protocols,
            },
        )
    )
    out.append(
        (
            19,
            1,
            {
                "topics": [
                    {"name": FUZZ_TOPIC, "num_partitions": FUZZ_PARTITIONS, "replication_factor": 1}
                ],
                "timeout_ms": 1000,
            },
        )
    )
    out += [
        (18, v, {"client_software_name": "fuzz", "client_software_version": "1"}) for v in range(5)
    ]
    return out  # fmt: skip


def _drawn_requests(seed: int) -> list[tuple[int, int, dict[str, Any]]]:
    records = st.sampled_from([b"", _batch(random.Random(seed), False)])
    out = []
    for key, api in APIS.items():
        if key == DELETE_TOPICS:  # never delete what the campaign relies on
            continue
        for version in sorted({api.low, api.high}):
            strategy = values(api.request, version, overrides={"records": records})
            out.append((key, version, draw(f"kafka-drawn:{seed}:{key}:{version}", strategy)))
    return out


@functools.lru_cache(maxsize=8)
def _pool(seed: int) -> Pool:
    requests = _client_requests(seed) + family_requests(seed) + _drawn_requests(seed)
    payloads = [_request(k, v, b, i + 1) for i, (k, v, b) in enumerate(requests)]
    return Pool(payloads, requests)


# ------------------------------------------------------------------ mutators


def _boundaries(width: int) -> list[int]:
    bits = width * 8
    return [0, 1, -1, (1 << (bits - 1)) - 1, -(1 << (bits - 1)), (1 << bits) - 1, 1 << (bits - 1)]


def _spans(payload: bytes) -> list[FieldSpan]:
    return [
        s
        for s in codec.annotate(payload, "request")
        if isinstance(s.value, int)
        and not isinstance(s.value, bool)
        and s.end - s.start in (1, 2, 4, 8)
    ]


def field(rng: random.Random, pool: Pool) -> bytes:
    payload = rng.choice(pool.payloads)
    spans = [s for s in _spans(payload) if s.start >= 8]  # keep key, version, correlation
    if not spans:
        return payload
    s = rng.choice(spans)
    width = s.end - s.start
    value = rng.choice(_boundaries(width))
    raw = value.to_bytes(width, "big", signed=value < 0)
    return payload[: s.start] + raw + payload[s.end :]


def varint_stretch(rng: random.Random, pool: Pool) -> bytes:
    flexible = [
        p
        for p, (k, v, _) in zip(pool.payloads, pool.requests, strict=True)
        if APIS[k].request.is_flexible(v)
    ]
    payload = rng.choice(flexible or pool.payloads)
    counts = [
        s
        for s in codec.annotate(payload, "request")
        if s.name.endswith(("count", "tagged fields"))
        and isinstance(s.value, int)
        and ".records." not in s.name  # inside a batch: fixed-width, and under its CRC
    ]
    if not counts:
        return payload
    s = rng.choice(counts)
    raw = payload[s.start : s.end]
    if not raw or raw[-1] & 0x80:
        return payload
    extra = rng.randint(1, 6)  # 5 bytes at most are allowed for a 32-bit varint
    groups = bytearray(raw)
    groups[-1] |= 0x80
    stretched = bytes(groups) + b"\x80" * (extra - 1) + b"\x00"
    return payload[: s.start] + stretched + payload[s.end :]


def _records_span(payload: bytes) -> FieldSpan | None:
    spans = [
        s
        for s in codec.annotate(payload, "request")
        if s.name.endswith(".records") and s.end - s.start >= 61
    ]
    return spans[0] if spans else None  # fmt: skip


def _produce_payloads(pool: Pool) -> list[bytes]:
    return [p for p, (k, _, _) in zip(pool.payloads, pool.requests, strict=True) if k == PRODUCE]


def stale_crc(rng: random.Random, pool: Pool) -> bytes:
    payload = rng.choice(_produce_payloads(pool) or pool.payloads)
    span = _records_span(payload)
    if span is None:
        return payload
    at = rng.randrange(span.start + 21, span.end)  # after the CRC: attributes .. records
    flipped = payload[at] ^ (1 << rng.randrange(8))
    return payload[:at] + bytes([flipped]) + payload[at + 1 :]


def record_field(rng: random.Random, pool: Pool) -> bytes:
    payload = rng.choice(_produce_payloads(pool) or pool.payloads)
    span = _records_span(payload)
    if span is None:
        return payload
    batch = bytearray(payload[span.start : span.end])
    if rng.random() < 0.5:
        batch[57:61] = _I32.pack(rng.choice([0, -1, 0x7FFFFFFF, -(1 << 31), 2, 1000]))
    else:
        at = rng.randrange(61, len(batch)) if len(batch) > 61 else 60
        batch[at] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return payload[: span.start] + bytes(batch) + payload[span.end :]


def scapy_fuzz(rng: random.Random, pool: Pool) -> bytes:
    i = rng.randrange(len(pool.payloads))
    key, version, body = pool.requests[i]
    payload = pool.payloads[i]
    _, end = REQUEST_HEADER.decode_at(payload, request_header_version(key, version))
    state = rng.getrandbits(64)
    with SCAPY_RANDOM:
        random.seed(state)
        layer = packet(APIS[key].request, version, body)
        _loosen(layer, rng)
        return payload[:end] + bytes(fuzz(layer))


def _loosen(pkt: Packet, rng: random.Random) -> None:
    """Forget a few set fields, so that scapy's ``fuzz()`` (which only draws the fields
    left at their defaults) randomises them; lengths and counts left unset are drawn too."""
    nested = nested_packets(pkt)
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(nested)
        names = sorted(target.fields)
        if names:
            target.fields.pop(rng.choice(names))


STRUCTURE_MUTATORS: dict[str, StructureMutator] = {
    "field": field,
    "varint-stretch": varint_stretch,
    "stale-crc": stale_crc,
    "record-field": record_field,
    "scapy-fuzz": scapy_fuzz,
}


# ---------------------------------------------------------------- the plug-in


BLAME = Blame(
    corruption="KAF-PRODUCE-1",  # acknowledged records are read back as produced
    serving="KAF-FRAME-4",  # the broker keeps serving other connections
    bad_reply="KAF-FRAME-1",
    oversize="KAF-FRAME-3",  # a size over the limit is refused from the prefix
    partial="KAF-FRAME-2",
    unanswered=lambda payload: "KAF-HDR-2",  # every request is answered (or closed)
)


class KafkaFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of Kafka."""

    canary_topic = CANARY_TOPIC
    structure_mutators: Mapping[str, StructureMutator] = STRUCTURE_MUTATORS
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS
    blame = BLAME

    def __init__(self) -> None:
        self._produced = 0
        self._consumed_from = 0

    def pool(self, seed: int) -> Pool:
        return _pool(seed)

    def owes_reply(self, payload: bytes) -> bool:
        """Every request but those silent or waiting by design (see the module doc)."""
        try:
            request = codec.decode_request(payload)
        except ProtocolError:
            return True  # an error or a close is owed
        key, body = request.api_key, request.body
        if key in (JOIN_GROUP, SYNC_GROUP):
            return False
        if key == PRODUCE:
            return int(body.get("acks", 1)) != 0
        if key == FETCH:
            waits = int(body.get("max_wait_ms", 0)) > LONG_WAIT_MS
            return not (waits and int(body.get("min_bytes", 0)) > 0)
        return True

    def setup_payloads(self) -> Sequence[bytes]:
        topics = [
            {"name": FUZZ_TOPIC, "num_partitions": FUZZ_PARTITIONS, "replication_factor": 1},
            {"name": CANARY_TOPIC, "num_partitions": 1, "replication_factor": 1},
        ]
        return [_request(19, 1, {"topics": topics, "timeout_ms": 1000}, 1)]

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        self._produced = len(values)
        batch = rec.encode_batch(rec.make_batch(list(values), base_timestamp=1))
        part = {"index": 0, "records": batch}
        topic = {"name": CANARY_TOPIC, "partition_data": [part]}
        body = {"acks": 1, "timeout_ms": 5000, "topic_data": [topic]}
        return _request(PRODUCE, 3, body, 0x0CA1)

    def canary_acked(self, reply: bytes) -> int | None:
        try:
            _, body = codec.decode_response(reply, PRODUCE, 3)
            part = body["responses"][0]["partition_responses"][0]
        except (ProtocolError, KeyError, IndexError):
            return None
        if part["error_code"] != 0 or self._produced < 1:
            return None
        return int(part["base_offset"]) + self._produced - 1

    def canary_consume(self, offset: int) -> bytes:
        self._consumed_from = offset
        parts = [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]
        # min_bytes 1 and a short wait, as a consumer asks: records already there come at
        # once. (Tansu answers max_wait 0 / min_bytes 0 with no partition at all, which
        # read as acknowledged records gone: a false CORRUPTION.)
        body = {
            "replica_id": -1,
            "max_wait_ms": 100,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [{"topic": CANARY_TOPIC, "partitions": parts}],
        }
        return _request(FETCH, 4, body, 0x0CA2)

    def canary_values(self, reply: bytes) -> list[bytes]:
        try:
            _, body = codec.decode_response(reply, FETCH, 4)
            data = body["responses"][0]["partitions"][0]["records"] or b""
            batches = rec.decode_batches(data)
        except (ProtocolError, KeyError, IndexError):
            return []
        return [
            r.value or b""
            for b in batches
            for r in b.records
            if b.base_offset + r.offset_delta >= self._consumed_from
        ]
