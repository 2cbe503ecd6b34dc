"""The Iggy front-end of the reference broker, driven in-process through its deframer and
session: every command, both revisions, the login gate, the error statuses, the quirks."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
import xxhash

from conformance.engine import Engine
from conformance.protocols.iggy import broker_streams, codec
from conformance.protocols.iggy.broker_wire import RequestDeframer
from conformance.protocols.iggy.handler import IggyFrontend
from conformance.protocols.iggy.quirks import QUIRKS
from tests.iggy.broker_client import S0, T0, Conn, consumer, frontend, ident, logged


def topic_body(name: str = "t", partitions: int = 3, stream: Any = S0) -> dict[str, Any]:
    return {
        "stream": stream,
        "partitions_count": partitions,
        "compression": 1,
        "message_expiry": 0,
        "max_topic_size": 0,
        "replication_factor": 1,
        "name": name,
    }


def setup(c: Conn, partitions: int = 3) -> None:
    c.ok("create_stream", {"name": "s"})
    c.ok("create_topic", topic_body(partitions=partitions))


def send(c: Conn, partitioning: dict[str, Any], *payloads: bytes, **extra: Any) -> int:
    messages = [{"payload": p, **extra} for p in payloads]
    body = {"stream": S0, "topic": T0, "partitioning": partitioning, "messages": messages}
    return c.call("send_messages", body)[0]


def to_partition(p: int) -> dict[str, Any]:
    return {"kind": 2, "value": p}


def poll(
    c: Conn,
    kind: int,
    value: int = 0,
    *,
    partition: int | None = 0,
    count: int = 10,
    auto_commit: bool = False,
    who: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    body = {
        "consumer": who or consumer(1),
        "stream": S0,
        "topic": T0,
        "partition_flag": 0 if partition is None else 1,
        "partition_id": partition or 0,
        "strategy": {"kind": kind, "value": value},
        "count": count,
        "auto_commit": auto_commit,
    }
    return c.call("poll_messages", body)


def payloads(reply: Any) -> list[bytes]:
    return [m["payload"] for m in reply["messages"]]


def offset_body(p: int = 0, who: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    body = {"consumer": who or consumer(1), "stream": S0, "topic": T0}
    return {**body, "partition_flag": 1, "partition_id": p, **more}


GROUP = {"stream": S0, "topic": T0, "group": ident(0)}

# ------------------------------------------------------------------ framing


def test_ping_and_pipelined_requests_split_anywhere_are_answered_in_order() -> None:
    c = Conn(frontend())
    ping = codec.frame_request(1, b"")
    stats = codec.frame_request(10, b"")
    data = ping + stats + ping
    replies = []
    for i in range(len(data)):
        replies += c.raw(data[i : i + 1])
    assert [s for s, _ in replies] == [0, 40, 0] and replies[0][1] == b""


@pytest.mark.parametrize("length", [0, 1, 3])
def test_a_length_below_4_is_answered_3_and_the_connection_keeps_serving(length: int) -> None:
    c = Conn(frontend())
    assert c.raw(struct.pack("<I", length)) == []  # the whole 8-byte header is read first
    replies = c.raw(struct.pack("<I", 10) + codec.frame_request(1, b""))
    assert replies == [(3, b""), (0, b"")]


def test_a_control_request_over_10_mib_is_refused_from_its_header_and_skipped() -> None:
    c = Conn(frontend())
    big = 10 * 1024 * 1024 + 1
    head = struct.pack("<II", big + 4, 202)
    assert c.raw(head) == [(3, b"")]
    assert c.raw(b"\0" * big + codec.frame_request(1, b"")) == [(0, b"")]
    assert c.deframer.buffered == 0


def test_a_frame_past_64_mib_is_a_framing_error() -> None:
    d = RequestDeframer()
    with pytest.raises(codec.IggyFrameTooLarge):
        d.feed(struct.pack("<II", 65 * 1024 * 1024, 101))
    outcome = frontend().framing_error(codec.IggyFrameTooLarge(1, 0))
    assert outcome.close and outcome.replies == [codec.frame_reply(3)]


@pytest.mark.parametrize("revision", ["classic", "doc"])
def test_an_unknown_code_is_answered_3_and_the_connection_stays(revision: str) -> None:
    c = Conn(frontend(revision))
    assert c.raw(codec.frame_request(9999, b"") + codec.frame_request(1, b"")) == [
        (3, b""),
        (0, b""),
    ]


def test_undecodable_payloads_get_3_and_invalid_fields_4_even_before_login() -> None:
    c = Conn(frontend())
    assert c.raw(codec.frame_request(200, b"\x01\x04\x00"))[0][0] == 3  # short
    assert c.raw(codec.frame_request(200, b"\x07\x04\0\0\0\0"))[0][0] == 3  # kind 7
    assert c.raw(codec.frame_request(200, b"\x01\x02\0\0"))[0][0] == 4  # numeric len 2
    assert c.raw(codec.frame_request(200, b"\x01\x02"))[0][0] == 3  # len 2, value cut off
    assert c.raw(codec.frame_request(200, b"\x01\x05\0\0"))[0][0] == 3  # len 5, cut off
    assert c.raw(codec.frame_request(202, b"\x00"))[0][0] == 4  # empty name
    assert c.raw(codec.frame_request(202, b"\x02\xff\xfe"))[0][0] == 3  # bad UTF-8
    assert c.raw(codec.frame_request(1, b""))[0][0] == 0


@pytest.mark.parametrize("code", [100, 120, 121, 122])
def test_an_unknown_consumer_kind_is_3_before_its_identifier_is_judged(code: int) -> None:
    """WireConsumer::decode refuses the kind byte first: 3, though the numeric Identifier
    after it (length 2) would be a validation failure (4)."""
    c = Conn(frontend())
    assert c.raw(codec.frame_request(code, b"\x09\x01\x02\0\0" + bytes(40)))[0][0] == 3
    assert c.raw(codec.frame_request(code, b"\x01\x01\x02\0\0" + bytes(40)))[0][0] == 4


def test_an_unknown_polling_strategy_is_3_before_the_login_and_the_lookups() -> None:
    """WirePollingStrategy::decode: a kind outside 1..5 is an unknown discriminant (3),
    found while decoding, so before the login gate and before the stream is looked up."""
    c = Conn(frontend())
    who, ids = b"\x01\x01\x04\x01\0\0\0", b"\x01\x04\x09\0\0\0" * 2
    tail = b"\x01\0\0\0\0" + b"\x09" + bytes(8) + b"\x01\0\0\0\0"
    assert c.raw(codec.frame_request(100, who + ids + tail))[0][0] == 3
    assert c.login() == 0
    assert c.raw(codec.frame_request(100, who + ids + tail))[0][0] == 3
    good = tail.replace(b"\x09", b"\x03", 1)
    assert c.raw(codec.frame_request(100, who + ids + good))[0][0] == 1009


# ------------------------------------------------------------------ login


def test_the_login_gate_is_per_connection() -> None:
    fe = frontend()
    a, b = Conn(fe, "127.0.0.1:1"), Conn(fe, "127.0.0.1:2")
    assert a.call("get_streams")[0] == 40
    assert a.login() == 0
    assert a.call("get_streams")[0] == 0
    assert b.call("get_streams")[0] == 40
    assert b.call("ping")[0] == 0


def test_login_answers_the_root_user_id_and_logout_closes_the_gate() -> None:
    c = Conn(frontend())
    assert c.call(
        "login_user", {"username": "iggy", "password": "iggy", "version": "0.10.0", "context": ""}
    ) == (0, {"user_id": 0})
    assert c.ok("get_me")["user_id"] == 0
    assert c.ok("logout_user") == {}
    assert c.call("get_me")[0] == 40


@pytest.mark.parametrize(
    ("user", "password", "status"),
    [
        ("iggy", "wrong", 42),
        ("nobody", "iggy", 42),
        ("ab", "iggy", 43),
        ("u" * 51, "iggy", 43),
        ("iggy", "pw", 44),
        ("iggy", "p" * 101, 44),
    ],
)
def test_bad_credentials(user: str, password: str, status: int) -> None:
    c = Conn(frontend())
    assert c.login(user, password) == status
    assert c.call("get_streams")[0] == 40


def test_send_messages_before_login_is_40_whatever_its_payload() -> None:
    c = Conn(frontend())
    assert c.raw(codec.frame_request(101, b"\xff"))[0][0] == 40


def test_doc_has_no_login_and_no_gate() -> None:
    c = Conn(frontend("doc"))
    assert c.raw(codec.frame_request(38, b""))[0][0] == 3
    assert c.ok("get_streams") == {"streams": []}


# ------------------------------------------------------------------ system


def test_stats_me_and_clients_agree_with_the_state() -> None:
    fe = frontend()
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a)
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    stats = a.ok("get_stats")
    assert (stats["streams_count"], stats["topics_count"], stats["partitions_count"]) == (1, 1, 3)
    assert (stats["clients_count"], stats["consumer_groups_count"]) == (2, 1)
    me = a.ok("get_me")
    assert me["client_id"] == xxhash.xxh32_intdigest(b"127.0.0.1:1", 0) and me["transport"] == 1
    ids = sorted(x["client_id"] for x in a.ok("get_clients")["clients"])
    assert ids == sorted([me["client_id"], b.ok("get_me")["client_id"]])
    assert a.ok("get_client", {"client_id": me["client_id"]})["address"] == "127.0.0.1:1"
    assert a.call("get_client", {"client_id": 12345}) == (0, None)
    assert a.call("get_client", {"client_id": 0}) == (101, None)  # InvalidClientId
    b.close()
    assert len(a.ok("get_clients")["clients"]) == 1


# ------------------------------------------------------------------ streams and topics


def test_streams_from_0_by_number_and_name() -> None:
    c = logged(frontend())
    assert c.ok("create_stream", {"name": "a"})["id"] == 0
    assert c.ok("create_stream", {"name": "b"})["id"] == 1
    assert c.call("create_stream", {"name": "a"})[0] == 1012
    assert c.ok("get_stream", {"stream": ident("b")})["id"] == 1
    assert c.call("get_stream", {"stream": ident(9)}) == (0, None)
    assert [s["name"] for s in c.ok("get_streams")["streams"]] == ["a", "b"]
    assert c.ok("delete_stream", {"stream": ident("a")}) == {}
    assert c.call("delete_stream", {"stream": ident(0)})[0] == 1009
    assert c.ok("create_stream", {"name": "c"})["id"] == 0  # the freed slot again


def test_topics_and_their_refusals() -> None:
    c = logged(frontend())
    assert c.call("create_topic", topic_body())[0] == 1009
    c.ok("create_stream", {"name": "s"})
    topic = c.ok("create_topic", topic_body(partitions=2))
    assert topic["id"] == 0 and [p["id"] for p in topic["partitions"]] == [0, 1]
    assert c.call("create_topic", topic_body())[0] == 2013
    assert c.call("create_topic", topic_body("big", 1001))[0] == 2015
    assert c.ok("create_topic", topic_body("u", 0))["partitions_count"] == 0
    assert c.ok("get_topic", {"stream": S0, "topic": ident("u")})["id"] == 1
    assert c.call("get_topic", {"stream": S0, "topic": ident(7)}) == (0, None)
    assert [t["id"] for t in c.ok("get_topics", {"stream": S0})["topics"]] == [0, 1]
    assert c.ok("get_stream", {"stream": S0})["topics_count"] == 2
    assert c.ok("delete_topic", {"stream": S0, "topic": T0}) == {}
    assert c.call("delete_topic", {"stream": S0, "topic": T0})[0] == 2010


def test_partitions_are_added_after_the_last_and_removed_from_the_end() -> None:
    c = logged(frontend())
    setup(c, 1)
    body = {"stream": S0, "topic": T0, "partitions_count": 2}
    assert c.ok("create_partitions", body) == {}
    parts = c.ok("get_topic", {"stream": S0, "topic": T0})["partitions"]
    assert [p["id"] for p in parts] == [0, 1, 2]
    assert c.ok("delete_partitions", body) == {}
    assert c.ok("get_topic", {"stream": S0, "topic": T0})["partitions_count"] == 1
    assert c.call("delete_partitions", body)[0] == 2019
    assert c.call("create_partitions", {**body, "partitions_count": 1001})[0] == 2015
    assert c.call("create_partitions", {**body, "partitions_count": 0})[0] == 2015
    assert c.call("delete_partitions", {**body, "partitions_count": 0})[0] == 2015
    assert c.call("create_partitions", {**body, "topic": ident(5)})[0] == 2010
    assert c.call("delete_partitions", {**body, "stream": ident(5)})[0] == 1009


def test_doc_ids_are_the_clients() -> None:
    c = Conn(frontend("doc"))
    assert c.ok("create_stream", {"stream_id": 7, "name": "s"})["id"] == 7
    assert c.call("create_stream", {"stream_id": 7, "name": "x"})[0] == 1011
    body = {"stream": ident(7), "topic_id": 3, "partitions_count": 2, "name": "t"}
    assert c.ok("create_topic", body)["id"] == 3
    group = {"stream": ident(7), "topic": ident(3), "consumer_group_id": 4}
    assert c.ok("create_consumer_group", group)["name"] == "4"
    assert c.call("create_consumer_group", group)[0] == 5004
    assert c.ok("join_consumer_group", group) == {}
    assert c.ok("get_consumer_group", group)["members_count"] == 1


# ------------------------------------------------------------------ send and poll


def test_send_and_poll_keep_what_was_sent() -> None:
    c = logged(frontend())
    setup(c, 1)
    headers = b"\x02\x01\0\0\0k\x0d\x10\0\0\0" + bytes(range(16))
    assert send(c, to_partition(0), b"a", id=77, origin_timestamp=123, headers=headers) == 0
    assert send(c, to_partition(0), b"", b"c") == 0
    status, reply = poll(c, 1, 0)
    assert status == 0 and reply["partition_id"] == 0 and reply["current_offset"] == 2
    first = reply["messages"][0]
    assert (first["id"], first["origin_timestamp"], first["headers"]) == (77, 123, headers)
    assert [m["offset"] for m in reply["messages"]] == [0, 1, 2]
    assert all(m["id"] for m in reply["messages"]) and first["timestamp"] > 10**15
    for m in reply["messages"]:
        out = bytearray()
        codec.batch.encode_message(out, {**m, "checksum": 0})
        assert m["checksum"] == xxhash.xxh3_64_intdigest(bytes(out[8:]))


def test_partitioning_balanced_round_robin_and_by_key() -> None:
    c = logged(frontend())
    setup(c, 3)
    for p in (b"0", b"1", b"2", b"3"):
        send(c, {"kind": 1, "value": {}}, p)
    assert [payloads(poll(c, 3, partition=p)[1]) for p in range(3)] == [
        [b"0", b"3"],
        [b"1"],
        [b"2"],
    ]
    key = b"user-42"
    send(c, {"kind": 3, "value": key}, b"k1")
    send(c, {"kind": 3, "value": key}, b"k2")
    p = xxhash.xxh32_intdigest(key, 0) % 3
    assert payloads(poll(c, 4, partition=p, count=2)[1]) == [b"k1", b"k2"]
    assert send(c, to_partition(3), b"x") == 3007


def test_send_refusals() -> None:
    c = logged(frontend())
    setup(c, 1)
    body = {
        "stream": ident(9),
        "topic": T0,
        "partitioning": to_partition(0),
        "messages": [{"payload": b"x"}],
    }
    assert c.call("send_messages", body)[0] == 1009
    assert c.call("send_messages", {**body, "stream": S0, "topic": ident(9)})[0] == 2010
    assert c.call("send_messages", {**body, "stream": S0, "messages": []})[0] == 4009


@pytest.mark.parametrize(
    "block",
    [
        b"\x00\x01\0\0\0k\x02\x01\0\0\0v",  # key kind 0
        b"\x02\x01\0\0\0k\x10\x01\0\0\0v",  # value kind 16
        b"\x02\x00\0\0\0\x02\x01\0\0\0v",  # an empty key
        b"\x02\x01\0\0\0k",  # a key without its value
        b"\x02\x01\0\0\0k\x02\x09\0\0\0v",  # a value running past the block
    ],
)
def test_a_malformed_header_block_is_refused_4_and_nothing_stored(block: bytes) -> None:
    c = logged(frontend())
    setup(c, 1)
    good = b"\x02\x01\0\0\0k\x02\x01\0\0\0v"
    assert send(c, to_partition(0), b"a", headers=block) == 4
    assert payloads(poll(c, 3)[1]) == []  # strategy first: nothing was stored
    assert send(c, to_partition(0), b"a", headers=good) == 0
    assert payloads(poll(c, 3)[1]) == [b"a"]


def test_poll_strategies() -> None:
    c = logged(frontend())
    setup(c, 1)
    for p in (b"a", b"b", b"c", b"d"):
        send(c, to_partition(0), p)
    assert payloads(poll(c, 1, 1, count=2)[1]) == [b"b", b"c"]
    assert payloads(poll(c, 1, 9)[1]) == []
    stamps = [m["timestamp"] for m in poll(c, 3)[1]["messages"]]
    assert (
        payloads(poll(c, 2, stamps[2])[1])[0] == [b"a", b"b", b"c", b"d"][stamps.index(stamps[2])]
    )
    assert payloads(poll(c, 3, count=1)[1]) == [b"a"]
    assert payloads(poll(c, 4, count=2)[1]) == [b"c", b"d"]
    assert payloads(poll(c, 5, count=2, auto_commit=True)[1]) == [b"a", b"b"]
    assert payloads(poll(c, 5, count=2, auto_commit=True)[1]) == [b"c", b"d"]
    assert c.ok("get_consumer_offset", offset_body())["stored_offset"] == 3
    assert payloads(poll(c, 5)[1]) == []
    assert payloads(poll(c, 1, 0, count=0)[1]) == []
    assert poll(c, 1, partition=5)[0] == 3007


# ------------------------------------------------------------------ offsets


def test_consumer_offsets() -> None:
    c = logged(frontend())
    setup(c, 1)
    assert c.call("store_consumer_offset", offset_body(offset=0))[0] == 4100  # never written
    send(c, to_partition(0), b"a", b"b")
    assert c.call("get_consumer_offset", offset_body()) == (0, None)
    assert c.ok("store_consumer_offset", offset_body(offset=1)) == {}
    assert c.call("store_consumer_offset", offset_body(offset=2))[0] == 4100
    assert c.ok("get_consumer_offset", offset_body()) == {
        "partition_id": 0,
        "current_offset": 1,
        "stored_offset": 1,
    }
    assert c.call("get_consumer_offset", offset_body(who=consumer(2))) == (0, None)
    assert payloads(poll(c, 5)[1]) == []
    assert c.ok("delete_consumer_offset", offset_body()) == {}
    assert c.call("get_consumer_offset", offset_body()) == (0, None)
    assert c.call("delete_consumer_offset", offset_body())[0] == 3021


def test_get_consumer_offset_is_empty_for_whatever_it_cannot_find() -> None:
    """get_consumer_offset_handler.rs: an unknown stream or topic, and any error of the
    lookup (unknown group, partition), are the empty reply; a group's offset needs no
    membership and its partition is the one given or 0."""
    c = logged(frontend())
    setup(c, 2)
    c.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    send(c, to_partition(0), b"a", b"b")
    c.ok("join_consumer_group", GROUP)
    c.ok("store_consumer_offset", offset_body(0, who=consumer(0, kind=2), offset=1))
    c.ok("leave_consumer_group", GROUP)
    group = consumer(0, kind=2)
    want = {"partition_id": 0, "current_offset": 1, "stored_offset": 1}
    assert c.ok("get_consumer_offset", offset_body(0, who=group)) == want  # not a member
    assert c.ok("get_consumer_offset", offset_body(0, who=group, partition_flag=0)) == want
    for body in (
        offset_body(0, stream=ident(9)),
        offset_body(0, topic=ident(9)),
        offset_body(0, who=consumer(9, kind=2)),
        offset_body(7),
        offset_body(7, who=group),
    ):
        assert c.call("get_consumer_offset", body) == (0, None), body


def test_a_group_offset_is_stored_and_deleted_by_a_member_on_its_partitions() -> None:
    """resolve_consumer_group_partition (SV/metadata/reader.rs) with no advance: a
    non-member is 5006, a partition the member does not hold 3022, none given its current
    one; an unknown group 5000."""
    fe = frontend()
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a, 2)
    for p in (0, 1):
        send(a, to_partition(p), b"x", b"y")
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    group = consumer(0, kind=2)
    for name in ("store_consumer_offset", "delete_consumer_offset"):
        assert a.call(name, offset_body(0, who=group, offset=0))[0] == 5006
        assert a.call(name, offset_body(0, who=consumer(4, kind=2), offset=0))[0] == 5000
    a.ok("join_consumer_group", GROUP)
    b.ok("join_consumer_group", GROUP)  # a holds 0, b holds 1
    assert a.call("store_consumer_offset", offset_body(1, who=group, offset=0))[0] == 3022
    assert a.call("delete_consumer_offset", offset_body(1, who=group))[0] == 3022
    assert a.ok("store_consumer_offset", offset_body(0, who=group, offset=1)) == {}
    b.ok("store_consumer_offset", offset_body(0, who=group, partition_flag=0, offset=0))
    assert a.ok("get_consumer_offset", offset_body(1, who=group))["stored_offset"] == 0
    assert b.ok("delete_consumer_offset", offset_body(1, who=group)) == {}
    assert b.call("delete_consumer_offset", offset_body(1, who=group))[0] == 3021
    assert a.ok("delete_consumer_offset", offset_body(0, who=group, partition_flag=0)) == {}


# ------------------------------------------------------------------ groups


def test_consumer_groups_deal_partitions_and_follow_connections() -> None:
    fe = frontend()
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a, 4)
    create = {"stream": S0, "topic": T0, "name": "g"}
    assert a.ok("create_consumer_group", create)["members_count"] == 0
    assert a.call("create_consumer_group", create)[0] == 5004
    assert a.call("join_consumer_group", {**GROUP, "group": ident(3)})[0] == 5000
    a.ok("join_consumer_group", GROUP)
    b.ok("join_consumer_group", {**GROUP, "group": ident("g")})
    members = a.ok("get_consumer_group", GROUP)["members"]
    assert members == [{"id": 0, "partitions": [0, 2]}, {"id": 1, "partitions": [1, 3]}]
    a.ok("join_consumer_group", GROUP)  # already a member: nothing changes
    assert a.ok("get_consumer_group", GROUP)["members"] == members
    assert [
        g["name"] for g in a.ok("get_consumer_groups", {"stream": S0, "topic": T0})["groups"]
    ] == ["g"]
    assert a.ok("get_me")["consumer_groups_count"] == 1
    b.close()
    assert a.ok("get_consumer_group", GROUP)["members"] == [{"id": 0, "partitions": [0, 1, 2, 3]}]
    a.ok("leave_consumer_group", GROUP)
    assert a.call("leave_consumer_group", GROUP)[0] == 5006
    assert a.ok("delete_consumer_group", GROUP) == {}
    assert a.call("delete_consumer_group", GROUP)[0] == 5000
    assert a.call("get_consumer_group", GROUP) == (0, None)


def test_members_are_numbered_per_group_from_the_highest_plus_one() -> None:
    """SV/metadata/absorb.rs: a joining member gets max(member ids) + 1, 0 in an empty
    group; ids are the group's own, not the client's; listed and dealt in id order."""
    fe = frontend()
    a, b, c = (logged(fe, f"127.0.0.1:{n}") for n in (1, 2, 3))
    setup(a, 3)
    for name in ("g", "h"):
        a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": name})
    other = {**GROUP, "group": ident(1)}
    for conn in (a, b, c):
        conn.ok("join_consumer_group", GROUP)
    b.ok("join_consumer_group", other)  # its first group here: member 0
    assert [m["id"] for m in a.ok("get_consumer_group", other)["members"]] == [0]
    a.ok("leave_consumer_group", GROUP)  # members 1, 2 left
    a.ok("join_consumer_group", GROUP)  # max + 1 = 3, not the freed 0
    listed = a.ok("get_consumer_group", GROUP)["members"]
    assert listed == [
        {"id": 1, "partitions": [0]},
        {"id": 2, "partitions": [1]},
        {"id": 3, "partitions": [2]},
    ]
    c.close()
    b.close()  # leaves both groups
    assert a.ok("get_consumer_group", GROUP)["members"] == [{"id": 3, "partitions": [0, 1, 2]}]
    assert a.ok("get_consumer_group", other)["members_count"] == 0
    d = logged(fe, "127.0.0.1:4")
    d.ok("join_consumer_group", other)  # the group is empty again: 0
    assert [m["id"] for m in a.ok("get_consumer_group", other)["members"]] == [0]
    a.ok("delete_consumer_group", GROUP)
    a.close()  # nothing left to leave: no error
    assert d.ok("get_me")["consumer_groups"] == [{"stream_id": 0, "topic_id": 0, "group_id": 1}]


def test_a_member_polls_only_its_partitions_in_turn() -> None:
    fe = frontend()
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a, 2)
    for p in (0, 1):
        send(a, to_partition(p), f"p{p}".encode())
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    who = consumer(0, kind=2)
    assert poll(a, 3, partition=None, who=who)[0] == 5006
    assert poll(a, 3, partition=None, who=consumer(5, kind=2))[0] == 5000
    a.ok("join_consumer_group", GROUP)
    seen = {poll(a, 3, partition=None, who=who)[1]["partition_id"] for _ in range(2)}
    assert seen == {0, 1}
    b.ok("join_consumer_group", GROUP)
    mine = {m["id"]: m["partitions"] for m in a.ok("get_consumer_group", GROUP)["members"]}
    assert sorted(mine) == [0, 1]  # a joined first: member 0
    own = mine[0]
    for _ in range(3):
        assert poll(a, 3, partition=None, who=who)[1]["partition_id"] in own
    other = ({0, 1} - set(own)).pop()
    assert poll(a, 3, partition=other, who=who)[1] == {
        "partition_id": 0,
        "current_offset": 0,
        "messages": [],
    }


# ------------------------------------------------------------------ robustness


def test_a_handler_bug_becomes_an_error_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    c = logged(frontend())

    def boom(*_: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(broker_streams, "stream_record", boom)
    assert c.call("get_streams")[0] == 0
    assert c.raw(codec.frame_request(202, b"\x01s"))[0][0] == 1
    assert c.call("ping")[0] == 0


# ------------------------------------------------------------------ recovery


def read_everything(c: Conn) -> dict[str, Any]:
    """What a client can read of streams, topics, groups, messages and stored offsets."""
    out: dict[str, Any] = {"streams": c.ok("get_streams")}
    for s in out["streams"]["streams"]:
        sid = ident(s["id"])
        for t in c.ok("get_topics", {"stream": sid})["topics"]:
            where = {"stream": sid, "topic": ident(t["id"])}
            out[f"{s['id']}/{t['id']}"] = c.ok("get_topic", where)
            out[f"{s['id']}/{t['id']}/groups"] = c.ok("get_consumer_groups", where)
            for p in range(t["partitions_count"]):
                body = {**where, "partition_flag": 1, "partition_id": p, "count": 100}
                first = {"kind": 3, "value": 0}
                out[f"{s['id']}/{t['id']}/{p}"] = c.ok(
                    "poll_messages", {**body, "consumer": consumer(0), "strategy": first}
                )
                for who in (consumer(1), consumer("reader"), consumer(0, kind=2)):
                    got = c.call("get_consumer_offset", {**body, "consumer": who})
                    out[f"{s['id']}/{t['id']}/{p}/{who}"] = got
    return out


def durable_history(c: Conn) -> None:
    setup(c, 2)
    c.ok("create_stream", {"name": "second"})
    c.ok("create_topic", topic_body("other", 1, stream=ident("second")))
    c.ok("create_topic", topic_body("gone", 1))
    headers = b"\x02\x01\0\0\0k\x0d\x10\0\0\0" + bytes(range(16))
    send(c, to_partition(0), b"a", id=77, origin_timestamp=123, headers=headers)
    send(c, {"kind": 1, "value": b""}, b"b", b"c")
    send(c, {"kind": 1, "value": b""}, b"d")
    c.ok("create_partitions", {"stream": S0, "topic": T0, "partitions_count": 2})
    c.ok("delete_partitions", {"stream": S0, "topic": T0, "partitions_count": 1})
    c.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    c.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "dropped"})
    c.ok("store_consumer_offset", offset_body(0, offset=1))
    c.ok("store_consumer_offset", offset_body(1, who=consumer("reader"), offset=0))
    c.ok("join_consumer_group", GROUP)  # a group's offset is stored by a member
    c.ok("join_consumer_group", {**GROUP, "group": ident(1)})
    c.ok("store_consumer_offset", offset_body(0, who=consumer(0, kind=2), offset=0))
    c.ok("store_consumer_offset", offset_body(0, who=consumer(1, kind=2), offset=0))
    c.ok("delete_consumer_group", {**GROUP, "group": ident(1)})
    c.ok("store_consumer_offset", offset_body(1, who=consumer(5), offset=0))
    c.ok("delete_consumer_offset", offset_body(1, who=consumer(5)))
    c.ok("delete_topic", {"stream": S0, "topic": ident("gone")})
    c.ok("join_consumer_group", GROUP)


def test_a_frontend_on_the_same_engine_rebuilds_everything_but_members() -> None:
    """The registry is written through to the engine's metadata: a new front-end on the
    same engine (as after a restart) reads back every record, message and stored offset;
    the group's member left with its connection; the balanced counter goes on."""
    fe = frontend()
    c = logged(fe)
    durable_history(c)
    before = read_everything(c)
    assert before["0/0/groups"]["groups"][0]["members_count"] == 1
    c.close()  # as a restart ends every connection
    again = logged(IggyFrontend(fe.engine, fe.config), "127.0.0.1:40001")
    after = read_everything(again)
    before["0/0/groups"]["groups"][0]["members_count"] = 0
    assert after == before
    send(again, {"kind": 1, "value": b""}, b"e")  # the counter was 2: partition 2
    assert payloads(poll(again, 3, partition=2)[1]) == [b"e"]
    # the dropped group's offsets and the deleted ones stayed gone, the ids are free again
    assert sorted(k for k in fe.engine.meta("iggy/") if "/o/" in k) == [
        "iggy/0/0/o/1/0/n1",
        "iggy/0/0/o/1/1/sreader",
        "iggy/0/0/o/2/0/n0",
    ]
    assert again.ok("create_topic", topic_body("new", 1))["id"] == 1


