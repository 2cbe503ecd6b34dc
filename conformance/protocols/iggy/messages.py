"""Iggy's classic request payloads and their primitives, declared once (FACTS.md sections 2-4).

Everything is little-endian (``IGGY``).  Iggy has no message versions: every declaration
has the one version ``0`` (:data:`VERSION`).  Sources are ``apache/iggy`` at f5350d999
(the tree of ``apache-iggy==0.8.0``); ``BP`` = ``core/binary_protocol/src``.

* :data:`CODES`: every command code of the SDK (BP/codes.rs), by snake_case name.
* :data:`REQUESTS`: the request payload of each command the 0.8 binding sends (FACTS.md
  section 2, "Py" column, and the frames in ``tests/iggy/captured``), SEND_MESSAGES whole:
  its metadata block (inline: its fields are the body's), the index table (derived from
  the messages' sizes, checked on decoding) and the messages (:data:`MESSAGE`, whose
  lengths sit in its 64-byte header far from what they count), all through the linked
  types of :mod:`conformance.wire.schema_linked`.
The replies are :mod:`.replies`'.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from conformance.wire import schema
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BOOL,
    BYTES,
    STRING,
    UINT8,
    UINT32,
    UINT64,
    UINT128,
    Repeated,
    Sized,
    String,
    Union,
    f,
    struct_of,
)
from conformance.wire.schema_linked import CountedBy, Derived, SizedBy

IGGY = Encoding(
    name="iggy",
    byte_order="little",
    string_length="u8",
    bytes_length="u32",
    array_count="u32",
    null_length=None,
    flexible=False,
)
"""Iggy's encoding: little-endian (BP/codec.rs), names behind a u8 length (BP
``WireName``), longer texts and bytes behind a u32 one, u32 counts, no null."""

VERSION = 0

CODES: dict[str, int] = {
    "ping": 1,
    "get_stats": 10,
    "get_snapshot_file": 11,
    "get_cluster_metadata": 12,
    "get_me": 20,
    "get_client": 21,
    "get_clients": 22,
    "get_user": 31,
    "get_users": 32,
    "create_user": 33,
    "delete_user": 34,
    "update_user": 35,
    "update_permissions": 36,
    "change_password": 37,
    "login_user": 38,
    "logout_user": 39,
    "get_personal_access_tokens": 41,
    "create_personal_access_token": 42,
    "delete_personal_access_token": 43,
    "login_with_personal_access_token": 44,
    "poll_messages": 100,
    "send_messages": 101,
    "flush_unsaved_buffer": 102,
    "get_consumer_offset": 120,
    "store_consumer_offset": 121,
    "delete_consumer_offset": 122,
    "get_stream": 200,
    "get_streams": 201,
    "create_stream": 202,
    "delete_stream": 203,
    "update_stream": 204,
    "purge_stream": 205,
    "get_topic": 300,
    "get_topics": 301,
    "create_topic": 302,
    "delete_topic": 303,
    "update_topic": 304,
    "purge_topic": 305,
    "create_partitions": 402,
    "delete_partitions": 403,
    "delete_segments": 503,
    "get_consumer_group": 600,
    "get_consumer_groups": 601,
    "create_consumer_group": 602,
    "delete_consumer_group": 603,
    "join_consumer_group": 604,
    "leave_consumer_group": 605,
}
"""Every command code of SDK 0.10.0 (BP/codes.rs; FACTS.md section 2)."""
NAMES: dict[int, str] = {code: name for name, code in CODES.items()}


def message(name: str, fields: Sequence[schema.Field], doc: str = "") -> schema.Message:
    """An Iggy declaration: one version (0), in :data:`IGGY`."""
    return schema.message(name, str(VERSION), "none", fields, doc, encoding=IGGY)


# ------------------------------------------------------------------ primitives

NUMERIC, TEXT = 1, 2
IDENTIFIER = Union("Identifier", UINT8, {NUMERIC: Sized(UINT32, "u8"), TEXT: STRING})
"""``u8 kind`` (1 numeric, 2 string), ``u8 len``, value: a u32 (len 4) or UTF-8
(BP/primitives/identifier.rs).  Values are ``{"kind": 1, "value": 7}``."""
NAME = STRING
"""A stream, topic, group or user name: ``u8 len`` + UTF-8 (BP ``WireName``)."""
CONSUMER = Union("Consumer", UINT8, {1: IDENTIFIER, 2: IDENTIFIER})
"""``u8 kind`` (1 consumer, 2 consumer group), then an Identifier (BP/primitives/consumer.rs)."""
PARTITIONING = Union(
    "Partitioning",
    UINT8,
    {
        1: Sized(struct_of("Balanced"), "u8"),
        2: Sized(UINT32, "u8"),
        3: schema.Bytes("messages_key", prefix="u8"),
    },
)
"""``u8 kind``, ``u8 len``, value: 1 balanced (len 0, value ``{}``), 2 partition id (len
4, u32), 3 messages key (len 1..255, bytes) (BP/primitives/partitioning.rs)."""
POLLING_STRATEGY = struct_of("PollingStrategy", f("kind", UINT8), f("value", UINT64))
"""``u8 kind`` (1 offset, 2 timestamp, 3 first, 4 last, 5 next), ``u64 value``
(BP/primitives/polling_strategy.rs)."""
STREAM_TOPIC = [f("stream", IDENTIFIER), f("topic", IDENTIFIER)]
OPTIONAL_PARTITION = [
    f("partition_flag", UINT8, doc="1: partition_id is given; anything else: none"),
    f("partition_id", UINT32),
]
"""``u8 flag`` + ``u32 id``; flag 1 = Some(id), any other = None, the u32 always there."""

# ------------------------------------------------------------------ messages

USER_HEADERS = message(
    "UserHeaders",
    [
        f(
            "entries",
            Repeated(
                struct_of(
                    "UserHeader",
                    f("key_kind", UINT8),
                    f("key", schema.Bytes("key", prefix="u32")),
                    f("value_kind", UINT8),
                    f("value", schema.Bytes("value", prefix="u32")),
                )
            ),
        )
    ],
    "A message's user-header block: entries of u8 kind, u32 length, bytes for the key and"
    " the value, to the end of the block (CM/wire_conversions.rs, BP/primitives/user_headers.rs)",
)
"""The user-header block.  A message keeps it raw (``headers``: bytes, so that a block
that does not parse still travels); the annotation shows its entries."""
MESSAGE = struct_of(
    "Message",
    f("checksum", UINT64, doc="0 from a client; XXH3-64 of bytes 8.. from the server"),
    f("id", UINT128, doc="0: the server assigns one"),
    f("offset", UINT64),
    f("timestamp", UINT64, doc="µs"),
    f("origin_timestamp", UINT64, doc="µs, the client's clock"),
    f("user_headers_length", UINT32),
    f("payload_length", UINT32),
    f("reserved", UINT64),
    f("payload", SizedBy("payload_length")),
    f("headers", SizedBy("user_headers_length", BYTES, shows=USER_HEADERS.body)),
)
"""A 64-byte header, then the payload, then the user-header block (payload BEFORE
headers), both lengths in the header (BP/message_layout.rs; FACTS.md section 4).  A
message is a dict of the ints (0 when left out), ``payload`` and ``headers`` (bytes)."""
INDEX_ENTRY = struct_of(
    "IndexEntry", f("zero", UINT32), f("position", UINT32), f("reserved", UINT64)
)
"""SEND_MESSAGES' index: ``u32 0``, ``u32`` the cumulative end of the messages so far
(this one included), ``u64 0``, per message (BP/requests/messages/send_messages.rs)."""


def index_of(sizes: Sequence[int]) -> list[dict[str, Any]]:
    """The index table of messages of these sizes (their cumulative ends)."""
    ends = itertools.accumulate(sizes)
    return [{"zero": 0, "position": end, "reserved": 0} for end in ends]


# ------------------------------------------------------------------ requests

EMPTY = message("Empty", [], "No payload.")
CONSUMER_OFFSET_HEAD = [f("consumer", CONSUMER), *STREAM_TOPIC, *OPTIONAL_PARTITION]
GROUP_IDS = [*STREAM_TOPIC, f("group", IDENTIFIER)]

PARTITIONS_CHANGE = [*STREAM_TOPIC, f("partitions_count", UINT32)]

REQUESTS: dict[str, schema.Message] = {
    "ping": EMPTY,
    "get_stats": EMPTY,
    "get_me": EMPTY,
    "get_client": message(
        "GetClient", [f("client_id", UINT32)], "BP/requests/system/get_client.rs"
    ),
    "get_clients": EMPTY,
    "logout_user": EMPTY,
    "get_cluster_metadata": EMPTY,
    "login_user": message(
        "LoginUser",
        [
            f("username", NAME),
            f("password", NAME),
            f("version", String(prefix="u32"), doc="the SDK's version; empty = none"),
            f("context", String(prefix="u32"), doc="empty = none"),
        ],
        "BP/requests/users/login_user.rs",
    ),
    "create_stream": message("CreateStream", [f("name", NAME)], "BP/requests/streams"),
    "get_stream": message("GetStream", [f("stream", IDENTIFIER)], "BP/requests/streams"),
    "get_streams": EMPTY,
    "delete_stream": message("DeleteStream", [f("stream", IDENTIFIER)], "BP/requests/streams"),
    "create_topic": message(
        "CreateTopic",
        [
            f("stream", IDENTIFIER),
            f("partitions_count", UINT32),
            f("compression", UINT8, doc="1 none (CM compression_algorithm.rs)"),
            f("message_expiry", UINT64, doc="µs; 0 server default, u64::MAX never"),
            f("max_topic_size", UINT64, doc="0 server default, u64::MAX unlimited"),
            f("replication_factor", UINT8),
            f("name", NAME),
        ],
        "BP/requests/topics/create_topic.rs",
    ),
    "get_topic": message("GetTopic", STREAM_TOPIC, "BP/requests/topics/get_topic.rs"),
    "get_topics": message("GetTopics", [f("stream", IDENTIFIER)], "BP/requests/topics"),
    "delete_topic": message("DeleteTopic", STREAM_TOPIC, "BP/requests/topics"),
    "create_partitions": message(
        "CreatePartitions", PARTITIONS_CHANGE, "BP/requests/partitions/create_partitions.rs"
    ),
    "delete_partitions": message(
        "DeletePartitions", PARTITIONS_CHANGE, "BP/requests/partitions/delete_partitions.rs"
    ),
    "send_messages": message(
        "SendMessages",
        [
            f(
                "metadata",
                Sized(
                    struct_of(
                        "Metadata",
                        *STREAM_TOPIC,
                        f("partitioning", PARTITIONING),
                        f("messages_count", UINT32),
                    ),
                    "u32",
                ),
                inline=True,
                doc="u32 metadata_length = the bytes of stream, topic, partitioning, count",
            ),
            f("index", Derived(CountedBy("messages_count", INDEX_ENTRY), "messages", index_of)),
            f("messages", CountedBy("messages_count", MESSAGE)),
        ],
        "BP/requests/messages/send_messages.rs (SendMessagesEncoder): body ``stream``,"
        " ``topic``, ``partitioning``, ``messages``",
    ),
    "poll_messages": message(
        "PollMessages",
        [
            f("consumer", CONSUMER),
            *STREAM_TOPIC,
            *OPTIONAL_PARTITION,
            f("strategy", POLLING_STRATEGY),
            f("count", UINT32),
            f("auto_commit", BOOL),
        ],
        "BP/requests/messages/poll_messages.rs",
    ),
    "get_consumer_offset": message("GetConsumerOffset", CONSUMER_OFFSET_HEAD),
    "store_consumer_offset": message(
        "StoreConsumerOffset", [*CONSUMER_OFFSET_HEAD, f("offset", UINT64)]
    ),
    "delete_consumer_offset": message("DeleteConsumerOffset", CONSUMER_OFFSET_HEAD),
    "get_consumer_group": message("GetConsumerGroup", GROUP_IDS),
    "get_consumer_groups": message("GetConsumerGroups", STREAM_TOPIC),
    "delete_consumer_group": message("DeleteConsumerGroup", GROUP_IDS),
    "create_consumer_group": message("CreateConsumerGroup", [*STREAM_TOPIC, f("name", NAME)]),
    "join_consumer_group": message("JoinConsumerGroup", GROUP_IDS),
    "leave_consumer_group": message("LeaveConsumerGroup", GROUP_IDS),
}
"""The request payload of every command of the document's table and every command the
0.8 binding sends, plus LOGOUT_USER and DELETE_CONSUMER_OFFSET (FACTS.md section 3)."""


def identifier(value: int | str) -> dict[str, Any]:
    """The Identifier value of a number or a name (as the SDK does: an int is numeric)."""
    return {"kind": NUMERIC if isinstance(value, int) else TEXT, "value": value}
