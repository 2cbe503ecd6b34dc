"""Heartbeat (key 12): a group member tells the coordinator it is alive in a
generation; the error code says whether a rebalance is under way.

Versions: 0-4, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, f

REQUEST = message(
    "HeartbeatRequest",
    "0-4",
    "4+",
    [
        f("group_id", STRING),
        f("generation_id", INT32),
        f("member_id", STRING),
        f("group_instance_id", STRING, "3+", nullable="3+"),
    ],
    doc="a member is alive in a generation",
    api_key=12,
)

RESPONSE = message(
    "HeartbeatResponse",
    "0-4",
    "4+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16),
    ],
    doc="whether the member may carry on",
    api_key=12,
)
