"""DeleteTopics (key 20): delete topics named (up to v5) by name, (v6) by name or id.

Versions: 0-6, flexible 4+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, INT32, STRING, UUID, array_of, f

REQUEST = message(
    "DeleteTopicsRequest",
    "0-6",
    "4+",
    [
        f(
            "topics",
            array_of(
                "DeleteTopicState",
                f("name", STRING, "6+", nullable="6+"),
                f("topic_id", UUID, "6+"),
            ),
            "6+",
        ),
        f("topic_names", array_of(STRING), "0-5"),
        f("timeout_ms", INT32),
    ],
    doc="topics to delete",
    api_key=20,
)

RESPONSE = message(
    "DeleteTopicsResponse",
    "0-6",
    "4+",
    [
        f("throttle_time_ms", INT32, "1+"),
        f(
            "responses",
            array_of(
                "DeletableTopicResult",
                f("name", STRING, nullable="6+", default=""),
                f("topic_id", UUID, "6+"),
                f("error_code", INT16),
                f("error_message", STRING, "5+", nullable="5+"),
            ),
        ),
    ],
    doc="each topic's result",
    api_key=20,
)
