"""The handlers of partition and cluster administration, by API key: DescribeCluster
(key 60) here; OffsetForLeaderEpoch, DeleteRecords and CreatePartitions in
:mod:`.partition_admin`; DescribeConfigs and IncrementalAlterConfigs in
:mod:`.config_admin`.

Behaviour / version notes (DescribeCluster v0-1), as Apache Kafka's
``AuthHelper.computeDescribeClusterResponse`` answers on a broker listener: the cluster
id, the controller id (a KRaft broker names an alive broker, here the one node), this
broker (node id, host, port, rack null), and the cluster's authorized operations when
asked for: with no authorizer, every operation a cluster supports (CREATE, ALTER,
DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE: bits 5 and
7-12), else the schema's default -2147483648.  v1's endpoint type 1 (brokers) is served;
2 (controllers) is MISMATCHED_ENDPOINT_TYPE, any other UNSUPPORTED_ENDPOINT_TYPE
(INVALID_REQUEST at v0), with only the error set.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import NODE_ID, Broker, Handler
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.handlers import config_admin, partition_admin

BROKERS, CONTROLLERS = 1, 2
"""Endpoint types (KIP-919)."""
NOT_ASKED = -2147483648
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
"""Kafka's ``AclEntry.supportedOperations(CLUSTER)`` as a bit field (8096)."""


def describe_cluster(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body, version = request.body, request.api_version
    reply: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKERS,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": NOT_ASKED,
    }
    wanted = int(body.get("endpoint_type", BROKERS))
    if wanted not in (BROKERS, CONTROLLERS):
        error = "INVALID_REQUEST" if version == 0 else "UNSUPPORTED_ENDPOINT_TYPE"
        return {
            **reply,
            "error_code": code(error),
            "error_message": f"Unsupported endpoint type {wanted}",
        }
    if wanted == CONTROLLERS:
        error = "INVALID_REQUEST" if version == 0 else "MISMATCHED_ENDPOINT_TYPE"
        return {
            **reply,
            "error_code": code(error),
            "error_message": "The request was sent to an endpoint of type BROKER, but we wanted "
            "an endpoint of type CONTROLLER",
        }
    asked = bool(body.get("include_cluster_authorized_operations", False))
    return {
        **reply,
        "cluster_id": broker.cluster_id,
        "controller_id": NODE_ID,
        "brokers": [{"broker_id": NODE_ID, "host": broker.host, "port": broker.port, "rack": None}],
        "cluster_authorized_operations": CLUSTER_OPERATIONS if asked else NOT_ASKED,
    }


HANDLERS: dict[int, Handler] = {
    21: partition_admin.delete_records,
    23: partition_admin.offset_for_leader_epoch,
    32: config_admin.describe_configs,
    37: partition_admin.create_partitions,
    44: config_admin.incremental_alter_configs,
    60: describe_cluster,
}
