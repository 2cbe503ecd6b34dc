"""Fetch (key 1): read record batches from partitions, starting at given offsets, waiting
up to a time for at least a number of bytes.  Versions 7+ add incremental fetch sessions
(session id and epoch, forgotten topics); 12+ are flexible and carry the leader's epoch
data as tagged fields; 13+ name topics by id.  Version 17 (a replica's directory id) is
left out.

Versions: 0-16, flexible 12+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import EMPTY, frozen, message
from conformance.protocols.kafka.record_annotation import RECORDS
from conformance.wire.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UUID,
    array_of,
    f,
    struct_of,
)

REQUEST = message(
    "FetchRequest",
    "0-16",
    "12+",
    [
        f("cluster_id", STRING, "12+", nullable="12+", tag=0, tagged="12+"),
        f("replica_id", INT32, "0-14", default=-1),
        f(
            "replica_state",
            struct_of(
                "ReplicaState",
                f("replica_id", INT32, "15+", default=-1),
                f("replica_epoch", INT64, "15+", default=-1),
            ),
            "15+",
            tag=1,
            tagged="15+",
            default=frozen(replica_id=-1, replica_epoch=-1),
        ),
        f("max_wait_ms", INT32),
        f("min_bytes", INT32),
        f("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        f("isolation_level", INT8, "4+"),
        f("session_id", INT32, "7+"),
        f("session_epoch", INT32, "7+", default=-1),
        f(
            "topics",
            array_of(
                "FetchTopic",
                f("topic", STRING, "0-12"),
                f("topic_id", UUID, "13+"),
                f(
                    "partitions",
                    array_of(
                        "FetchPartition",
                        f("partition", INT32),
                        f("current_leader_epoch", INT32, "9+", default=-1),
                        f("fetch_offset", INT64),
                        f("last_fetched_epoch", INT32, "12+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f("partition_max_bytes", INT32),
                    ),
                ),
            ),
        ),
        f(
            "forgotten_topics_data",
            array_of(
                "ForgottenTopic",
                f("topic", STRING, "7-12"),
                f("topic_id", UUID, "13+"),
                f("partitions", array_of(INT32), "7+"),
            ),
            "7+",
        ),
        f("rack_id", STRING, "11+"),
    ],
    doc="asks for records from the given partition offsets",
    api_key=1,
)

RESPONSE = message(
    "FetchResponse",
    "0-16",
    "12+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "7+"),
        f("session_id", INT32, "7+"),
        f(
            "responses",
            array_of(
                "FetchableTopicResponse",
                f("topic", STRING, "0-12"),
                f("topic_id", UUID, "13+"),
                f(
                    "partitions",
                    array_of(
                        "PartitionData",
                        f("partition_index", INT32),
                        f("error_code", INT16),
                        f("high_watermark", INT64),
                        f("last_stable_offset", INT64, "4+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f(
                            "diverging_epoch",
                            struct_of(
                                "EpochEndOffset",
                                f("epoch", INT32, "12+", default=-1),
                                f("end_offset", INT64, "12+", default=-1),
                            ),
                            "12+",
                            tag=0,
                            tagged="12+",
                            default=frozen(epoch=-1, end_offset=-1),
                        ),
                        f(
                            "current_leader",
                            struct_of(
                                "LeaderIdAndEpoch",
                                f("leader_id", INT32, "12+", default=-1),
                                f("leader_epoch", INT32, "12+", default=-1),
                            ),
                            "12+",
                            tag=1,
                            tagged="12+",
                            default=frozen(leader_id=-1, leader_epoch=-1),
                        ),
                        f(
                            "snapshot_id",
                            struct_of(
                                "SnapshotId",
                                f("end_offset", INT64, default=-1),
                                f("epoch", INT32, default=-1),
                            ),
                            "12+",
                            tag=2,
                            tagged="12+",
                            default=frozen(end_offset=-1, epoch=-1),
                        ),
                        f(
                            "aborted_transactions",
                            array_of(
                                "AbortedTransaction",
                                f("producer_id", INT64, "4+"),
                                f("first_offset", INT64, "4+"),
                            ),
                            "4+",
                            nullable="4+",
                            default=EMPTY,
                        ),
                        f("preferred_read_replica", INT32, "11+", default=-1),
                        f("records", RECORDS, nullable="0+"),
                    ),
                ),
            ),
        ),
        f(
            "node_endpoints",
            array_of(
                "NodeEndpoint",
                f("node_id", INT32, "16+"),
                f("host", STRING, "16+"),
                f("port", INT32, "16+"),
                f("rack", STRING, "16+", nullable="16+"),
            ),
            "16+",
            tag=0,
            tagged="16+",
        ),
    ],
    doc="records, high watermarks and errors of the partitions fetched",
    api_key=1,
)
