"""The handler of each Kafka API key, one small module per API or family of APIs.

Each handler is ``handle(broker, request, peer)`` and opens with what it does and which
versions it serves (its module docstring).  The later families (transactions, SASL,
cluster administration, KIP-848 groups) each register theirs in their module's
``HANDLERS``, as their messages do in ``messages/<family>_apis.py``.
"""

from __future__ import annotations

from conformance.protocols.kafka.context import Handler
from conformance.protocols.kafka.handlers import (
    admin,
    api_versions,
    cluster_admin,
    consumer_groups,
    fetch,
    groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    sasl,
    transactions,
)

HANDLERS: dict[int, Handler] = {
    0: produce.handle,
    1: fetch.handle,
    2: list_offsets.handle,
    3: metadata.handle,
    8: offsets.offset_commit,
    9: offsets.offset_fetch,
    10: groups.find_coordinator,
    11: groups.join_group,
    12: groups.heartbeat,
    13: groups.leave_group,
    14: groups.sync_group,
    15: groups.describe_groups,
    16: groups.list_groups,
    18: api_versions.handle,
    19: admin.create_topics,
    20: admin.delete_topics,
    22: admin.init_producer_id,
    **transactions.HANDLERS,
    **sasl.HANDLERS,
    **cluster_admin.HANDLERS,
    **consumer_groups.HANDLERS,
}
