"""ApiVersions (key 18): which APIs, and which versions of each, the broker serves; in
the flexible versions also the client's software name and version, and the broker's
feature flags as tagged fields.

Versions: 0-4, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT16, INT32, INT64, STRING, array_of, f

REQUEST = message(
    "ApiVersionsRequest",
    "0-4",
    "3+",
    [
        f("client_software_name", STRING, "3+"),
        f("client_software_version", STRING, "3+"),
    ],
    doc="asks which APIs and versions the broker serves",
    api_key=18,
)

RESPONSE = message(
    "ApiVersionsResponse",
    "0-4",
    "3+",
    [
        f("error_code", INT16),
        f(
            "api_keys",
            array_of(
                "ApiVersion",
                f("api_key", INT16),
                f("min_version", INT16),
                f("max_version", INT16),
            ),
        ),
        f("throttle_time_ms", INT32, "1+"),
        f(
            "supported_features",
            array_of(
                "SupportedFeatureKey",
                f("name", STRING, "3+"),
                f("min_version", INT16, "3+"),
                f("max_version", INT16, "3+"),
            ),
            "3+",
            tag=0,
            tagged="3+",
        ),
        f("finalized_features_epoch", INT64, "3+", tag=1, tagged="3+", default=-1),
        f(
            "finalized_features",
            array_of(
                "FinalizedFeatureKey",
                f("name", STRING, "3+"),
                f("max_version_level", INT16, "3+"),
                f("min_version_level", INT16, "3+"),
            ),
            "3+",
            tag=2,
            tagged="3+",
        ),
        f("zk_migration_ready", BOOL, "3+", tag=3, tagged="3+"),
    ],
    doc="the APIs and version ranges the broker serves",
    api_key=18,
)
