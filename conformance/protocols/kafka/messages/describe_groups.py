"""DescribeGroups (key 15): the state, protocol and members (with their metadata and
assignments) of the groups named; from v3 optionally the operations the caller may
perform on each.

Versions: 0-5, flexible 5+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, BYTES, INT16, INT32, STRING, array_of, f

_NO_OPERATIONS = -(1 << 31)
"""Kafka's "authorized operations not asked for" (INT32_MIN)."""

REQUEST = message(
    "DescribeGroupsRequest",
    "0-5",
    "5+",
    [
        f("groups", array_of(STRING)),
        f("include_authorized_operations", BOOL, "3+"),
    ],
    doc="groups to describe",
    api_key=15,
)

RESPONSE = message(
    "DescribeGroupsResponse",
    "0-5",
    "5+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f(
            "groups",
            array_of(
                "DescribedGroup",
                f("error_code", INT16),
                f("group_id", STRING),
                f("group_state", STRING),
                f("protocol_type", STRING),
                f("protocol_data", STRING),
                f(
                    "members",
                    array_of(
                        "DescribedGroupMember",
                        f("member_id", STRING),
                        f("group_instance_id", STRING, "4+", nullable="4+"),
                        f("client_id", STRING),
                        f("client_host", STRING),
                        f("member_metadata", BYTES),
                        f("member_assignment", BYTES),
                    ),
                ),
                f("authorized_operations", INT32, "3+", default=_NO_OPERATIONS),
            ),
        ),
    ],
    doc="each group's state and members",
    api_key=15,
)
