"""ListGroups (key 16): the groups the broker coordinates, optionally filtered by
state (v4+) and type (v5+).

Versions: 0-5, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, array_of, f

REQUEST = message(
    "ListGroupsRequest",
    "0-5",
    "3+",
    [
        f("states_filter", array_of(STRING), "4+"),
        f("types_filter", array_of(STRING), "5+"),
    ],
    doc="asks for the groups, optionally filtered",
    api_key=16,
)

RESPONSE = message(
    "ListGroupsResponse",
    "0-5",
    "3+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
        f(
            "groups",
            array_of(
                "ListedGroup",
                f("group_id", STRING),
                f("protocol_type", STRING),
                f("group_state", STRING, "4+"),
                f("group_type", STRING, "5+"),
            ),
        ),
    ],
    doc="the groups with their protocol types",
    api_key=16,
)
