"""Iggy system commands: PING, GET_STATS, GET_ME, GET_CLIENTS and GET_CLIENT (SPEC.md,
area "system")."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    create_group,
    create_topic,
    get_group,
    join,
    members,
    message,
    send_messages,
    stream,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import (
    Reply,
    classic,
    expect_empty,
    expect_found,
    expect_ok,
    expect_status,
)
from conformance.suite.target import CaseContext

UNKNOWN_CLIENT = 4_000_000_000
TRIES = 5


@case("iggy/system/1", "IGG-SYS-1")
def test_ping_is_answered_0_and_empty(target: CaseContext) -> None:
    """PING is answered status 0 with an empty payload.

    IGG-SYS-1: "PING (1, empty payload) is answered with status 0 and an empty payload."
    """
    with target.connect() as conn:
        expect_empty(target, conn, "ping", {}, "IGG-SYS-1", "PING")


def stats(ctx: CaseContext, conn: Connection, what: str) -> Reply:
    return expect_found(ctx, conn, "get_stats", {}, "IGG-SYS-2", what)


@case("iggy/system/2", "IGG-SYS-2")
def test_stats_count_the_streams_topics_and_clients(target: CaseContext) -> None:
    """GET_STATS counts as many streams, topics and clients as GET_STREAMS and GET_CLIENTS list.

    IGG-SYS-2: "GET_STATS (10, empty payload) is answered with the stats record of FACTS.md §3;
    its streams, topics, partitions and consumer-groups counts equal what the broker holds, and
    its clients count equals the number of connected clients, this connection included."
    """
    with target.connect() as conn:
        stream(target, conn, "stats")
        for _ in range(TRIES):
            before = expect_ok(target, conn, "get_streams", {}, "IGG-STREAM-4", "GET_STREAMS")
            clients = expect_ok(target, conn, "get_clients", {}, "IGG-SYS-4", "GET_CLIENTS")
            got = stats(target, conn, "GET_STATS")
            after = expect_ok(target, conn, "get_streams", {}, "IGG-STREAM-4", "GET_STREAMS again")
            again = expect_ok(target, conn, "get_clients", {}, "IGG-SYS-4", "GET_CLIENTS again")
            if before.payload == after.payload and clients.payload == again.payload:
                break
            time.sleep(0.2)
        streams = list(after.body["streams"])
        want = {
            "streams_count": len(streams),
            "topics_count": sum(int(s["topics_count"]) for s in streams),
            "clients_count": len(again.body["clients"]),
        }
        for name, value in want.items():
            require(
                got.body[name] == value,
                "IGG-SYS-2",
                f"GET_STATS {name} {got.body[name]}, expected {value} (as listed)",
                got.at(name)
                + (after.at("streams") if name != "clients_count" else again.at("clients")),
            )


@case("iggy/system/3", "IGG-SYS-2")
def test_stats_count_new_partitions_and_groups(target: CaseContext) -> None:
    """A new 3-partition topic with one consumer group adds 3 partitions and 1 group to GET_STATS.

    IGG-SYS-2: "... its streams, topics, partitions and consumer-groups counts equal what the
    broker holds ..."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "stats-parts")
        first = stats(target, conn, "GET_STATS before")
        tid, _ = create_topic(target, conn, sid, "stats-parts", 3)
        create_group(target, conn, sid, tid, "stats-parts")
        second = stats(target, conn, "GET_STATS after")
        for name, added in (
            ("partitions_count", 3),
            ("consumer_groups_count", 1),
            ("topics_count", 1),
        ):
            delta = int(second.body[name]) - int(first.body[name])
            require(
                delta == added,
                "IGG-SYS-2",
                f"GET_STATS {name} went from {first.body[name]} to {second.body[name]} across a"
                f" new topic of 3 partitions and 1 group, expected +{added}",
                first.at(name) + second.at(name),
            )


