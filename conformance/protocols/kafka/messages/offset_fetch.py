"""OffsetFetch (key 9): the offsets a group has committed, for the partitions asked
about or (null topics, v2+) for all of them.  Up to v7 the request names one group; from
v8 it names several, each with its topics.

Versions: 0-9, flexible 6+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import EMPTY, message
from conformance.wire.schema import BOOL, INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "OffsetFetchRequest",
    "0-9",
    "6+",
    [
        f("group_id", STRING, "0-7"),
        f(
            "topics",
            array_of(
                "OffsetFetchRequestTopic",
                f("name", STRING, "0-7"),
                f("partition_indexes", array_of(INT32), "0-7"),
            ),
            "0-7",
            nullable="2-7",
            default=EMPTY,
        ),
        f(
            "groups",
            array_of(
                "OffsetFetchRequestGroup",
                f("group_id", STRING, "8+"),
                f("member_id", STRING, "9+", nullable="9+"),
                f("member_epoch", INT32, "9+", default=-1),
                f(
                    "topics",
                    array_of(
                        "OffsetFetchRequestTopics",
                        f("name", STRING, "8+"),
                        f("partition_indexes", array_of(INT32), "8+"),
                    ),
                    "8+",
                    nullable="8+",
                    default=EMPTY,
                ),
            ),
            "8+",
        ),
        f("require_stable", BOOL, "7+"),
    ],
    doc="asks for a group's committed offsets",
    api_key=9,
)

RESPONSE = message(
    "OffsetFetchResponse",
    "0-9",
    "6+",
    [
        f("throttle_time_ms", INT32, "3+"),
        f(
            "topics",
            array_of(
                "OffsetFetchResponseTopic",
                f("name", STRING, "0-7"),
                f(
                    "partitions",
                    array_of(
                        "OffsetFetchResponsePartition",
                        f("partition_index", INT32, "0-7"),
                        f("committed_offset", INT64, "0-7"),
                        f("committed_leader_epoch", INT32, "5-7", default=-1),
                        f("metadata", STRING, "0-7", nullable="0-7", default=""),
                        f("error_code", INT16, "0-7"),
                    ),
                    "0-7",
                ),
            ),
            "0-7",
        ),
        f("error_code", INT16, "2-7"),
        f(
            "groups",
            array_of(
                "OffsetFetchResponseGroup",
                f("group_id", STRING, "8+"),
                f(
                    "topics",
                    array_of(
                        "OffsetFetchResponseTopics",
                        f("name", STRING, "8+"),
                        f(
                            "partitions",
                            array_of(
                                "OffsetFetchResponsePartitions",
                                f("partition_index", INT32, "8+"),
                                f("committed_offset", INT64, "8+"),
                                f("committed_leader_epoch", INT32, "8+", default=-1),
                                f("metadata", STRING, "8+", nullable="8+", default=""),
                                f("error_code", INT16, "8+"),
                            ),
                            "8+",
                        ),
                    ),
                    "8+",
                ),
                f("error_code", INT16, "8+"),
            ),
            "8+",
        ),
    ],
    doc="the committed offsets, with errors",
    api_key=9,
)
