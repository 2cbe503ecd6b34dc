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

PRODUCE, FETCH, OFFSET_FETCH, END_TXN, TXN_OFFSET_COMMIT = 0, 1, 9, 26, 28
COORDINATOR_KEYS = (22, 24, 25, 26)
PRODUCER_FENCED, INVALID_PRODUCER_EPOCH = 90, 47
NOT_A_MEMBER = "quirk-not-a-member"
"""The member id quirk txn-offset-commit-needs-a-member puts in a commit that names none."""

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec.spec(
            "txn-read-committed-ignored",
            "transactions",
            "KAF-TXN-7,KAF-TXN-9,KAF-FETCH-10",
            "serves a READ_COMMITTED Fetch as READ_UNCOMMITTED: records of open transactions "
            "past the last stable offset, and aborted_transactions null (no list)",
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
            "KAF-TXN-6,KAF-TXN-21",
            "answers a fenced producer's InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn "
            "and EndTxn with INVALID_PRODUCER_EPOCH at every version (Kafka: PRODUCER_FENCED "
            "from the version that knows it)",
        ),
        QuirkSpec.spec(
            "txn-offset-commit-member-unchecked",
            "transactions",
            "KAF-TXN-19",
            "ignores a TxnOffsetCommit's generation, member id and group instance id (Kafka "
            "checks them as ClassicGroup.validateOffsetCommit does)",
        ),
        QuirkSpec.spec(
            "txn-offset-commit-needs-a-member",
            "transactions",
            "KAF-TXN-20",
            "answers a TxnOffsetCommit that names no member (generation -1, member id '') "
            "to a group with members UNKNOWN_MEMBER_ID, as OffsetCommit (Kafka accepts it "
            "in a transaction)",
        ),
        QuirkSpec.spec(
            "end-txn-v5-epoch-unsaid",
            "transactions",
            "KAF-TXN-21",
            "answers EndTxn v5 without the producer id and bumped epoch (-1 and -1, as a "
            "broker that reads v5 as v4)",
        ),
        QuirkSpec.spec(
            "txn-offset-commit-v5-not-added",
            "transactions",
            "KAF-TXN-22",
            "serves TxnOffsetCommit v5 as v4: a group AddOffsetsToTxn did not add is "
            "TRANSACTION_ABORTABLE (Kafka 4 adds it to the transaction)",
        ),
        QuirkSpec.spec(
            "produce-v12-not-added",
            "transactions",
            "KAF-TXN-23",
            "serves Produce v12 as v11: a transactional write to a partition "
            "AddPartitionsToTxn did not add is TRANSACTION_ABORTABLE (Kafka 4 adds it)",
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
    if request.api_key == TXN_OFFSET_COMMIT:
        return _txn_offset_commit(quirks, request)
    v12 = request.api_key == PRODUCE and request.api_version >= 12
    if "produce-v12-not-added" in quirks and v12:
        return dataclasses.replace(request, api_version=11)  # the same fields
    return request


def _txn_offset_commit(quirks: tuple[str, ...], request: Request) -> Request:
    body = request.body
    if "txn-offset-commit-member-unchecked" in quirks:
        body = {**body, "generation_id": -1, "member_id": "", "group_instance_id": None}
    nameless = int(body.get("generation_id", -1)) < 0 and not body.get("member_id")
    if "txn-offset-commit-needs-a-member" in quirks and nameless and request.api_version >= 3:
        body = {**body, "member_id": NOT_A_MEMBER}  # an Empty group still takes it
    if "txn-offset-commit-v5-not-added" in quirks and request.api_version >= 5:
        request = dataclasses.replace(request, api_version=4)
    return dataclasses.replace(request, body=body)


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
    if "end-txn-v5-epoch-unsaid" in quirks and request.api_key == END_TXN:
        return {**response, "producer_id": -1, "producer_epoch": -1}
    return response
