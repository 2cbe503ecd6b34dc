"""DeleteRecords (key 21): move partitions' log start offsets forward, making the
records before them unreadable; offset -1 means the high watermark.  The response gives
each partition's new low watermark (its log start offset) or an error.

Versions: 0-2, flexible 2+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "DeleteRecordsRequest",
    "0-2",
    "2+",
    [
        f(
            "topics",
            array_of(
                "DeleteRecordsTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "DeleteRecordsPartition",
                        f("partition_index", INT32),
                        f("offset", INT64),
                    ),
                ),
            ),
        ),
        f("timeout_ms", INT32),
    ],
    doc="the offsets records are deleted before",
    api_key=21,
)

RESPONSE = message(
    "DeleteRecordsResponse",
    "0-2",
    "2+",
    [
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array_of(
                "DeleteRecordsTopicResult",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "DeleteRecordsPartitionResult",
                        f("partition_index", INT32),
                        f("low_watermark", INT64),
                        f("error_code", INT16),
                    ),
                ),
            ),
        ),
    ],
    doc="each partition's low watermark or error",
    api_key=21,
)
