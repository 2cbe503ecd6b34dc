"""Kafka topic and broker configs (SPEC-cluster-admin.md, area "configs")."""

from __future__ import annotations

from collections.abc import Callable

from conformance.evidence import Node, combined
from conformance.suite.case import case, require
from conformance.suite.kafka.cluster_admin_steps import (
    APPEND,
    BROKER,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    TOPIC_CONFIG,
    alter,
    config_entry,
    config_until,
    describe,
    until,
)
from conformance.suite.kafka.steps import (
    batch,
    create_topic,
    metadata,
    produce,
    produce_parts,
)
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    first,
    need,
    usable,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

LONG, INT = 5, 3


@case("kafka/configs/1", "KAF-CONFIG-1")
@at_every_version("DescribeConfigs")
def test_a_topic_describes_its_configs(target: CaseContext, version: int) -> None:
    """DescribeConfigs lists a topic's configs, unset ones not as TOPIC_CONFIG, typed (v3+).

    KAF-CONFIG-1: "DescribeConfigs of a topic answers error 0 with its configs (Kafka's topic
    configs such as retention.ms and max.message.bytes, each with a value), a config not set on the
    topic having a config_source (v1+) other than TOPIC_CONFIG (1), and config_type (v3+) the type
    of the config (LONG (5) for retention.ms, INT (3) for max.message.bytes); configuration_keys
    limits the answer to the keys named."
    """
    need(target, "DescribeConfigs", version)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "described")
        result, v = describe(target, k, TOPIC, name, "KAF-CONFIG-1", version=version)
        expect_code(result, "error_code", "NONE", "KAF-CONFIG-1", f"DescribeConfigs of {name}")
        for key, kind in (("retention.ms", LONG), ("max.message.bytes", INT)):
            c = config_entry(result, key, "KAF-CONFIG-1")
            require(c["value"], "KAF-CONFIG-1", f"{key} has no value", c.at("value"))
            if v >= 1:
                require(
                    c["config_source"] != TOPIC_CONFIG,
                    "KAF-CONFIG-1",
                    f"{key}, never set on {name}, has config_source {c['config_source']} "
                    "(TOPIC_CONFIG)",
                    c.at("config_source"),
                )
            if v >= 3:
                require(
                    c["config_type"] == kind,
                    "KAF-CONFIG-1",
                    f"{key} config_type {c['config_type']}, expected {kind}",
                    c.at("config_type"),
                )
        only, _ = describe(
            target, k, TOPIC, name, "KAF-CONFIG-1", keys=["retention.ms"], version=version
        )
    names = [c["name"] for c in only["configs"]]
    require(
        names == ["retention.ms"],
        "KAF-CONFIG-1",
        f"configuration_keys [retention.ms] answered {show_all(names, most=5)}",
        only["configs"].at(),
    )


@case("kafka/configs/2", "KAF-CONFIG-2")
@at_every_version("IncrementalAlterConfigs")
def test_a_set_config_is_described_as_the_topics_own(target: CaseContext, version: int) -> None:
    """A SET config is described with source TOPIC_CONFIG (and as its first synonym when
    asked); after DELETE, the default again.

    KAF-CONFIG-2: "after IncrementalAlterConfigs SETs a topic config (error 0), DescribeConfigs
    answers its new value with config_source TOPIC_CONFIG (1) and, with include_synonyms (v1+), a
    first synonym of the same name, value and source 1 (without include_synonyms, no synonyms);
    after a DELETE of it, its default again with a source other than 1."
    """
    req = "KAF-CONFIG-2"
    need(target, "IncrementalAlterConfigs", version)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "setone")
        got = alter(target, k, req, name, [("retention.ms", SET, "123456")], version=version)
        expect_code(got, "error_code", "NONE", req, "SET retention.ms")
        c = config_until(target, k, name, "retention.ms", lambda c: c["value"] == "123456", req)
        require(
            c["value"] == "123456",
            req,
            f"retention.ms {c['value']!r}, expected '123456'",
            c.at("value"),
        )
        require(
            c["config_source"] == TOPIC_CONFIG,
            req,
            f"retention.ms config_source {c['config_source']}, expected TOPIC_CONFIG (1)",
            c.at("config_source"),
        )
        require(not c["synonyms"], req, "synonyms given though not asked for", c.at("synonyms"))
        s = config_until(target, k, name, "retention.ms", lambda c: True, req, synonyms=True)
        syn = first(s["synonyms"], "synonyms[0]", req, "include_synonyms")
        want = ("retention.ms", "123456", TOPIC_CONFIG)
        require(
            (syn["name"], syn["value"], syn["source"]) == want,
            req,
            f"first synonym {(syn['name'], syn['value'], syn['source'])}, expected {want}",
            syn.at(),
        )
        got = alter(target, k, req, name, [("retention.ms", DELETE, None)], version=version)
        expect_code(got, "error_code", "NONE", req, "DELETE retention.ms")
        c = config_until(target, k, name, "retention.ms", lambda c: c["value"] != "123456", req)
    require(
        c["value"] != "123456" and c["config_source"] != TOPIC_CONFIG,
        req,
        f"after DELETE retention.ms is {c['value']!r} with config_source {c['config_source']}",
        c.at("value") + c.at("config_source"),
    )


