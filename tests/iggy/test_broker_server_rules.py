"""What the 0.8 server does that the broker follows, beyond SEND_MESSAGES' batch checks
(test_send_checks.py): a poll of count 0, a member naming a partition not its own, a group's
offsets, partition changes dealing the groups again, a topic of no partition, a second
login, a connection's identity after a send to a partition, stores on a partition never
written, DELETE_PARTITIONS' bounds; each with the spec quirk that breaks it."""

from __future__ import annotations

from typing import Any

from tests.iggy.broker_client import S0, T0, Conn, consumer, frontend, ident, logged, setup

GROUP = {"stream": S0, "topic": T0, "group": ident(0)}


def send(c: Conn, p: int, *payloads: bytes, kind: int = 2) -> int:
    partitioning = {"kind": kind, "value": p if kind == 2 else ({} if kind == 1 else b"k")}
    body = {
        "stream": S0,
        "topic": T0,
        "partitioning": partitioning,
        "messages": [{"payload": x} for x in payloads],
    }
    return c.call("send_messages", body)[0]


def poll(
    c: Conn,
    p: int | None,
    kind: int = 3,
    count: int = 10,
    *,
    who: dict[str, Any] | None = None,
    auto_commit: bool = False,
) -> dict[str, Any]:
    body = {
        "consumer": who or consumer(1),
        "stream": S0,
        "topic": T0,
        "partition_flag": 0 if p is None else 1,
        "partition_id": p or 0,
        "strategy": {"kind": kind, "value": 0},
        "count": count,
        "auto_commit": auto_commit,
    }
    return c.ok("poll_messages", body)  # type: ignore[no-any-return]


def offset(c: Conn, p: int, who: dict[str, Any], value: int | None = None) -> tuple[int, Any]:
    body = {"consumer": who, "stream": S0, "topic": T0, "partition_flag": 1, "partition_id": p}
    if value is None:
        return c.call("get_consumer_offset", body)
    return c.call("store_consumer_offset", {**body, "offset": value})


def lists(c: Conn) -> list[list[int]]:
    return [m["partitions"] for m in c.ok("get_consumer_group", GROUP)["members"]]


def two_members(quirk: str = "", partitions: int = 2) -> tuple[Conn, Conn]:
    fe = frontend("classic", *([quirk] if quirk else []))
    a, b = logged(fe, "127.0.0.1:1"), logged(fe, "127.0.0.1:2")
    setup(a, partitions)
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "g"})
    a.ok("join_consumer_group", GROUP)
    b.ok("join_consumer_group", GROUP)
    return a, b


# ------------------------------------------------------------------ poll of count 0


def test_a_poll_of_count_0_answers_the_current_offset_and_commits_nothing() -> None:
    c = logged(frontend())
    setup(c, 2)
    send(c, 1, b"a", b"b", b"c")
    got = poll(c, 1, kind=5, count=0, auto_commit=True)
    assert (got["partition_id"], got["current_offset"], got["messages"]) == (1, 2, [])
    assert offset(c, 1, consumer(1)) == (0, None)


def test_quirk_poll_count_zero_unlimited() -> None:
    c = logged(frontend("classic", "poll-count-zero-unlimited"))
    setup(c, 1)
    send(c, 0, b"a", b"b")
    assert len(poll(c, 0, count=0, auto_commit=True)["messages"]) == 2
    assert offset(c, 0, consumer(1))[1]["stored_offset"] == 1


# ------------------------------------------------------------------ a member's partitions


def test_a_member_naming_a_partition_not_its_own_gets_the_empty_reply() -> None:
    a, _ = two_members()
    assert lists(a) == [[0], [1]]
    for p in (0, 1):
        send(a, p, b"x", b"y")
    got = poll(a, 1, who=consumer(0, kind=2), auto_commit=True)
    assert (got["partition_id"], got["current_offset"], got["messages"]) == (0, 0, [])
    assert [m["payload"] for m in poll(a, 0, who=consumer(0, kind=2))["messages"]] == [b"x", b"y"]
    assert offset(a, 1, consumer(0, kind=2)) == (0, None)


def test_quirk_group_poll_any_partition_reads_but_does_not_store_elsewhere() -> None:
    a, _ = two_members("group-poll-any-partition")
    send(a, 1, b"x")
    assert len(poll(a, 1, who=consumer(0, kind=2))["messages"]) == 1
    assert offset(a, 1, consumer(0, kind=2), 0)[0] == 3022  # STORE keeps its rule


# ------------------------------------------------------------------ a group's offsets


def test_next_and_auto_commit_through_a_group_use_the_groups_offset() -> None:
    a, b = two_members(partitions=1)
    send(a, 0, b"0", b"1", b"2", b"3")
    group = consumer(0, kind=2)
    holder = a if lists(a)[0] else b
    assert [
        m["offset"] for m in poll(holder, None, 5, 2, who=group, auto_commit=True)["messages"]
    ] == [0, 1]
    assert offset(a, 0, group)[1]["stored_offset"] == 1
    assert [m["offset"] for m in poll(holder, None, 5, 2, who=group)["messages"]] == [2, 3]
    assert [m["offset"] for m in poll(a, 0, 5, 2, who=consumer(0))["messages"]] == [0, 1]


def test_quirk_group_offset_as_consumer() -> None:
    a, b = two_members("group-offset-as-consumer", partitions=1)
    send(a, 0, b"0", b"1", b"2")
    holder = a if lists(a)[0] else b
    poll(holder, None, 5, 2, who=consumer(0, kind=2), auto_commit=True)
    assert offset(a, 0, consumer(0, kind=2)) == (0, None)
    assert offset(a, 0, consumer(0))[1]["stored_offset"] == 1


