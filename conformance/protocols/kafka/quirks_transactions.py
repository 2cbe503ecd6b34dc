"""Spec quirks of transactions (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn, READ_COMMITTED reads) (see :mod:`.quirks` for
what a quirk may do).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

FETCH, OFFSET_FETCH = 1, 9
COORDINATOR_KEYS = (22, 24, 25, 26)
PRODUCER_FENCED, INVALID_PRODUCER_EPOCH = 90, 47

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec.spec(
            "txn-read-committed-ignored",
            "transactions",
            "KAF-TXN-7,KAF-TXN-9",
            "serves a READ_COMMITTED Fetch as READ_UNCOMMITTED: records of open transactions "
            "past the last stable offset, and no aborted transactions listed",
        ),
        QuirkSpec.spec(
            "unstable-offsets-answered",
            "transactions",
            "KAF-TXN-18",
            "ignores require_stable: an OffsetFetch answers a partition whose offset an open "
            "transaction holds as if none were pending (Kafka: UNSTABLE_OFFSET_COMMIT)",
        ),
        QuirkSpec.spec(
            "txn-fenced-as-invalid-epoch",
            "transactions",
            "KAF-TXN-6",
            "answers a fenced producer's InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn "
            "and EndTxn with INVALID_PRODUCER_EPOCH at every version (Kafka: PRODUCER_FENCED "
            "from the version that knows it)",
        ),
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    committed = request.api_key == FETCH and request.body.get("isolation_level", 0) == 1
    stable = request.api_key == OFFSET_FETCH and request.body.get("require_stable")
    if "unstable-offsets-answered" in quirks and stable:
        return dataclasses.replace(request, body={**request.body, "require_stable": False})
    if "txn-read-committed-ignored" in quirks and committed:
        return dataclasses.replace(request, body={**request.body, "isolation_level": 0})
    return request


def _downgraded(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: INVALID_PRODUCER_EPOCH
            if k in ("error_code", "partition_error_code") and v == PRODUCER_FENCED
            else _downgraded(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_downgraded(v) for v in value]
    return value


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    if "txn-fenced-as-invalid-epoch" in quirks and request.api_key in COORDINATOR_KEYS:
        downgraded: dict[str, Any] = _downgraded(response)
        return downgraded
    return response
