"""Deliberate misbehaviour of the Kafka reference broker, switched on by ``--quirk NAME``.

``spec`` quirks break named MUST requirements of SPEC.md and nothing else: the project's
tests run the suite (revision ``apache``) against each and check that exactly those
requirements fail.  ``fault`` quirks crash, hang or stop, for the fuzzer to find; they
stay out of that exactness test.

The handlers know nothing of quirks: a spec quirk is a rewrite of the request before it
is served (:func:`before`) or of the response after it (:func:`after`), both applied by
the session only when a quirk is on, so every rule a quirk bends is named in this one
module.  Fault quirks are checked by the session at the same point (:func:`fault`).
The later API families keep theirs in ``quirks_<family>.py`` (the same ``QUIRKS``,
``before`` and ``after``), which this module chains: :data:`QUIRKS` lists them all.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from crc32c import crc32c

from conformance.errors import ProtocolError
from conformance.plugin import QuirkSpec
from conformance.protocols.kafka import (
    quirks_cluster_admin,
    quirks_consumer_groups,
    quirks_fetch,
    quirks_fetch_sessions,
    quirks_generations,
    quirks_offsets,
    quirks_sasl,
    quirks_transactions,
)
from conformance.wire.varint import read_varint

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

CRASH_EXIT_CODE = 70
PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FETCH, HEARTBEAT, LEAVE_GROUP, DESCRIBE_GROUPS = (
    0, 1, 2, 9, 12, 13, 15,
)  # fmt: skip
CREATE_TOPICS = 19
UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_MEMBER_ID, TOPIC_ALREADY_EXISTS = 3, 25, 36
UNKNOWN_TOPIC_ID = 100


def _spec(name: str, area: str, breaks: tuple[str, ...], text: str) -> QuirkSpec:
    return QuirkSpec(name, "spec", area, breaks, text)


def _fault(name: str, area: str, text: str) -> QuirkSpec:
    return QuirkSpec(name, "fault", area, (), text)


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        _spec(
            "crc-not-checked",
            "records",
            ("KAF-REC-2",),
            "stores a produced batch whatever its CRC says",
        ),
        _spec(
            "acks0-answered",
            "produce",
            ("KAF-PRODUCE-2",),
            "answers a Produce with acks 0 as if it had acks 1",
        ),
        _spec(
            "high-watermark-off-by-one",
            "fetch",
            ("KAF-FETCH-3",),
            "reports one more than the high watermark in every Fetch response",
        ),
        _spec(
            "fetch-ignores-max-wait",
            "fetch",
            ("KAF-FETCH-1", "KAF-FETCH-4"),
            "answers a Fetch at once with what it has, never waiting for max_wait_ms",
        ),
        _spec(
            "latest-offset-off-by-one",
            "offsets",
            ("KAF-OFFSET-2",),
            "answers ListOffsets -1 (latest) with the offset of the last record, not the one "
            "after it",
        ),
        _spec(
            "commit-metadata-dropped",
            "offsets",
            ("KAF-OFFSET-3",),
            "OffsetFetch answers an empty metadata string whatever was committed",
        ),
        _spec(
            "unknown-member-heartbeat-ok",
            "groups",
            ("KAF-GROUP-5", "KAF-ERR-1"),
            "answers a heartbeat from an unknown member with error 0",
        ),
        _spec(
            "leave-without-rebalance",
            "groups",
            ("KAF-GROUP-6", "KAF-GROUP-13", "KAF-GROUP-18"),
            "answers every LeaveGroup with error 0 (an unknown or fenced member's too) but "
            "keeps the member, so nothing rebalances",
        ),
        _spec(
            "create-existing-topic-ok",
            "admin",
            ("KAF-ADMIN-1",),
            "answers CreateTopics for an existing name with error 0",
        ),
        _spec(
            "close-on-malformed-batch",
            "records",
            ("KAF-REC-3", "KAF-REC-6"),
            "closes the connection, answering nothing, on a Produce whose records claim more "
            "bytes than were sent or are a magic 0 or 1 message set (as Tansu 0.6 does)",
        ),
        _spec(
            "fetch-unknown-topic-unanswered",
            "fetch",
            ("KAF-FETCH-7",),
            "answers a Fetch of a topic or partition it does not have with no entry for it "
            "(no partition, no error code), as Tansu 0.6 does",
        ),
        _spec(
            "timestamp-offset-off-by-one",
            "offsets",
            ("KAF-OFFSET-4",),
            "answers ListOffsets with a timestamp T >= 0 with the offset after the first "
            "record at or after T",
        ),
        _spec(
            "describe-groups-not-stable",
            "groups",
            ("KAF-GROUP-12",),
            "DescribeGroups reports a Stable group as PreparingRebalance",
        ),
        _fault(
            "panic-on-negative-partition",
            "produce",
            "CRASH: exits when a Produce or Fetch names a negative partition index, as pgcdc "
            "panics on one",
        ),
        _fault(
            "crash-on-negative-record-length",
            "records",
            "CRASH: exits when an uncompressed produced record has a key or value length "
            "below -1 (deep in a record, behind a valid CRC), instead of CORRUPT_MESSAGE",
        ),
        _fault(
            "stop-after-unknown-api-key",
            "versions",
            "STOPPED: after a request with an API key it does not know, the broker answers "
            "nothing on any connection (its port still accepts), as a server whose dispatch "
            "loop died",
        ),
    )
}

_FAMILIES = (
    quirks_transactions,
    quirks_sasl,
    quirks_cluster_admin,
    quirks_consumer_groups,
    quirks_generations,
    quirks_fetch_sessions,
    quirks_fetch,
    quirks_offsets,
)
for _family in _FAMILIES:
    for _name, _quirk in _family.QUIRKS.items():
        if _name in QUIRKS:
            raise ValueError(f"quirk {_name!r} of {_family.__name__} is already defined")
        QUIRKS[_name] = _quirk


# ------------------------------------------------------------------ spec quirks


def _with_body(request: Request, body: dict[str, Any]) -> Request:
    return dataclasses.replace(request, body=body)


def _produce_records(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for t in body.get("topic_data", []):
        yield from t.get("partition_data", [])


def _fix_crcs(data: bytes) -> bytes:
    """Every magic-2 batch in ``data`` with its CRC computed again."""
    out, at = bytearray(data), 0
    while at + 61 <= len(out):
        length = int.from_bytes(out[at + 8 : at + 12], "big", signed=True)
        end = at + 12 + length
        if length < 49 or end > len(out) or out[at + 16] != 2:
            break
        out[at + 17 : at + 21] = crc32c(bytes(out[at + 21 : end])).to_bytes(4, "big")
        at = end
    return bytes(out)


class CloseConnection(Exception):
    """Raised by :func:`before` for a request a quirk answers by closing the connection
    (the broker's session closes it, without a response)."""


def _malformed_batch(data: bytes) -> bool:
    """Records whose first entry claims more bytes than ``data`` holds, or has magic 0 or 1."""
    if len(data) < 17:
        return False
    length = int.from_bytes(data[8:12], "big", signed=True)
    return data[16] in (0, 1) or 12 + length > len(data)


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as a quirk makes the broker see it, or the response it answers instead
    (:class:`CloseConnection`: no response, the connection is closed)."""
    for family in _FAMILIES:
        seen = family.before(quirks, request)
        if isinstance(seen, dict):
            return seen
        request = seen
    return _before(quirks, request)


def _before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    key, body = request.api_key, request.body
    closes = key == PRODUCE and "close-on-malformed-batch" in quirks
    if closes and any(_malformed_batch(p.get("records") or b"") for p in _produce_records(body)):
        raise CloseConnection("close-on-malformed-batch")
    if key == PRODUCE and "crc-not-checked" in quirks:
        fixed = {**body, "topic_data": [dict(t) for t in body.get("topic_data", [])]}
        for t in fixed["topic_data"]:
            t["partition_data"] = [
                {**p, "records": _fix_crcs(p["records"]) if p.get("records") else p.get("records")}
                for p in t.get("partition_data", [])
            ]
        request = _with_body(request, fixed)
    if key == PRODUCE and "acks0-answered" in quirks and int(body.get("acks", 1)) == 0:
        request = _with_body(request, {**request.body, "acks": 1})
    if key == FETCH and "fetch-ignores-max-wait" in quirks:
        request = _with_body(request, {**body, "max_wait_ms": 0})
    if key == LEAVE_GROUP and "leave-without-rebalance" in quirks:
        members = [{**m, "error_code": 0} for m in body.get("members") or []]
        return {"throttle_time_ms": 0, "error_code": 0, "members": members}
    return request


def _each(value: Any, name: str) -> Iterator[dict[str, Any]]:
    """Every mapping under ``value`` (lists and nested mappings) that has key ``name``."""
    if isinstance(value, dict):
        if name in value:
            yield value
        for inner in value.values():
            yield from _each(inner, name)
    elif isinstance(value, list):
        for inner in value:
            yield from _each(inner, name)


def _latest_asked(request: Request) -> set[tuple[str, int]]:
    return {
        (t.get("name", ""), int(p.get("partition_index", 0)))
        for t in request.body.get("topics", [])
        for p in t.get("partitions", [])
        if int(p.get("timestamp", 0)) == -1
    }


def _timestamps_asked(request: Request) -> set[tuple[str, int]]:
    return {
        (t.get("name", ""), int(p.get("partition_index", 0)))
        for t in request.body.get("topics", [])
        for p in t.get("partitions", [])
        if int(p.get("timestamp", -1)) >= 0
    }


def _without_unknown(topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fetch response topics without the partitions answered unknown (nor the topics
    left with none)."""
    unknown = (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID)
    kept = []
    for t in topics:
        parts = [p for p in t.get("partitions", []) if p.get("error_code") not in unknown]
        if parts:
            kept.append({**t, "partitions": parts})
    return kept


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as a quirk changes it (in place; returned for convenience)."""
    for family in _FAMILIES:
        response = family.after(quirks, request, response)
    return _after(quirks, request, response)


def _after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    key = request.api_key
    if key == FETCH and "fetch-unknown-topic-unanswered" in quirks:
        response["responses"] = _without_unknown(response.get("responses", []))
    if key == LIST_OFFSETS and "timestamp-offset-off-by-one" in quirks:
        asked = _timestamps_asked(request)
        for t in response.get("topics", []):
            for p in t.get("partitions", []):
                if (t.get("name"), p.get("partition_index")) in asked and p.get("offset", -1) >= 0:
                    p["offset"] += 1
    if key == DESCRIBE_GROUPS and "describe-groups-not-stable" in quirks:
        for g in response.get("groups", []):
            if g.get("group_state") == "Stable":
                g["group_state"] = "PreparingRebalance"
    if key == FETCH and "high-watermark-off-by-one" in quirks:
        for p in _each(response, "high_watermark"):
            if p["high_watermark"] >= 0:
                p["high_watermark"] += 1
    if key == LIST_OFFSETS and "latest-offset-off-by-one" in quirks:
        latest = _latest_asked(request)
        for t in response.get("topics", []):
            for p in t.get("partitions", []):
                if (t.get("name"), p.get("partition_index")) in latest and p.get("offset", 0) > 0:
                    p["offset"] -= 1
    if key == OFFSET_FETCH and "commit-metadata-dropped" in quirks:
        for p in _each(response, "committed_offset"):
            p["metadata"] = ""
    heartbeat_quirk = key == HEARTBEAT and "unknown-member-heartbeat-ok" in quirks
    if heartbeat_quirk and response.get("error_code") == UNKNOWN_MEMBER_ID:
        response["error_code"] = 0
    if key == CREATE_TOPICS and "create-existing-topic-ok" in quirks:
        for t in response.get("topics", []):
            if t.get("error_code") == TOPIC_ALREADY_EXISTS:
                t["error_code"], t["error_message"] = 0, None
    return response


# ------------------------------------------------------------------ fault quirks


def negative_partition(api_key: int, body: dict[str, Any]) -> int | None:
    """The first negative partition index a Produce or Fetch body names, else None."""
    if api_key == PRODUCE:
        topics, parts, key = body.get("topic_data", []), "partition_data", "index"
    elif api_key == FETCH:
        topics, parts, key = body.get("topics", []), "partitions", "partition"
    else:
        return None
    found = [int(p.get(key, 0)) for t in topics for p in t.get(parts, [])]
    return next((p for p in found if p < 0), None)


def negative_record_length(data: bytes) -> int | None:
    """The first key or value length below -1 in the uncompressed records of the first
    batch in ``data``, else None (what a broker trusting its records would crash on).  The
    walk stops (None) where the bytes end or a varint is malformed (over 10 bytes or 64
    bits); every varint is read as 64 bits wide, so an overwide length still counts."""
    if len(data) < 61 or data[16] != 2 or data[22] & 0x07:
        return None
    at, count = 61, int.from_bytes(data[57:61], "big", signed=True)
    try:
        for _ in range(max(0, min(count, 10_000))):
            length, at = read_varint(data, at)
            end = at + length
            at += 1  # attributes
            _, at = read_varint(data, at)  # timestamp delta
            _, at = read_varint(data, at)  # offset delta
            for _part in ("key", "value"):
                n, at = read_varint(data, at)
                if n < -1:
                    return n
                at += max(n, 0)
            if length < 0:
                return None
            at = end
    except ProtocolError:  # the bytes end (Truncated), or a varint is malformed
        return None
    return None


def fault(quirks: tuple[str, ...], request: Request) -> None:
    """Act out the crash quirks this request triggers (the process exits)."""
    key, body = request.api_key, request.body
    if "panic-on-negative-partition" in quirks:
        bad = negative_partition(key, body)
        if bad is not None:
            _exit(f"panic-on-negative-partition: partition index {bad} in API key {key}")
    if key == PRODUCE and "crash-on-negative-record-length" in quirks:
        for p in _produce_records(body):
            n = negative_record_length(p.get("records") or b"")
            if n is not None:
                _exit(f"crash-on-negative-record-length: a record length of {n}")


def _exit(why: str) -> None:
    print(f"fatal (quirk {why})", file=sys.stderr, flush=True)
    os._exit(CRASH_EXIT_CODE)
