"""Iggy's classic reply payloads, declared once (FACTS.md section 3): the payload after a
reply's ``[u32 status][u32 length]``, for each command of :data:`.messages.REQUESTS`.

* :data:`REPLIES`: by command name; POLL_MESSAGES' messages are :data:`.messages.MESSAGE`,
  as SEND_MESSAGES carries them.  The create replies follow the server's handlers, which
  send the details (FACTS.md section 3, note), not the "empty" their response types name.
* :data:`OPTIONAL_REPLIES`: the replies that are empty (status 0, length 0) when the thing
  asked for does not exist; the codec gives ``None`` for them.

Reply records are ``BP/responses/**`` of ``apache/iggy`` at f5350d999.
"""

from __future__ import annotations

from conformance.protocols.iggy.messages import EMPTY, MESSAGE, NAME, message
from conformance.wire import schema
from conformance.wire.schema import (
    FLOAT32,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    Repeated,
    String,
    array_of,
    f,
    struct_of,
)
from conformance.wire.schema_linked import CountedBy

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

STREAM = struct_of("Stream", *STREAM_FIELDS)
GROUP = struct_of("Group", *GROUP_FIELDS)
CLIENT_FIELDS = [
    f("client_id", UINT32),
    f("user_id", UINT32),
    f("transport", UINT8, doc="1 tcp, 2 quic, 3 http, 4 websocket"),
    f("address", String(prefix="u32")),
    f("consumer_groups_count", UINT32),
]
"""BP/responses/clients/client_response.rs."""
CLIENT = struct_of("Client", *CLIENT_FIELDS)
CLIENT_GROUP = struct_of(
    "ClientGroup", f("stream_id", UINT32), f("topic_id", UINT32), f("group_id", UINT32)
)
CLIENT_DETAILS = message(
    "ClientDetails",
    [*CLIENT_FIELDS, f("consumer_groups", Repeated(CLIENT_GROUP))],
    "BP/responses/clients/get_client.rs: Client, then its groups",
)
CACHE = struct_of(
    "Cache",
    f("stream_id", UINT32),
    f("topic_id", UINT32),
    f("partition_id", UINT32),
    f("hits", UINT64),
    f("misses", UINT64),
    f("hit_ratio", FLOAT32),
)
STATS = message(
    "Stats",
    [
        f("process_id", UINT32),
        f("cpu_usage", FLOAT32),
        f("total_cpu_usage", FLOAT32),
        f("memory_usage", UINT64),
        f("total_memory", UINT64),
        f("available_memory", UINT64),
        f("run_time", UINT64),
        f("start_time", UINT64),
        f("read_bytes", UINT64),
        f("written_bytes", UINT64),
        f("messages_size_bytes", UINT64),
        f("streams_count", UINT32),
        f("topics_count", UINT32),
        f("partitions_count", UINT32),
        f("segments_count", UINT32),
        f("messages_count", UINT64),
        f("clients_count", UINT32),
        f("consumer_groups_count", UINT32),
        f("hostname", String(prefix="u32")),
        f("os_name", String(prefix="u32")),
        f("os_version", String(prefix="u32")),
        f("kernel_version", String(prefix="u32")),
        f("iggy_server_version", String(prefix="u32")),
        f("iggy_server_semver", UINT32, doc="0: none"),
        f("caches", array_of(CACHE)),
        f("threads_count", UINT32),
        f("free_disk_space", UINT64),
        f("total_disk_space", UINT64),
    ],
    "BP/responses/system/get_stats.rs",
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
    "get_stats": STATS,
    "get_me": CLIENT_DETAILS,
    "get_client": CLIENT_DETAILS,
    "get_clients": message("Clients", [f("clients", Repeated(CLIENT))]),
    "logout_user": EMPTY,
    "login_user": message("LoginUserReply", [f("user_id", UINT32)]),
    "get_cluster_metadata": message(
        "ClusterMetadata",
        [f("name", String(prefix="u32")), f("nodes", array_of(CLUSTER_NODE))],
        "BP/responses/system/get_cluster_metadata.rs",
    ),
    "create_stream": STREAM_DETAILS,
    "get_stream": STREAM_DETAILS,
    "get_streams": message("Streams", [f("streams", Repeated(STREAM))]),
    "delete_stream": EMPTY,
    "create_topic": TOPIC_DETAILS,
    "get_topic": TOPIC_DETAILS,
    "get_topics": message("Topics", [f("topics", Repeated(TOPIC))]),
    "delete_topic": EMPTY,
    "create_partitions": EMPTY,
    "delete_partitions": EMPTY,
    "send_messages": EMPTY,
    "poll_messages": message(
        "PolledMessages",
        [
            f("partition_id", UINT32),
            f("current_offset", UINT64),
            f("messages_count", UINT32),
            f("messages", CountedBy("messages_count", MESSAGE)),
        ],
        "BP/responses/messages/poll_messages.rs: body ``partition_id``, ``current_offset``,"
        " ``messages`` (as stored)",
    ),
    "get_consumer_offset": message(
        "ConsumerOffsetInfo",
        [f("partition_id", UINT32), f("current_offset", UINT64), f("stored_offset", UINT64)],
        "BP/responses/consumer_offsets/get_consumer_offset.rs",
    ),
    "store_consumer_offset": EMPTY,
    "delete_consumer_offset": EMPTY,
    "get_consumer_group": GROUP_DETAILS,
    "get_consumer_groups": message("Groups", [f("groups", Repeated(GROUP))]),
    "create_consumer_group": GROUP_DETAILS,
    "delete_consumer_group": EMPTY,
    "join_consumer_group": EMPTY,
    "leave_consumer_group": EMPTY,
}
"""The reply payload of each command in :data:`REQUESTS` (FACTS.md section 3; the create
replies follow the server's handlers, which send the details)."""
OPTIONAL_REPLIES = frozenset(
    {"get_stream", "get_topic", "get_consumer_group", "get_consumer_offset", "get_client"}
)
"""Replies that are empty when the stream, topic, group, stored offset or client does not
exist."""
