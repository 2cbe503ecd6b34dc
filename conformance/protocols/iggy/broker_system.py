"""System commands and login of the Iggy front-end: PING, GET_STATS, GET_ME, GET_CLIENT,
GET_CLIENTS, GET_CLUSTER_METADATA, LOGIN_USER, LOGOUT_USER.

Behaviour (sources at apache/iggy f5350d999; FACTS.md section 3):

* a client is a connection, its id XXH32 of its peer address (broker_state.py); its record
  lists the groups it is a member of (stream, topic, group ids); GET_CLIENT of an unknown
  id is the empty reply, of id 0 status 101 in classic (InvalidClientId,
  SV/binary/handlers/system/get_client_handler.rs);
* GET_STATS counts what the registry holds; the figures this broker has no measure of
  (CPU, memory, disk, bytes read and written) are 0;
* GET_CLUSTER_METADATA answers one node, this broker, leading (the real server without
  clustering: SV/shard/system/cluster.rs);
* LOGIN_USER checks the username length 3..50 (43), the password length 3..100 (44), then
  the credentials (42), in the real server's order (SV/binary/handlers/users/
  login_user_handler.rs, SV/shard/system/users.rs), and answers the root user's id; a
  failed login leaves the connection as it was, logged in or not; a login on a logged-in
  connection ends the first login and starts the new one (``login_user_with_credentials``
  logs the session's user out only after the credentials passed); LOGOUT_USER closes the
  gate again.  Doc has neither (the dispatcher answers them 3).
"""

from __future__ import annotations

import os
import platform
import socket
from typing import TYPE_CHECKING, Any

from conformance.protocols.iggy import broker_streams
from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    ROOT_USER_ID,
    TCP,
    ClientEntry,
    Refusal,
    now_us,
)

if TYPE_CHECKING:
    from conformance.protocols.iggy.handler import IggySession


def _id(entry: Any) -> int:
    return int(entry.id)


def client_record(session: IggySession, client: ClientEntry) -> dict[str, Any]:
    groups = []
    for s in sorted(session.registry.streams.values(), key=_id):
        for t in sorted(s.topics.values(), key=_id):
            for g in sorted(t.groups.values(), key=_id):
                if g.member_of(client.id) is not None:
                    groups.append({"stream_id": s.id, "topic_id": t.id, "group_id": g.id})
    return {
        "client_id": client.id,
        "user_id": client.user_id if client.user_id is not None else 0,
        "transport": TCP,
        "address": client.address,
        "consumer_groups_count": len(groups),
        "consumer_groups": groups,
    }


def ping(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    return {}


def get_stats(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    reg = session.registry
    streams = [broker_streams.stream_record(session, s) for s in reg.streams.values()]
    topics = [t for s in reg.streams.values() for t in s.topics.values()]
    partitions = sum(len(t.partitions) for t in topics)
    now = now_us()
    return {
        "process_id": os.getpid(),
        "cpu_usage": 0.0,
        "total_cpu_usage": 0.0,
        "memory_usage": 0,
        "total_memory": 0,
        "available_memory": 0,
        "run_time": now - reg.started_us,
        "start_time": reg.started_us,
        "read_bytes": 0,
        "written_bytes": 0,
        "messages_size_bytes": sum(s["size_bytes"] for s in streams),
        "streams_count": len(streams),
        "topics_count": len(topics),
        "partitions_count": partitions,
        "segments_count": partitions,
        "messages_count": sum(s["messages_count"] for s in streams),
        "clients_count": len(reg.clients),
        "consumer_groups_count": sum(len(t.groups) for t in topics),
        "hostname": socket.gethostname(),
        "os_name": platform.system(),
        "os_version": platform.release(),
        "kernel_version": platform.version(),
        "iggy_server_version": "conformance reference broker",
        "iggy_server_semver": 0,
        "caches": [],
        "threads_count": 1,
        "free_disk_space": 0,
        "total_disk_space": 0,
    }


def get_me(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    return client_record(session, session.client)


def get_cluster_metadata(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    """One node, this broker, leading: what the real server answers without clustering
    (core/server/src/shard/system/cluster.rs: cluster "single-node", node "iggy-node",
    role 0 leader, status 0 healthy); the 0.8 client asks after every login."""
    front = session.frontend
    node = {
        "name": "iggy-node",
        "ip": front.host,
        "tcp_port": front.port,
        "quic_port": 0,
        "http_port": 0,
        "websocket_port": 0,
        "role": 0,
        "status": 0,
    }
    return {"name": "single-node", "nodes": [node]}


def get_client(session: IggySession, body: dict[str, Any]) -> dict[str, Any] | None:
    if body["client_id"] == 0 and session.classic:
        raise Refusal(st.INVALID_CLIENT_ID, "client id 0")
    client = session.registry.clients.get(body["client_id"])
    return None if client is None else client_record(session, client)


def get_clients(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    clients = sorted(session.registry.clients.values(), key=_id)
    records = [client_record(session, c) for c in clients]
    for r in records:
        r.pop("consumer_groups")
    return {"clients": records}


def login_user(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    username, password = body["username"], body["password"]
    if session.quirks.relogin_logs_out_first():
        session.client.user_id = None
    if not 3 <= len(username.encode()) <= 50:
        raise Refusal(st.INVALID_USERNAME, "a username has 3..50 bytes")
    if not 3 <= len(password.encode()) <= 100:
        raise Refusal(st.INVALID_PASSWORD, "a password has 3..100 bytes")
    config = session.config
    if username != config.username or not session.quirks.password_ok(password, config.password):
        raise Refusal(st.INVALID_CREDENTIALS, "invalid credentials")
    session.client.user_id = ROOT_USER_ID
    return {"user_id": ROOT_USER_ID}


def logout_user(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    session.client.user_id = None
    return {}
