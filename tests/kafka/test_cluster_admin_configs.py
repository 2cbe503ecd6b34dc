"""The config handlers and catalog in process: DescribeConfigs (topic and broker),
IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT, validation, atomicity,
validate_only), the catalog's parsing as Kafka's ConfigDef parses, the store across a
restart, the CreateTopics helpers, and the config spec quirk."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import Engine
from conformance.protocols.kafka import codec, quirks_cluster_admin, topic_configs
from conformance.protocols.kafka.config_catalog import TOPIC_CONFIGS, ConfigError
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.errors import CODES
from conformance.protocols.kafka.handlers import HANDLERS

DESCRIBE, ALTER = 32, 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def call(broker: Broker, key: int, version: int, body: dict[str, Any], quirk: str = "") -> Any:
    request = codec.decode_request(codec.encode_request(key, version, body, correlation_id=3))
    answer = HANDLERS[key](broker, request, "test:1")
    assert isinstance(answer, dict)
    if quirk:
        answer = quirks_cluster_admin.after((quirk,), request, answer)
    return codec.decode_response(codec.encode_response(key, version, 3, answer), key, version)[1]


@pytest.fixture
def broker() -> Broker:
    b = Broker(Engine(), KafkaConfig(revision="apache"), time.monotonic)
    b.engine.create_topic("t", 1)
    return b


def describe(
    broker: Broker,
    name: str = "t",
    keys: list[str] | None = None,
    v: int = 4,
    kind: int = 2,
    **kw: Any,
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": keys}],
        **kw,
    }
    result: dict[str, Any] = call(broker, DESCRIBE, v, body)["results"][0]
    return result


def entry(broker: Broker, key: str, **kw: Any) -> dict[str, Any]:
    found: dict[str, Any] = describe(broker, keys=[key], **kw)["configs"][0]
    return found


def alter(
    broker: Broker,
    *changes: tuple[str, int, str | None],
    name: str = "t",
    kind: int = 2,
    validate_only: bool = False,
    v: int = 1,
) -> int:
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": o, "value": x} for n, o, x in changes],
            }
        ],
        "validate_only": validate_only,
    }
    code: int = call(broker, ALTER, v, body)["responses"][0]["error_code"]
    return code


def test_a_topic_lists_the_catalog_at_its_defaults(broker: Broker) -> None:
    result = describe(broker)
    assert result["error_code"] == 0
    assert [c["name"] for c in result["configs"]] == list(TOPIC_CONFIGS)
    for c in result["configs"]:
        assert c["config_source"] == 5 and not c["read_only"] and not c["is_sensitive"]
        assert c["synonyms"] == [] and c["documentation"] is None
        assert c["value"] == TOPIC_CONFIGS[c["name"]].default
    assert entry(broker, "retention.ms", v=0)["is_default"] is True


def test_synonyms_and_documentation_when_asked(broker: Broker) -> None:
    c = entry(broker, "max.message.bytes", include_synonyms=True, include_documentation=True)
    assert c["synonyms"] == [{"name": "message.max.bytes", "value": "1048588", "source": 5}]
    assert c["documentation"] and c["config_type"] == 3
    assert alter(broker, ("max.message.bytes", SET, " 2048 ")) == 0
    c = entry(broker, "max.message.bytes", include_synonyms=True)
    assert c["value"] == "2048" and c["config_source"] == 1
    assert c["synonyms"][0] == {"name": "max.message.bytes", "value": "2048", "source": 1}


def test_set_delete_append_subtract(broker: Broker) -> None:
    assert alter(broker, ("cleanup.policy", APPEND, "compact")) == 0
    assert entry(broker, "cleanup.policy")["value"] == "delete,compact"
    assert alter(broker, ("cleanup.policy", SUBTRACT, "delete")) == 0
    assert entry(broker, "cleanup.policy")["value"] == "compact"
    assert not topic_configs.deletes_records(broker.engine, "t")
    assert alter(broker, ("cleanup.policy", DELETE, None), ("retention.ms", SET, "5")) == 0
    assert topic_configs.stored(broker.engine, "t") == {"retention.ms": "5"}
    assert alter(broker, ("no.such.config", DELETE, None)) == 0  # nothing to delete: Kafka too


@pytest.mark.parametrize(
    "changes",
    [
        [("retention.ms", SET, "abc")],
        [("retention.ms", SET, "1_000")],
        [("max.message.bytes", SET, "-1")],
        [("max.message.bytes", SET, "2147483648")],
        [("cleanup.policy", SET, "delete,shred")],
        [("preallocate", SET, "yes")],
        [("no.such.config", SET, "1")],
        [("retention.ms", APPEND, "1")],
        [("no.such.config", SUBTRACT, "1")],
        [("retention.ms", SET, "7"), ("segment.ms", SET, "0")],
    ],
)
def test_invalid_changes_are_invalid_config_and_change_nothing(
    broker: Broker, changes: list[tuple[str, int, str | None]]
) -> None:
    assert alter(broker, *changes) == CODES["INVALID_CONFIG"]
    assert topic_configs.stored(broker.engine, "t") == {}


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ([("retention.ms", SET, None)], "INVALID_REQUEST"),
        ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], "INVALID_REQUEST"),
        ([("retention.ms", 7, "1")], "INVALID_REQUEST"),
    ],
)
def test_malformed_changes_are_invalid_request(
    broker: Broker, changes: list[tuple[str, int, str | None]], error: str
) -> None:
    assert alter(broker, *changes) == CODES[error]


def test_resources_other_than_a_known_topic(broker: Broker) -> None:
    assert (
        alter(broker, ("retention.ms", SET, "1"), name="absent")
        == CODES["UNKNOWN_TOPIC_OR_PARTITION"]
    )
    assert alter(broker, ("retention.ms", SET, "x"), name="absent") == CODES["INVALID_CONFIG"]
    assert alter(broker, ("retention.ms", SET, "1"), name="a/b") == CODES["INVALID_TOPIC_EXCEPTION"]
    assert alter(broker, ("retention.ms", SET, "1"), name="") == CODES["INVALID_REQUEST"]
    assert alter(broker, ("num.partitions", SET, "3"), kind=4, name="1") == CODES["INVALID_REQUEST"]
    assert alter(broker, ("x", SET, "3"), kind=99) == CODES["INVALID_REQUEST"]
    assert describe(broker, "absent")["error_code"] == CODES["UNKNOWN_TOPIC_OR_PARTITION"]
    assert describe(broker, "a b")["error_code"] == CODES["INVALID_TOPIC_EXCEPTION"]


def test_a_resource_named_twice_is_refused_each_time(broker: Broker) -> None:
    one = {"resource_type": 2, "resource_name": "t", "configs": []}
    got = call(broker, ALTER, 0, {"resources": [one, one], "validate_only": False})
    assert [r["error_code"] for r in got["responses"]] == [CODES["INVALID_REQUEST"]] * 2


def test_validate_only(broker: Broker) -> None:
    assert alter(broker, ("retention.ms", SET, "9"), validate_only=True) == 0
    assert alter(broker, ("retention.ms", SET, "x"), validate_only=True) == CODES["INVALID_CONFIG"]
    assert topic_configs.stored(broker.engine, "t") == {}


def test_the_broker_resource(broker: Broker) -> None:
    result = describe(broker, "1", kind=4)
    names = {c["name"]: c for c in result["configs"]}
    assert result["error_code"] == 0 and names["node.id"]["value"] == "1"
    assert all(c["read_only"] for c in result["configs"])
    assert describe(broker, "", kind=4)["configs"] == []
    for name in ("x", "2"):
        assert describe(broker, name, kind=4)["error_code"] == CODES["INVALID_REQUEST"]
    assert describe(broker, "t", kind=8)["error_code"] == CODES["INVALID_REQUEST"]


def test_configs_survive_a_restart_and_a_deleted_topic_forgets_them(tmp_path: Path) -> None:
    engine = Engine(str(tmp_path))
    b = Broker(engine, KafkaConfig(revision="apache"), time.monotonic)
    engine.create_topic("t", 1)
    assert alter(b, ("retention.ms", SET, "42")) == 0
    engine.close()
    again = Engine(str(tmp_path))
    try:
        assert topic_configs.value(again, "t", "retention.ms") == "42"
        topic_configs.forget_topic(again, "t")
        assert topic_configs.stored(again, "t") == {}
    finally:
        again.close()


def test_create_topics_helpers() -> None:
    assert topic_configs.requested({"configs": [{"name": "retention.ms", "value": "10"}]}) == {
        "retention.ms": "10"
    }
    for bad in ({"name": "retention.ms", "value": None}, {"name": "nope", "value": "1"}):
        with pytest.raises(ConfigError):
            topic_configs.requested({"configs": [bad]})
    listed = {c["name"]: c for c in topic_configs.effective({"retention.ms": "10"})}
    assert (
        listed["retention.ms"]["config_source"] == 1 and listed["segment.ms"]["config_source"] == 5
    )


def test_the_config_quirk_says_default_for_every_source(broker: Broker) -> None:
    assert alter(broker, ("retention.ms", SET, "1")) == 0
    body = {
        "resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]}
        ],
        "include_synonyms": True,
    }
    got = call(broker, DESCRIBE, 1, body, quirk="topic-config-source-default")
    c = got["results"][0]["configs"][0]
    assert c["value"] == "1" and c["config_source"] == 5 and c["synonyms"][0]["source"] == 5