def _items(value: str | None) -> list[str]:
    return sorted(x for x in (value or "").split(",") if x)


def _listing(items: list[str]) -> Callable[[Node], bool]:
    return lambda c: _items(c["value"]) == items


@case("kafka/configs/3", "KAF-CONFIG-3")
def test_append_and_subtract_change_list_configs(target: CaseContext) -> None:
    """APPEND and SUBTRACT add and remove list items; on a non-list config, INVALID_CONFIG.

    KAF-CONFIG-3: "IncrementalAlterConfigs APPEND adds items to a list-typed config
    (cleanup.policy) and SUBTRACT removes them, starting from the current value or the default;
    APPEND or SUBTRACT on a config that is not a list (retention.ms) answers INVALID_CONFIG (40)."
    """
    req = "KAF-CONFIG-3"
    with KafkaClient(target) as k:
        name = create_topic(target, k, "lists")
        for op, value, after in (
            (APPEND, "compact", ["compact", "delete"]),
            (SUBTRACT, "delete", ["compact"]),
        ):
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            got = alter(target, k, req, name, [("cleanup.policy", op, value)])
            expect_code(got, "error_code", "NONE", req, f"{verb} cleanup.policy {value}")
            c = config_until(target, k, name, "cleanup.policy", _listing(after), req)
            require(
                _items(c["value"]) == after,
                req,
                f"after {verb} {value}: cleanup.policy {c['value']!r}, expected {','.join(after)}",
                c.at("value"),
            )
        for op in (APPEND, SUBTRACT):
            got = alter(target, k, req, name, [("retention.ms", op, "1000")])
            expect_code(got, "error_code", "INVALID_CONFIG", req, f"operation {op} on retention.ms")


@case("kafka/configs/4", "KAF-CONFIG-4")
def test_a_bad_value_or_name_is_invalid_config(target: CaseContext) -> None:
    """A value a config refuses, or an unknown name, is INVALID_CONFIG; nothing is applied.

    KAF-CONFIG-4: "IncrementalAlterConfigs with a value a topic config does not accept
    (retention.ms "not-a-number", max.message.bytes -1) or a config name Kafka does not know
    answers INVALID_CONFIG (40), and none of the resource's changes is applied."
    """
    req = "KAF-CONFIG-4"
    with KafkaClient(target) as k:
        name = create_topic(target, k, "badcfg")
        bad = [
            [("retention.ms", SET, "not-a-number")],
            [("max.message.bytes", SET, "-1")],
            [("no.such.topic.config", SET, "1")],
            [("retention.ms", SET, "5000"), ("max.message.bytes", SET, "-1")],
        ]
        for changes in bad:
            got = alter(target, k, req, name, changes)
            expect_code(got, "error_code", "INVALID_CONFIG", req, f"{changes}")
        result, _ = describe(target, k, TOPIC, name, req, keys=["retention.ms"])
    c = config_entry(result, "retention.ms", req)
    require(
        c["value"] != "5000",
        req,
        "retention.ms is 5000: a refused request's valid change was applied",
        c.at("value"),
    )


