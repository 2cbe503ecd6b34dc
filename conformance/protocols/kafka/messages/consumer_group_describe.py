"""ConsumerGroupDescribe (key 69, KIP-848): the state of consumer groups of the new
protocol: group and assignment epochs, the assignor, and each member with its epoch,
subscription, current and target assignment.  v1 adds each member's type (KIP-1099:
-1 unknown, 0 a classic member, 1 a consumer member).

Versions: 0-1, flexible 0+ (Apache Kafka 4.0's ConsumerGroupDescribe*.json).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    UUID,
    Struct,
    array_of,
    f,
    struct_of,
)

_NO_OPERATIONS = -(1 << 31)
"""Kafka's "authorized operations not asked for" (INT32_MIN)."""


def _assignment() -> Struct:
    return struct_of(
        "Assignment",
        f(
            "topic_partitions",
            array_of(
                "TopicPartitions",
                f("topic_id", UUID),
                f("topic_name", STRING),
                f("partitions", array_of(INT32)),
            ),
        ),
    )


REQUEST = message(
    "ConsumerGroupDescribeRequest",
    "0-1",
    "0+",
    [
        f("group_ids", array_of(STRING)),
        f("include_authorized_operations", BOOL),
    ],
    doc="consumer groups to describe",
    api_key=69,
)

RESPONSE = message(
    "ConsumerGroupDescribeResponse",
    "0-1",
    "0+",
    [
        f("throttle_time_ms", INT32),
        f(
            "groups",
            array_of(
                "DescribedGroup",
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=None),
                f("group_id", STRING),
                f("group_state", STRING),
                f("group_epoch", INT32),
                f("assignment_epoch", INT32),
                f("assignor_name", STRING),
                f(
                    "members",
                    array_of(
                        "Member",
                        f("member_id", STRING),
                        f("instance_id", STRING, nullable="0+", default=None),
                        f("rack_id", STRING, nullable="0+", default=None),
                        f("member_epoch", INT32),
                        f("client_id", STRING),
                        f("client_host", STRING),
                        f("subscribed_topic_names", array_of(STRING)),
                        f("subscribed_topic_regex", STRING, nullable="0+", default=None),
                        f("assignment", _assignment()),
                        f("target_assignment", _assignment()),
                        f("member_type", INT8, "1+", default=-1),
                    ),
                ),
                f("authorized_operations", INT32, default=_NO_OPERATIONS),
            ),
        ),
    ],
    doc="each consumer group's epochs, assignor and members",
    api_key=69,
)
