"""AddOffsetsToTxn (key 25): a transactional producer adds a consumer group's offsets to
its ongoing transaction (before TxnOffsetCommit), so the offsets commit or abort with it.

Versions: 0-4, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, f

REQUEST = message(
    "AddOffsetsToTxnRequest",
    "0-4",
    "3+",
    [
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("group_id", STRING),
    ],
    doc="a group whose offsets join the transaction",
    api_key=25,
)

RESPONSE = message(
    "AddOffsetsToTxnResponse",
    "0-4",
    "3+",
    [f("throttle_time_ms", INT32), f("error_code", INT16)],
    doc="an error code",
    api_key=25,
)
