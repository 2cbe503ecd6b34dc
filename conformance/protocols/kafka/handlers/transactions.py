"""The handlers of transactions (InitProducerId with a transactional id,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), by API key.
"""

from __future__ import annotations

from conformance.protocols.kafka.context import Handler

HANDLERS: dict[int, Handler] = {}
