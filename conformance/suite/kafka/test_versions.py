"""Kafka version negotiation (SPEC.md, area "versions")."""

from __future__ import annotations

from collections import Counter
from typing import Any

from conformance.client import PeerClosed, ReplyTimeout
from conformance.evidence import combined, decoded
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import BY_NAME
from conformance.suite.case import Violation, case, require
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    missing,
    need,
)
from conformance.suite.shown import joined, show_all, show_fields
from conformance.suite.target import CaseContext

DOC_TABLE = {
    "ApiVersions": (0, 3),
    "Metadata": (0, 0),
    "FindCoordinator": (0, 0),
    "JoinGroup": (0, 0),
    "SyncGroup": (0, 0),
    "Heartbeat": (0, 0),
    "LeaveGroup": (0, 0),
    "ListOffsets": (1, 1),
    "Fetch": (0, 0),
    "OffsetCommit": (2, 2),
    "OffsetFetch": (0, 0),
}
"""The document's table: "pgcdc implements 11 API keys"."""


@case("kafka/versions/1", "KAF-VER-1")
@at_every_version("ApiVersions", until=3)
def test_api_versions_is_answered_at_every_version(target: CaseContext, version: int) -> None:
    """ApiVersions is answered at every version 0-3 with error 0 and the APIs served.

    KAF-VER-1: "ApiVersions is answered at every version 0-3 with error 0 and the API keys the
    broker serves, each with its minimum and maximum version ..."
    """
    need(target, "ApiVersions", version)
    with KafkaClient(target) as k:
        body = k.call("ApiVersions", version, {}, "KAF-VER-1", f"ApiVersions v{version}")
    expect_code(body, "error_code", "NONE", "KAF-VER-1", f"ApiVersions v{version}")
    keys = {int(a["api_key"]) for a in body["api_keys"]}
    require(
        18 in keys,
        "KAF-VER-1",
        f"ApiVersions v{version} does not list ApiVersions (18) among its {len(keys)} API keys",
        body["api_keys"].at(),
    )


@case("kafka/versions/2", "KAF-VER-2")
def test_the_documents_table_is_served(target: CaseContext) -> None:
    """The broker serves at least the document's table of 11 API keys and versions.

    KAF-VER-2: "the broker serves at least the document's table: ApiVersions 0-3, Metadata 0,
    FindCoordinator 0, JoinGroup 0, SyncGroup 0, Heartbeat 0, LeaveGroup 0, ListOffsets 1, Fetch 0,
    OffsetCommit 2, OffsetFetch 0, and ApiVersions lists them."
    """
    with KafkaClient(target) as k:
        body = k.call("ApiVersions", 0, {}, "KAF-VER-1", "ApiVersions v0")
    served = {int(a["api_key"]): a for a in body["api_keys"]}
    for name, (low, high) in DOC_TABLE.items():
        entry = served.get(BY_NAME[name].key)
        if entry is None:
            missing(
                body["api_keys"],
                f"{name} ({BY_NAME[name].key}); the document's table says {low}-{high}",
                "KAF-VER-2",
                "ApiVersions v0",
            )
        span = (entry["min_version"], entry["max_version"])
        require(
            span[0] <= low and high <= span[1],
            "KAF-VER-2",
            f"{name} advertised {span[0]}-{span[1]}, the document's table says {low}-{high}",
            entry.at("min_version") + entry.at("max_version"),
        )


