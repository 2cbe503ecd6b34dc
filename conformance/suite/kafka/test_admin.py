"""Kafka topic admin and Metadata (SPEC.md, area "admin")."""

from __future__ import annotations

from typing import Any

from conformance.evidence import Node
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import (
    batch,
    create_topic,
    metadata,
    metadata_until,
    produce_parts,
)
from conformance.suite.kafka.verify import KafkaClient, expect_code, find, first, missing, usable
from conformance.suite.shown import joined, show, show_all, show_fields
from conformance.suite.target import CaseContext


def _create(
    target: CaseContext,
    k: KafkaClient,
    name: str,
    partitions: int,
    *,
    validate_only: bool = False,
    requirement: str = "KAF-ADMIN-1",
) -> Node:
    v = usable(target, "CreateTopics", lowest=1 if validate_only else 0)
    body = {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
        "timeout_ms": 5000,
        "validate_only": validate_only,
    }
    what = f"CreateTopics v{v} {show(name, 40)}"
    reply = k.call("CreateTopics", v, body, requirement, what)
    return first(reply["topics"], "topics[0]", requirement, what)


@case("kafka/admin/1", "KAF-ADMIN-1")
def test_create_topics_makes_the_partitions_asked_for(target: CaseContext) -> None:
    """CreateTopics creates a topic with the partitions asked for; Metadata lists them.

    KAF-ADMIN-1: "CreateTopics creates a topic with the partitions asked for (Metadata then lists
    them) ..."
    """
    with KafkaClient(target) as k:
        create_topic(target, k, "three", partitions=3)  # checks Metadata's count


@case("kafka/admin/2", "KAF-ADMIN-1")
def test_an_existing_name_is_topic_already_exists(target: CaseContext) -> None:
    """Creating a topic that exists is TOPIC_ALREADY_EXISTS (36).

    KAF-ADMIN-1: "... an existing name is TOPIC_ALREADY_EXISTS (36) ..."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "twice")
        got = _create(target, k, name, 1)
    expect_code(got, "error_code", "TOPIC_ALREADY_EXISTS", "KAF-ADMIN-1", f"creating {name} again")


@case("kafka/admin/3", "KAF-ADMIN-1")
def test_a_partition_count_below_1_is_invalid(target: CaseContext) -> None:
    """A partition count of 0 or -2 is INVALID_PARTITIONS (37).

    KAF-ADMIN-1: "... a partition count below 1 (other than -1) is INVALID_PARTITIONS (37)."
    """
    with KafkaClient(target) as k:
        for count in (0, -2):
            got = _create(target, k, target.name(f"parts{count + 2}"), count)
            expect_code(
                got, "error_code", "INVALID_PARTITIONS", "KAF-ADMIN-1", f"{count} partitions"
            )


@case("kafka/admin/4", "KAF-ADMIN-2")
def test_metadata_lists_brokers_and_leaders_among_them(target: CaseContext) -> None:
    """Metadata lists the brokers and, per partition, a leader that is one of them.

    KAF-ADMIN-2: "Metadata lists every broker (node id, host, port) and, for each topic asked for,
    its partitions with a leader that is one of those brokers ..."
    """
    v = usable(target, "Metadata")
    with KafkaClient(target) as k:
        name = create_topic(target, k, "leaders", partitions=2)
        reply = k.call(
            "Metadata",
            v,
            {"topics": [{"name": name}], "allow_auto_topic_creation": False},
            "KAF-ADMIN-2",
            f"Metadata v{v}",
        )
    brokers = reply["brokers"]
    nodes = {b["node_id"] for b in brokers}
    bad = [b for b in brokers if not (b["host"] and b["port"] > 0)]
    require(
        nodes and not bad,
        "KAF-ADMIN-2",
        f"brokers: {_brokers(brokers)}; expected at least one, each with a host and a port > 0",
        brokers.at() if not bad else brokers.at() + bad[0].at("host") + bad[0].at("port"),
    )
    topic = find(reply["topics"], "name", name, f"topic {name}", "KAF-ADMIN-2", f"Metadata v{v}")
    leaders = [p["leader_id"] for p in topic["partitions"]]
    require(
        leaders and set(leaders) <= nodes,
        "KAF-ADMIN-2",
        f"partition leaders {show_all(leaders)}, expected some, each among the brokers "
        f"{show_all(sorted(nodes))}",
        topic["partitions"].at() + brokers.at(),
    )


@case("kafka/admin/5", "KAF-ADMIN-2")
def test_metadata_of_an_unknown_topic_is_error_3(target: CaseContext) -> None:
    """An unknown topic is UNKNOWN_TOPIC_OR_PARTITION (3) when auto-creation is off (v4+).

    KAF-ADMIN-2: "... an unknown topic is UNKNOWN_TOPIC_OR_PARTITION (3) unless the broker creates
    it."
    """
    v = usable(target, "Metadata", lowest=4)
    name = target.name("absent")
    with KafkaClient(target) as k:
        found = metadata(target, k, [name], create=False, version=v)
    got = found.get(name)
    if got is None:
        missing(found.array, f"topic {name}", "KAF-ADMIN-2", f"Metadata v{v}")
    expect_code(
        got, "error_code", "UNKNOWN_TOPIC_OR_PARTITION", "KAF-ADMIN-2", f"Metadata of {name}"
    )


def _delete(target: CaseContext, k: KafkaClient, name: str) -> Node:
    v = usable(target, "DeleteTopics")
    body: dict[str, Any] = {"timeout_ms": 5000}
    if v >= 6:
        body["topics"] = [{"name": name, "topic_id": "00000000-0000-0000-0000-000000000000"}]
    else:
        body["topic_names"] = [name]
    what = f"DeleteTopics v{v} {name}"
    reply = k.call("DeleteTopics", v, body, "KAF-ADMIN-3", what)
    return first(reply["responses"], "responses[0]", "KAF-ADMIN-3", what)


@case("kafka/admin/6", "KAF-ADMIN-3")
def test_delete_topics_removes_a_topic(target: CaseContext) -> None:
    """DeleteTopics removes a topic; an unknown name is UNKNOWN_TOPIC_OR_PARTITION (3).

    KAF-ADMIN-3: "DeleteTopics removes a topic (Metadata no longer lists it, a Produce to it is
    refused); an unknown name is UNKNOWN_TOPIC_OR_PARTITION (3)."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "doomed")
        expect_code(
            _delete(target, k, name), "error_code", "NONE", "KAF-ADMIN-3", f"deleting {name}"
        )
        # KRaft brokers learn of the deletion from the controller's log a little later
        listed = metadata_until(target, k, None, lambda f: name not in f)
        require(
            name not in listed,
            "KAF-ADMIN-3",
            f"{name} is still listed after DeleteTopics{listed.waited_for()}, expected gone",
            listed[name].at("name") if name in listed else listed.array.at(),
        )
        p = produce_parts(target, k, name, {0: batch([b"x"])}, requirement="KAF-ADMIN-3")[0]
        require(
            p["error_code"] != 0,
            "KAF-ADMIN-3",
            f"a Produce to the deleted {name} was accepted (NONE (0)), expected an error",
            p.at("error_code"),
        )
        got = _delete(target, k, target.name("never"))
    expect_code(
        got,
        "error_code",
        ["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"],
        "KAF-ADMIN-3",
        "an unknown name",
    )


