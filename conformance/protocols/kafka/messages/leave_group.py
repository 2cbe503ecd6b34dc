"""LeaveGroup (key 13): one member (up to v2) or several (from v3, by member id or
static instance id) leave a group.

Versions: 0-5, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, array_of, f

REQUEST = message(
    "LeaveGroupRequest",
    "0-5",
    "4+",
    [
        f("group_id", STRING),
        f("member_id", STRING, "0-2"),
        f(
            "members",
            array_of(
                "MemberIdentity",
                f("member_id", STRING, "3+"),
                f("group_instance_id", STRING, "3+", nullable="3+"),
                f("reason", STRING, "5+", nullable="5+"),
            ),
            "3+",
        ),
    ],
    doc="members leaving a group",
    api_key=13,
)

RESPONSE = message(
    "LeaveGroupResponse",
    "0-5",
    "4+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f(
            "members",
            array_of(
                "MemberResponse",
                f("member_id", STRING, "3+"),
                f("group_instance_id", STRING, "3+", nullable="3+", default=""),
                f("error_code", INT16, "3+"),
            ),
            "3+",
        ),
    ],
    doc="the group's error and each leaving member's",
    api_key=13,
)
