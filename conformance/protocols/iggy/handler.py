"""The Iggy front-end of the reference broker: decoded request -> registry/engine -> reply.

Behaviour (revision ``classic`` = the 0.8 server, FACTS.md; ``doc`` = the seed's layouts,
with classic's reply framing and records):

* every reply is ``[u32 status][u32 length][payload]``; an error has no payload; the
  connection stays open after every error (FACTS.md section 1);
* order of checks for a frame: the deframer's refusals (length below 4, a control payload
  over 10 MiB: status 3; see broker_wire.py), then the code (unknown: 3), then the payload
  is decoded (undecodable: 3, a field failing validation: 4), then, in classic, the login
  gate (40 for everything but PING and LOGIN_USER before a successful login on this
  connection).  SEND_MESSAGES is the one exception: the real server checks the login
  before it reads its payload (SV/binary/handlers/messages/send_messages_handler.rs), so
  a SEND_MESSAGES before login is answered 40 whatever its payload;
* doc has no login (LOGIN_USER and LOGOUT_USER are not in its table: 3);
* an exception a handler does not expect is logged and answered 1 (ERROR): no request
  ends the connection or the broker (but the fault quirks, on purpose).

Commands live in two modules: this one (system, login, streams, topics, partitions,
groups) and broker_messages.py (send, poll, consumer offsets).  State is the registry of
broker_state.py, durable on the engine: every change a command makes is written through
(``registry.save_*`` / ``forget_*``, in the order broker_state.py gives) before its reply,
and a front-end started on an engine that holds a previous run's state rebuilds the
registry from it (``Registry.recover``); quirks are consulted where they bend a rule
(quirks.py).
"""

from __future__ import annotations

import logging
import os
import platform
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from conformance.engine import Engine, EngineError
from conformance.errors import ProtocolError
from conformance.protocols.iggy import broker_messages, codec
from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    GROUP_POLICY,
    ROOT_USER_ID,
    TCP,
    ClientEntry,
    GroupEntry,
    Refusal,
    Registry,
    StreamEntry,
    TopicEntry,
    engine_group,
    engine_topic,
    identifier,
    lowest_free,
    member_id,
    now_us,
)
from conformance.protocols.iggy.broker_wire import (
    INVALID,
    SHORT,
    Refused,
    RequestDeframer,
    scan_identifiers,
)
from conformance.protocols.iggy.errors import IggyError, UnknownCommand
from conformance.protocols.iggy.messages import NAMES
from conformance.protocols.iggy.quirks import CRASH_EXIT_CODE, Quirks
from conformance.server import Outcome

log = logging.getLogger("conformance.iggy")

MAX_PARTITIONS_PER_REQUEST = 1000
"""BP/lib.rs ``MAX_PARTITIONS_PER_REQUEST``: more in one request is 2015."""
UNGATED = frozenset({"ping", "login_user"})
ENGINE_STATUS = {
    "UNKNOWN_TOPIC": st.TOPIC_ID_NOT_FOUND,
    "UNKNOWN_PARTITION": st.PARTITION_NOT_FOUND,
    "INVALID_PARTITIONS": st.INVALID_PARTITIONS_COUNT,
    "UNKNOWN_GROUP": st.CONSUMER_GROUP_ID_NOT_FOUND,
    "UNKNOWN_MEMBER": st.CONSUMER_GROUP_MEMBER_NOT_FOUND,
}


@dataclass
class IggyConfig:
    revision: str = "classic"
    username: str = "iggy"
    password: str = "iggy"
    quirks: Quirks = field(default_factory=Quirks)


