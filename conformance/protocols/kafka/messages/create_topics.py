"""CreateTopics (key 19): create topics with a partition count and replication factor
(or an explicit replica assignment) and configuration entries, optionally only
validating the request (v1+).  From v5 the response also reports the topic's
partition count, replication factor and configuration.

Versions: 0-7, flexible 5+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import EMPTY, message
from conformance.wire.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    UUID,
    array_of,
    f,
)

REQUEST = message(
    "CreateTopicsRequest",
    "0-7",
    "5+",
    [
        f(
            "topics",
            array_of(
                "CreatableTopic",
                f("name", STRING),
                f("num_partitions", INT32),
                f("replication_factor", INT16),
                f(
                    "assignments",
                    array_of(
                        "CreatableReplicaAssignment",
                        f("partition_index", INT32),
                        f("broker_ids", array_of(INT32)),
                    ),
                ),
                f(
                    "configs",
                    array_of(
                        "CreatableTopicConfig",
                        f("name", STRING),
                        f("value", STRING, nullable="0+", default=""),
                    ),
                ),
            ),
        ),
        f("timeout_ms", INT32, default=60000),
        f("validate_only", BOOL, "1+"),
    ],
    doc="topics to create",
    api_key=19,
)

RESPONSE = message(
    "CreateTopicsResponse",
    "0-7",
    "5+",
    [
        f("throttle_time_ms", INT32, "2+"),
        f(
            "topics",
            array_of(
                "CreatableTopicResult",
                f("name", STRING),
                f("topic_id", UUID, "7+"),
                f("error_code", INT16),
                f("error_message", STRING, "1+", nullable="0+", default=""),
                f("topic_config_error_code", INT16, "5+", tag=0, tagged="5+"),
                f("num_partitions", INT32, "5+", default=-1),
                f("replication_factor", INT16, "5+", default=-1),
                f(
                    "configs",
                    array_of(
                        "CreatableTopicConfigs",
                        f("name", STRING, "5+"),
                        f("value", STRING, "5+", nullable="5+", default=""),
                        f("read_only", BOOL, "5+"),
                        f("config_source", INT8, "5+", default=-1),
                        f("is_sensitive", BOOL, "5+"),
                    ),
                    "5+",
                    nullable="5+",
                    default=EMPTY,
                ),
            ),
        ),
    ],
    doc="each topic's result",
    api_key=19,
)