@case("kafka/configs/5", "KAF-CONFIG-5")
def test_validate_only_changes_nothing(target: CaseContext) -> None:
    """validate_only answers as otherwise and changes nothing.

    KAF-CONFIG-5: "IncrementalAlterConfigs with validate_only answers as it would otherwise (error
    0 for valid changes, INVALID_CONFIG for invalid ones) and changes nothing."
    """
    req = "KAF-CONFIG-5"
    with KafkaClient(target) as k:
        name = create_topic(target, k, "drycfg")
        got = alter(target, k, req, name, [("retention.ms", SET, "777")], validate_only=True)
        expect_code(got, "error_code", "NONE", req, "SET retention.ms=777")
        got = alter(target, k, req, name, [("retention.ms", SET, "x")], validate_only=True)
        expect_code(got, "error_code", "INVALID_CONFIG", req, "SET retention.ms=x")
        result, _ = describe(target, k, TOPIC, name, req, keys=["retention.ms"])
    c = config_entry(result, "retention.ms", req)
    require(
        c["value"] != "777" and c["config_source"] != TOPIC_CONFIG,
        req,
        f"after validate_only retention.ms is {c['value']!r} (config_source {c['config_source']})",
        c.at("value") + c.at("config_source"),
    )


@case("kafka/configs/6", "KAF-CONFIG-6")
def test_unknown_topics_and_repeated_resources(target: CaseContext) -> None:
    """An unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a repeated resource INVALID_REQUEST.

    KAF-CONFIG-6: "DescribeConfigs and IncrementalAlterConfigs of a topic the broker does not have
    answer UNKNOWN_TOPIC_OR_PARTITION (3) for it, and IncrementalAlterConfigs naming the same
    resource twice answers INVALID_REQUEST (42)."
    """
    req = "KAF-CONFIG-6"
    absent = target.name("nocfg")
    with KafkaClient(target) as k:
        result, _ = describe(target, k, TOPIC, absent, req)
        expect_code(result, "error_code", "UNKNOWN_TOPIC_OR_PARTITION", req, f"describe {absent}")
        got = alter(target, k, req, absent, [("retention.ms", SET, "1000")])
        expect_code(got, "error_code", "UNKNOWN_TOPIC_OR_PARTITION", req, f"alter {absent}")
        name = create_topic(target, k, "twicecfg")
        v = usable(target, "IncrementalAlterConfigs")
        one = {
            "resource_type": TOPIC,
            "resource_name": name,
            "configs": [{"name": "retention.ms", "config_operation": SET, "value": "1000"}],
        }
        body = {"resources": [one, one], "validate_only": False}
        reply = k.call("IncrementalAlterConfigs", v, body, req, f"{name} twice")
    for i, r in enumerate(reply["responses"]):
        expect_code(r, "error_code", "INVALID_REQUEST", req, f"{name} twice, answer {i}")
    first(reply["responses"], "responses[0]", req, f"{name} twice")


@case("kafka/configs/7", "KAF-CONFIG-7")
def test_documentation_only_when_asked(target: CaseContext) -> None:
    """v3+: documentation comes when asked for, null otherwise.

    KAF-CONFIG-7: "DescribeConfigs v3+ with include_documentation answers a documentation string
    for a topic config; without it the documentation is null."
    """
    req = "KAF-CONFIG-7"
    with KafkaClient(target) as k:
        name = create_topic(target, k, "docs")
        asked, _ = describe(target, k, TOPIC, name, req, keys=["retention.ms"], docs=True, lowest=3)
        plain, _ = describe(target, k, TOPIC, name, req, keys=["retention.ms"], lowest=3)
    c = config_entry(asked, "retention.ms", req)
    require(c["documentation"], req, "no documentation though asked for", c.at("documentation"))
    c = config_entry(plain, "retention.ms", req)
    require(
        c["documentation"] is None,
        req,
        f"documentation {c['documentation']!r} though not asked for, expected null",
        c.at("documentation"),
    )


