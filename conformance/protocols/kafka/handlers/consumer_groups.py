"""The handlers of the consumer group protocol of KIP-848 (ConsumerGroupHeartbeat,
ConsumerGroupDescribe), by API key.
"""

from __future__ import annotations

from conformance.protocols.kafka.context import Handler

HANDLERS: dict[int, Handler] = {}