@case("kafka/versions/3", "KAF-VER-3")
def test_an_unknown_api_versions_version_is_answered_at_v0(target: CaseContext) -> None:
    """An ApiVersions request at a version the broker does not serve is answered at v0
    with UNSUPPORTED_VERSION (35) and ApiVersions' own range.

    KAF-VER-3: "an ApiVersions request at a version the broker does not serve is answered at version
    0 with error UNSUPPORTED_VERSION (35) and an API list holding ApiVersions' own version range, so
    the client can retry at a version it serves."
    """
    with KafkaClient(target) as k:
        # ApiVersions v127: header v2 (flexible), a version no broker serves
        payload = (18).to_bytes(2, "big") + (127).to_bytes(2, "big") + (7).to_bytes(4, "big")
        payload += b"\xff\xff\x00" + b"\x00\x00\x00"  # client id null, tags, empty body
        k.raw(codec.frame(payload), "ApiVersions v127 request #7")
        reply = k.payload("KAF-VER-3", "ApiVersions v127")
        answered = k.exchange()
    got = codec.correlation_of(reply)
    require(
        got == 7,
        "KAF-HDR-2",
        f"ApiVersions v127: correlation id {got}, expected 7",
        answered.on("header.correlation_id"),
    )
    try:
        _, raw = codec.decode_response(reply, 18, 0)
    except codec.KafkaError as exc:
        raise Violation(
            "KAF-VER-3", f"the answer to ApiVersions v127 is not a v0 answer: {exc}", answered
        ) from None
    body = decoded(raw, answered)
    expect_code(body, "error_code", "UNSUPPORTED_VERSION", "KAF-VER-3", "ApiVersions v127")
    require(
        any(int(a["api_key"]) == 18 for a in body["api_keys"]),
        "KAF-VER-3",
        "ApiVersions v127: the answer does not list ApiVersions (18), so the client cannot "
        "tell at which version to ask again",
        body["api_keys"].at(),
    )


@case("kafka/versions/4", "KAF-VER-4")
def test_an_unknown_api_key_gets_a_bare_35(target: CaseContext) -> None:
    """An unknown API key is answered with the correlation id and int16 35.

    KAF-VER-4: "a request with an API key the broker does not serve is answered with the correlation
    id followed by the int16 error UNSUPPORTED_VERSION (35)."
    """
    with KafkaClient(target) as k:
        # API key 999 v0, correlation 9, client id null
        payload = (999).to_bytes(2, "big") + b"\x00\x00" + (9).to_bytes(4, "big") + b"\xff\xff"
        k.raw(codec.frame(payload), "API key 999 v0 request #9")
        reply = k.payload("KAF-VER-4", "API key 999")
        answered = k.exchange()
    require(
        reply == (9).to_bytes(4, "big") + (35).to_bytes(2, "big"),
        "KAF-VER-4",
        f"API key 999: answered {reply[:16].hex()} ({len(reply)} bytes), expected 00000009 0023",
        answered,
    )


@case("kafka/versions/5", "KAF-VER-5")
def test_an_unserved_version_is_never_answered_as_served(target: CaseContext) -> None:
    """A request for a version the broker does not serve is closed or answered
    UNSUPPORTED_VERSION, never as if it were served.

    KAF-VER-5: "a request for an API key or version the broker does not serve (other than
    ApiVersions) is never answered as if it were served: the broker closes the connection or answers
    with error UNSUPPORTED_VERSION."
    """
    with KafkaClient(target) as k:
        k.call("ApiVersions", 0, {}, "KAF-VER-1", "ApiVersions v0")
        # Metadata v99, header v1: correlation 5, client id null, then an empty topic array
        payload = (3).to_bytes(2, "big") + (99).to_bytes(2, "big") + (5).to_bytes(4, "big")
        payload += b"\xff\xff" + b"\x00\x00\x00\x00"
        k.raw(codec.frame(payload), "Metadata v99 request #5")
        try:
            reply = k.conn.recv_frame()
        except (ReplyTimeout, PeerClosed):  # closed or silent: not served, as allowed
            return
        answered = k.exchange()
    code = int.from_bytes(reply[4:6], "big", signed=True) if len(reply) >= 6 else None
    require(
        code == 35 or reply[4:] == (35).to_bytes(2, "big"),
        "KAF-VER-5",
        f"Metadata v99 was answered ({reply[:24].hex()}, {len(reply)} bytes) without "
        "UNSUPPORTED_VERSION (35) after the correlation id; expected a close or that error",
        answered,
    )


