"""OffsetForLeaderEpoch (key 23): for each partition, the end offset of a leader epoch
(the first offset of the next epoch, or the log end offset for the current one); a
consumer uses it to detect log truncation after a leader change (KIP-320), a follower
to truncate its log.  From v2 each partition may carry the epoch the client believes
current, to be fenced; from v3 the request names the replica asking.

Versions: 0-4, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "OffsetForLeaderEpochRequest",
    "0-4",
    "4+",
    [
        f("replica_id", INT32, "3+", default=-2),
        f(
            "topics",
            array_of(
                "OffsetForLeaderTopic",
                f("topic", STRING),
                f(
                    "partitions",
                    array_of(
                        "OffsetForLeaderPartition",
                        f("partition", INT32),
                        f("current_leader_epoch", INT32, "2+", default=-1),
                        f("leader_epoch", INT32),
                    ),
                ),
            ),
        ),
    ],
    doc="the leader epochs whose end offsets are asked for",
    api_key=23,
)

RESPONSE = message(
    "OffsetForLeaderEpochResponse",
    "0-4",
    "4+",
    [
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array_of(
                "OffsetForLeaderTopicResult",
                f("topic", STRING),
                f(
                    "partitions",
                    array_of(
                        "EpochEndOffset",
                        f("error_code", INT16),
                        f("partition", INT32),
                        f("leader_epoch", INT32, "1+", default=-1),
                        f("end_offset", INT64, default=-1),
                    ),
                ),
            ),
        ),
    ],
    doc="each partition's epoch and end offset, or an error",
    api_key=23,
)
