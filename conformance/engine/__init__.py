"""The broker core: protocol-agnostic, I/O-free but for its optional journal.

Partition logs with high watermarks and idempotent producers (under a per-append
:class:`IdempotencePolicy`: ``STRICT`` or ``DEDUPE_ONLY``), consumer groups (members,
generations, session expiry, assignors), committed offsets, and a durable journal.  Every
front-end codes against the names re-exported here.
"""

from conformance.engine.engine import MAX_PARTITIONS, Engine
from conformance.engine.errors import EngineError
from conformance.engine.groups import ASSIGNORS, range_assign, roundrobin_assign
from conformance.engine.log import DEDUPE_ONLY, STRICT, IdempotencePolicy
from conformance.engine.records import (
    AppendResult,
    HeartbeatStatus,
    JoinResult,
    NewRecord,
    ProducerBatch,
    Record,
    TopicInfo,
)
from conformance.engine.store import JournalError

__all__ = [
    "ASSIGNORS",
    "DEDUPE_ONLY",
    "MAX_PARTITIONS",
    "STRICT",
    "AppendResult",
    "Engine",
    "EngineError",
    "HeartbeatStatus",
    "IdempotencePolicy",
    "JoinResult",
    "JournalError",
    "NewRecord",
    "ProducerBatch",
    "Record",
    "TopicInfo",
    "range_assign",
    "roundrobin_assign",
]
