"""Every refusal the reference broker sends in revision real, and the requirement it rests on.

The real broker's refusals are ``ERROR: <code> [key=value ...]`` lines (FACTS 3.3); this table
holds each code the reference broker sends in revision real, the way it is sent (``error``: the
connection stays open; ``close``: it is closed after the line), the SPEC.md requirement that
refuses it, a fragment of the line that tells this situation from others of the same code
(``says``), and one request that gets it from a broker fresh but for ``setup``.
tests/cursus/test_real_refusals.py checks the table against SPEC.md (each requirement applies
to revision real), against the source (every code written there is here), against a few
thousand drawn requests (every refusal the broker sends is a row) and row by row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from conformance.protocols.cursus.messages import Batch, Message
from conformance.protocols.cursus.real_codec import encode_batch, envelope
from conformance.protocols.cursus.real_messages import RealCommand, command

SentAs = Literal["error", "close"]
Trigger = RealCommand | Batch | bytes


@dataclass(frozen=True)
class RealRefusal:
    code: str
    sent_as: SentAs
    rests_on: str
    says: str
    trigger: Trigger
    setup: tuple[RealCommand, ...] = ()
    compression: str = "none"


TOPIC = command("CREATE", topic="t", partitions=1)
TWO = command("CREATE", topic="t2", partitions=2)
JOINED = (TOPIC, command("JOIN_GROUP", topic="t", group="g", member="a"))  # a-1, generation 1
PAIR = (TWO, command("JOIN_GROUP", topic="t2", group="h", member="a"))
PAIR2 = (*PAIR, command("JOIN_GROUP", topic="t2", group="h", member="b"))  # a-1 [0], b-2 [1]
ONE = (Message(seq_num=1, payload=b"x"),)
G1 = {"topic": "t", "group": "g", "member": "a-1", "generation": 1}


def _batch(topic: str = "t", acks: str = "1", partition: str = "0", n: int = 1) -> Batch:
    return Batch(topic, partition, acks, False, 1, 1, ONE[:n])


REFUSALS: tuple[RealRefusal, ...] = (
    # --------------------------------------------------- before a command runs
    RealRefusal("decode_failed", "error", "CUR-RTEXT-10", "data too short", b"\x00"),
    RealRefusal("decode_failed", "error", "CUR-RTEXT-10", "invalid topic length", b"\x00\x09LIST"),
    RealRefusal("malformed_input", "close", "CUR-RTEXT-10", "missing_topic_or_payload",
                envelope("SUBSCRIBE t g")),
    RealRefusal("batch_decode_failed", "error", "CUR-RBATCH-2", "reason=",
                encode_batch(_batch())[:-3]),
    RealRefusal("decompress_failed", "error", "CUR-RCONV-6", "reason=", b"\x1f\x8b\x08\x00junk",
                compression="gzip"),
    RealRefusal("unknown_command", "error", "CUR-RTEXT-10", "command=", b"LIST x"),
    RealRefusal("not_implemented", "error", "CUR-RCONV-1", "command=",
                command("PROTOCOL_INFO")),
    # --------------------------------------------------------------- batches
    RealRefusal("invalid_acks", "error", "CUR-RBATCH-3", "value=", _batch(acks="2"), (TOPIC,)),
    RealRefusal("topic_not_found", "error", "CUR-RBATCH-4", "topic=", _batch("nowhere")),
    RealRefusal("partition_not_found", "error", "CUR-RBATCH-4", "partition=",
                _batch(partition="4"), (TOPIC,)),
    RealRefusal("broker_error", "error", "CUR-RBATCH-5", "empty batch messages",
                _batch(n=0), (TOPIC,)),
    # ---------------------------------------------------------------- topics
    RealRefusal("missing_topic", "error", "CUR-RERR-4", "expected=",
                command("CREATE", partitions=1)),
    RealRefusal("invalid_topic_name", "error", "CUR-RERR-3", "reason=",
                command("CREATE", topic="a/b")),
    RealRefusal("invalid_partitions", "error", "CUR-RERR-3", "positive integer",
                command("CREATE", topic="t", partitions=0)),
    RealRefusal("create_topic_failed", "error", "CUR-RTEXT-4", "cannot decrease",
                command("CREATE", topic="t2", partitions=1), (TWO,)),
    RealRefusal("broker_error", "error", "CUR-RCONV-7", "partitions per topic",
                command("CREATE", topic="huge", partitions=10_001)),
    RealRefusal("topic_not_found", "error", "CUR-RERR-5", "topic=",
                command("DELETE", topic="nowhere")),
    RealRefusal("missing_topic", "error", "CUR-RERR-4", "command=",
                command("METADATA", partition=0)),
    RealRefusal("missing_coordinator_key", "error", "CUR-RERR-4", "command=",
                command("FIND_COORDINATOR", groups="g")),
    # ----------------------------------------------------------- reading
    RealRefusal("invalid_consume_syntax", "error", "CUR-RERR-4", "invalid_consume_syntax",
                command("CONSUME", topic="t", partition=0, offset=0)),
    RealRefusal("invalid_stream_syntax", "error", "CUR-RERR-4", "invalid_stream_syntax",
                command("STREAM", topic="t", partition=0)),
    RealRefusal("command_failed", "error", "CUR-RERR-4", "invalid partition value",
                command("CONSUME", topic="t", partition="x", offset=0, member="m"), (TOPIC,)),
    RealRefusal("command_failed", "error", "CUR-RERR-4", "invalid offset value",
                command("CONSUME", topic="t", partition=0, offset=-1, member="m"), (TOPIC,)),
    RealRefusal("command_failed", "error", "CUR-RERR-4", "invalid generation value",
                command("STREAM", topic="t", partition=0, group="g", generation="x"), (TOPIC,)),
    RealRefusal("command_failed", "error", "CUR-RERR-5", "does not exist",
                command("CONSUME", topic="nowhere", partition=0, offset=0, member="m")),
    RealRefusal("command_failed", "error", "CUR-RERR-5", "out of range",
                command("CONSUME", topic="t", partition=3, offset=0, member="m"), (TOPIC,)),
    # ---------------------------------------------------------------- groups
    RealRefusal("missing_topic", "error", "CUR-RERR-4", "command=",
                command("JOIN_GROUP", group="g", member="a")),
    RealRefusal("missing_group", "error", "CUR-RERR-4", "command=",
                command("HEARTBEAT", topic="t", member="a-1", generation=1), JOINED),
    RealRefusal("missing_member", "error", "CUR-RERR-4", "command=",
                command("JOIN_GROUP", topic="t", group="g"), (TOPIC,)),
    RealRefusal("missing_offset", "error", "CUR-RERR-4", "command=",
                command("COMMIT_OFFSET", topic="t", group="g", partition=0, member="a-1",
                        generation=1), JOINED),
    RealRefusal("missing_generation", "error", "CUR-RERR-4", "command=",
                command("LEAVE_GROUP", topic="t", group="g", member="a-1"), JOINED),
    RealRefusal("invalid_generation", "error", "CUR-RERR-4", "command=",
                command("SYNC_GROUP", **{**G1, "generation": "x"}), JOINED),
    RealRefusal("topic_not_found", "error", "CUR-RERR-5", "topic=",
                command("JOIN_GROUP", topic="nowhere", group="new", member="m")),
    RealRefusal("topic_not_assigned_to_group", "error", "CUR-RGROUP-8", "expected=",
                command("HEARTBEAT", **{**G1, "topic": "t2"}), (*JOINED, TWO)),
    RealRefusal("group_not_found", "error", "CUR-RGROUP-8", "group=",
                command("SYNC_GROUP", **{**G1, "group": "nogroup"}), JOINED),
    RealRefusal("member_not_found", "error", "CUR-RGROUP-8", "member=",
                command("HEARTBEAT", **{**G1, "member": "ghost-1"}), JOINED),
    RealRefusal("GEN_MISMATCH", "error", "CUR-RGROUP-3", "requested=",
                command("HEARTBEAT", **{**G1, "generation": 9}), JOINED),
    RealRefusal("invalid_partition", "error", "CUR-RERR-4", "invalid_partition",
                command("COMMIT_OFFSET", **G1, partition="x", offset=1), JOINED),
    RealRefusal("invalid_offset", "error", "CUR-RERR-4", "invalid_offset",
                command("COMMIT_OFFSET", **G1, partition=0, offset="-1"), JOINED),
    RealRefusal("NOT_OWNER", "error", "CUR-RGROUP-6", "partition=",
                command("COMMIT_OFFSET", topic="t2", group="h", member="a-1", generation=2,
                        partition=1, offset=1), PAIR2),
    RealRefusal("offset_regression", "error", "CUR-RGROUP-6", "offset regression",
                command("COMMIT_OFFSET", **G1, partition=0, offset=3),
                (*JOINED, command("COMMIT_OFFSET", **G1, partition=0, offset=5))),
    RealRefusal("broker_error", "error", "CUR-RCONV-7", "int64 maximum",
                command("COMMIT_OFFSET", **G1, partition=0, offset=2**63), JOINED),
    RealRefusal("invalid_batch_commit_entry", "error", "CUR-RGROUP-7", "entry=",
                command("BATCH_COMMIT", "0-4", **G1), JOINED),
    RealRefusal("invalid_partition", "error", "CUR-RGROUP-7", "entry=",
                command("BATCH_COMMIT", "0:4", **G1), JOINED),
    RealRefusal("invalid_offset", "error", "CUR-RGROUP-7", "entry=",
                command("BATCH_COMMIT", "P0:x", **G1), JOINED),
    RealRefusal("duplicate_partition", "error", "CUR-RGROUP-7", "partition=",
                command("BATCH_COMMIT", "P0:4,P0:5", **G1), JOINED),
    RealRefusal("missing_partition", "error", "CUR-RERR-4", "command=",
                command("FETCH_OFFSET", topic="t", group="g"), JOINED),
)  # fmt: skip


def codes() -> set[str]:
    return {r.code for r in REFUSALS}


def rows_for(code: str, sent_as: SentAs, text: str) -> list[RealRefusal]:
    """The rows a refusal sent so (``text``: the whole line after ``ERROR: ``) can be."""
    return [r for r in REFUSALS if (r.code, r.sent_as) == (code, sent_as) and r.says in text]