class IggyFrontend:
    """Shared by every connection: the engine, the registry, the configuration."""

    name = "iggy"

    def __init__(self, engine: Engine, config: IggyConfig | None = None) -> None:
        self.engine = engine
        self.config = config or IggyConfig()
        codec.tables(self.config.revision)  # an unknown revision fails here
        self.registry = Registry(engine)
        self.registry.recover()
        self.stalled = False  # stall-on-unknown-code has fired: nothing is served any more
        self.address = ""
        self.host, self.port = "127.0.0.1", 0

    def set_address(self, host: str, port: int) -> None:
        self.address = f"{host}:{port}"
        self.host, self.port = host, port

    def new_deframer(self) -> RequestDeframer:
        return RequestDeframer()

    def new_session(self, peer: str) -> IggySession:
        return IggySession(self, peer)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        return Outcome([self.error_frame(st.INVALID_COMMAND, str(exc))], close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        return self.engine.add_listener(lambda _topic, _partition: callback())

    def error_frame(self, status: int, text: str) -> bytes:
        return codec.frame_reply(status, self.config.quirks.error_payload(text))


class IggySession:
    def __init__(self, frontend: IggyFrontend, peer: str) -> None:
        self.frontend = frontend
        self.engine = frontend.engine
        self.registry = frontend.registry
        self.config = frontend.config
        self.quirks = frontend.config.quirks
        self.classic = self.config.revision == "classic"
        self.client: ClientEntry = self.registry.add_client(peer)
        if not self.classic:
            self.client.user_id = ROOT_USER_ID  # doc has no login

    # ------------------------------------------------------------ the session contract

    def closed(self) -> None:
        self.registry.clients.pop(self.client.id, None)
        try:
            self.engine.disconnect(member_id(self.client.id))
        except Exception:  # the engine may be closed at shutdown
            log.debug("iggy: disconnect of client %s failed", self.client.id, exc_info=True)

    def received(self, count: int) -> None:
        pass

    def handle(self, frame: bytes) -> Outcome:
        if self.frontend.stalled:
            return Outcome(stall=True)
        try:
            return self._handle(frame)
        except Refusal as exc:
            return self._error(exc.status, str(exc))
        except Exception as exc:  # a bug must not end the connection or the broker
            log.exception("iggy: request from %s failed", self.client.address)
            return self._error(st.ERROR, f"internal error: {exc!r}")

    def _error(self, status: int, text: str) -> Outcome:
        return Outcome([self.frontend.error_frame(status, text)])

    def _handle(self, frame: bytes) -> Outcome:
        if isinstance(frame, Refused):
            return self._error(frame.status, frame.reason)
        try:
            code, payload = codec.split_request(frame)
        except IggyError as exc:
            return self._error(st.INVALID_COMMAND, str(exc))
        name = _NAMES_BY_CODE.get(code)
        if (
            name is None
            or name not in _COMMANDS
            or name not in codec.tables(self.config.revision)[0]
        ):
            return self._unknown(code)
        if name in ("login_user", "logout_user") and not self.classic:
            return self._unknown(code)
        crashes = self.classic and self.quirks.crashes_on_short_identifier()
        if crashes and scan_identifiers(name, payload) == SHORT:
            _crash("crash-on-short-identifier", f"{name}: a string Identifier runs past it")
        if name == "send_messages":
            self._gate(name)
        try:
            name, body = self._decode(frame)
        except UnknownCommand:
            return self._unknown(code)
        except IggyError as exc:
            status = getattr(exc, "status", st.INVALID_COMMAND)
            if self.classic and scan_identifiers(name, payload) == INVALID:
                status = st.INVALID_FORMAT
            return self._error(status, str(exc))
        self._validate(name, body)
        self._gate(name)
        try:
            reply = _COMMANDS[name](self, body)
        except EngineError as exc:
            raise Refusal(ENGINE_STATUS.get(exc.code, st.ERROR), str(exc)) from None
        if isinstance(reply, Outcome):
            return reply
        return Outcome(
            [codec.frame_reply(0, codec.encode_reply(name, reply, self.config.revision))]
        )

    def _decode(self, frame: bytes) -> tuple[str, dict[str, Any]]:
        """Trailing bytes are accepted: the real server only logs them (FACTS.md section 1)."""
        return codec.decode_request(frame, self.config.revision, strict=False)

    def _unknown(self, code: int) -> Outcome:
        if self.quirks.stalls_on_unknown():
            self.frontend.stalled = True
            return Outcome(stall=True)
        if self.quirks.closes_on_unknown():
            return Outcome(close=True)
        return self._error(st.INVALID_COMMAND, f"unknown command code {code}")

    def _gate(self, name: str) -> None:
        if not self.classic or name in UNGATED or self.quirks.gate_open():
            return
        if self.client.user_id is None:
            raise Refusal(st.UNAUTHENTICATED, f"{name} before a successful LOGIN_USER")

    def _validate(self, name: str, body: dict[str, Any]) -> None:
        """Fields the schema lets through that the server refuses as validation (4):
        an empty name, an empty string Identifier (BP/primitives/identifier.rs)."""
        for key, value in body.items():
            if key in ("name", "username") and value == "":
                raise Refusal(st.INVALID_FORMAT, f"{name}: the {key} is empty")
            if isinstance(value, dict) and value.get("kind") == 2 and value.get("value") == "":
                raise Refusal(st.INVALID_FORMAT, f"{name}: the {key} Identifier is empty")

    # ------------------------------------------------------------ lookups

    def stream(self, ident: Any) -> StreamEntry:
        kind, value = identifier(ident)
        found = self.registry.stream_by(kind, value, self.quirks.resolves_names())
        if found is None:
            raise Refusal(st.STREAM_ID_NOT_FOUND, f"there is no stream {value!r}")
        return found

    def topic(self, body: dict[str, Any]) -> tuple[StreamEntry, TopicEntry]:
        stream = self.stream(body["stream"])
        kind, value = identifier(body["topic"])
        found = self.registry.topic_by(stream, kind, value, self.quirks.resolves_names())
        if found is None:
            raise Refusal(
                st.TOPIC_ID_NOT_FOUND, f"there is no topic {value!r} in stream {stream.id}"
            )
        return stream, found

    def group(self, body: dict[str, Any]) -> tuple[StreamEntry, TopicEntry, GroupEntry]:
        stream, topic = self.topic(body)
        kind, value = identifier(body.get("group", body.get("consumer_group_id")))
        found = self.registry.group_by(topic, kind, value, self.quirks.resolves_names())
        if found is None:
            raise Refusal(st.CONSUMER_GROUP_ID_NOT_FOUND, f"there is no consumer group {value!r}")
        return stream, topic, found

    def partitions_of(
        self, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
    ) -> dict[int, list[int]]:
        """Each member's partitions (client id -> partition ids)."""
        info = self.engine.group_info(engine_group(stream.id, topic.id, group.id))
        every = list(range(len(topic.partitions)))
        return {
            int(m.member_id): every
            if self.quirks.every_partition()
            else list(m.assignment.get(engine_topic(stream.id, topic.id), []))
            for m in info.members
        }

    # ------------------------------------------------------------ records

    def partition_record(self, stream: StreamEntry, topic: TopicEntry, p: int) -> dict[str, Any]:
        hwm = self.engine.high_watermark(engine_topic(stream.id, topic.id), p)
        return {
            "id": p,
            "created_at": topic.partitions[p],
            "segments_count": 1,
            "current_offset": max(hwm - 1, 0),
            "size_bytes": broker_messages.partition_size(self, stream, topic, p),
            "messages_count": hwm,
        }

    def topic_record(self, stream: StreamEntry, topic: TopicEntry) -> dict[str, Any]:
        parts = [self.partition_record(stream, topic, p) for p in range(len(topic.partitions))]
        return {
            "id": topic.id,
            "created_at": topic.created_at,
            "partitions_count": len(parts),
            "message_expiry": topic.message_expiry,
            "compression": topic.compression,
            "max_topic_size": topic.max_topic_size,
            "replication_factor": topic.replication_factor,
            "size_bytes": sum(p["size_bytes"] for p in parts),
            "messages_count": sum(p["messages_count"] for p in parts),
            "name": topic.name,
            "partitions": parts,
        }

    def stream_record(self, stream: StreamEntry) -> dict[str, Any]:
        topics = [self.topic_record(stream, t) for t in sorted(stream.topics.values(), key=_id)]
        for t in topics:
            t.pop("partitions")
        return {
            "id": stream.id,
            "created_at": stream.created_at,
            "topics_count": len(topics),
            "size_bytes": sum(t["size_bytes"] for t in topics),
            "messages_count": sum(t["messages_count"] for t in topics),
            "name": stream.name,
            "topics": topics,
        }

    def group_record(
        self, stream: StreamEntry, topic: TopicEntry, group: GroupEntry
    ) -> dict[str, Any]:
        shares = self.partitions_of(stream, topic, group)
        return {
            "id": group.id,
            "partitions_count": len(topic.partitions),
            "members_count": len(shares),
            "name": group.name,
            "members": [{"id": c, "partitions": p} for c, p in sorted(shares.items())],
        }

    def client_record(self, client: ClientEntry) -> dict[str, Any]:
        groups = []
        for s in sorted(self.registry.streams.values(), key=_id):
            for t in sorted(s.topics.values(), key=_id):
                for g in sorted(t.groups.values(), key=_id):
                    if client.id in self.partitions_of(s, t, g):
                        groups.append({"stream_id": s.id, "topic_id": t.id, "group_id": g.id})
        return {
            "client_id": client.id,
            "user_id": client.user_id if client.user_id is not None else 0,
            "transport": TCP,
            "address": client.address,
            "consumer_groups_count": len(groups),
            "consumer_groups": groups,
        }

    # ------------------------------------------------------------ system and login

    def ping(self, body: dict[str, Any]) -> dict[str, Any]:
        return {}

    def get_stats(self, body: dict[str, Any]) -> dict[str, Any]:
        reg = self.registry
        streams = [self.stream_record(s) for s in reg.streams.values()]
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

    def get_me(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.client_record(self.client)

    def get_cluster_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        """One node, this broker, leading: what the real server answers without clustering
        (core/server/src/shard/system/cluster.rs: cluster "single-node", node "iggy-node",
        role 0 leader, status 0 healthy); the 0.8 client asks after every login."""
        front = self.frontend
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

    def get_client(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Client id 0 is 101 in classic (SV/binary/handlers/system/get_client_handler.rs);
        an unknown one the empty reply."""
        if body["client_id"] == 0 and self.classic:
            raise Refusal(st.INVALID_CLIENT_ID, "client id 0")
        client = self.registry.clients.get(body["client_id"])
        return None if client is None else self.client_record(client)

    def get_clients(self, body: dict[str, Any]) -> dict[str, Any]:
        records = [self.client_record(c) for c in sorted(self.registry.clients.values(), key=_id)]
        for r in records:
            r.pop("consumer_groups")
        return {"clients": records}

    def login_user(self, body: dict[str, Any]) -> dict[str, Any]:
        """Checks in the real server's order (SV/binary/handlers/users/login_user_handler.rs,
        SV/shard/system/users.rs): username length 3..50 (43), password 3..100 (44),
        then the credentials (42).  A failed login leaves the connection as it was."""
        username, password = body["username"], body["password"]
        if not 3 <= len(username.encode()) <= 50:
            raise Refusal(st.INVALID_USERNAME, "a username has 3..50 bytes")
        if not 3 <= len(password.encode()) <= 100:
            raise Refusal(st.INVALID_PASSWORD, "a password has 3..100 bytes")
        if username != self.config.username or not self.quirks.password_ok(
            password, self.config.password
        ):
            raise Refusal(st.INVALID_CREDENTIALS, "invalid credentials")
        self.client.user_id = ROOT_USER_ID
        return {"user_id": ROOT_USER_ID}

    def logout_user(self, body: dict[str, Any]) -> dict[str, Any]:
        self.client.user_id = None
        return {}

    # ------------------------------------------------------------ streams

    def create_stream(self, body: dict[str, Any]) -> dict[str, Any]:
        reg, name = self.registry, body["name"]
        if any(s.name == name for s in reg.streams.values()):
            raise Refusal(st.STREAM_NAME_ALREADY_EXISTS, f"stream {name!r} exists")
        sid = body.get("stream_id")
        if sid is None:
            sid = lowest_free(reg.streams)
        elif sid in reg.streams:  # doc: Iggy's historic StreamIdAlreadyExists (IGG-STREAM-6)
            raise Refusal(st.STREAM_ID_ALREADY_EXISTS, f"stream id {sid} is in use")
        reg.streams[sid] = StreamEntry(sid, name, now_us())
        reg.save_stream(reg.streams[sid])
        return self.stream_record(reg.streams[sid])

    def get_stream(self, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.stream_record(self.stream(body["stream"]))
        except Refusal:
            return None

    def get_streams(self, body: dict[str, Any]) -> dict[str, Any]:
        records = [self.stream_record(s) for s in sorted(self.registry.streams.values(), key=_id)]
        for r in records:
            r.pop("topics")
        return {"streams": records}

    def delete_stream(self, body: dict[str, Any]) -> dict[str, Any]:
        stream = self.stream(body["stream"])
        self.registry.forget_stream(stream)
        for topic in list(stream.topics.values()):
            self._drop_topic(stream, topic)
        del self.registry.streams[stream.id]
        return {}

    # ------------------------------------------------------------ topics

    def create_topic(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, name = self.stream(body["stream"]), body["name"]
        count = body["partitions_count"]
        if count > MAX_PARTITIONS_PER_REQUEST:
            raise Refusal(st.TOO_MANY_PARTITIONS, f"{count} partitions: at most 1000 a request")
        if any(t.name == name for t in stream.topics.values()):
            raise Refusal(
                st.TOPIC_NAME_ALREADY_EXISTS, f"topic {name!r} exists in stream {stream.id}"
            )
        tid = body.get("topic_id")
        if tid is None:
            tid = lowest_free(stream.topics)
        elif tid in stream.topics:  # doc: as for streams, the name code
            raise Refusal(st.TOPIC_NAME_ALREADY_EXISTS, f"topic id {tid} is in use")
        now = now_us()
        topic = TopicEntry(
            tid,
            name,
            now,
            body.get("compression", 1),
            body.get("message_expiry", 0),
            body.get("max_topic_size", 0),
            body.get("replication_factor", 0),
            [now] * count,
            [0] * count,
        )
        self.engine.create_topic(engine_topic(stream.id, tid), count, min_partitions=0)
        stream.topics[tid] = topic
        self.registry.save_topic(stream, topic)
        return self.topic_record(stream, topic)

    def get_topic(self, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.topic_record(*self.topic(body))
        except Refusal:
            return None

    def get_topics(self, body: dict[str, Any]) -> dict[str, Any]:
        stream = self.stream(body["stream"])
        records = [self.topic_record(stream, t) for t in sorted(stream.topics.values(), key=_id)]
        for r in records:
            r.pop("partitions")
        return {"topics": records}

    def delete_topic(self, body: dict[str, Any]) -> dict[str, Any]:
        self._drop_topic(*self.topic(body))
        return {}

    def _drop_topic(self, stream: StreamEntry, topic: TopicEntry) -> None:
        self.registry.forget_topic(stream, topic)
        for group in topic.groups.values():
            self.engine.delete_group(engine_group(stream.id, topic.id, group.id))
        self.engine.delete_topic(engine_topic(stream.id, topic.id))
        del stream.topics[topic.id]

    # ------------------------------------------------------------ partitions

    def _partition_count(self, body: dict[str, Any]) -> int:
        count: int = body["partitions_count"]
        if count > MAX_PARTITIONS_PER_REQUEST:
            raise Refusal(st.TOO_MANY_PARTITIONS, f"{count} partitions: at most 1000 a request")
        if count < 1:  # the real server's handlers: a count outside 1..=1000 (IGG-PART-1/2)
            raise Refusal(st.TOO_MANY_PARTITIONS, "a partitions count of 0")
        return count

    def create_partitions(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic = self.topic(body)
        count = self._partition_count(body)
        self.engine.add_partitions(engine_topic(stream.id, topic.id), count)
        topic.partitions += [now_us()] * count
        topic.sizes += [0] * count
        self.registry.save_topic(stream, topic)
        return {}

    def delete_partitions(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic = self.topic(body)
        count = self._partition_count(body)
        if count > len(topic.partitions):
            raise Refusal(
                st.INVALID_PARTITIONS_COUNT,
                f"{count} partitions to delete, topic {topic.id} has {len(topic.partitions)}",
            )
        del topic.partitions[len(topic.partitions) - count :]
        del topic.sizes[len(topic.sizes) - count :]
        self.registry.save_topic(stream, topic)  # the key first (see broker_state.py)
        self.registry.forget_partitions_from(stream, topic, len(topic.partitions))
        self.engine.remove_partitions(engine_topic(stream.id, topic.id), count)
        return {}

    # ------------------------------------------------------------ consumer groups

    def create_consumer_group(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic = self.topic(body)
        gid = body.get("consumer_group_id")
        name = body.get("name", str(gid))
        if any(g.name == name for g in topic.groups.values()) or gid in topic.groups:
            raise Refusal(st.CONSUMER_GROUP_NAME_ALREADY_EXISTS, f"consumer group {name!r} exists")
        if gid is None:
            gid = lowest_free(topic.groups)
        group = GroupEntry(gid, name)
        self.engine.create_group(
            engine_group(stream.id, topic.id, gid),
            engine_topic(stream.id, topic.id),
            policy=GROUP_POLICY,
        )
        topic.groups[gid] = group
        self.registry.save_group(stream, topic, group)
        return self.group_record(stream, topic, group)

    def get_consumer_group(self, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.group_record(*self.group(body))
        except Refusal:
            return None

    def get_consumer_groups(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic = self.topic(body)
        records = [
            self.group_record(stream, topic, g) for g in sorted(topic.groups.values(), key=_id)
        ]
        for r in records:
            r.pop("members")
        return {"groups": records}

    def delete_consumer_group(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic, group = self.group(body)
        self.registry.forget_group(stream, topic, group)
        del topic.groups[group.id]
        self.engine.delete_group(engine_group(stream.id, topic.id, group.id))
        return {}

    def join_consumer_group(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic, group = self.group(body)
        self.engine.join_group(
            engine_group(stream.id, topic.id, group.id),
            engine_topic(stream.id, topic.id),
            member_id(self.client.id),
            policy=GROUP_POLICY,
        )
        return {}

    def leave_consumer_group(self, body: dict[str, Any]) -> dict[str, Any]:
        stream, topic, group = self.group(body)
        name = engine_group(stream.id, topic.id, group.id)
        if not self.engine.members_of(name, member_id(self.client.id)):
            raise Refusal(st.CONSUMER_GROUP_MEMBER_NOT_FOUND, f"not a member of group {group.id}")
        self.engine.leave_group(name, member_id(self.client.id))
        group.cursors.pop(self.client.id, None)
        return {}


def _id(entry: Any) -> int:
    return int(entry.id)


def _crash(quirk: str, why: str) -> NoReturn:
    """End the process at once, as a crash would (no cleanup, no reply)."""
    sys.stderr.write(f"conformance: fault quirk {quirk} fired ({why}); the broker dies\n")
    sys.stderr.flush()
    os._exit(CRASH_EXIT_CODE)


Handler = Callable[[IggySession, dict[str, Any]], "dict[str, Any] | Outcome | None"]
_COMMANDS: dict[str, Handler] = {
    "ping": IggySession.ping,
    "get_stats": IggySession.get_stats,
    "get_me": IggySession.get_me,
    "get_cluster_metadata": IggySession.get_cluster_metadata,
    "get_client": IggySession.get_client,
    "get_clients": IggySession.get_clients,
    "login_user": IggySession.login_user,
    "logout_user": IggySession.logout_user,
    "create_stream": IggySession.create_stream,
    "get_stream": IggySession.get_stream,
    "get_streams": IggySession.get_streams,
    "delete_stream": IggySession.delete_stream,
    "create_topic": IggySession.create_topic,
    "get_topic": IggySession.get_topic,
    "get_topics": IggySession.get_topics,
    "delete_topic": IggySession.delete_topic,
    "create_partitions": IggySession.create_partitions,
    "delete_partitions": IggySession.delete_partitions,
    "create_consumer_group": IggySession.create_consumer_group,
    "get_consumer_group": IggySession.get_consumer_group,
    "get_consumer_groups": IggySession.get_consumer_groups,
    "delete_consumer_group": IggySession.delete_consumer_group,
    "join_consumer_group": IggySession.join_consumer_group,
    "leave_consumer_group": IggySession.leave_consumer_group,
    "send_messages": broker_messages.send_messages,
    "poll_messages": broker_messages.poll_messages,
    "get_consumer_offset": broker_messages.get_consumer_offset,
    "store_consumer_offset": broker_messages.store_consumer_offset,
    "delete_consumer_offset": broker_messages.delete_consumer_offset,
}
_NAMES_BY_CODE = dict(NAMES)