@case("kafka/configs/8", "KAF-CONFIG-8")
def test_the_broker_resource(target: CaseContext) -> None:
    """The broker resource named by the receiving broker's node id lists configs; a
    non-integer name is INVALID_REQUEST.

    Which listed broker receives the request is not on the wire: each node id Metadata lists
    is asked, and one of them must answer (Kafka refuses another broker's id).

    KAF-CONFIG-8: "DescribeConfigs of the broker resource (type 4) named by the node id of the
    broker that receives it answers error 0 with its configs, and a broker resource name that is
    not an integer answers INVALID_REQUEST (42)."
    """
    req = "KAF-CONFIG-8"
    v = usable(target, "Metadata")
    with KafkaClient(target) as k:
        body = {"topics": [], "allow_auto_topic_creation": False}
        meta = k.call("Metadata", v, body, req, "Metadata")
        first(meta["brokers"], "brokers[0]", req, "Metadata")
        results = [describe(target, k, BROKER, str(b["node_id"]), req)[0] for b in meta["brokers"]]
        bad, _ = describe(target, k, BROKER, "broker-one", req)
    answered = [r for r in results if r["error_code"] == 0 and r["configs"]]
    require(
        answered,
        req,
        "no broker resource named by a node id of Metadata answered error 0 with configs "
        f"(error codes {show_all([r['error_code'] for r in results])})",
        combined(r.at("error_code") for r in results)
        + combined(r["configs"].at() for r in results),
    )
    expect_code(bad, "error_code", "INVALID_REQUEST", req, "broker 'broker-one'")


@case("kafka/configs/9", "KAF-CONFIG-9")
def test_max_message_bytes_is_honoured(target: CaseContext) -> None:
    """A batch above max.message.bytes is MESSAGE_TOO_LARGE and not stored.

    KAF-CONFIG-9: "after max.message.bytes is set on a topic, a Produce of a record batch larger
    than it answers MESSAGE_TOO_LARGE (10) for the partition and stores nothing, and a smaller
    batch is accepted."
    """
    req = "KAF-CONFIG-9"
    with KafkaClient(target) as k:
        name = create_topic(target, k, "limited")
        got = alter(target, k, req, name, [("max.message.bytes", SET, "300")])
        expect_code(got, "error_code", "NONE", req, "SET max.message.bytes=300")
        config_until(target, k, name, "max.message.bytes", lambda c: c["value"] == "300", req)
        big = batch([b"x" * 600])

        taken: list[Node] = []

        def refused() -> Node:
            p = produce_parts(target, k, name, {0: big}, requirement=req)[0]
            if p["error_code"] == 0:
                taken.append(p)
            return p

        # the broker applies the config a moment after it describes it: ask again (bounded)
        # while the big batch is still taken (each one taken is counted below)
        p = until(target, refused, lambda p: p["error_code"] != 0)
        expect_code(p, "error_code", "MESSAGE_TOO_LARGE", req, f"a {len(big)}-byte batch")
        small = produce(target, k, name, batch([b"ok"]), requirement=req)
    require(
        small["base_offset"] == len(taken),
        req,
        f"the small batch went to offset {small['base_offset']}, expected {len(taken)} (the "
        "refused batch stored nothing)",
        small.at("base_offset") + p.at("error_code"),
    )


@case("kafka/configs/10", "KAF-CONFIG-10")
def test_create_topics_takes_configs(target: CaseContext) -> None:
    """CreateTopics' configs are the topic's own; an unknown one is INVALID_CONFIG.

    KAF-CONFIG-10: "CreateTopics with configs creates the topic with them (DescribeConfigs answers
    each with config_source TOPIC_CONFIG (1)), and a config Kafka does not know or a value it does
    not accept answers INVALID_CONFIG (40) and creates nothing."
    """
    req = "KAF-CONFIG-10"
    v = usable(target, "CreateTopics")
    good, bad = target.name("withcfg"), target.name("badcreate")
    with KafkaClient(target) as k:
        for name, configs in (
            (good, [("retention.ms", "4321")]),
            (bad, [("no.such.topic.config", "1")]),
        ):
            body = {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": n, "value": x} for n, x in configs],
                    }
                ],
                "timeout_ms": 5000,
            }
            reply = k.call("CreateTopics", v, body, req, f"CreateTopics v{v} {name}")
            t = first(reply["topics"], "topics[0]", req, name)
            expect_code(t, "error_code", "NONE" if name == good else "INVALID_CONFIG", req, name)
        c = config_until(target, k, good, "retention.ms", lambda c: c["value"] == "4321", req)
        listed = metadata(target, k, [bad]).get(bad)
    require(
        (c["value"], c["config_source"]) == ("4321", TOPIC_CONFIG),
        req,
        f"retention.ms {c['value']!r} config_source {c['config_source']}, expected '4321' and 1",
        c.at("value") + c.at("config_source"),
    )
    require(
        listed is None or listed["error_code"] != 0,
        req,
        f"{bad} was created though its config was refused",
        listed.at("error_code") if listed is not None else c.at(),
    )
