"""Metadata (key 3): the cluster's brokers, its controller and, for the topics asked
about (or every topic), their partitions with leaders, replicas and in-sync replicas.
From v4 the request says whether asking may create a missing topic; from v10 topics
may be named by id.

Versions: 0-12, flexible 9+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import EMPTY, message
from conformance.wire.schema import (
    BOOL,
    INT16,
    INT32,
    STRING,
    UUID,
    array_of,
    f,
)

_NO_OPERATIONS = -(1 << 31)
"""Kafka's "authorized operations not asked for" (INT32_MIN)."""

REQUEST = message(
    "MetadataRequest",
    "0-12",
    "9+",
    [
        f(
            "topics",
            array_of(
                "MetadataRequestTopic",
                f("topic_id", UUID, "10+"),
                f("name", STRING, nullable="10+", default=""),
            ),
            nullable="1+",
            default=EMPTY,
        ),
        f("allow_auto_topic_creation", BOOL, "4+", default=True),
        f("include_cluster_authorized_operations", BOOL, "8-10"),
        f("include_topic_authorized_operations", BOOL, "8+"),
    ],
    doc="asks for brokers and topic metadata; null topics (v1+) means every topic",
    api_key=3,
)

RESPONSE = message(
    "MetadataResponse",
    "0-12",
    "9+",
    [
        f("throttle_time_ms", INT32, "3+"),
        f(
            "brokers",
            array_of(
                "MetadataResponseBroker",
                f("node_id", INT32),
                f("host", STRING),
                f("port", INT32),
                f("rack", STRING, "1+", nullable="1+"),
            ),
        ),
        f("cluster_id", STRING, "2+", nullable="2+"),
        f("controller_id", INT32, "1+", default=-1),
        f(
            "topics",
            array_of(
                "MetadataResponseTopic",
                f("error_code", INT16),
                f("name", STRING, nullable="12+", default=""),
                f("topic_id", UUID, "10+"),
                f("is_internal", BOOL, "1+"),
                f(
                    "partitions",
                    array_of(
                        "MetadataResponsePartition",
                        f("error_code", INT16),
                        f("partition_index", INT32),
                        f("leader_id", INT32),
                        f("leader_epoch", INT32, "7+", default=-1),
                        f("replica_nodes", array_of(INT32)),
                        f("isr_nodes", array_of(INT32)),
                        f("offline_replicas", array_of(INT32), "5+"),
                    ),
                ),
                f("topic_authorized_operations", INT32, "8+", default=_NO_OPERATIONS),
            ),
        ),
        f("cluster_authorized_operations", INT32, "8-10", default=_NO_OPERATIONS),
    ],
    doc="the brokers, the controller and the topics' partitions",
    api_key=3,
)
