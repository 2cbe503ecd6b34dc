"""The handlers of partition and cluster administration (OffsetForLeaderEpoch,
DeleteRecords, CreatePartitions, DescribeConfigs, IncrementalAlterConfigs,
DescribeCluster), by API key.
"""

from __future__ import annotations

from conformance.protocols.kafka.context import Handler

HANDLERS: dict[int, Handler] = {}
