"""CreateTopics (19), DeleteTopics (20) and InitProducerId (22).

Behavior: one broker, so a replication factor other than 1 (or -1, the default) is
INVALID_REPLICATION_FACTOR; a partition count below 1 (other than -1, the default, v4+)
or above the engine's limit is INVALID_PARTITIONS; an illegal name is
INVALID_TOPIC_EXCEPTION; an existing topic TOPIC_ALREADY_EXISTS; ``validate_only`` checks
and creates nothing.  DeleteTopics v6+ names a topic or its id.  InitProducerId gives an
idempotent producer a new id at epoch 0.  Given an id and epoch (v3+) without a
transactional id, revision ``apache`` hands out a new id at epoch 0 all the same, as
Apache Kafka's ``TransactionCoordinator.handleInitProducerId`` does for a null
transactional id (the producer bumps its epoch on its own side, KIP-360); ``doc`` bumps a
known id's epoch and gives an unknown one a new id.  Only one of id and epoch given is
INVALID_REQUEST.  An InitProducerId with a transactional id is the transaction
coordinator's (handlers/transactions.py, which calls this one without).  A deleted
topic's transaction index goes with it.
"""

from __future__ import annotations

from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka import log_start, topic_configs
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.config_catalog import ConfigError
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import code, from_engine
from conformance.protocols.kafka.handlers.metadata import ZERO_ID, legal_topic
from conformance.protocols.kafka.transaction_coordinator import coordinator_of

MAX_EPOCH = 32767


def _create_error(broker: Broker, t: dict[str, Any], partitions: int) -> tuple[str, str | None]:
    name = t.get("name", "")
    if not legal_topic(name):
        return "INVALID_TOPIC_EXCEPTION", f"{name!r} is not a legal topic name"
    if broker.engine.has_topic(name):
        return "TOPIC_ALREADY_EXISTS", f"topic {name!r} already exists"
    factor = int(t.get("replication_factor", -1))
    if factor not in (-1, 1):
        return "INVALID_REPLICATION_FACTOR", f"replication factor {factor}: there is 1 broker"
    if t.get("assignments"):
        return "INVALID_REQUEST", "manual replica assignments are not served"
    if not 1 <= partitions <= broker.engine.max_partitions:
        return "INVALID_PARTITIONS", (
            f"{partitions} partitions: a topic has 1..{broker.engine.max_partitions}"
        )
    try:
        topic_configs.requested(t)
    except ConfigError as exc:
        return "INVALID_CONFIG", str(exc)
    return "NONE", None


def create_topics(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    out = []
    for t in body.get("topics", []):
        name = t.get("name", "")
        partitions = int(t.get("num_partitions", -1))
        if partitions == -1:
            partitions = broker.config.default_partitions
        error, message = _create_error(broker, t, partitions)
        if error == "NONE" and not body.get("validate_only", False):
            try:
                broker.engine.create_topic(name, partitions)
                topic_configs.replace(broker.engine, name, topic_configs.requested(t))
            except EngineError as exc:
                error, message = from_engine(exc.code), str(exc)
        created = error == "NONE" and not body.get("validate_only", False)
        out.append(
            {
                "name": name,
                "topic_id": broker.topic_id(name) if created else ZERO_ID,
                "error_code": code(error),
                "error_message": message,
                "num_partitions": partitions if created else -1,
                "replication_factor": 1 if created else -1,
                "configs": (
                    topic_configs.effective(topic_configs.requested(t)) if created else None
                ),
            }
        )
    return {"throttle_time_ms": 0, "topics": out}


def _delete(broker: Broker, name: str | None) -> str:
    if name is None or not broker.engine.has_topic(name):
        return "UNKNOWN_TOPIC_OR_PARTITION"
    try:
        broker.engine.delete_topic(name)
    except EngineError as exc:
        return from_engine(exc.code)
    broker.forget_topic(name)
    coordinator_of(broker).index.forget(name)
    topic_configs.forget_topic(broker.engine, name)
    log_start.forget_topic(broker.engine, name)
    return "NONE"


def delete_topics(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body, version = request.body, request.api_version
    out = []
    if version < 6:
        for name in body.get("topic_names", []):
            out.append({"name": name, "error_code": code(_delete(broker, name))})
        return {"throttle_time_ms": 0, "responses": out}
    for t in body.get("topics", []):
        name, tid = t.get("name"), t.get("topic_id", ZERO_ID)
        if name is None:
            name = broker.topic_named(tid)
            error = _delete(broker, name) if name is not None else "UNKNOWN_TOPIC_ID"
        else:
            tid = broker.topic_id(name) if broker.engine.has_topic(name) else ZERO_ID
            error = _delete(broker, name)
        out.append(
            {"name": name, "topic_id": tid, "error_code": code(error), "error_message": None}
        )
    return {"throttle_time_ms": 0, "responses": out}


def init_producer_id(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    reply = {"throttle_time_ms": 0, "error_code": 0, "producer_id": -1, "producer_epoch": -1}
    pid, epoch = int(body.get("producer_id", -1)), int(body.get("producer_epoch", -1))
    if (pid < 0) != (epoch < 0):
        return {**reply, "error_code": code("INVALID_REQUEST")}
    known = broker.producer_epochs.get(pid) if pid >= 0 else None
    bumps = broker.config.revision == "doc"  # Apache Kafka: always a new id, epoch 0
    if bumps and known is not None and known == epoch and epoch < MAX_EPOCH:
        broker.producer_epochs[pid] = epoch + 1
        return {**reply, "producer_id": pid, "producer_epoch": epoch + 1}
    # an id this broker does not know (or an exhausted epoch) gets a new id, as Kafka
    # does for an idempotent producer: it accepts blindly, there is nothing to fence
    pid = broker.new_producer_id()
    broker.producer_epochs[pid] = 0
    return {**reply, "producer_id": pid, "producer_epoch": 0}
