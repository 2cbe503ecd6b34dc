"""CreatePartitions (key 37): raise topics' partition counts, optionally with the
replicas of each new partition, or only validate the request.  v3 may answer
THROTTLING_QUOTA_EXCEEDED (KIP-599); the layout does not change.

Versions: 0-3, flexible 2+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "CreatePartitionsRequest",
    "0-3",
    "2+",
    [
        f(
            "topics",
            array_of(
                "CreatePartitionsTopic",
                f("name", STRING),
                f("count", INT32),
                f(
                    "assignments",
                    array_of("CreatePartitionsAssignment", f("broker_ids", array_of(INT32))),
                    nullable="0+",
                    default=None,
                ),
            ),
        ),
        f("timeout_ms", INT32),
        f("validate_only", BOOL),
    ],
    doc="the new partition counts",
    api_key=37,
)

RESPONSE = message(
    "CreatePartitionsResponse",
    "0-3",
    "2+",
    [
        f("throttle_time_ms", INT32),
        f(
            "results",
            array_of(
                "CreatePartitionsTopicResult",
                f("name", STRING),
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
            ),
        ),
    ],
    doc="each topic's result",
    api_key=37,
)
