"""SyncGroup (key 14): after a join, every member asks for its assignment; the leader
sends the assignments of all members along.

Versions: 0-5, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BYTES, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "SyncGroupRequest",
    "0-5",
    "4+",
    [
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", nullable="3+"),
        f("protocol_type", STRING, "5+", nullable="5+"),
        f("protocol_name", STRING, "5+", nullable="5+"),
        f(
            "assignments",
            array_of(
                "SyncGroupRequestAssignment",
                f("member_id", STRING),
                f("assignment", BYTES),
            ),
        ),
    ],
    doc="asks for this member's assignment (the leader gives everyone's)",
    api_key=14,
)

RESPONSE = message(
    "SyncGroupResponse",
    "0-5",
    "4+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f("protocol_type", STRING, "5+", nullable="5+"),
        f("protocol_name", STRING, "5+", nullable="5+"),
        f("assignment", BYTES),
    ],
    doc="the member's assignment",
    api_key=14,
)
