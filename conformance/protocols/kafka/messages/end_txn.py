"""EndTxn (key 26): a transactional producer commits or aborts its ongoing transaction;
the coordinator writes a commit or abort marker to every partition of the transaction.

Versions: 0-4, flexible 3+ (v5, Kafka's epoch bump on every transaction, KIP-890 part 2,
is declared unstable in Kafka 3.9 and not served).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT16, INT32, INT64, STRING, f

REQUEST = message(
    "EndTxnRequest",
    "0-4",
    "3+",
    [
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("committed", BOOL),
    ],
    doc="commit or abort the transaction",
    api_key=26,
)

RESPONSE = message(
    "EndTxnResponse",
    "0-4",
    "3+",
    [f("throttle_time_ms", INT32), f("error_code", INT16)],
    doc="an error code",
    api_key=26,
)
