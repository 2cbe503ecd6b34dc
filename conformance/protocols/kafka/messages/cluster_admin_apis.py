"""The APIs of partition and cluster administration (OffsetForLeaderEpoch, DeleteRecords,
CreatePartitions, DescribeConfigs, IncrementalAlterConfigs, DescribeCluster): (key,
name, message module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

APIS: list[tuple[int, str, ModuleType]] = []
