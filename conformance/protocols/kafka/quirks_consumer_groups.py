"""Spec quirks of the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
ConsumerGroupDescribe, and the member epoch of OffsetCommit v9) (see :mod:`.quirks` for
what a quirk may do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

OFFSET_COMMIT, HEARTBEAT, DESCRIBE = 8, 68, 69
FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, STALE_MEMBER_EPOCH = 110, 69, 113

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec.spec(
            "cgrp-epoch-not-fenced",
            "consumer-groups",
            "KAF-CGRP-5",
            "answers a consumer group heartbeat with a member epoch it does not know as if "
            "it were fine (error 0) instead of FENCED_MEMBER_EPOCH",
        ),
        QuirkSpec.spec(
            "cgrp-describe-unknown-as-empty",
            "consumer-groups",
            "KAF-CGRP-12",
            "describes a group that is not a consumer group as an Empty consumer group "
            "(error 0) instead of GROUP_ID_NOT_FOUND",
        ),
        QuirkSpec.spec(
            "cgrp-stale-commit-accepted",
            "consumer-groups",
            "KAF-CGRP-15",
            "answers an OffsetCommit from a consumer group member with a stale member epoch "
            "with error 0 per partition (storing nothing) instead of STALE_MEMBER_EPOCH",
        ),
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    key = request.api_key
    fenced = response.get("error_code") == FENCED_MEMBER_EPOCH
    if "cgrp-epoch-not-fenced" in quirks and key == HEARTBEAT and fenced:
        body = request.body
        return {
            **response,
            "error_code": 0,
            "error_message": None,
            "member_id": body.get("member_id"),
            "member_epoch": body.get("member_epoch", 0),
            "heartbeat_interval_ms": 1000,
        }
    if "cgrp-describe-unknown-as-empty" in quirks and key == DESCRIBE:
        groups = [
            {**g, "error_code": 0, "group_state": "Empty", "assignor_name": "uniform"}
            if g.get("error_code") == GROUP_ID_NOT_FOUND
            else g
            for g in response.get("groups", [])
        ]
        return {**response, "groups": groups}
    if "cgrp-stale-commit-accepted" in quirks and key == OFFSET_COMMIT:
        topics = [
            {
                **t,
                "partitions": [
                    {**p, "error_code": 0} if p.get("error_code") == STALE_MEMBER_EPOCH else p
                    for p in t.get("partitions", [])
                ],
            }
            for t in response.get("topics", [])
        ]
        return {**response, "topics": topics}
    return response
