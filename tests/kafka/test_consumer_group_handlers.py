"""The KIP-848 handlers in process (no socket): each body through the codec both ways,
the INVALID_REQUEST checks of a heartbeat, a classic group's id taken over only when it
is empty, ConsumerGroupDescribe, and the member epoch in OffsetCommit / OffsetFetch v9."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from conformance.engine import Engine
from conformance.protocols.kafka.apis import APIS
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.errors import CODES
from conformance.protocols.kafka.handlers import HANDLERS


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def broker() -> Broker:
    b = Broker(Engine(), KafkaConfig(revision="apache"), Clock())
    b.engine.create_topic("t", 2)
    return b


def call(broker: Broker, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    request, response = APIS[key].request, APIS[key].response
    body = request.decode(request.encode(body, version), version)
    answer = HANDLERS[key](broker, Request(key, version, 1, "cli", body), "127.0.0.1:4000")
    assert isinstance(answer, dict)
    decoded: dict[str, Any] = response.decode(response.encode(answer, version), version)
    return decoded


def join(group: str = "g", version: int = 1, **kw: Any) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": str(uuid.uuid4()) if version >= 1 else "",
        "member_epoch": 0,
        "rebalance_timeout_ms": 10_000,
        "subscribed_topic_names": ["t"],
        "topic_partitions": [],
        **kw,
    }


@pytest.mark.parametrize(
    ("change", "version"),
    [
        ({"rebalance_timeout_ms": -1}, 1),
        ({"topic_partitions": None}, 1),
        ({"subscribed_topic_names": None}, 1),
        ({"group_id": ""}, 1),
        ({"instance_id": ""}, 1),
        ({"rack_id": ""}, 1),
        ({"member_epoch": -3}, 1),
        ({"member_id": ""}, 1),
        ({"member_epoch": 5, "member_id": ""}, 0),
        ({"member_epoch": -2, "instance_id": None}, 1),
        ({"member_epoch": -1, "member_id": ""}, 0),
        ({"subscribed_topic_regex": "t.*"}, 1),
    ],
)
def test_an_invalid_heartbeat_is_invalid_request(
    broker: Broker, change: dict[str, Any], version: int
) -> None:
    r = call(broker, 68, version, join(version=version, **change))
    assert r["error_code"] == CODES["INVALID_REQUEST"] and r["error_message"]
    assert r["assignment"] is None


def test_an_empty_regex_beside_topic_names_is_no_regex(broker: Broker) -> None:
    r = call(broker, 68, 1, join(subscribed_topic_regex=""))
    assert r["error_code"] == 0


def test_an_unknown_assignor(broker: Broker) -> None:
    r = call(broker, 68, 0, join(version=0, server_assignor="sticky"))
    assert r["error_code"] == CODES["UNSUPPORTED_ASSIGNOR"]
    assert "uniform" in r["error_message"]


def test_v0_is_given_a_member_id_and_v1_keeps_its_own(broker: Broker) -> None:
    r0 = call(broker, 68, 0, join(version=0))
    assert r0["member_id"] and r0["member_epoch"] == 1
    body = join()
    r1 = call(broker, 68, 1, body)
    assert r1["member_id"] == body["member_id"] and r1["member_epoch"] == 2


def test_a_classic_group_with_members_keeps_its_id_an_empty_one_gives_it_up(
    broker: Broker,
) -> None:
    ticket = broker.coordinator.join(
        "c",
        "",
        protocol_type="connect",
        protocols=[("x", b"")],
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        client_id="cli",
        client_host="h",
        group_instance_id=None,
        require_known_member_id=False,
    )
    r = call(broker, 68, 1, join("c"))
    assert r["error_code"] == CODES["GROUP_ID_NOT_FOUND"]
    assert ticket is not None
    broker.coordinator.leave("c", [m.member_id for m in broker.coordinator.describe("c").members])
    assert broker.coordinator.describe("c").state == "Empty"
    r = call(broker, 68, 1, join("c"))
    assert r["error_code"] == 0
    assert broker.coordinator.describe("c").state == "Dead"


def test_describe(broker: Broker) -> None:
    body = join()
    call(broker, 68, 1, body)
    r = call(broker, 69, 1, {"group_ids": ["g", "nope", ""]})
    g, nope, empty = r["groups"]
    assert (g["error_code"], g["group_state"], g["group_epoch"], g["assignor_name"]) == (
        0,
        "Stable",
        1,
        "uniform",
    )
    (member,) = g["members"]
    assert member["member_id"] == body["member_id"] and member["member_type"] == 1
    assert member["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert member["assignment"]["topic_partitions"][0]["partitions"] == [0, 1]
    assert member["client_host"] == "/127.0.0.1"
    assert nope["error_code"] == CODES["GROUP_ID_NOT_FOUND"]
    assert empty["error_code"] == CODES["INVALID_GROUP_ID"]


def _commit(group: str, member: str, epoch: int) -> dict[str, Any]:
    part = {"partition_index": 0, "committed_offset": 5}
    return {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "topics": [{"name": "t", "partitions": [part]}],
    }


def test_commit_and_fetch_carry_the_member_epoch(broker: Broker) -> None:
    body = join()
    r = call(broker, 68, 1, body)
    mid, epoch = body["member_id"], r["member_epoch"]

    def commit(member: str, e: int, version: int = 9) -> int:
        got = call(broker, 8, version, _commit("g", member, e))
        code: int = got["topics"][0]["partitions"][0]["error_code"]
        return code

    assert commit(mid, epoch) == 0
    assert commit(mid, epoch + 1) == CODES["STALE_MEMBER_EPOCH"]
    assert commit("nobody", epoch) == CODES["UNKNOWN_MEMBER_ID"]
    assert commit(mid, epoch, version=8) == CODES["UNSUPPORTED_VERSION"]

    def fetch(member: str | None, e: int) -> dict[str, Any]:
        entry = {"group_id": "g", "member_id": member, "member_epoch": e, "topics": None}
        group: dict[str, Any] = call(broker, 9, 9, {"groups": [entry]})["groups"][0]
        return group

    assert fetch(mid, epoch)["topics"][0]["partitions"][0]["committed_offset"] == 5
    assert fetch(None, -1)["error_code"] == 0
    stale = fetch(mid, epoch - 1)
    assert stale["error_code"] == CODES["STALE_MEMBER_EPOCH"] and stale["topics"] == []