def test_what_a_crash_left_without_its_key_is_removed() -> None:
    """An engine topic, group or partition without its metadata key (created, crashed
    before the key) and a key whose stream is gone (deleted, crashed before the rest) are
    removed when the registry is rebuilt; other protocols' topics are not touched."""
    engine = Engine()
    c = logged(IggyFrontend(engine))
    setup(c, 1)
    engine.create_topic("iggy.0.7", 1)
    engine.create_topic("other", 1)
    engine.create_topic("iggy.0.x", 1)  # not a name Iggy gives
    engine.create_group("iggy/0/0/3", "iggy.0.0")
    engine.add_partitions("iggy.0.0", 2)
    engine.put_meta("iggy/5/0", b'{"name": "orphan"}')
    engine.put_meta("iggy/5/0/o/1/0/n1", b"3")
    engine.put_meta("iggy/not-a-key", b"?")
    IggyFrontend(engine)
    assert [t.name for t in engine.list_topics()] == ["iggy.0.0", "iggy.0.x", "other"]
    assert engine.topic("iggy.0.0").partitions == 1
    assert engine.list_groups() == []
    assert sorted(engine.meta("iggy/")) == ["iggy/0", "iggy/0/0", "iggy/not-a-key"]


# ------------------------------------------------------------------ quirks


