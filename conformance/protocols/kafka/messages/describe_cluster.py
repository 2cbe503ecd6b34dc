"""DescribeCluster (key 60): the cluster id, the controller and the brokers (or, from v1,
the controllers, by endpoint type, KIP-919), and the client's authorized operations on
the cluster when asked for.

Versions: 0-1, flexible 0+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT8, INT16, INT32, STRING, array_of, f

REQUEST = message(
    "DescribeClusterRequest",
    "0-1",
    "0+",
    [
        f("include_cluster_authorized_operations", BOOL),
        f("endpoint_type", INT8, "1+", default=1),
    ],
    doc="what to describe",
    api_key=60,
)

RESPONSE = message(
    "DescribeClusterResponse",
    "0-1",
    "0+",
    [
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=None),
        f("endpoint_type", INT8, "1+", default=1),
        f("cluster_id", STRING),
        f("controller_id", INT32, default=-1),
        f(
            "brokers",
            array_of(
                "DescribeClusterBroker",
                f("broker_id", INT32),
                f("host", STRING),
                f("port", INT32),
                f("rack", STRING, nullable="0+", default=None),
            ),
        ),
        f("cluster_authorized_operations", INT32, default=-2147483648),
    ],
    doc="the cluster and its brokers",
    api_key=60,
)
