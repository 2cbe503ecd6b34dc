"""Spec quirks of the classic group requests that name a generation or a member (Heartbeat,
SyncGroup, OffsetCommit), of JoinGroup before v4, of static members (KIP-345), and of a
Fetch that leaves out a partition it was asked for (see :mod:`.quirks` for what a quirk may
do); and the fault quirk that loses the classic groups at a restart.

``static-member-not-replaced`` needs to know which instance ids were answered before: it
remembers, per process, each (group, group instance id) it answered a JoinGroup for (at
most :data:`REMEMBERED` of them, the oldest forgotten first).  ``groups-forgotten-on-restart``
is the one quirk not acted out by a rewrite: :mod:`.group_store` asks
:func:`forgets_groups` before it takes the stored groups back.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

FETCH, OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 1, 8, 11, 12, 13, 14
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 22, 25, 79, 82
REMEMBERED = 10_000
FORGOTTEN_ON_RESTART = "groups-forgotten-on-restart"


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
            "static-member-not-replaced",
            "groups",
            "KAF-GROUP-17",
            "answers a JoinGroup v5+ with an empty member id and a group instance id it has "
            "answered before FENCED_INSTANCE_ID (82), as a broker that never lets a restarted "
            "static member take its old place",
        ),
        QuirkSpec.spec(
            "fenced-instance-as-unknown-member",
            "groups",
            "KAF-GROUP-18",
            "answers UNKNOWN_MEMBER_ID (25) where a JoinGroup, SyncGroup, Heartbeat, a "
            "LeaveGroup member or an OffsetCommit partition is FENCED_INSTANCE_ID (82), as a "
            "broker that checks member ids only",
        ),
        QuirkSpec.fault(
            FORGOTTEN_ON_RESTART,
            "LOST: a broker restarted on its --data-dir forgets every classic group "
            "(generation, leader, members, assignments); committed offsets stay",
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


_ANSWERED: OrderedDict[tuple[str, str], None] = OrderedDict()
"""(group id, group instance id) of the static joins answered (static-member-not-replaced)."""


def forgets_groups(quirks: tuple[str, ...]) -> bool:
    """Whether the broker must not take back its stored classic groups at a start."""
    return FORGOTTEN_ON_RESTART in quirks


def _static_join(response: dict[str, Any], request: Request) -> None:
    """static-member-not-replaced: a static join with an empty member id for an instance
    answered before is refused FENCED_INSTANCE_ID; any answered one is remembered."""
    body = request.body
    instance = body.get("group_instance_id")
    if request.api_version < 5 or instance is None or response.get("error_code") != 0:
        return
    key = (str(body.get("group_id", "")), str(instance))
    if not body.get("member_id") and key in _ANSWERED:
        response.update(
            error_code=FENCED_INSTANCE_ID,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None,
            leader="",
            skip_assignment=False,
            member_id="",
            members=[],
        )
        return
    _ANSWERED[key] = None
    _ANSWERED.move_to_end(key)
    while len(_ANSWERED) > REMEMBERED:
        _ANSWERED.popitem(last=False)


def _unfenced(request: Request, response: dict[str, Any]) -> None:
    """fenced-instance-as-unknown-member: FENCED_INSTANCE_ID becomes UNKNOWN_MEMBER_ID."""
    key = request.api_key
    if key not in (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT):
        return
    if response.get("error_code") == FENCED_INSTANCE_ID:
        response["error_code"] = UNKNOWN_MEMBER_ID
    entries = response.get("members", []) if key == LEAVE_GROUP else _partitions(response)
    for entry in entries:
        if entry.get("error_code") == FENCED_INSTANCE_ID:
            entry["error_code"] = UNKNOWN_MEMBER_ID


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
    if key == JOIN_GROUP and "static-member-not-replaced" in quirks:
        _static_join(response, request)
    if "fenced-instance-as-unknown-member" in quirks:
        _unfenced(request, response)
    if key == FETCH and "fetch-first-partition-only" in quirks:
        response["responses"] = _first_partitions(request, response.get("responses", []))
    return response