def test_every_planned_quirk_is_declared() -> None:
    spec = {n for n, q in QUIRKS.items() if q.kind == "spec"}
    assert len(spec) == 23 and {n for n, q in QUIRKS.items() if q.kind == "fault"} == {
        "crash-on-short-identifier",
        "stall-on-unknown-code",
    }
    assert all(QUIRKS[n].breaks for n in spec)  # the exactness test checks which


def test_quirk_login_gate_open() -> None:
    assert Conn(frontend("classic", "login-gate-open")).call("get_streams")[0] == 0


def test_quirk_any_password() -> None:
    assert Conn(frontend("classic", "any-password")).login("iggy", "whatever") == 0
    assert Conn(frontend("classic", "any-password")).login("nobody", "whatever") == 42


def test_quirk_unknown_code_closes() -> None:
    c = Conn(frontend("classic", "unknown-code-closes"))
    assert c.raw(codec.frame_request(9999, b"")) == [] and c.outcomes[-1].close


def test_quirk_error_with_payload() -> None:
    [(status, payload)] = Conn(frontend("classic", "error-with-payload")).raw(
        codec.frame_request(10, b"")
    )
    assert status == 40 and payload


def test_quirk_names_not_resolved() -> None:
    c = logged(frontend("classic", "names-not-resolved"))
    setup(c)
    assert c.call("get_stream", {"stream": ident("s")}) == (0, None)
    assert c.call("delete_stream", {"stream": ident("s")})[0] == 1009
    assert c.ok("get_stream", {"stream": S0})["name"] == "s"


