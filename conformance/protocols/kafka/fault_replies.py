"""Refusals on demand: the response Apache Kafka gives a request it refuses with an error.

``serve --validate`` answers a request with a named error when the fault plan says so
(:mod:`conformance.validate.faults`); the request is not served.  The body mirrors what
was asked, each entry carrying the error where the API puts errors: per partition in
Produce, Fetch, ListOffsets and OffsetCommit; per group from OffsetFetch v8 and per key
from FindCoordinator v4; at the top everywhere else.  Offsets, generations and node ids
that an error makes meaningless are -1, as Kafka's ``AbstractResponse`` error paths
(``getErrorResponse``) give them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.errors import code

Body = dict[str, Any]


def _produce(r: Request, c: int) -> Body:
    return {
        "responses": [
            {
                "name": t["name"],
                "partition_responses": [
                    {
                        "index": p["index"],
                        "error_code": c,
                        "base_offset": -1,
                        "log_append_time_ms": -1,
                        "log_start_offset": -1,
                    }
                    for p in t["partition_data"]
                ],
            }
            for t in r.body["topic_data"]
        ]
    }


def _fetch(r: Request, c: int) -> Body:
    return {
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": t.get("topic", ""),
                "topic_id": t.get("topic_id"),
                "partitions": [
                    {
                        "partition_index": p["partition"],
                        "error_code": c,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "aborted_transactions": [],
                        "records": b"",
                    }
                    for p in t["partitions"]
                ],
            }
            for t in r.body["topics"]
        ],
    }


def _list_offsets(r: Request, c: int) -> Body:
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": c, "offset": -1}
                    for p in t["partitions"]
                ],
            }
            for t in r.body["topics"]
        ]
    }


def _offset_commit(r: Request, c: int) -> Body:
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": c}
                    for p in t["partitions"]
                ],
            }
            for t in r.body["topics"]
        ]
    }


def _offset_fetch(r: Request, c: int) -> Body:
    if r.api_version >= 8:
        groups = r.body.get("groups") or []
        return {
            "groups": [{"group_id": g["group_id"], "error_code": c, "topics": []} for g in groups]
        }
    topics = r.body.get("topics") or []
    partitions = [
        {
            "name": t["name"],
            "partitions": [
                {"partition_index": i, "committed_offset": -1, "error_code": c}
                for i in t["partition_indexes"]
            ],
        }
        for t in topics
    ]
    return {"error_code": c, "topics": partitions}


def _find_coordinator(r: Request, c: int) -> Body:
    if r.api_version >= 4:
        keys = r.body.get("coordinator_keys") or []
        return {
            "coordinators": [
                {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": c} for k in keys
            ]
        }
    return {"error_code": c, "node_id": -1, "host": "", "port": -1}


def _join_group(r: Request, c: int) -> Body:
    return {
        "error_code": c,
        "generation_id": -1,
        "protocol_name": "",
        "leader": "",
        "member_id": r.body.get("member_id", ""),
        "members": [],
    }


def _top(r: Request, c: int) -> Body:
    return {"error_code": c}


def _sync_group(r: Request, c: int) -> Body:
    return {"error_code": c, "assignment": b""}


BUILDERS: dict[str, Callable[[Request, int], Body]] = {
    "Produce": _produce,
    "Fetch": _fetch,
    "ListOffsets": _list_offsets,
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
    "FindCoordinator": _find_coordinator,
    "JoinGroup": _join_group,
    "SyncGroup": _sync_group,
    "Heartbeat": _top,
    "LeaveGroup": _top,
}
"""The APIs a fault plan may refuse, by name."""


def error_body(request: Request, error: str) -> Body | None:
    """The body refusing ``request`` with ``error`` (a Kafka error name), or None for an
    API a fault plan cannot refuse."""
    build = BUILDERS.get(request.api.name)
    return None if build is None else build(request, code(error))
