"""What the broker holds, read back over our own client (tests/support/kafka_client.py), to
check KafkaJS's lines against: the log of each partition (every batch, control batches
included), what a READ_COMMITTED fetch says about it, committed offsets, and the versions
the broker advertises. Only non-flexible versions are used, so the same calls work in both
revisions (doc answers with header v0 everywhere)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from conformance.protocols.kafka import records as rec
from tests.support.kafka_client import KafkaConn

API_VERSIONS, FETCH, OFFSET_FETCH, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 1, 9, 17, 36
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
MAX_FETCHES = 200
"""Bound on the fetches that read one partition (each returns at least one batch)."""


@dataclass
class Partition:
    """One partition as a Fetch v4 read it from offset 0 to its end."""

    batches: list[rec.RecordBatch] = field(default_factory=list)
    high_watermark: int = -1
    last_stable_offset: int = -1
    aborted: list[dict[str, int]] = field(default_factory=list)

    def records(self) -> dict[int, tuple[rec.RecordBatch, rec.Record]]:
        """Data records by offset, with their batch (control batches left out)."""
        return {
            b.base_offset + r.offset_delta: (b, r)
            for b in self.batches
            if not b.is_control
            for r in b.records
        }

    def markers(self) -> list[tuple[int, int, str]]:
        """(offset, producer id, COMMIT or ABORT) of each control record."""
        out = []
        for b in self.batches:
            if b.is_control:
                for r in b.records:
                    kind = struct.unpack(">hh", (r.key or b"")[:4])[1] if r.key else -1
                    name = {0: "ABORT", 1: "COMMIT"}.get(kind, f"type {kind}")
                    out.append((b.base_offset + r.offset_delta, b.producer_id, name))
        return out


Auth = tuple[str, str] | None
"""(user, password) to authenticate with SASL PLAIN first, for a broker that requires it."""


def connect(address: tuple[str, int], auth: Auth = None) -> KafkaConn:
    conn = KafkaConn(address)
    if auth is not None:
        shake = conn.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert shake["error_code"] == 0, f"SaslHandshake PLAIN: {shake}"
        token = b"\0" + auth[0].encode() + b"\0" + auth[1].encode()
        done = conn.call(SASL_AUTHENTICATE, 0, {"auth_bytes": token})
        assert done["error_code"] == 0, f"SaslAuthenticate PLAIN: {done}"
    return conn


def advertised(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) version, from an ApiVersions v0 answer."""
    conn = KafkaConn(address)
    try:
        body = conn.call(API_VERSIONS, 0, {})
    finally:
        conn.close()
    assert body["error_code"] == 0, f"ApiVersions v0 answered error {body['error_code']}"
    return {a["api_key"]: (a["min_version"], a["max_version"]) for a in body["api_keys"]}


def _fetch(conn: KafkaConn, topic: str, partition: int, offset: int, isolation: int) -> Any:
    parts = [{"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "topics": [{"topic": topic, "partitions": parts}],
    }
    (answer,) = conn.call(FETCH, 4, body)["responses"]
    (part,) = answer["partitions"]
    assert part["error_code"] == 0, f"Fetch {topic}/{partition}@{offset}: {part['error_code']}"
    return part


def log(
    address: tuple[str, int],
    topic: str,
    partitions: int,
    isolation: int = READ_UNCOMMITTED,
    auth: Auth = None,
) -> dict[int, Partition]:
    """Every partition of ``topic`` read from offset 0 to where the fetch stops (the high
    watermark, or with READ_COMMITTED the last stable offset)."""
    conn = connect(address, auth)
    out: dict[int, Partition] = {}
    try:
        for p in range(partitions):
            got = out[p] = Partition()
            offset = 0
            for _ in range(MAX_FETCHES):
                part = _fetch(conn, topic, p, offset, isolation)
                got.high_watermark = part["high_watermark"]
                got.last_stable_offset = part["last_stable_offset"]
                for aborted in part["aborted_transactions"] or []:
                    if aborted not in got.aborted:
                        got.aborted.append(dict(aborted))
                batches = rec.decode_batches(part["records"] or b"")
                if not batches:
                    break
                got.batches += batches
                offset = batches[-1].next_offset
    finally:
        conn.close()
    return out


def committed(
    address: tuple[str, int], group: str, topic: str, partitions: int, auth: Auth = None
) -> list[int]:
    """The offsets ``group`` committed for each partition (-1: none), by OffsetFetch v1."""
    conn = connect(address, auth)
    try:
        body = {
            "group_id": group,
            "topics": [{"name": topic, "partition_indexes": list(range(partitions))}],
        }
        (answer,) = conn.call(OFFSET_FETCH, 1, body)["topics"]
    finally:
        conn.close()
    by_index = {p["partition_index"]: p for p in answer["partitions"]}
    for p in by_index.values():
        assert p["error_code"] == 0, f"OffsetFetch {group} {topic}: error {p['error_code']}"
    return [by_index[i]["committed_offset"] for i in range(partitions)]
