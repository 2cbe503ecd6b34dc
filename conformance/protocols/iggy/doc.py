"""Iggy's ``doc`` revision: the seed's own layouts where they differ from classic.

The seed (``/work/shared/seeds/iggy-binary-protocol.txt``, cited ``seed l.N``) contradicts
itself; the rule (the plan's "Revisions"): its serialization list says which fields go on
the wire and in which order, its struct gives each field's type, and where a size line
contradicts the type the type wins.  What the seed gives differently from classic is
declared here; every other command, and every reply record the seed does not give, is
classic's (:mod:`.messages`).  Little-endian like classic (the seed states no order;
FACTS.md section 6 row 1).

* :data:`REQUESTS`: the commands of the seed's table (seed l.14-39) only: classic's
  without LOGIN_USER, LOGOUT_USER, DELETE_CONSUMER_OFFSET and GET_CLUSTER_METADATA (in doc
  they are unknown codes, SPEC.md IGG-FRAME-7), with CREATE_STREAM, CREATE_TOPIC, the
  consumer offset commands, POLL_MESSAGES, SEND_MESSAGES and the consumer-group commands
  as the seed has them.
* :data:`REPLIES`: classic's, with POLL_MESSAGES' messages in the seed's Message layout.

Field names follow the seed in snake_case where it has a field classic has not
(``stream_id``, ``topic_id``, ``consumer_group_id``), and classic's elsewhere, so a body
differs between the revisions only where the wire does.  SEND_MESSAGES and POLL_MESSAGES
are declared whole here (the schema expresses them): their bodies have classic's shape,
``messages`` a list of dicts (``id`` and ``payload`` sent; ``offset``, ``state``,
``timestamp``, ``id``, ``checksum``, ``payload`` polled).
"""

from __future__ import annotations

from conformance.protocols.iggy.messages import (
    IDENTIFIER,
    NAME,
    PARTITIONING,
    POLLING_STRATEGY,
    STREAM_TOPIC,
    message,
)
from conformance.protocols.iggy.messages import REQUESTS as CLASSIC_REQUESTS
from conformance.protocols.iggy.replies import REPLIES as CLASSIC_REPLIES
from conformance.wire import schema
from conformance.wire.schema import (
    BOOL,
    UINT8,
    UINT32,
    UINT64,
    UINT128,
    Bytes,
    Repeated,
    Union,
    array_of,
    f,
    struct_of,
)

CONSUMER = Union("Consumer", UINT8, {1: UINT32, 2: UINT32})
"""``u8 kind`` (1 consumer, 2 consumer group) + ``u32 id``, "5 bytes" (seed l.41-58):
``{"kind": 1, "value": 7}``."""
PARTITION_ID = f("partition_id", UINT32, doc="4 bytes, no flag (seed l.278, 348, 363)")
GROUP_ID = f("consumer_group_id", UINT32, doc="u32, 4 bytes (seed l.371, 377)")
CONSUMER_OFFSET_HEAD = [f("consumer", CONSUMER), *STREAM_TOPIC, PARTITION_ID]
GROUP_IDS = [*STREAM_TOPIC, GROUP_ID]

SENT_MESSAGE = struct_of(
    "SentMessage",
    f("id", UINT128),
    f("payload", Bytes("payload", prefix="u32")),
)
"""``u128 id``, ``u32 length``, payload: "16 + 4 + N bytes per single message" (seed
l.300-305, 334); the struct's headers are not among those bytes, so none go on the wire."""
POLLED_MESSAGE = struct_of(
    "PolledMessage",
    f("offset", UINT64),
    f("state", UINT8),
    f("timestamp", UINT64),
    f("id", UINT128),
    f("checksum", UINT32),
    f("payload", Bytes("payload", prefix="u32")),
)
"""offset 8, state 1, timestamp 8, id 16, checksum 4, headers N, length 4, payload N
(seed l.100-130); the headers take 0 bytes (doc sends none, above)."""

NOT_IN_THE_SEED = ("login_user", "logout_user", "delete_consumer_offset", "get_cluster_metadata")
"""Classic commands the seed's table (l.14-39) does not list: unknown codes in doc."""

REQUESTS: dict[str, schema.Message] = {
    name: declaration
    for name, declaration in CLASSIC_REQUESTS.items()
    if name not in NOT_IN_THE_SEED
}
"""The request payload of each command of doc (see the module doc)."""
REQUESTS.update(
    {
        "create_stream": message(
            "DocCreateStream",
            [f("stream_id", UINT32), f("name", NAME)],
            "seed l.162-172: u32 stream_id (the struct's type; the size line's 3-257 loses),"
            " u8 name length, name",
        ),
        "create_topic": message(
            "DocCreateTopic",
            [
                f("stream", IDENTIFIER),
                f("topic_id", UINT32),
                f("partitions_count", UINT32),
                f("name", NAME),
            ],
            "seed l.200-215: message_expiry is in the struct but not serialized",
        ),
        "poll_messages": message(
            "DocPollMessages",
            [
                f("consumer", CONSUMER),
                *STREAM_TOPIC,
                PARTITION_ID,
                f("strategy", POLLING_STRATEGY),
                f("count", UINT32),
                f("auto_commit", BOOL),
            ],
            "seed l.252-282",
        ),
        "send_messages": message(
            "DocSendMessages",
            [
                *STREAM_TOPIC,
                f("partitioning", PARTITIONING),
                f("messages", Repeated(SENT_MESSAGE)),
            ],
            "seed l.283-334: messages to the end of the payload, no count",
        ),
        "get_consumer_offset": message(
            "DocGetConsumerOffset", CONSUMER_OFFSET_HEAD, "seed l.336-349"
        ),
        "store_consumer_offset": message(
            "DocStoreConsumerOffset",
            [*CONSUMER_OFFSET_HEAD, f("offset", UINT64)],
            "seed l.350-365",
        ),
        "get_consumer_group": message("DocGetConsumerGroup", GROUP_IDS, "seed l.367-378"),
        "create_consumer_group": message(
            "DocCreateConsumerGroup",
            GROUP_IDS,
            "seed l.389-400: an id, no name (the group's name is its id in decimal)",
        ),
        "delete_consumer_group": message("DocDeleteConsumerGroup", GROUP_IDS, "seed l.401-412"),
        "join_consumer_group": message("DocJoinConsumerGroup", GROUP_IDS, "seed l.413-424"),
        "leave_consumer_group": message("DocLeaveConsumerGroup", GROUP_IDS, "seed l.425-436"),
    }
)

REPLIES: dict[str, schema.Message] = {
    name: declaration
    for name, declaration in CLASSIC_REPLIES.items()
    if name not in NOT_IN_THE_SEED
}
"""The reply payload of each command of doc: classic's (the seed gives no reply framing
and few records), but POLL_MESSAGES."""
REPLIES["poll_messages"] = message(
    "DocPolledMessages",
    [
        f("partition_id", UINT32),
        f("current_offset", UINT64),
        f("messages", array_of(POLLED_MESSAGE)),
    ],
    "seed l.80-99: partition_id 4, current_offset 8, messages_count 4 (hidden), messages",
)
