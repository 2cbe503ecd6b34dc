"""ConsumerGroupHeartbeat (key 68, KIP-848): a member of a consumer group of the new
protocol joins (member epoch 0), heartbeats with its epoch, or leaves (-1; -2 for a
static member that will come back).  Fields that did not change since the last
heartbeat are sent null (or -1); the coordinator answers with the member's epoch, the
heartbeat interval and, when it changed or the request was a full one, the partitions
the member may use now.  v1 adds the subscription regex; from v1 the member id is
chosen by the client (a UUID), in v0 a joining member sends "" and is given one.

Versions: 0-1, flexible 0+ (Apache Kafka 4.0's ConsumerGroupHeartbeatRequest.json).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, UUID, array_of, f, struct_of

# The member's owned partitions (request) and its assignment (response), topic by topic.
TOPIC_PARTITIONS = array_of(
    "TopicPartitions",
    f("topic_id", UUID),
    f("partitions", array_of(INT32)),
)

REQUEST = message(
    "ConsumerGroupHeartbeatRequest",
    "0-1",
    "0+",
    [
        f("group_id", STRING),
        f("member_id", STRING),
        f("member_epoch", INT32),
        f("instance_id", STRING, nullable="0+", default=None),
        f("rack_id", STRING, nullable="0+", default=None),
        f("rebalance_timeout_ms", INT32, default=-1),
        f("subscribed_topic_names", array_of(STRING), nullable="0+", default=None),
        f("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        f("server_assignor", STRING, nullable="0+", default=None),
        f(
            "topic_partitions",
            TOPIC_PARTITIONS,
            nullable="0+",
            default=None,
        ),
    ],
    doc="a consumer group member's heartbeat (join, keep alive, leave)",
    api_key=68,
)

RESPONSE = message(
    "ConsumerGroupHeartbeatResponse",
    "0-1",
    "0+",
    [
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("member_id", STRING, nullable="0+", default=None),
        f("member_epoch", INT32),
        f("heartbeat_interval_ms", INT32),
        f(
            "assignment",
            struct_of(
                "Assignment",
                f(
                    "topic_partitions",
                    TOPIC_PARTITIONS,
                ),
            ),
            nullable="0+",
            default=None,
        ),
    ],
    doc="the member's epoch, heartbeat interval and (when it changed) its assignment",
    api_key=68,
)
