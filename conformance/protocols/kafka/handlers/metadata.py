"""Metadata (key 3): the broker (one node, the leader of every partition) and topics.

Behavior: no topics listed (v0: an empty array; v1+: null) means every topic.  A topic
that does not exist is created with the broker's default partition count when
auto-creation is on and the request allows it (always before v4), else answered
UNKNOWN_TOPIC_OR_PARTITION; a name that is not a legal topic name is
INVALID_TOPIC_EXCEPTION.  v10+ carries topic ids; a topic asked for by an unknown id is
UNKNOWN_TOPIC_ID; v10-11 may not ask by id (a null name or a topic id): INVALID_REQUEST for
every topic asked, as Kafka answers.

Version / revision notes: the Metadata request that makes a topic is answered, in revision
``apache``, as Apache Kafka (KRaft) answers it: UNKNOWN_TOPIC_OR_PARTITION with no
partitions and the zero topic id (``AutoTopicCreationManager.sendCreateTopicRequest`` hands
the creation to the controller and answers at once; a creation already in flight is
answered the same).  The topic exists here from that moment, so the next Metadata lists it
and a Produce to it is served.  Revision ``doc`` (pgcdc creates topics lazily) lists the
new topic in the same answer.
"""

from __future__ import annotations

import re
from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import NODE_ID, Broker
from conformance.protocols.kafka.errors import code

LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
ZERO_ID = "00000000-0000-0000-0000-000000000000"


def legal_topic(name: str | None) -> bool:
    return name is not None and name not in {".", ".."} and bool(LEGAL_NAME.fullmatch(name))


def broker_entry(broker: Broker) -> dict[str, Any]:
    return {"node_id": NODE_ID, "host": broker.host, "port": broker.port, "rack": None}


def topic_entry(broker: Broker, name: str, version: int, error: str = "NONE") -> dict[str, Any]:
    partitions: list[dict[str, Any]] = []
    if error == "NONE":
        count = broker.engine.topic(name).partitions
        partitions = [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": NODE_ID,
                "leader_epoch": 0,
                "replica_nodes": [NODE_ID],
                "isr_nodes": [NODE_ID],
                "offline_replicas": [],
            }
            for p in range(count)
        ]
    return {
        "error_code": code(error),
        "name": name,
        "topic_id": broker.topic_id(name) if error == "NONE" else ZERO_ID,
        "is_internal": False,
        "partitions": partitions,
        "topic_authorized_operations": -2147483648,
    }


def ensure_topic(broker: Broker, name: str | None, allow_create: bool) -> str:
    """NONE if topic ``name`` exists (created now if allowed, then NONE in revision
    ``doc`` and UNKNOWN_TOPIC_OR_PARTITION in ``apache``, as Kafka answers the request
    that starts a creation), else the error name."""
    if not legal_topic(name):
        return "INVALID_TOPIC_EXCEPTION"
    assert name is not None
    if broker.engine.has_topic(name):
        return "NONE"
    if not (allow_create and broker.config.auto_create_topics):
        return "UNKNOWN_TOPIC_OR_PARTITION"
    try:
        broker.engine.create_topic(name, broker.config.default_partitions)
    except EngineError as exc:
        if exc.code != "TOPIC_EXISTS":
            return "UNKNOWN_TOPIC_OR_PARTITION"
        return "NONE"  # another connection made it just now
    return "UNKNOWN_TOPIC_OR_PARTITION" if broker.config.revision == "apache" else "NONE"


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body, version = request.body, request.api_version
    asked = body.get("topics")
    allow = version < 4 or bool(body.get("allow_auto_topic_creation", True))
    if 10 <= version < 12 and any(_by_id(t) for t in asked or []):
        return _invalid(broker, asked or [])
    topics: list[dict[str, Any]] = []
    if asked is None or (version == 0 and not asked):
        topics = [topic_entry(broker, t.name, version) for t in broker.engine.list_topics()]
    else:
        for wanted in asked:
            name = wanted.get("name")
            if name is None and version >= 12:
                name = broker.topic_named(wanted.get("topic_id", ZERO_ID))
                if name is None:
                    entry = topic_entry(broker, "", version, "UNKNOWN_TOPIC_ID")
                    entry["name"], entry["topic_id"] = None, wanted.get("topic_id", ZERO_ID)
                    topics.append(entry)
                    continue
            error = ensure_topic(broker, name, allow)
            topics.append(topic_entry(broker, name or "", version, error))
    return {
        "throttle_time_ms": 0,
        "brokers": [broker_entry(broker)],
        "cluster_id": broker.cluster_id,
        "controller_id": NODE_ID,
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }


def _by_id(wanted: dict[str, Any]) -> bool:
    """A topic asked for by id: a null name or a topic id other than zero."""
    return wanted.get("name") is None or wanted.get("topic_id", ZERO_ID) != ZERO_ID


def _invalid(broker: Broker, asked: list[dict[str, Any]]) -> dict[str, Any]:
    """Metadata v10-11 naming a topic by id (ids are served from v12): INVALID_REQUEST for
    every topic asked, as Apache Kafka's ``handleTopicMetadataRequest`` throws and
    ``MetadataRequest.getErrorResponse`` answers (no broker listed)."""
    return {
        "throttle_time_ms": 0,
        "brokers": [],
        "cluster_id": None,
        "controller_id": -1,
        "topics": [
            {
                "error_code": code("INVALID_REQUEST"),
                "name": t.get("name") or "",
                "topic_id": t.get("topic_id", ZERO_ID),
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": -2147483648,
            }
            for t in asked
        ],
        "cluster_authorized_operations": -2147483648,
    }