@case("iggy/system/4", "IGG-SYS-3")
def test_get_me_answers_this_connection(target: CaseContext) -> None:
    """GET_ME answers this client's details: transport 1 (tcp), and in classic the logged-in user.

    IGG-SYS-3: "GET_ME (20, empty payload) is answered with this connection's client details:
    its client id (the one GET_CLIENTS lists for this connection), transport 1 (TCP), its
    groups; in classic the user id is that of the logged-in user (IGG-LOGIN-3)."
    """
    with target.connect() as conn, target.connect() as other:
        me = expect_found(target, conn, "get_me", {}, "IGG-SYS-3", "GET_ME")
        them = expect_found(
            target, other, "get_me", {}, "IGG-SYS-3", "GET_ME on a second connection"
        )
        require(
            me.body["transport"] == 1,
            "IGG-SYS-3",
            f"GET_ME transport {me.body['transport']}, expected 1 (tcp)",
            me.at("transport"),
        )
        require(
            me.body["client_id"] != them.body["client_id"],
            "IGG-SYS-3",
            f"two connections both have client id {me.body['client_id']}",
            me.at("client_id") + them.at("client_id"),
        )
        session = conn.session
        if classic(target) and isinstance(session, dict) and "user_id" in session:
            require(
                me.body["user_id"] == session["user_id"],
                "IGG-SYS-3",
                f"GET_ME user_id {me.body['user_id']}, expected {session['user_id']} (the"
                " LOGIN_USER reply's)",
                me.at("user_id"),
            )


@case("iggy/system/5", "IGG-SYS-4")
def test_get_clients_lists_every_client_once(target: CaseContext) -> None:
    """GET_CLIENTS lists both of this case's connections, once each; GET_CLIENT answers each,
    an unknown id empty, and (classic) id 0 with 101.

    IGG-SYS-4: "GET_CLIENTS (22) lists every connected client exactly once, this connection
    included; GET_CLIENT (21, u32 client id) of a listed id is answered with its client details,
    and of a non-zero id no client has with status 0 and an empty payload. In classic the id 0
    is answered 101 (InvalidClientId)"
    """
    with target.connect() as conn, target.connect() as other:
        mine = expect_found(target, conn, "get_me", {}, "IGG-SYS-3", "GET_ME")
        theirs = expect_found(
            target, other, "get_me", {}, "IGG-SYS-3", "GET_ME on a second connection"
        )
        listed = expect_ok(target, conn, "get_clients", {}, "IGG-SYS-4", "GET_CLIENTS")
        ids = [int(c["client_id"]) for c in listed.body["clients"]]
        for who in (mine, theirs):
            cid = int(who.body["client_id"])
            require(
                ids.count(cid) == 1,
                "IGG-SYS-4",
                f"GET_CLIENTS lists client {cid} {ids.count(cid)} time(s), expected once",
                who.at("client_id") + listed.at("clients"),
            )
            one = expect_found(
                target, conn, "get_client", {"client_id": cid}, "IGG-SYS-4", f"GET_CLIENT {cid}"
            )
            require(
                one.body["client_id"] == cid,
                "IGG-SYS-4",
                f"GET_CLIENT {cid} answered client {one.body['client_id']}",
                one.at("client_id", asked=("client_id",)),
            )
        expect_empty(
            target,
            conn,
            "get_client",
            {"client_id": UNKNOWN_CLIENT},
            "IGG-SYS-4",
            f"GET_CLIENT {UNKNOWN_CLIENT} (no such client)",
        )
        if classic(target):
            expect_status(
                target, conn, "get_client", {"client_id": 0}, 101, "IGG-SYS-4", "GET_CLIENT 0"
            )


