"""OffsetCommit (key 8): a group member stores the offsets it has consumed, with
optional metadata, for partitions of topics.  v1 adds the generation and member and a
per-partition commit timestamp (v1 only); v2-4 a retention time; 6+ the leader epoch;
7+ the static instance id.

Versions: 0-9, flexible 8+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "OffsetCommitRequest",
    "0-9",
    "8+",
    [
        f("group_id", STRING),
        f("generation_id_or_member_epoch", INT32, "1+", default=-1),
        f("member_id", STRING, "1+"),
        f("group_instance_id", STRING, "7+", nullable="7+"),
        f("retention_time_ms", INT64, "2-4", default=-1),
        f(
            "topics",
            array_of(
                "OffsetCommitRequestTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "OffsetCommitRequestPartition",
                        f("partition_index", INT32),
                        f("committed_offset", INT64),
                        f("committed_leader_epoch", INT32, "6+", default=-1),
                        f("commit_timestamp", INT64, "1", default=-1),
                        f("committed_metadata", STRING, nullable="0+", default=""),
                    ),
                ),
            ),
        ),
    ],
    doc="offsets to store for a group",
    api_key=8,
)

RESPONSE = message(
    "OffsetCommitResponse",
    "0-9",
    "8+",
    [
        f("throttle_time_ms", INT32, "3+"),
        f(
            "topics",
            array_of(
                "OffsetCommitResponseTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "OffsetCommitResponsePartition",
                        f("partition_index", INT32),
                        f("error_code", INT16),
                    ),
                ),
            ),
        ),
    ],
    doc="each partition's error",
    api_key=8,
)
