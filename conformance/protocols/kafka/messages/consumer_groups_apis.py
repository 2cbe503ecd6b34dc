"""The APIs of the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
ConsumerGroupDescribe): (key, name, message module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

from conformance.protocols.kafka.messages import consumer_group_describe, consumer_group_heartbeat

APIS: list[tuple[int, str, ModuleType]] = [
    (68, "ConsumerGroupHeartbeat", consumer_group_heartbeat),
    (69, "ConsumerGroupDescribe", consumer_group_describe),
]