@case("kafka/admin/7", "KAF-ADMIN-4")
def test_validate_only_creates_nothing(target: CaseContext) -> None:
    """CreateTopics with validate_only answers as if it created the topic, but creates nothing.

    KAF-ADMIN-4: "CreateTopics with validate_only (v1+) checks the request and answers as if it
    created the topic, but creates nothing."
    """
    name = target.name("dry")
    with KafkaClient(target) as k:
        got = _create(target, k, name, 2, validate_only=True, requirement="KAF-ADMIN-4")
        expect_code(got, "error_code", "NONE", "KAF-ADMIN-4", "validate_only")
        listed = metadata(target, k, None)
    require(
        name not in listed,
        "KAF-ADMIN-4",
        f"validate_only created {name}: Metadata lists it, expected not",
        listed[name].at("name") if name in listed else listed.array.at(),
    )


@case("kafka/admin/8", "KAF-ADMIN-5")
def test_illegal_topic_names_are_refused(target: CaseContext) -> None:
    """Empty, '.', '..', 250-character and non-[a-zA-Z0-9._-] topic names are
    INVALID_TOPIC_EXCEPTION (17).

    KAF-ADMIN-5: "a topic name that is empty, "." or "..", longer than 249 characters, or holds a
    character other than ASCII letters, digits, ".", "_" and "-" is refused with
    INVALID_TOPIC_EXCEPTION (17)."
    """
    with KafkaClient(target) as k:
        for name in ("", ".", "..", "a" * 250, "a b", "a/b"):
            got = _create(target, k, name, 1, requirement="KAF-ADMIN-5")
            expect_code(
                got,
                "error_code",
                "INVALID_TOPIC_EXCEPTION",
                "KAF-ADMIN-5",
                f"topic name {show(name, 20)}",
            )


@case("kafka/admin/9", "KAF-ADMIN-6")
def test_metadata_null_lists_all_topics_and_empty_lists_none(target: CaseContext) -> None:
    """Metadata v1+ with a null topic list lists every topic; with an empty list, none.

    KAF-ADMIN-6: "Metadata v1+ with a null topic list lists every topic; with an empty list, none."
    """
    v = usable(target, "Metadata", lowest=1)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "all")
        every = metadata(target, k, None, version=v)
        none = metadata(target, k, [], version=v)
    require(
        name in every,
        "KAF-ADMIN-6",
        f"Metadata v{v} with null topics does not list {name} ({len(every)} topic(s) listed)",
        every.array.at(),
    )
    require(
        not none,
        "KAF-ADMIN-6",
        f"Metadata v{v} with no topics listed {len(none)} topic(s) "
        f"({show_all(sorted(none), most=5)}), "
        "expected none",
        none.array.at(),
    )


def _brokers(brokers: list[Any]) -> str:
    """Metadata's brokers by their fields: ``node_id 1 host 'localhost' port 9092, ...``."""
    return joined(
        (show_fields(node_id=b["node_id"], host=b["host"], port=b["port"]) for b in brokers),
        sep="; ",
    )
