"""Produce (key 0): record batches for partitions of topics, with the acknowledgement
the producer wants (0: none, 1: the leader, -1: every in-sync replica) and how long the
broker may wait for it; the response gives each partition's base offset or error.  A
Produce with acks 0 gets no response at all.

Versions: 0-12, flexible 9+; v12 has v11's fields (KIP-890 part 2: a transactional Produce
v12 adds its partition to the transaction).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import frozen, message
from conformance.protocols.kafka.record_annotation import RECORDS
from conformance.wire.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    array_of,
    f,
    struct_of,
)

REQUEST = message(
    "ProduceRequest",
    "0-12",
    "9+",
    [
        f("transactional_id", STRING, "3+", nullable="3+"),
        f("acks", INT16),
        f("timeout_ms", INT32),
        f(
            "topic_data",
            array_of(
                "TopicProduceData",
                f("name", STRING),
                f(
                    "partition_data",
                    array_of(
                        "PartitionProduceData",
                        f("index", INT32),
                        f("records", RECORDS, nullable="0+"),
                    ),
                ),
            ),
        ),
    ],
    doc="record batches to append",
    api_key=0,
)

RESPONSE = message(
    "ProduceResponse",
    "0-12",
    "9+",
    [
        f(
            "responses",
            array_of(
                "TopicProduceResponse",
                f("name", STRING),
                f(
                    "partition_responses",
                    array_of(
                        "PartitionProduceResponse",
                        f("index", INT32),
                        f("error_code", INT16),
                        f("base_offset", INT64),
                        f("log_append_time_ms", INT64, "2+", default=-1),
                        f("log_start_offset", INT64, "5+", default=-1),
                        f(
                            "record_errors",
                            array_of(
                                "BatchIndexAndErrorMessage",
                                f("batch_index", INT32, "8+"),
                                f("batch_index_error_message", STRING, "8+", nullable="8+"),
                            ),
                            "8+",
                        ),
                        f("error_message", STRING, "8+", nullable="8+"),
                        f(
                            "current_leader",
                            struct_of(
                                "LeaderIdAndEpoch",
                                f("leader_id", INT32, "10+", default=-1),
                                f("leader_epoch", INT32, "10+", default=-1),
                            ),
                            "10+",
                            tag=0,
                            tagged="10+",
                            default=frozen(leader_id=-1, leader_epoch=-1),
                        ),
                    ),
                ),
            ),
        ),
        f("throttle_time_ms", INT32, "1+"),
        f(
            "node_endpoints",
            array_of(
                "NodeEndpoint",
                f("node_id", INT32, "10+"),
                f("host", STRING, "10+"),
                f("port", INT32, "10+"),
                f("rack", STRING, "10+", nullable="10+"),
            ),
            "10+",
            tag=0,
            tagged="10+",
        ),
    ],
    doc="each partition's base offset or error",
    api_key=0,
)
