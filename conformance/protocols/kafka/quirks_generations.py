"""Spec quirks of the classic group requests that name a generation or a member (Heartbeat,
SyncGroup, OffsetCommit), of JoinGroup before v4, and of a Fetch that leaves out a partition
it was asked for (see :mod:`.quirks` for what a quirk may do).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

FETCH, OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 1, 8, 11, 12, 14
ILLEGAL_GENERATION, MEMBER_ID_REQUIRED = 22, 79


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec.spec(
            "heartbeat-stale-generation-ok",
            "groups",
            "KAF-GROUP-5",
            "answers a heartbeat with a generation other than the group's with error 0",
        ),
        QuirkSpec.spec(
            "sync-stale-generation-accepted",
            "groups",
            "KAF-GROUP-14",
            "answers a SyncGroup with a generation other than the group's with error 0 and an "
            "empty assignment",
        ),
        QuirkSpec.spec(
            "commit-stale-generation-accepted",
            "groups",
            "KAF-GROUP-15",
            "answers an OffsetCommit refused ILLEGAL_GENERATION with error 0 for every "
            "partition (nothing is stored)",
        ),
        QuirkSpec.spec(
            "member-id-required-before-v4",
            "groups",
            "KAF-GROUP-16",
            "answers a JoinGroup v0-3 with an empty member id MEMBER_ID_REQUIRED (79), as if "
            "it were v4 or later",
        ),
        QuirkSpec.spec(
            "fetch-first-partition-only",
            "fetch",
            "KAF-FETCH-8",
            "answers a Fetch v0-6 (no fetch sessions) with the first partition asked of each "
            "topic only, leaving the others out",
        ),
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    body = request.body
    early = request.api_key == JOIN_GROUP and request.api_version < 4
    if early and not body.get("member_id") and "member-id-required-before-v4" in quirks:
        return {
            "throttle_time_ms": 0,
            "error_code": MEMBER_ID_REQUIRED,
            "generation_id": -1,
            "protocol_name": "",
            "leader": "",
            "member_id": f"{request.client_id or 'member'}-{uuid.uuid4()}",
            "members": [],
        }
    return request


def _partitions(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for t in response.get("topics", []):
        yield from t.get("partitions", [])


def _first_partitions(request: Request, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fetch response topics cut to their first partition, for a Fetch before v7 (from v7
    a sessionless fetch is also KAF-FSESS-1's, SPEC-fetch-sessions.md: left alone)."""
    if request.api_version >= 7:
        return topics
    return [{**t, "partitions": t.get("partitions", [])[:1]} for t in topics]


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    key = request.api_key
    stale = response.get("error_code") == ILLEGAL_GENERATION
    if key == HEARTBEAT and stale and "heartbeat-stale-generation-ok" in quirks:
        response["error_code"] = 0
    if key == SYNC_GROUP and stale and "sync-stale-generation-accepted" in quirks:
        response["error_code"], response["assignment"] = 0, b""
    if key == OFFSET_COMMIT and "commit-stale-generation-accepted" in quirks:
        for p in _partitions(response):
            if p.get("error_code") == ILLEGAL_GENERATION:
                p["error_code"] = 0
    if key == FETCH and "fetch-first-partition-only" in quirks:
        response["responses"] = _first_partitions(request, response.get("responses", []))
    return response
