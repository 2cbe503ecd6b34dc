"""TxnOffsetCommit (key 28): a transactional producer stores a consumer group's offsets
inside its transaction; they become the group's committed offsets only when the
transaction commits.  v2 adds the leader epoch, v3 the group member's id, instance id and
generation; v4 lets the broker answer TRANSACTION_ABORTABLE (KIP-890); v5 (Kafka 4.0,
KIP-890 part 2) is the same bytes, sent by a transactions V2 client, for which the
broker adds the group's offsets to the transaction itself (no AddOffsetsToTxn first).

Versions: 0-5, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "TxnOffsetCommitRequest",
    "0-5",
    "3+",
    [
        f("transactional_id", STRING),
        f("group_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("generation_id", INT32, "3+", default=-1),
        f("member_id", STRING, "3+", default=""),
        f("group_instance_id", STRING, "3+", nullable="3+"),
        f(
            "topics",
            array_of(
                "TxnOffsetCommitRequestTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "TxnOffsetCommitRequestPartition",
                        f("partition_index", INT32),
                        f("committed_offset", INT64),
                        f("committed_leader_epoch", INT32, "2+", default=-1),
                        f("committed_metadata", STRING, nullable="0+", default=""),
                    ),
                ),
            ),
        ),
    ],
    doc="offsets to commit with the transaction",
    api_key=28,
)

RESPONSE = message(
    "TxnOffsetCommitResponse",
    "0-5",
    "3+",
    [
        f("throttle_time_ms", INT32),
        f(
            "topics",
            array_of(
                "TxnOffsetCommitResponseTopic",
                f("name", STRING),
                f(
                    "partitions",
                    array_of(
                        "TxnOffsetCommitResponsePartition",
                        f("partition_index", INT32),
                        f("error_code", INT16),
                    ),
                ),
            ),
        ),
    ],
    doc="each partition's error",
    api_key=28,
)
