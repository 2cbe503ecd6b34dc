"""DescribeConfigs (key 32) and IncrementalAlterConfigs (key 44), for topics and this
broker (the catalog is :mod:`..config_catalog`, stored values :mod:`..topic_configs`).

Behaviour / version notes, as Apache Kafka answers (``ConfigHelper.describeConfigs``,
``ConfigAdminManager.preprocess``, the KRaft ``ConfigurationControlManager``):

* DescribeConfigs v0-4.  A topic lists every config of the catalog (or those of
  ``configuration_keys`` it knows), each with its value (set, or Kafka's default),
  config_source TOPIC_CONFIG (1) when set on the topic and DEFAULT_CONFIG (5) otherwise,
  read_only false, is_sensitive false; synonyms only when asked for (v1+: the topic's own
  value first, then the broker config a default comes from); config_type (v3+); the
  documentation only when asked for (v3+), else null.  v0's is_default is true for a
  default (Kafka's broker leaves it false; its client derives it from the source).  An
  illegal topic name is INVALID_TOPIC_EXCEPTION, an unknown topic
  UNKNOWN_TOPIC_OR_PARTITION.  The broker resource named "1" (this node) lists the
  broker's static configs, all read-only; named "" (the cluster default) it lists none
  (no dynamic defaults are set); another name is INVALID_REQUEST.  Other resource types
  are not served (INVALID_REQUEST).
* IncrementalAlterConfigs v0-1, a resource at a time, all its changes or none: a
  resource named twice is INVALID_REQUEST (each), a config named twice in a resource
  INVALID_REQUEST, a null value for an operation other than DELETE INVALID_REQUEST, an
  unknown resource type INVALID_REQUEST; for a topic, SET / DELETE / APPEND / SUBTRACT
  an illegal name is INVALID_TOPIC_EXCEPTION; SET / DELETE / APPEND / SUBTRACT (the last
  two only for list-typed configs, else INVALID_CONFIG), then every value set is
  validated: an unknown name or a bad value is INVALID_CONFIG (Kafka's
  ``LogConfig.validate``), and only then is an unknown topic UNKNOWN_TOPIC_OR_PARTITION
  (Kafka validates before it checks that the topic exists); an operation that is not
  0-3 is INVALID_REQUEST; ``validate_only`` changes nothing.  The broker resource is
  read-only here: every change to it is INVALID_REQUEST, as Kafka answers a change to a
  config it cannot update dynamically (its broker resource's "" or "1" naming rules
  first).
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka import topic_configs
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.config_catalog import (
    BROKER,
    DEFAULT_CONFIG,
    DELETE,
    TOPIC,
    TOPIC_CONFIG,
    TOPIC_CONFIGS,
    ConfigError,
    broker_configs,
)
from conformance.protocols.kafka.context import NODE_ID, Broker
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.handlers.metadata import legal_topic

# ----------------------------------------------------------------- DescribeConfigs


def _entry(
    name: str, value: str | None, source: int, kind: int, doc: str | None, synonyms: list[Any]
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": False,
        "is_default": source == DEFAULT_CONFIG,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": kind,
        "documentation": doc,
    }


def _topic_entries(broker: Broker, topic: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    keys = set(body["_keys"]) if body.get("_keys") else None
    synonyms, docs = bool(body.get("include_synonyms")), bool(body.get("include_documentation"))
    have = topic_configs.stored(broker.engine, topic)
    out = []
    for config in TOPIC_CONFIGS.values():
        if keys is not None and config.name not in keys:
            continue
        own = have.get(config.name)
        listed: list[dict[str, Any]] = []
        if own is not None:
            listed.append({"name": config.name, "value": own, "source": TOPIC_CONFIG})
        if config.synonym is not None:
            listed.append(
                {"name": config.synonym, "value": config.default, "source": DEFAULT_CONFIG}
            )
        source = int(listed[0]["source"]) if listed else DEFAULT_CONFIG
        value = own if own is not None else config.default
        entry = _entry(
            config.name,
            value,
            source,
            config.type,
            config.doc if docs else None,
            listed if synonyms else [],
        )
        out.append(entry)
    return out


def _broker_entries(broker: Broker, name: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    if name == "":
        return []
    keys = set(body["_keys"]) if body.get("_keys") else None
    synonyms, docs = bool(body.get("include_synonyms")), bool(body.get("include_documentation"))
    config = broker.config
    out = []
    for c in broker_configs(NODE_ID, config.default_partitions, config.auto_create_topics):
        if keys is not None and c.name not in keys:
            continue
        listed = [{"name": c.name, "value": c.value, "source": c.source}]
        entry = _entry(
            c.name, c.value, c.source, c.type, c.doc if docs else None, listed if synonyms else []
        )
        out.append({**entry, "read_only": True})
    return out


def _broker_name_error(name: str) -> str | None:
    if name == "":
        return None
    try:
        node = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    return (
        None
        if node == NODE_ID
        else f"Unexpected broker id, expected {NODE_ID}, but received {name}"
    )


def _describe(broker: Broker, r: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    kind, name = int(r.get("resource_type", 0)), r.get("resource_name", "")
    out = {
        "error_code": 0,
        "error_message": "",
        "resource_type": kind,
        "resource_name": name,
        "configs": [],
    }
    asked = {**body, "_keys": r.get("configuration_keys")}
    if kind == TOPIC:
        if not legal_topic(name):
            return {
                **out,
                "error_code": code("INVALID_TOPIC_EXCEPTION"),
                "error_message": f"{name!r} is not a legal topic name",
            }
        if not broker.engine.has_topic(name):
            return {**out, "error_code": code("UNKNOWN_TOPIC_OR_PARTITION")}
        return {**out, "configs": _topic_entries(broker, name, asked)}
    if kind == BROKER:
        why = _broker_name_error(name)
        if why is not None:
            return {**out, "error_code": code("INVALID_REQUEST"), "error_message": why}
        return {**out, "configs": _broker_entries(broker, name, asked)}
    return {
        **out,
        "error_code": code("INVALID_REQUEST"),
        "error_message": f"resource type {kind} is not served",
    }


def describe_configs(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    results = [_describe(broker, r, body) for r in body.get("resources", [])]
    return {"throttle_time_ms": 0, "results": results}


# --------------------------------------------------------- IncrementalAlterConfigs


def _alter(broker: Broker, r: dict[str, Any], validate_only: bool) -> tuple[str, str | None]:
    kind, name = int(r.get("resource_type", 0)), r.get("resource_name", "")
    configs = list(r.get("configs", []))
    names = [c.get("name", "") for c in configs]
    if len(set(names)) != len(names):
        return "INVALID_REQUEST", "Error due to duplicate config keys"
    nulls = [
        c.get("name", "")
        for c in configs
        if c.get("value") is None and int(c.get("config_operation", 0)) != DELETE
    ]
    if nulls:
        return "INVALID_REQUEST", f"Null value not supported for : {', '.join(nulls)}"
    if kind == BROKER:
        why = _broker_name_error(name)
        return "INVALID_REQUEST", why or f"Cannot update these configs dynamically: {sorted(names)}"
    if kind != TOPIC:
        return "INVALID_REQUEST", f"Unknown resource type {kind}"
    if name == "":
        return "INVALID_REQUEST", "Default topic resources are not allowed."
    if not legal_topic(name):
        return "INVALID_TOPIC_EXCEPTION", f"{name!r} is not a legal topic name"
    changes = [
        (c.get("name", ""), int(c.get("config_operation", 0)), c.get("value")) for c in configs
    ]
    try:
        result = topic_configs.altered(topic_configs.stored(broker.engine, name), changes)
    except ConfigError as exc:
        return "INVALID_CONFIG", str(exc)
    except ValueError as exc:
        return "INVALID_REQUEST", str(exc)
    if not broker.engine.has_topic(name):
        return "UNKNOWN_TOPIC_OR_PARTITION", f"there is no topic {name!r}"
    if not validate_only:
        topic_configs.replace(broker.engine, name, result)
    return "NONE", None


def incremental_alter_configs(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    resources = list(body.get("resources", []))
    ids = [(int(r.get("resource_type", 0)), r.get("resource_name", "")) for r in resources]
    out = []
    for r, rid in zip(resources, ids, strict=True):
        message: str | None
        if ids.count(rid) > 1:
            error, message = "INVALID_REQUEST", "Each resource must appear at most once."
        else:
            error, message = _alter(broker, r, bool(body.get("validate_only", False)))
        out.append(
            {
                "error_code": code(error),
                "error_message": message,
                "resource_type": rid[0],
                "resource_name": rid[1],
            }
        )
    return {"throttle_time_ms": 0, "responses": out}
