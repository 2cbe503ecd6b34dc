"""Mini-Kafka's payloads, declared once (mini-kafka-binary-protocol.txt, "ADR-09"; FACTS.md).

A frame is ``[i32 length, counting its own 4 bytes][payload]``; the payload starts with a
type byte, which these declarations hold as the kind of a union, so one declaration
covers every request (:data:`REQUEST`) and one every reply (:data:`REPLY`):

==========  ====  ==============================================================
CONSUME     0x01  ``topic`` (i32 length + UTF-8), ``offset`` (i64), ``batch_size`` (i32)
reply       0x02  ``success`` 1: ``next_offset`` (i64), ``messages`` (i32 count, each
                  ``[u32 data length][i64 offset][data]``); ``success`` 0: ``error``
PRODUCE     0x03  ``topic``, ``data`` (i32 length + bytes)
reply       0x04  ``success`` 1: ``offset`` (i64); 0: ``error``
FLUSH       0x05  nothing
reply       0x06  ``success`` 1: nothing; 0: ``error``
==========  ====  ==============================================================

Every number is big-endian (Java's ByteBuffer); an error is ``[i32 length][UTF-8]``.  A
topic is declared as bytes: whether bytes that are not UTF-8 are refused (``doc``) or read
as U+FFFD (``real``, FACTS.md 2.10) is the codec's choice, per revision.
Values are the schema machinery's: a union is ``{"kind": k, "value": v}``, so a decoded
PRODUCE request is ``{"kind": 3, "value": {"topic": "t", "data": b"x"}}`` and its success
reply ``{"kind": 4, "value": {"kind": 1, "value": {"offset": 0}}}``; :mod:`.codec` offers
the flat form the rest of the protocol uses.
"""

from __future__ import annotations

from conformance.wire import schema
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BYTES,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT32,
    Union,
    array_of,
    f,
    struct_of,
)
from conformance.wire.schema_linked import SizedBy

MINIKAFKA = Encoding(
    name="minikafka",
    byte_order="big",
    string_length="i32",
    bytes_length="i32",
    array_count="i32",
    null_length=None,
    flexible=False,
)
"""Big-endian, every length and count an int32 (ByteBuffer.getInt), no null."""

VERSION = 0
"""Mini-Kafka has no message versions; every declaration has the one version 0."""

CONSUME_REQUEST = 0x01
CONSUME_RESPONSE = 0x02
PRODUCE_REQUEST = 0x03
PRODUCE_RESPONSE = 0x04
FLUSH_REQUEST = 0x05
FLUSH_RESPONSE = 0x06
SUCCESS, FAILURE = 1, 0

NAMES: dict[int, str] = {
    CONSUME_REQUEST: "CONSUME",
    CONSUME_RESPONSE: "CONSUME reply",
    PRODUCE_REQUEST: "PRODUCE",
    PRODUCE_RESPONSE: "PRODUCE reply",
    FLUSH_REQUEST: "FLUSH",
    FLUSH_RESPONSE: "FLUSH reply",
}
REPLY_TYPE: dict[int, int] = {
    CONSUME_REQUEST: CONSUME_RESPONSE,
    PRODUCE_REQUEST: PRODUCE_RESPONSE,
    FLUSH_REQUEST: FLUSH_RESPONSE,
}
"""The reply type of each request type (request + 1)."""

# ------------------------------------------------------------------ requests

CONSUME = struct_of(
    "Consume",
    f("topic", BYTES, doc="i32 length, then UTF-8 (decoded by the codec, per revision)"),
    f("offset", INT64, doc="the first offset wanted"),
    f("batch_size", INT32, doc="at most this many messages"),
)
PRODUCE = struct_of(
    "Produce",
    f("topic", BYTES, doc="i32 length, then UTF-8 (decoded by the codec, per revision)"),
    f("data", BYTES, doc="i32 length, then the message's bytes"),
)
FLUSH = struct_of("Flush")

# -------------------------------------------------------------------- replies

ERROR = struct_of("Error", f("error", STRING, doc="i32 length, then UTF-8"))
CONSUMED = struct_of(
    "Consumed",
    f("length", UINT32, doc="the data's length (u32: DESIGN.md, the real server)"),
    f("offset", INT64),
    f("data", SizedBy("length")),
)
CONSUME_OK = struct_of(
    "ConsumeOk",
    f("next_offset", INT64, doc="where the next CONSUME should start"),
    f("messages", array_of(CONSUMED)),
)
PRODUCE_OK = struct_of("ProduceOk", f("offset", INT64, doc="the offset the data was given"))
FLUSH_OK = struct_of("FlushOk")


def _outcome(name: str, ok: schema.Struct) -> Union:
    """``[success: 1][ok]`` or ``[success: 0][error]``."""
    return Union(name, UINT8, {SUCCESS: ok, FAILURE: ERROR})


REQUEST = schema.message(
    "Request",
    str(VERSION),
    "none",
    [
        f(
            "request",
            Union(
                "RequestType",
                UINT8,
                {CONSUME_REQUEST: CONSUME, PRODUCE_REQUEST: PRODUCE, FLUSH_REQUEST: FLUSH},
            ),
            inline=False,
        )
    ],
    "a request payload: its type byte, then the type's fields",
    encoding=MINIKAFKA,
)
REPLY = schema.message(
    "Reply",
    str(VERSION),
    "none",
    [
        f(
            "reply",
            Union(
                "ReplyType",
                UINT8,
                {
                    CONSUME_RESPONSE: _outcome("ConsumeOutcome", CONSUME_OK),
                    PRODUCE_RESPONSE: _outcome("ProduceOutcome", PRODUCE_OK),
                    FLUSH_RESPONSE: _outcome("FlushOutcome", FLUSH_OK),
                },
            ),
        )
    ],
    "a reply payload: its type byte, the success byte, then success's or error's fields",
    encoding=MINIKAFKA,
)