def test_quirk_key_partition_crc() -> None:
    c = logged(frontend("classic", "key-partition-crc"))
    setup(c, 7)
    key = b"user-1"
    send(c, {"kind": 3, "value": key}, b"x")
    assert payloads(poll(c, 3, partition=zlib.crc32(key) % 7)[1]) == [b"x"]


def test_quirk_next_rereads_stored() -> None:
    c = logged(frontend("classic", "next-rereads-stored"))
    setup(c, 1)
    send(c, to_partition(0), b"a", b"b")
    c.ok("store_consumer_offset", offset_body(offset=0))
    assert payloads(poll(c, 5)[1]) == [b"a", b"b"]


def test_quirk_checksum_zero() -> None:
    c = logged(frontend("classic", "checksum-zero"))
    setup(c, 1)
    send(c, to_partition(0), b"a")
    assert poll(c, 3)[1]["messages"][0]["checksum"] == 0


def test_quirk_offset_store_unchecked() -> None:
    c = logged(frontend("classic", "offset-store-unchecked"))
    setup(c, 1)
    assert c.ok("store_consumer_offset", offset_body(offset=99)) == {}


def test_quirk_group_all_partitions() -> None:
    fe = frontend("classic", "group-all-partitions")
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a, 2)
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    a.ok("join_consumer_group", GROUP)
    b.ok("join_consumer_group", GROUP)
    assert [m["partitions"] for m in a.ok("get_consumer_group", GROUP)["members"]] == [[0, 1]] * 2


def test_fault_stall_on_unknown_code_stops_every_connection() -> None:
    fe = frontend("classic", "stall-on-unknown-code")
    a, b = Conn(fe, "127.0.0.1:1"), Conn(fe, "127.0.0.1:2")
    assert b.raw(codec.frame_request(1, b"")) == [(0, b"")]
    assert a.raw(codec.frame_request(9999, b"")) == [] and a.outcomes[-1].stall
    assert b.raw(codec.frame_request(1, b"")) == [] and b.outcomes[-1].stall
    assert Conn(fe, "127.0.0.1:3").raw(codec.frame_request(1, b"")) == []


def test_fault_crash_on_short_identifier_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.protocols.iggy.handler as handler

    exits: list[int] = []

    def fake_exit(code: int) -> None:
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(handler.os, "_exit", fake_exit)
    c = Conn(frontend("classic", "crash-on-short-identifier"))
    with pytest.raises(SystemExit):
        c.raw(codec.frame_request(200, b"\x02\x05ab"))
    assert exits == [70]
    clean = Conn(frontend())
    assert clean.raw(codec.frame_request(200, b"\x02\x05ab")) == [(3, b"")]
