"""Classic groups kept across a restart with ``--data-dir`` (KAF-GROUP-19, which no
conformance case can check: the suite cannot restart its target).  What is stored and
when (Kafka's GroupMetadataValue records), how it is read back (Kafka's replay and
onLoaded), a restart through the handlers in process, and the real ``serve --data-dir``
started twice, with and without the fault quirk groups-forgotten-on-restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.engine import Engine
from conformance.protocols.kafka import quirks_generations
from conformance.protocols.kafka.broker import KafkaFrontend
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.coordinator import Coordinator
from conformance.protocols.kafka.coordinator_state import Group, Member
from conformance.protocols.kafka.errors import CODES
from conformance.protocols.kafka.group_store import PREFIX, GroupStore, decode, encode
from conformance.protocols.kafka.handlers import HANDLERS
from tests.kafka.test_coordinator import DELAY, Clock, done, join
from tests.support import broker as support
from tests.support.kafka_client import KafkaConn

JOIN, HEARTBEAT, SYNC, DESCRIBE = 11, 12, 14, 15


def _member(member_id: str, instance: str | None = None, **kw: Any) -> Member:
    return Member(
        member_id,
        instance,
        "client",
        "/10.0.0.1",
        "consumer",
        (("range", b"sub"), ("roundrobin", b"rr")),
        session_timeout_s=10.0,
        rebalance_timeout_s=30.0,
        last_seen=0.0,
        **kw,
    )


def test_a_group_is_stored_as_kafkas_group_metadata_value_and_loaded_stable() -> None:
    group = Group("g", "Stable", 3, "consumer", "range", "m1")
    group.members = {"m1": _member("m1", "i-1", assignment=b"A"), "m2": _member("m2")}
    value = json.loads(encode(group))
    assert value["generation"] == 3 and value["leader"] == "m1" and value["protocol"] == "range"
    assert [m["member_id"] for m in value["members"]] == ["m1", "m2"]
    assert value["members"][0]["rebalance_timeout_ms"] == 30_000
    loaded = decode("g", encode(group), now=50.0)
    assert (loaded.state, loaded.generation, loaded.leader) == ("Stable", 3, "m1")
    m1 = loaded.members["m1"]
    # Kafka's replay: each member supports the chosen protocol only, with its subscription
    assert (m1.protocols, m1.assignment, m1.group_instance_id) == (
        (("range", b"sub"),),
        b"A",
        "i-1",
    )
    assert (m1.last_seen, m1.session_timeout_s, m1.client_host) == (50.0, 10.0, "/10.0.0.1")
    empty = decode("e", encode(Group("e", generation=4)), now=0.0)
    assert (empty.state, empty.generation, empty.protocol_type, empty.members) == (
        "Empty",
        4,
        None,
        {},
    )


def test_a_stored_value_that_does_not_read_is_skipped() -> None:
    engine = Engine()
    engine.put_meta(PREFIX + "bad", b"{not json")
    engine.put_meta(PREFIX + "old", json.dumps({"generation": 1}).encode())
    GroupStore(engine).save(Group("good"))
    assert list(GroupStore(engine).load(0.0)) == ["good"]


def test_what_is_written_and_when_as_kafka_writes_its_records() -> None:
    """A new group, the leader's assignment, an emptied group; nothing while rebalancing;
    a deleted group removed."""
    clock, engine = Clock(), Engine()
    coord = Coordinator(clock, join_delay_s=DELAY)
    coord.attach(GroupStore(engine))

    def stored() -> dict[str, Any] | None:
        raw = engine.meta(PREFIX).get(PREFIX + "g")
        return None if raw is None else dict(json.loads(raw))

    ticket = join(coord)
    assert stored() == {
        "generation": 0,
        "leader": None,
        "members": [],
        "protocol": None,
        "protocol_type": "",
    }
    clock.advance(DELAY)
    member = done(ticket).member_id
    assert stored() == json.loads(encode(Group("g"))), "CompletingRebalance: nothing written"
    coord.sync("g", member, 1, assignments={member: b"A"})
    after_sync = stored()
    assert after_sync is not None
    assert (after_sync["generation"], after_sync["leader"]) == (1, member)
    assert [m["assignment"] for m in after_sync["members"]] == ["QQ=="]
    join(coord, member)  # the leader rejoins: PreparingRebalance, nothing written
    assert stored() == after_sync
    coord.leave("g", [(member, None)])
    emptied = stored()
    assert emptied is not None
    assert (emptied["generation"], emptied["members"], emptied["protocol"]) == (2, [], None)
    assert coord.forget_empty("g") == "NONE" and stored() is None


# -- a restart through the handlers ------------------------------------------------------


def _broker(data: Path, clock: Clock, *quirks: str) -> Broker:
    config = KafkaConfig(revision="apache", quirks=quirks, join_delay_s=DELAY)
    return KafkaFrontend(Engine(str(data)), config, clock).broker


def _call(broker: Broker, key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    answer: Any = HANDLERS[key](broker, Request(key, version, 1, "cli", body), "10.0.0.1:4000")
    if hasattr(answer, "poll"):
        answer = answer.poll(0.0)
    assert isinstance(answer, dict), "still waiting"
    return answer


def _settle(broker: Broker, clock: Clock, group: str, instance: str | None) -> dict[str, Any]:
    body = {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"sub"}],
    }
    version = 5 if instance is not None else 3  # a dynamic member: no MEMBER_ID_REQUIRED
    wait: Any = HANDLERS[JOIN](broker, Request(JOIN, version, 1, "cli", body), "10.0.0.1:4000")
    clock.advance(DELAY)
    joined: dict[str, Any] = wait.poll(0.0)
    me = joined["member_id"]
    sync = {"group_id": group, "generation_id": 1, "member_id": me, "group_instance_id": instance}
    sync["assignments"] = [{"member_id": me, "assignment": b"A"}]
    assert _call(broker, SYNC, 3, sync)["error_code"] == 0
    return joined


def test_a_restart_on_the_data_dir_brings_the_stable_group_back(tmp_path: Path) -> None:
    clock = Clock()
    first = _broker(tmp_path, clock)
    joined = _settle(first, clock, "g", "i-1")
    first.engine.close()
    clock.advance(9)  # the member's session starts again at the load, not at its last request
    again = _broker(tmp_path, clock)
    (group,) = _call(again, DESCRIBE, 4, {"groups": ["g"]})["groups"]
    assert (group["group_state"], group["protocol_data"]) == ("Stable", "range")
    (m,) = group["members"]
    assert (m["member_id"], m["group_instance_id"], m["member_metadata"]) == (
        joined["member_id"],
        "i-1",
        b"sub",
    )
    assert m["member_assignment"] == b"A"
    clock.advance(9)
    beat = {"group_id": "g", "generation_id": 1, "member_id": joined["member_id"]}
    assert _call(again, HEARTBEAT, 3, {**beat, "group_instance_id": "i-1"})["error_code"] == 0


def test_an_offset_commit_first_after_a_restart_sees_the_group(tmp_path: Path) -> None:
    """The membership check of OffsetCommit finds the stored group even when no group
    request came first (consumer_groups() takes the classic groups back)."""
    clock = Clock()
    first = _broker(tmp_path, clock)
    first.engine.create_topic("t", 1)
    joined = _settle(first, clock, "g", None)
    first.engine.close()
    again = _broker(tmp_path, clock)
    parts = [{"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}]
    body = {
        "group_id": "g",
        "generation_id_or_member_epoch": 1,
        "member_id": joined["member_id"],
        "topics": [{"name": "t", "partitions": parts}],
    }
    (topic,) = _call(again, 8, 6, body)["topics"]
    assert topic["partitions"][0]["error_code"] == 0


def test_the_fault_quirk_forgets_the_groups_at_a_restart(tmp_path: Path) -> None:
    assert quirks_generations.forgets_groups(("groups-forgotten-on-restart",))
    clock = Clock()
    quirk = "groups-forgotten-on-restart"
    first = _broker(tmp_path, clock, quirk)
    joined = _settle(first, clock, "g", None)
    first.engine.close()
    again = _broker(tmp_path, clock, quirk)
    (group,) = _call(again, DESCRIBE, 4, {"groups": ["g"]})["groups"]
    assert group["group_state"] == "Dead"
    beat = {"group_id": "g", "generation_id": 1, "member_id": joined["member_id"]}
    assert _call(again, HEARTBEAT, 3, beat)["error_code"] == CODES["UNKNOWN_MEMBER_ID"]


# -- the real server, started twice -------------------------------------------------------


def _served_group(data: Path, *quirks: str) -> tuple[str, dict[str, Any]]:
    """Start ``serve --data-dir``, make group g Stable with one static member, stop."""
    args = ["--data-dir", str(data), "--revision", "apache"]
    for q in quirks:
        args += ["--quirk", q]
    with support.running(*args, protocol="kafka") as b:
        c = KafkaConn((b.host, b.port))
        body = {
            "group_id": "g",
            "session_timeout_ms": 30_000,
            "rebalance_timeout_ms": 30_000,
            "member_id": "",
            "group_instance_id": "i-1",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}],
        }
        joined = c.call(JOIN, 5, body)
        sync = {
            "group_id": "g",
            "generation_id": joined["generation_id"],
            "group_instance_id": "i-1",
        }
        sync |= {"member_id": joined["member_id"], "protocol_type": "consumer"}
        sync["assignments"] = [{"member_id": joined["member_id"], "assignment": b"A"}]
        assert c.call(SYNC, 5, sync)["error_code"] == 0
        c.close()
    return joined["member_id"], joined


def _after_restart(data: Path, member: str, generation: int, *quirks: str) -> tuple[Any, ...]:
    args = ["--data-dir", str(data), "--revision", "apache"]
    for q in quirks:
        args += ["--quirk", q]
    with support.running(*args, protocol="kafka") as b:
        c = KafkaConn((b.host, b.port))
        (group,) = c.call(DESCRIBE, 5, {"groups": ["g"]})["groups"]
        beat = {"group_id": "g", "generation_id": generation, "member_id": member}
        beat["group_instance_id"] = "i-1"
        error = c.call(HEARTBEAT, 4, beat)["error_code"]
        c.close()
    return group["group_state"], [m["member_id"] for m in group["members"]], error


def test_serve_with_a_data_dir_started_twice_keeps_the_group(tmp_path: Path) -> None:
    """KAF-GROUP-19 end to end: Stable with the same member, whose heartbeat at the old
    generation is answered with error 0."""
    member, joined = _served_group(tmp_path)
    state, members, error = _after_restart(tmp_path, member, joined["generation_id"])
    assert (state, members, error) == ("Stable", [member], 0)


def test_serve_with_the_fault_quirk_forgets_the_group(tmp_path: Path) -> None:
    quirk = "groups-forgotten-on-restart"
    member, joined = _served_group(tmp_path, quirk)
    state, members, error = _after_restart(tmp_path, member, joined["generation_id"], quirk)
    assert (state, members, error) == ("Dead", [], CODES["UNKNOWN_MEMBER_ID"])