def test_deleting_a_group_removes_its_offsets_for_good() -> None:
    a, _ = two_members(partitions=1)
    send(a, 0, b"0", b"1")
    assert offset(a, 0, consumer(0, kind=2), 1) == (0, {})
    a.ok("delete_consumer_group", GROUP)
    assert not [k for k in a.frontend.engine.meta("iggy/") if "/o/2/" in k]
    assert a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "h"})["id"] == 0
    assert offset(a, 0, consumer(0, kind=2)) == (0, None)


def test_quirk_group_offsets_outlive_group() -> None:
    a, _ = two_members("group-offsets-outlive-group", partitions=1)
    send(a, 0, b"0", b"1")
    offset(a, 0, consumer(0, kind=2), 1)
    a.ok("delete_consumer_group", GROUP)
    a.ok("create_consumer_group", {"stream": S0, "topic": T0, "name": "h"})
    assert offset(a, 0, consumer(0, kind=2))[1]["stored_offset"] == 1


# ------------------------------------------------------------------ partition changes


def change(c: Conn, name: str, count: int) -> int:
    return c.call(name, {"stream": S0, "topic": T0, "partitions_count": count})[0]


def test_adding_and_deleting_partitions_deals_the_groups_again() -> None:
    a, _ = two_members(partitions=1)
    assert lists(a) == [[0], []]
    assert change(a, "create_partitions", 2) == 0
    assert sorted(p for parts in lists(a) for p in parts) == [0, 1, 2]
    assert change(a, "delete_partitions", 2) == 0
    assert sorted(p for parts in lists(a) for p in parts) == [0]
    assert a.ok("get_consumer_group", GROUP)["partitions_count"] == 1


def test_quirk_groups_not_redealt_until_the_next_join_or_leave() -> None:
    a, b = two_members("groups-not-redealt", partitions=1)
    change(a, "create_partitions", 2)
    assert lists(a) == [[0], []]
    b.ok("leave_consumer_group", GROUP)
    assert lists(a) == [[0, 1, 2]]


def test_delete_partitions_has_no_limit_of_1000() -> None:
    c = logged(frontend())
    setup(c, 3)
    assert change(c, "delete_partitions", 1001) == 2019
    assert change(c, "delete_partitions", 0) == 2015
    assert change(c, "create_partitions", 1001) == 2015
    assert change(c, "create_partitions", 0) == 2015
    quirky = logged(frontend("classic", "delete-partitions-capped"))
    setup(quirky, 3)
    assert change(quirky, "delete_partitions", 1001) == 2015
    assert change(quirky, "delete_partitions", 4) == 2019


# ------------------------------------------------------------------ a topic of no partition


def test_a_topic_of_no_partition_is_made_and_sends_to_it_are_refused() -> None:
    c = logged(frontend())
    made = setup(c, 0)
    assert (made["partitions_count"], made["partitions"]) == (0, [])
    assert (send(c, 0, b"x", kind=1), send(c, 0, b"x", kind=2), send(c, 0, b"x", kind=3)) == (
        2010,
        3007,
        3008,
    )
    quirky = logged(frontend("classic", "zero-partitions-3008"))
    setup(quirky, 0)
    assert send(quirky, 0, b"x", kind=1) == 3008


# ------------------------------------------------------------------ a second login


def login(c: Conn, user: str, password: str) -> int:
    body = {"username": user, "password": password, "version": "", "context": ""}
    return c.call("login_user", body)[0]


def test_a_second_login_replaces_the_first_and_a_refused_one_changes_nothing() -> None:
    c = logged(frontend())
    assert login(c, "iggy", "iggy") == 0
    assert c.call("get_me")[0] == 0
    assert login(c, "iggy", "wrong") == 42
    assert login(c, "ab", "iggy") == 43
    assert c.call("get_streams")[0] == 0


def test_quirk_failed_relogin_logs_out() -> None:
    c = logged(frontend("classic", "failed-relogin-logs-out"))
    assert login(c, "iggy", "iggy") == 0
    assert c.call("get_streams")[0] == 0
    assert login(c, "iggy", "wrong") == 42
    assert c.call("get_streams")[0] == 40


# ------------------------------------------------------------------ identity after a send


def test_a_connection_keeps_its_identity_after_a_send_to_a_partition() -> None:
    a, b = two_members()
    before = b.ok("get_me")
    send(b, 1, b"x")
    assert b.ok("get_me") == before
    b.close()
    assert len(a.ok("get_consumer_group", GROUP)["members"]) == 1


def test_quirk_partition_send_new_client() -> None:
    a, b = two_members("partition-send-new-client")
    before = b.ok("get_me")
    send(b, 1, b"x")
    after = b.ok("get_me")
    assert after["client_id"] != before["client_id"] and after["consumer_groups"] == []
    assert after["user_id"] == before["user_id"]
    assert len(a.ok("get_clients")["clients"]) == 2
    b.close()
    assert len(a.ok("get_consumer_group", GROUP)["members"]) == 2  # never left
    mine = a.ok("get_me")["client_id"]
    send(a, 0, b"y", kind=1)  # a balanced send keeps the client
    assert a.ok("get_me")["client_id"] == mine


# ------------------------------------------------------------------ stores on empty partitions


def test_a_store_on_a_partition_never_written_is_4100() -> None:
    c = logged(frontend())
    setup(c, 2)
    send(c, 1, b"x")
    assert offset(c, 0, consumer(7), 0)[0] == 4100
    assert offset(c, 1, consumer(7), 0) == (0, {})
    quirky = logged(frontend("classic", "offset-store-empty-partition"))
    setup(quirky, 1)
    assert offset(quirky, 0, consumer(7), 0) == (0, {})
    assert offset(quirky, 0, consumer(7), 1)[0] == 4100