@case("kafka/versions/6", "KAF-VER-6")
def test_each_api_is_listed_once_with_min_not_above_max(target: CaseContext) -> None:
    """ApiVersions lists each API key once, with min_version <= max_version.

    KAF-VER-6: "ApiVersions lists each API key once, with a minimum version no greater than its
    maximum."
    """
    with KafkaClient(target) as k:
        body = k.call("ApiVersions", 0, {}, "KAF-VER-1", "ApiVersions v0")
    counted = Counter(int(a["api_key"]) for a in body["api_keys"])
    twice = sorted(key for key, n in counted.items() if n > 1)
    require(
        not twice,
        "KAF-VER-6",
        f"API key(s) listed more than once: {show_all(twice)}, expected each once",
        combined(a.at("api_key") for a in body["api_keys"] if a["api_key"] in twice),
    )
    bad = [a for a in body["api_keys"] if a["min_version"] > a["max_version"]]
    require(
        not bad,
        "KAF-VER-6",
        "min_version above max_version: "
        + joined(
            (
                show_fields(
                    api_key=a["api_key"], min_version=a["min_version"], max_version=a["max_version"]
                )
                for a in bad
            ),
            sep="; ",
            most=3,
        )
        + "; expected min_version <= max_version",
        combined(a.at("min_version") + a.at("max_version") for a in bad),
    )


def _minimal(api: str, topic: str) -> dict[str, Any]:
    """A request body every version of ``api`` accepts, about ``topic``."""
    bodies: dict[str, dict[str, Any]] = {
        "Metadata": {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
        "ListOffsets": {
            "replica_id": -1,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
        "FindCoordinator": {"key": topic, "key_type": 0, "coordinator_keys": [topic]},
        "DescribeGroups": {"groups": [topic]},
        "ListGroups": {},
        "OffsetFetch": {
            "group_id": topic,
            "topics": [{"name": topic, "partition_indexes": [0]}],
            "groups": [{"group_id": topic, "topics": [{"name": topic, "partition_indexes": [0]}]}],
        },
    }
    return bodies[api]


def _answers_at_every_version(target: CaseContext, api: str, version: int) -> None:
    need(target, api, version)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, f"ver-{api.lower()}")
        k.call(api, version, _minimal(api, topic), "KAF-VER-7", f"{api} v{version}")


@case("kafka/versions/7", "KAF-VER-7")
@at_every_version("Metadata")
def test_metadata_is_answered_at_the_version_asked(target: CaseContext, version: int) -> None:
    """A request at an advertised version is answered with that version's layout (Metadata).

    KAF-VER-7: "a request at any version the broker advertises for an API is answered with that
    version's response layout: the response decodes at the version asked and ends where its frame
    ends."
    """
    _answers_at_every_version(target, "Metadata", version)


@case("kafka/versions/8", "KAF-VER-7")
@at_every_version("ListOffsets", since=1)
def test_list_offsets_is_answered_at_the_version_asked(target: CaseContext, version: int) -> None:
    """A request at an advertised version is answered with that version's layout (ListOffsets).

    KAF-VER-7: "a request at any version the broker advertises for an API is answered with that
    version's response layout: the response decodes at the version asked and ends where its frame
    ends."
    """
    _answers_at_every_version(target, "ListOffsets", version)


@case("kafka/versions/9", "KAF-VER-7")
@at_every_version("FindCoordinator")
def test_find_coordinator_is_answered_at_the_version_asked(
    target: CaseContext, version: int
) -> None:
    """A request at an advertised version is answered with that version's layout
    (FindCoordinator).

    KAF-VER-7: "a request at any version the broker advertises for an API is answered with that
    version's response layout: the response decodes at the version asked and ends where its frame
    ends."
    """
    _answers_at_every_version(target, "FindCoordinator", version)


@case("kafka/versions/10", "KAF-VER-7")
@at_every_version("OffsetFetch")
def test_offset_fetch_is_answered_at_the_version_asked(target: CaseContext, version: int) -> None:
    """A request at an advertised version is answered with that version's layout (OffsetFetch).

    KAF-VER-7: "a request at any version the broker advertises for an API is answered with that
    version's response layout: the response decodes at the version asked and ends where its frame
    ends."
    """
    _answers_at_every_version(target, "OffsetFetch", version)


@case("kafka/versions/11", "KAF-VER-7")
@at_every_version("DescribeGroups")
def test_describe_groups_is_answered_at_the_version_asked(
    target: CaseContext, version: int
) -> None:
    """A request at an advertised version is answered with that version's layout
    (DescribeGroups).

    KAF-VER-7: "a request at any version the broker advertises for an API is answered with that
    version's response layout: the response decodes at the version asked and ends where its frame
    ends."
    """
    _answers_at_every_version(target, "DescribeGroups", version)