@case("iggy/system/6", "IGG-SYS-5")
def test_cluster_metadata_names_this_node_as_leader(target: CaseContext) -> None:
    """GET_CLUSTER_METADATA answers at least one node, a healthy leader on the port the
    client connected to.

    IGG-SYS-5: "GET_CLUSTER_METADATA (12, empty payload), which the 0.8 client sends after every
    login to find the leader, is answered with status 0 and the cluster"
    """
    with target.connect() as conn:
        got = expect_found(
            target, conn, "get_cluster_metadata", {}, "IGG-SYS-5", "GET_CLUSTER_METADATA"
        )
        nodes = list(got.body["nodes"])
        require(nodes != [], "IGG-SYS-5", "GET_CLUSTER_METADATA lists no node", got.at("nodes"))
        here = [n for n in nodes if int(n["tcp_port"]) == target.target.port]
        require(
            len(here) == 1,
            "IGG-SYS-5",
            f"GET_CLUSTER_METADATA lists tcp ports {[int(n['tcp_port']) for n in nodes]}, none"
            f" of them once the port {target.target.port} this connection reached",
            got.at("nodes"),
        )
        node = here[0]
        require(
            (int(node["role"]), int(node["status"])) == (0, 0),
            "IGG-SYS-5",
            f"the node on port {target.target.port} has role {node['role']} and status"
            f" {node['status']}, expected 0 (leader) and 0 (healthy) on a single node",
            got.at("nodes"),
        )


PARTITIONS = 4


def groups_of(me: Reply) -> list[tuple[int, int, int]]:
    return sorted(
        (int(g["stream_id"]), int(g["topic_id"]), int(g["group_id"]))
        for g in me.body["consumer_groups"]
    )


@case("iggy/system/7", "IGG-SYS-6")
def test_a_connection_keeps_its_identity_after_sending_to_a_partition(
    target: CaseContext,
) -> None:
    """A member sends to each of 4 partitions by id; GET_ME still answers its client id, user
    id and group, and once it closes the group lists no member.

    IGG-SYS-6: "a connection keeps its identity after a SEND_MESSAGES with partition-id
    partitioning: GET_ME then answers the client id, the user id and the groups it answered
    before that send, and when the connection ends it leaves its groups (IGG-GROUP-9)."
    """
    req = "IGG-SYS-6"
    with target.connect() as watcher:
        sid, tid = stream_topic(target, watcher, "moved", PARTITIONS)
        gid, _ = create_group(target, watcher, sid, tid, "moved")
        with target.connect() as conn:  # the member, closed at the end of the block
            join(target, conn, sid, tid, gid, req)
            before = expect_found(target, conn, "get_me", {}, "IGG-SYS-3", "GET_ME of a member")
            require(
                (sid, tid, gid) in groups_of(before),
                "IGG-SYS-3",
                f"GET_ME of a member of group {gid} lists groups {groups_of(before)}",
                before.at("consumer_groups"),
            )
            for pid in range(PARTITIONS):  # one of them may live on another shard
                msg = [message(target, f"to {pid}".encode())]
                send_messages(target, conn, sid, tid, to_partition(pid), msg)
                after = expect_found(
                    target, conn, "get_me", {}, req, f"GET_ME after a send to partition {pid}"
                )
                for name, was, now in (
                    ("client_id", before.body["client_id"], after.body["client_id"]),
                    ("user_id", before.body["user_id"], after.body["user_id"]),
                    ("consumer_groups", groups_of(before), groups_of(after)),
                ):
                    require(
                        was == now,
                        req,
                        f"after a SEND_MESSAGES to partition {pid} GET_ME answers {name} {now},"
                        f" before it {was}",
                        before.at(name) + after.at(name),
                    )
        deadline = time.monotonic() + target.timeout
        while True:
            got = get_group(target, watcher, sid, tid, gid, req)
            if not members(got) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        require(
            not members(got),
            req,
            f"{target.timeout:g}s after its only member, which had sent to its partitions,"
            f" closed its connection, group {gid} lists {len(members(got))} member(s)",
            got.at("members_count", "members"),
        )
