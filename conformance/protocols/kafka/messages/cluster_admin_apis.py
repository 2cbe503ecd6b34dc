"""The APIs of partition and cluster administration (OffsetForLeaderEpoch, DeleteRecords,
CreatePartitions, DescribeConfigs, IncrementalAlterConfigs, DescribeCluster): (key,
name, message module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

from conformance.protocols.kafka.messages import (
    create_partitions,
    delete_records,
    describe_cluster,
    describe_configs,
    incremental_alter_configs,
    offset_for_leader_epoch,
)

APIS: list[tuple[int, str, ModuleType]] = [
    (21, "DeleteRecords", delete_records),
    (23, "OffsetForLeaderEpoch", offset_for_leader_epoch),
    (32, "DescribeConfigs", describe_configs),
    (37, "CreatePartitions", create_partitions),
    (44, "IncrementalAlterConfigs", incremental_alter_configs),
    (60, "DescribeCluster", describe_cluster),
]
