"""The APIs of transactions (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn): (key, name, message module) for
:mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

APIS: list[tuple[int, str, ModuleType]] = []
