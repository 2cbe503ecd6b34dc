"""IncrementalAlterConfigs (key 44): change resources' configurations key by key, each
with an operation (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT: the last two for list-typed
keys), or only validate the changes (KIP-339).

Versions: 0-1, flexible 1+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT8, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "IncrementalAlterConfigsRequest",
    "0-1",
    "1+",
    [
        f(
            "resources",
            array_of(
                "AlterConfigsResource",
                f("resource_type", INT8),
                f("resource_name", STRING),
                f(
                    "configs",
                    array_of(
                        "AlterableConfig",
                        f("name", STRING),
                        f("config_operation", INT8),
                        f("value", STRING, nullable="0+", default=""),
                    ),
                ),
            ),
        ),
        f("validate_only", BOOL),
    ],
    doc="the changes, resource by resource",
    api_key=44,
)

RESPONSE = message(
    "IncrementalAlterConfigsResponse",
    "0-1",
    "1+",
    [
        f("throttle_time_ms", INT32),
        f(
            "responses",
            array_of(
                "AlterConfigsResourceResponse",
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=""),
                f("resource_type", INT8),
                f("resource_name", STRING),
            ),
        ),
    ],
    doc="each resource's result",
    api_key=44,
)
