"""Each topic's configuration as clients set it (IncrementalAlterConfigs, CreateTopics),
kept in the engine's metadata store (key ``kafka.topic-config/<topic>``, a JSON object of
the values set), so it survives a restart with ``--data-dir``; the catalog of what may be
set, and what is honoured, is :mod:`.config_catalog`.

Only values set on the topic are stored; every other config is Kafka's default
(DescribeConfigs says DEFAULT_CONFIG for it, TOPIC_CONFIG for a stored one).  A topic
deleted and made again starts with none: :func:`forget_topic` is called where Kafka
deletes a topic, and :func:`replace` where it creates one.

Rules: no I/O of its own; validation is the catalog's (ConfigError).
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from conformance.engine import Engine
from conformance.protocols.kafka.config_catalog import (
    APPEND,
    DEFAULT_CONFIG,
    DELETE,
    LIST,
    SET,
    SUBTRACT,
    TOPIC_CONFIG,
    TOPIC_CONFIGS,
    ConfigError,
)

PREFIX = "kafka.topic-config/"

_CACHE: weakref.WeakKeyDictionary[Engine, dict[str, dict[str, str]]] = weakref.WeakKeyDictionary()


def _all(engine: Engine) -> dict[str, dict[str, str]]:
    known = _CACHE.get(engine)
    if known is None:
        known = {}
        for key, raw in engine.meta(PREFIX).items():
            try:
                values = json.loads(raw)
            except ValueError:
                continue
            if isinstance(values, dict):
                known[key[len(PREFIX) :]] = {str(k): str(v) for k, v in values.items()}
        _CACHE[engine] = known
    return known


def stored(engine: Engine, topic: str) -> dict[str, str]:
    """The configs set on ``topic`` (a copy): name -> value as Kafka renders it."""
    return dict(_all(engine).get(topic, {}))


def value(engine: Engine, topic: str, name: str) -> str | None:
    """The value of config ``name`` on ``topic``: set, else Kafka's default."""
    got = _all(engine).get(topic, {}).get(name)
    return got if got is not None else TOPIC_CONFIGS[name].default


def replace(engine: Engine, topic: str, values: dict[str, str]) -> None:
    """Store ``values`` (already validated, rendered) as all the configs set on ``topic``."""
    known = _all(engine)
    if known.get(topic, {}) == values:
        return
    raw = json.dumps(values, sort_keys=True).encode() if values else None
    engine.put_meta(PREFIX + topic, raw)
    if values:
        known[topic] = dict(values)
    else:
        known.pop(topic, None)


def forget_topic(engine: Engine, topic: str) -> None:
    replace(engine, topic, {})


def validated(pairs: list[tuple[str, str | None]]) -> dict[str, str]:
    """The configs a CreateTopics request sets (name, value), validated and rendered, as
    Kafka's ``ReplicationControlManager.computeConfigChanges`` and the config validator
    take them; ConfigError for a null value, an unknown name or a bad value."""
    nulls = [name for name, raw in pairs if raw is None]
    if nulls:
        raise ConfigError(f"Null value not supported for topic configs: {','.join(nulls)}")
    return altered({}, [(name, SET, raw) for name, raw in pairs])


def requested(topic: dict[str, Any]) -> dict[str, str]:
    """The configs of a CreateTopics topic entry (its ``configs``), validated and
    rendered; ConfigError for a null value, an unknown name or a bad value."""
    return validated([(str(c.get("name", "")), c.get("value")) for c in topic.get("configs") or []])


def effective(values: dict[str, str]) -> list[dict[str, Any]]:
    """Every topic config with ``values`` set, as CreateTopics v5+ answers them (name,
    value, read_only, config_source, is_sensitive)."""
    return [
        {
            "name": c.name,
            "value": values.get(c.name, c.default),
            "read_only": False,
            "config_source": TOPIC_CONFIG if c.name in values else DEFAULT_CONFIG,
            "is_sensitive": False,
        }
        for c in TOPIC_CONFIGS.values()
    ]


def altered(current: dict[str, str], changes: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """The configs set once ``changes`` (name, operation, value) are applied to
    ``current``, as Kafka's ``ConfigurationControlManager.incrementalAlterConfigResource``
    applies them: SET replaces, DELETE removes, APPEND and SUBTRACT add or remove list
    items (starting from the default when nothing is set); then every value set is
    validated.  ConfigError for an unknown name, a bad value, or APPEND/SUBTRACT on a
    config that is not a list; ValueError for an operation that is not 0-3."""
    result = dict(current)
    for name, op, raw in changes:
        config = TOPIC_CONFIGS.get(name)
        if op == SET:
            if raw is None:
                result.pop(name, None)
            else:
                result[name] = raw
        elif op == DELETE:
            result.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if config is None or config.type != LIST:
                verb = "APPEND" if op == APPEND else "SUBTRACT"
                raise ConfigError(f"Can't {verb} to key {name} because its type is not LIST.")
            base = result.get(name, config.default) or ""
            items = [x for x in base.split(",") if x]
            for item in (raw or "").split(","):
                if op == APPEND and item not in items:
                    items.append(item)
                elif op == SUBTRACT and item in items:
                    items.remove(item)
            result[name] = ",".join(items)
        else:
            raise ValueError(f"unknown config operation {op} for {name}")
    unknown = sorted(n for n in result if n not in TOPIC_CONFIGS)
    if unknown:
        raise ConfigError(f"Unknown topic config name: {unknown[0]}")
    return {n: TOPIC_CONFIGS[n].render(v) for n, v in result.items()}


def max_message_bytes(engine: Engine, topic: str) -> int:
    """The largest record batch ``topic`` accepts (max.message.bytes), for Produce."""
    return int(value(engine, topic, "max.message.bytes") or 0)


def compression_type(engine: Engine, topic: str) -> str:
    """The codec ``topic`` stores batches in (compression.type; ``producer``: the batch's)."""
    return value(engine, topic, "compression.type") or "producer"


def deletes_records(engine: Engine, topic: str) -> bool:
    """Whether ``topic``'s cleanup.policy includes delete (DeleteRecords needs it)."""
    return "delete" in (value(engine, topic, "cleanup.policy") or "").split(",")
