"""Iggy's classic request and reply payloads, declared once (FACTS.md sections 2-4).

Everything is little-endian (``IGGY``).  Iggy has no message versions: every declaration
has the one version ``0`` (:data:`VERSION`).  Sources are ``apache/iggy`` at f5350d999
(the tree of ``apache-iggy==0.8.0``); ``BP`` = ``core/binary_protocol/src``.

* :data:`CODES`: every command code of the SDK (BP/codes.rs), by snake_case name.
* :data:`REQUESTS`: the request payload of each command the 0.8 binding sends (FACTS.md
  section 2, "Py" column, and the frames in ``tests/iggy/captured``).  SEND_MESSAGES is
  declared up to its message count; its index table and messages follow in a layout the
  machinery cannot express (lengths far from what they count) and are the business of
  :mod:`.batch`.
* :data:`REPLIES`: the reply payload (after ``[u32 status][u32 length]``) of each of
  them.  POLL_MESSAGES is declared up to its message count, the messages are :mod:`.batch`'s.
  :data:`OPTIONAL_REPLIES`: the replies that are empty (status 0, length 0) when the
  thing asked for does not exist; the codec gives ``None`` for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.protocols.iggy.types import Repeated
from conformance.wire import schema
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BOOL,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    Sized,
    String,
    Union,
    array_of,
    f,
    struct_of,
)

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

# ------------------------------------------------------------------ requests

EMPTY = message("Empty", [], "No payload.")
CONSUMER_OFFSET_HEAD = [f("consumer", CONSUMER), *STREAM_TOPIC, *OPTIONAL_PARTITION]
GROUP_IDS = [*STREAM_TOPIC, f("group", IDENTIFIER)]

REQUESTS: dict[str, schema.Message] = {
    "ping": EMPTY,
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
            )
        ],
        "BP/requests/messages/send_messages.rs, up to the message count: the index table"
        " and the messages follow (conformance.protocols.iggy.batch)",
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
    "create_consumer_group": message("CreateConsumerGroup", [*STREAM_TOPIC, f("name", NAME)]),
    "join_consumer_group": message("JoinConsumerGroup", GROUP_IDS),
    "leave_consumer_group": message("LeaveConsumerGroup", GROUP_IDS),
}
"""The request payload of every command the 0.8 binding sends (FACTS.md section 3)."""

# ------------------------------------------------------------------ replies

STREAM_FIELDS = [
    f("id", UINT32),
    f("created_at", UINT64, doc="µs"),
    f("topics_count", UINT32),
    f("size_bytes", UINT64),
    f("messages_count", UINT64),
    f("name", NAME),
]
"""BP/responses/streams/stream_response.rs."""
TOPIC_FIELDS = [
    f("id", UINT32),
    f("created_at", UINT64),
    f("partitions_count", UINT32),
    f("message_expiry", UINT64),
    f("compression", UINT8),
    f("max_topic_size", UINT64),
    f("replication_factor", UINT8),
    f("size_bytes", UINT64),
    f("messages_count", UINT64),
    f("name", NAME),
]
"""BP/responses/streams/get_stream.rs (``TopicHeader``)."""
TOPIC = struct_of("Topic", *TOPIC_FIELDS)
PARTITION = struct_of(
    "Partition",
    f("id", UINT32),
    f("created_at", UINT64),
    f("segments_count", UINT32),
    f("current_offset", UINT64),
    f("size_bytes", UINT64),
    f("messages_count", UINT64),
)
"""BP/responses/topics/get_topic.rs."""
MEMBER = struct_of("Member", f("id", UINT32), f("partitions", array_of(UINT32)))
"""``u32 id``, ``u32 partitions_count``, that many ``u32`` partition ids."""
GROUP_FIELDS = [
    f("id", UINT32),
    f("partitions_count", UINT32),
    f("members_count", UINT32),
    f("name", NAME),
]
"""BP/responses/consumer_groups/consumer_group_response.rs."""
CLUSTER_NODE = struct_of(
    "ClusterNode",
    f("name", String(prefix="u32")),
    f("ip", String(prefix="u32")),
    f("tcp_port", UINT16),
    f("quic_port", UINT16),
    f("http_port", UINT16),
    f("websocket_port", UINT16),
    f("role", UINT8),
    f("status", UINT8),
)

STREAM_DETAILS = message(
    "StreamDetails", [*STREAM_FIELDS, f("topics", Repeated(TOPIC))], "Stream + Topic*"
)
TOPIC_DETAILS = message(
    "TopicDetails", [*TOPIC_FIELDS, f("partitions", Repeated(PARTITION))], "Topic + Partition*"
)
GROUP_DETAILS = message(
    "GroupDetails", [*GROUP_FIELDS, f("members", Repeated(MEMBER))], "Group + Member*"
)

REPLIES: dict[str, schema.Message] = {
    "ping": EMPTY,
    "login_user": message("LoginUserReply", [f("user_id", UINT32)]),
    "get_cluster_metadata": message(
        "ClusterMetadata",
        [f("name", String(prefix="u32")), f("nodes", array_of(CLUSTER_NODE))],
        "BP/responses/system/get_cluster_metadata.rs",
    ),
    "create_stream": STREAM_DETAILS,
    "get_stream": STREAM_DETAILS,
    "create_topic": TOPIC_DETAILS,
    "get_topic": TOPIC_DETAILS,
    "send_messages": EMPTY,
    "poll_messages": message(
        "PolledMessages",
        [f("partition_id", UINT32), f("current_offset", UINT64), f("messages_count", UINT32)],
        "BP/responses/messages/poll_messages.rs, up to the count: the messages follow"
        " (conformance.protocols.iggy.batch)",
    ),
    "get_consumer_offset": message(
        "ConsumerOffsetInfo",
        [f("partition_id", UINT32), f("current_offset", UINT64), f("stored_offset", UINT64)],
        "BP/responses/consumer_offsets/get_consumer_offset.rs",
    ),
    "store_consumer_offset": EMPTY,
    "delete_consumer_offset": EMPTY,
    "get_consumer_group": GROUP_DETAILS,
    "create_consumer_group": GROUP_DETAILS,
    "join_consumer_group": EMPTY,
    "leave_consumer_group": EMPTY,
}
"""The reply payload of each command in :data:`REQUESTS` (FACTS.md section 3; the create
replies follow the server's handlers, which send the details)."""
OPTIONAL_REPLIES = frozenset(
    {"get_stream", "get_topic", "get_consumer_group", "get_consumer_offset"}
)
"""Replies that are empty when the stream, topic, group or stored offset does not exist."""


def identifier(value: int | str) -> dict[str, Any]:
    """The Identifier value of a number or a name (as the SDK does: an int is numeric)."""
    return {"kind": NUMERIC if isinstance(value, int) else TEXT, "value": value}
