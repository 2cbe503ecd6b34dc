"""DescribeConfigs (key 32): the configuration of resources (topics, brokers, broker
loggers, ...), all of it or the keys named; v1 adds where each value comes from and, when
asked, its synonyms; v3 adds each value's type and, when asked, its documentation.

Versions: 0-4, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import EMPTY, message
from conformance.wire.schema import BOOL, INT8, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "DescribeConfigsRequest",
    "0-4",
    "4+",
    [
        f(
            "resources",
            array_of(
                "DescribeConfigsResource",
                f("resource_type", INT8),
                f("resource_name", STRING),
                f("configuration_keys", array_of(STRING), nullable="0+", default=EMPTY),
            ),
        ),
        f("include_synonyms", BOOL, "1+"),
        f("include_documentation", BOOL, "3+"),
    ],
    doc="the resources to describe",
    api_key=32,
)

RESPONSE = message(
    "DescribeConfigsResponse",
    "0-4",
    "4+",
    [
        f("throttle_time_ms", INT32),
        f(
            "results",
            array_of(
                "DescribeConfigsResult",
                f("error_code", INT16),
                f("error_message", STRING, nullable="0+", default=""),
                f("resource_type", INT8),
                f("resource_name", STRING),
                f(
                    "configs",
                    array_of(
                        "DescribeConfigsResourceResult",
                        f("name", STRING),
                        f("value", STRING, nullable="0+", default=""),
                        f("read_only", BOOL),
                        f("is_default", BOOL, "0"),
                        f("config_source", INT8, "1+", default=-1),
                        f("is_sensitive", BOOL),
                        f(
                            "synonyms",
                            array_of(
                                "DescribeConfigsSynonym",
                                f("name", STRING, "1+"),
                                f("value", STRING, "1+", nullable="1+", default=""),
                                f("source", INT8, "1+"),
                            ),
                            "1+",
                        ),
                        f("config_type", INT8, "3+"),
                        f("documentation", STRING, "3+", nullable="3+", default=""),
                    ),
                ),
            ),
        ),
    ],
    doc="each resource's configuration or error",
    api_key=32,
)
