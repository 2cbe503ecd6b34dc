"""FindCoordinator (key 10): which broker coordinates a consumer group (key type 0) or a
transactional id (key type 1, from v1).  Up to v3 the request names one key and the
response one coordinator; from v4 both are lists.

Versions: 0-5, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT8, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "FindCoordinatorRequest",
    "0-5",
    "3+",
    [
        f("key", STRING, "0-3"),
        f("key_type", INT8, "1+"),
        f("coordinator_keys", array_of(STRING), "4+"),
    ],
    doc="asks which broker coordinates a group or transactional id",
    api_key=10,
)

RESPONSE = message(
    "FindCoordinatorResponse",
    "0-5",
    "3+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f("error_code", INT16, "0-3"),
        f("error_message", STRING, "1-3", nullable="1-3", default=""),
        f("node_id", INT32, "0-3"),
        f("host", STRING, "0-3"),
        f("port", INT32, "0-3"),
        f(
            "coordinators",
            array_of(
                "Coordinator",
                f("key", STRING, "4+"),
                f("node_id", INT32, "4+"),
                f("host", STRING, "4+"),
                f("port", INT32, "4+"),
                f("error_code", INT16, "4+"),
                f("error_message", STRING, "4+", nullable="4+", default=""),
            ),
            "4+",
        ),
    ],
    doc="the coordinator's node id, host and port, or an error",
    api_key=10,
)
