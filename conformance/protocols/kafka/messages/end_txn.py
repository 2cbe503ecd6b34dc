"""EndTxn (key 26): a transactional producer commits or aborts its ongoing transaction;
the coordinator writes a commit or abort marker to every partition of the transaction.

Versions: 0-5, flexible 3+.  v5 (Kafka 4.0, KIP-890 part 2) is the transactions V2
client's: the coordinator bumps the producer epoch at every end of a transaction and the
response carries the producer id and the new epoch (-1 and -1 by default, for an error).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT16, INT32, INT64, STRING, f

REQUEST = message(
    "EndTxnRequest",
    "0-5",
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
    "0-5",
    "3+",
    [
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, "5+", default=-1),
        f("producer_epoch", INT16, "5+", default=-1),
    ],
    doc="an error code; from v5 the producer id and epoch to use next",
    api_key=26,
)
