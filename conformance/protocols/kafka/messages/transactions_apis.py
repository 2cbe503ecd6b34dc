"""The APIs of transactions (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn): (key, name, message module) for
:mod:`..apis`.  InitProducerId (22) itself is declared with the core APIs.
"""

from __future__ import annotations

from types import ModuleType

from conformance.protocols.kafka.messages import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    end_txn,
    txn_offset_commit,
)

APIS: list[tuple[int, str, ModuleType]] = [
    (24, "AddPartitionsToTxn", add_partitions_to_txn),
    (25, "AddOffsetsToTxn", add_offsets_to_txn),
    (26, "EndTxn", end_txn),
    (28, "TxnOffsetCommit", txn_offset_commit),
]
