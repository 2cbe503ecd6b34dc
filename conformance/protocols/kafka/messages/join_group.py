"""JoinGroup (key 11): a consumer asks to join a group, offering the assignment
protocols it supports; the response gives the generation, the chosen protocol, the
leader and (to the leader) every member's metadata.

Versions: 0-9, flexible 6+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, BYTES, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "JoinGroupRequest",
    "0-9",
    "6+",
    [
        f("group_id", STRING),
        f("session_timeout_ms", INT32),
        f("rebalance_timeout_ms", INT32, "1+", default=-1),
        f("member_id", STRING),
        f("group_instance_id", STRING, "5+", nullable="5+"),
        f("protocol_type", STRING),
        f(
            "protocols",
            array_of(
                "JoinGroupRequestProtocol",
                f("name", STRING),
                f("metadata", BYTES),
            ),
        ),
        f("reason", STRING, "8+", nullable="8+"),
    ],
    doc="asks to join a group with the given protocols",
    api_key=11,
)

RESPONSE = message(
    "JoinGroupResponse",
    "0-9",
    "6+",
    [
        f("throttle_time_ms", INT32, "2+"),
        f("error_code", INT16),
        f("generation_id", INT32, default=-1),
        f("protocol_type", STRING, "7+", nullable="7+"),
        f("protocol_name", STRING, nullable="7+", default=""),
        f("leader", STRING),
        f("skip_assignment", BOOL, "9+"),
        f("member_id", STRING),
        f(
            "members",
            array_of(
                "JoinGroupResponseMember",
                f("member_id", STRING),
                f("group_instance_id", STRING, "5+", nullable="5+"),
                f("metadata", BYTES),
            ),
        ),
    ],
    doc="the generation, protocol, leader and members",
    api_key=11,
)
