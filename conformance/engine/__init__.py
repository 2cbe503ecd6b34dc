"""The broker core: protocol-agnostic, I/O-free but for its optional journal.

Partition logs with high watermarks and idempotent producers (under a per-append
:class:`IdempotencePolicy`: ``STRICT`` or ``DEDUPE_ONLY``), consumer groups (members,
generations, session expiry, assignors, under a per-call :class:`GroupPolicy`; see
groups.py, "One group model"), committed offsets, and a durable journal.  Every
front-end codes against the names re-exported here.
"""

from conformance.engine.engine import MAX_PARTITIONS, Engine
from conformance.engine.errors import EngineError
from conformance.engine.groups import (
    ASSIGNORS,
    DEFAULT_GROUP_POLICY,
    CommitCheck,
    Creation,
    GroupPolicy,
    MemberIds,
    Reaping,
    range_assign,
    roundrobin_assign,
)
from conformance.engine.log import DEDUPE_ONLY, STRICT, IdempotencePolicy
from conformance.engine.records import (
    AppendResult,
    Batch,
    GroupInfo,
    HeartbeatStatus,
    JoinResult,
    MemberInfo,
    NewRecord,
    ProducerBatch,
    Record,
    TopicInfo,
)
from conformance.engine.store import JournalError

__all__ = [
    "ASSIGNORS",
    "DEDUPE_ONLY",
    "DEFAULT_GROUP_POLICY",
    "MAX_PARTITIONS",
    "STRICT",
    "AppendResult",
    "Batch",
    "CommitCheck",
    "Creation",
    "Engine",
    "EngineError",
    "GroupInfo",
    "GroupPolicy",
    "HeartbeatStatus",
    "IdempotencePolicy",
    "JoinResult",
    "JournalError",
    "MemberIds",
    "MemberInfo",
    "NewRecord",
    "ProducerBatch",
    "Reaping",
    "Record",
    "TopicInfo",
    "range_assign",
    "roundrobin_assign",
]
