"""InitProducerId (key 22): a producer asks for a producer id and epoch (for
idempotence, and with a transactional id for transactions); from v3 it may name its
current id and epoch to have the epoch bumped.

Versions: 0-5, flexible 2+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, f

REQUEST = message(
    "InitProducerIdRequest",
    "0-5",
    "2+",
    [
        f("transactional_id", STRING, nullable="0+", default=""),
        f("transaction_timeout_ms", INT32),
        f("producer_id", INT64, "3+", default=-1),
        f("producer_epoch", INT16, "3+", default=-1),
    ],
    doc="asks for a producer id and epoch",
    api_key=22,
)

RESPONSE = message(
    "InitProducerIdResponse",
    "0-5",
    "2+",
    [
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, default=-1),
        f("producer_epoch", INT16),
    ],
    doc="the producer id and epoch, or an error",
    api_key=22,
)
