"""Every refusal the Cursus reference broker can send, and the requirement it rests on.

DESIGN.md: "The reference broker refuses only what a requirement or a written convention
refuses; a convention never refuses what the document allows" -- SDK authors validate
their clients against this broker, so a refusal of a legal request is a bug in the tool.
This module writes the promise down, one row per situation the broker refuses:

* ``code``: the word the client sees: the first word after ``ERROR:``, the first word of
  the ``error`` field of an ack with status ERROR, or the special reply GEN_MISMATCH;
* ``sent_as``: ``error`` (an ``ERROR:`` reply, the connection stays open), ``close`` (an
  ``ERROR:`` reply, then the connection is closed), ``ack`` (a JSON ack with status
  ERROR) or ``special`` (a GEN_MISMATCH reply);
* ``rests_on``: the SPEC.md requirement that refuses it; a MAY (a convention) says in its
  own text what it refuses;
* ``says``: a fragment of the description (the text after the code) that this situation's
  refusals carry and tells it from the other situations sent with the same code; the
  descriptions are ours, so the tests can hold every refusal seen to a row;
* ``engine``: the engine error code behind it, when the engine is the one refusing;
* ``trigger``: one request that gets exactly this code from a broker fresh but for
  ``setup`` (run first, in order), configured with ``compression`` and ``frame_limit``.

``INTERNAL`` lists the codes found in the codec, the handler and the engine that no request
can make the broker send, each with the reason.  tests/cursus/test_refusals.py checks the
table against SPEC.md, against the source (every code in it is here), against a few
thousand fuzz-like requests (every refusal the broker sends is a row: its code, the way it
is sent and a description holding the row's ``says``) and row by row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from conformance.protocols.cursus.codec import gzip_body
from conformance.protocols.cursus.messages import FRAME_LIMIT, Batch, Command, Message

SentAs = Literal["error", "close", "ack", "special"]


@dataclass(frozen=True)
class Wire:
    """Bytes as they arrive on the connection (not one framed payload)."""

    data: bytes


Trigger = Command | Batch | bytes | Wire
"""A Command or Batch is encoded and framed; bytes are a frame payload, framed as they are."""


@dataclass(frozen=True)
class Refusal:
    code: str
    sent_as: SentAs
    rests_on: str
    when: str
    says: str
    trigger: Trigger
    setup: tuple[Command, ...] = ()
    engine: str | None = None
    compression: str = "none"
    frame_limit: int = FRAME_LIMIT


TOPIC = Command("CREATE", ("t", 1))
JOINED = (TOPIC, Command("JOIN_GROUP", ("t", "g", "a")))  # member a-1, generation 1
REJOINED = (*JOINED, Command("JOIN_GROUP", ("t", "g", "b")))  # a-1 is at a stale generation
ONE = (Message(payload=b"x"),)

REFUSALS: tuple[Refusal, ...] = (
    # ------------------------------------------------------------ text commands
    Refusal(
        code="INVALID_UTF8",
        sent_as="error",
        rests_on="CUR-TEXT-1",
        when="a text command that is not UTF-8",
        says="is not valid UTF-8",
        trigger=b"LIST \xff",
    ),
    Refusal(
        code="EMPTY_COMMAND",
        sent_as="error",
        rests_on="CUR-ERR-3",
        when="an empty payload: no command at all",
        says="empty command",
        trigger=b"",
    ),
    Refusal(
        code="UNKNOWN_COMMAND",
        sent_as="error",
        rests_on="CUR-ERR-3",
        when="a first field that is no command",
        says="unknown command",
        trigger=b"PUBLISH t hello",
    ),
    Refusal(
        code="BAD_ARGUMENTS",
        sent_as="error",
        rests_on="CUR-ERR-3",
        when="a command with the wrong number of fields",
        says="argument(s)",
        trigger=b"CREATE t",
    ),
    Refusal(
        code="BAD_ARGUMENTS",
        sent_as="error",
        rests_on="CUR-TEXT-1",
        when="fields not separated by a single space (an empty field)",
        says="single space",
        trigger=b"CREATE  t 1",
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-ERR-3",
        when="a partition, offset, count or generation that is not a decimal integer (-?[0-9]+)",
        says="is not a decimal integer",
        trigger=b"CONSUME t x 0",
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-ERR-3",
        when="a number outside the int64 range (offsets are int64 in the batch layout): "
        "a malformed field, no int64 holds it",
        says="outside the int64 range",
        trigger=b"CONSUME t 0 -9223372036854775809",
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-CONV-6",
        when="an offsetsPayload item that is not p:o",
        says="is not <partition>:<offset>",
        trigger=b"BATCH_COMMIT t g a-1 1 0=5",
        setup=JOINED,
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-CONV-6",
        when="an offsetsPayload naming a partition twice",
        says="more than once",
        trigger=b"BATCH_COMMIT t g a-1 1 0:5,00:6",
        setup=JOINED,
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-CONV-11",
        when="CREATE with a partition count below 1: a topic needs at least one partition",
        says="at least one partition",
        trigger=Command("CREATE", ("t", -3)),
        engine="INVALID_PARTITIONS",
    ),
    Refusal(
        code="BAD_ARGUMENT",
        sent_as="error",
        rests_on="CUR-CONV-11",
        when="CREATE with more partitions than the broker's limit (Engine max_partitions, "
        "serve --max-partitions; 10000 by default)",
        says="partitions per topic",
        trigger=Command("CREATE", ("t", 10_001)),
        engine="INVALID_PARTITIONS",
    ),
    Refusal(
        code="TOPIC_EXISTS",
        sent_as="error",
        rests_on="CUR-CONV-12",
        when="CREATE of a topic that already exists (the topic is left as it is)",
        says="already exists",
        trigger=TOPIC,
        setup=(TOPIC,),
        engine="TOPIC_EXISTS",
    ),
    Refusal(
        code="UNKNOWN_TOPIC",
        sent_as="error",
        rests_on="CUR-TEXT-11",
        when="a command on a topic that does not exist",
        says="there is no topic",
        trigger=Command("CONSUME", ("nowhere", 0, 0)),
        engine="UNKNOWN_TOPIC",
    ),
    Refusal(
        code="UNKNOWN_PARTITION",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="a command naming a partition the topic does not have",
        says="there is no partition",
        trigger=Command("CONSUME", ("t", 7, 0)),
        setup=(TOPIC,),
        engine="UNKNOWN_PARTITION",
    ),
    Refusal(
        code="UNKNOWN_PARTITION",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="a command naming a partition below 0 (partitions are numbered from 0)",
        says="there is no partition",
        trigger=Command("COMMIT", ("t", "g", -1, 0)),
        setup=(TOPIC,),
        engine="UNKNOWN_PARTITION",
    ),
    Refusal(
        code="OFFSET_OUT_OF_RANGE",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="CONSUME, STREAM, COMMIT or BATCH_COMMIT at an offset below 0: offsets number "
        "the log from 0 (an offset past the end is served)",
        says="below 0: offsets number the log from 0",
        trigger=Command("CONSUME", ("t", 0, -1)),
        setup=(TOPIC,),
        engine="OFFSET_OUT_OF_RANGE",
    ),
    Refusal(
        code="UNKNOWN_GROUP",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="SYNC_GROUP of a group that does not exist",
        says="there is no group",
        trigger=Command("SYNC_GROUP", ("t", "nogroup", "a-1", 1)),
        setup=(TOPIC,),
        engine="UNKNOWN_GROUP",
    ),
    Refusal(
        code="UNKNOWN_MEMBER",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="HEARTBEAT of a member the group lacks",
        says="has no member",
        trigger=Command("HEARTBEAT", ("t", "g", "a", "ghost-1", 1)),
        setup=JOINED,
        engine="UNKNOWN_MEMBER",
    ),
    Refusal(
        code="UNKNOWN_MEMBER",
        sent_as="error",
        rests_on="CUR-ERR-6",
        when="LEAVE_GROUP of a consumer id that never joined the group",
        says="joined as",
        trigger=Command("LEAVE_GROUP", ("t", "g", "ghost")),
        setup=JOINED,
    ),
    Refusal(
        code="GEN_MISMATCH",
        sent_as="special",
        rests_on="CUR-GROUP-6",
        when="SYNC_GROUP or BATCH_COMMIT at a generation other than the group's",
        says="generation=",
        trigger=Command("SYNC_GROUP", ("t", "g", "a-1", 1)),
        setup=REJOINED,
        engine="GENERATION_MISMATCH",
    ),
    Refusal(
        code="GEN_MISMATCH",
        sent_as="special",
        rests_on="CUR-ERR-6",
        when="HEARTBEAT at a generation the group has not reached",
        says="generation=",
        trigger=Command("HEARTBEAT", ("t", "g", "a", "a-1", 9)),
        setup=JOINED,
        engine="GENERATION_MISMATCH",
    ),
    Refusal(
        code="GEN_MISMATCH",
        sent_as="special",
        rests_on="CUR-ERR-6",
        when="HEARTBEAT (or SYNC_GROUP, BATCH_COMMIT) at a generation below 0, which no "
        "group has (not an out-of-date one: no REBALANCE_REQUIRED)",
        says="generation=",
        trigger=Command("HEARTBEAT", ("t", "g", "a", "a-1", -1)),
        setup=JOINED,
        engine="GENERATION_MISMATCH",
    ),
    # ------------------------------------------------------------------ batches
    Refusal(
        code="MALFORMED_BATCH",
        sent_as="ack",
        rests_on="CUR-BATCH-6",
        when="a batch that does not fit the layout (here: it ends inside the topic length)",
        says="does not fit the layout",
        trigger=b"\xba\x7c\x00",
    ),
    Refusal(
        code="BAD_PARTITION",
        sent_as="ack",
        rests_on="CUR-BATCH-8",
        when="a batch partition that is not a decimal integer (-?[0-9]+)",
        says="is not a decimal number",
        trigger=Batch("t", "x1", messages=ONE),
        setup=(TOPIC,),
    ),
    Refusal(
        code="UNKNOWN_PARTITION",
        sent_as="ack",
        rests_on="CUR-BATCH-8",
        when="a batch for a partition the topic does not have (below 0, or past int64, too)",
        says="there is no partition",
        trigger=Batch("t", "9223372036854775808", messages=ONE),
        setup=(TOPIC,),
        engine="UNKNOWN_PARTITION",
    ),
    Refusal(
        code="UNKNOWN_TOPIC",
        sent_as="ack",
        rests_on="CUR-ERR-6",
        when="a batch for a topic that does not exist",
        says="there is no topic",
        trigger=Batch("nowhere", messages=ONE),
        engine="UNKNOWN_TOPIC",
    ),
    # -------------------------------------------------------- framing, compression
    Refusal(
        code="FRAME_TOO_LARGE",
        sent_as="close",
        rests_on="CUR-FRAME-3",
        when="a length prefix over the 64 MiB limit (refused from the prefix alone)",
        says="exceeds the limit",
        trigger=Wire((FRAME_LIMIT + 1).to_bytes(4, "big")),
    ),
    Refusal(
        code="FRAME_TOO_LARGE",
        sent_as="error",
        rests_on="CUR-COMP-4",
        when="a gzip body that inflates past the frame limit (here a 1 KiB limit)",
        says="inflates past",
        trigger=gzip_body(bytes(1025)),
        compression="gzip",
        frame_limit=1024,
    ),
    Refusal(
        code="BAD_COMPRESSION",
        sent_as="error",
        rests_on="CUR-COMP-3",
        when="a gzip body that does not inflate (corrupt, truncated, or bytes after it)",
        says="gzip body",
        trigger=b"\x1f\x8b\x08\x00junk",
        compression="gzip",
    ),
    Refusal(
        code="BAD_MAGIC",
        sent_as="error",
        rests_on="CUR-COMP-3",
        when="a gzip body whose content does not begin with 0xBA7C",
        says="does not begin with the batch magic",
        trigger=gzip_body(b"LIST"),
        compression="gzip",
    ),
)

INTERNAL: dict[str, str] = {
    "BAD_FRAME": "sent for a framing error other than an oversize prefix; the Cursus deframer "
    "(a length that excludes itself) has no other",
    "BAD_ACK": "raised when decoding an ack, which only a client does",
    "BAD_REPLY": "raised when decoding a reply, which only a client does",
    "INVALID_ARGUMENT": "engine: an empty name, or an append without records; the parser "
    "refuses empty fields, a batch topic is looked up first (UNKNOWN_TOPIC), and a batch "
    "without messages is acknowledged without an append",
    "OUT_OF_ORDER_SEQUENCE": "engine: a rule of the STRICT idempotence policy; Cursus batches "
    "are appended under DEDUPE_ONLY (the document states no sequence rule)",
    "PRODUCER_FENCED": "engine: a rule of the STRICT idempotence policy; Cursus batches are "
    "appended under DEDUPE_ONLY (a lower epoch is stored)",
    "CLOSED": "engine: a change after the engine was closed at shutdown, when the server no "
    "longer serves requests",
    "GROUP_EXISTS": "engine: create_group, called only by a front-end whose groups are created "
    "explicitly (Iggy); a Cursus group is created by its first JOIN_GROUP, SUBSCRIBE or commit",
    "PARTITION_NOT_OWNED": "engine: the OWNERSHIP commit check of a group policy (V1's COMMIT); "
    "Cursus commits under the default policy, which checks member and generation only",
}


def codes() -> set[str]:
    """Every code of the table, sent or internal."""
    return {r.code for r in REFUSALS} | set(INTERNAL)


def sent_codes() -> set[str]:
    return {r.code for r in REFUSALS}


def rows_for(code: str, sent_as: SentAs, description: str) -> list[Refusal]:
    """The rows a refusal sent so (``description``: all the text after ``ERROR:``, the ack's
    error, or the special reply) can be: same code, same way, the row's ``says`` in it."""
    return [r for r in REFUSALS if (r.code, r.sent_as) == (code, sent_as) and r.says in description]
