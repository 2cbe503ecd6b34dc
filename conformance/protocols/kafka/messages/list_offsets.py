"""ListOffsets (key 2): for each partition, the offset that goes with a timestamp (-1:
the end of the log, -2: its start, and from later versions other special values).
Version 0 answers with a list of old-style offsets, later versions with one offset and
its timestamp; 2+ carry the isolation level, 4+ leader epochs.

Versions: 0-9, flexible 6+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT8, INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "ListOffsetsRequest",
    "0-9",
    "6+",
    [
        f("replica_id", INT32),
        f("isolation_level", INT8, "2+"),
        f(
            "topics",
            array_of(
                "ListOffsetsTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "ListOffsetsPartition",
                        f("partition_index", INT32),
                        f("current_leader_epoch", INT32, "4+", default=-1),
                        f("timestamp", INT64),
                        f("max_num_offsets", INT32, "0", default=1),
                    ),
                ),
            ),
        ),
    ],
    doc="asks for the offsets that go with timestamps",
    api_key=2,
)

RESPONSE = message(
    "ListOffsetsResponse",
    "0-9",
    "6+",
    [
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array_of(
                "ListOffsetsTopicResponse",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "ListOffsetsPartitionResponse",
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("old_style_offsets", array_of(INT64), "0"),
                        f("timestamp", INT64, "1+", default=-1),
                        f("offset", INT64, "1+", default=-1),
                        f("leader_epoch", INT32, "4+", default=-1),
                    ),
                ),
            ),
        ),
    ],
    doc="each partition's offset (and timestamp) or error",
    api_key=2,
)
