"""The APIs of the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
ConsumerGroupDescribe): (key, name, message module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

APIS: list[tuple[int, str, ModuleType]] = []
