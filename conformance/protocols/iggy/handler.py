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
  a SEND_MESSAGES before login is answered 40 whatever its payload; in classic its
  payload is then judged on its raw bytes as that handler reads it (send_checks.py: a
  bad Identifier is 6, the batch checks come before the stream and topic lookups);
* doc has no login (LOGIN_USER and LOGOUT_USER are not in its table: 3);
* an exception a handler does not expect is logged and answered 1 (ERROR): no request
  ends the connection or the broker (but the fault quirks, on purpose).

This module is the dispatcher: the front-end, the session, the order of checks above and
the lookups every command shares (stream, topic, group by Identifier).  The commands
live by area: broker_system.py (ping, stats, clients, login, cluster), broker_streams.py
(streams, topics, partitions), broker_groups.py (consumer groups), broker_send.py (send;
its classic batch checks in send_checks.py) and broker_messages.py (poll, consumer
offsets); each is a function ``(session, body) -> reply``.

State is the registry of broker_state.py, durable on the engine: every change a command
makes is written through (``registry.save_*`` / ``forget_*``, in the order broker_state.py
gives) before its reply, and a front-end started on an engine that holds a previous run's
state rebuilds the registry from it (``Registry.recover``); quirks are consulted where
they bend a rule (quirks.py).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from conformance.engine import Engine, EngineError
from conformance.errors import ProtocolError
from conformance.protocols.iggy import (
    broker_groups,
    broker_messages,
    broker_send,
    broker_streams,
    broker_system,
    codec,
    send_checks,
)
from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    ROOT_USER_ID,
    ClientEntry,
    GroupEntry,
    Refusal,
    Registry,
    StreamEntry,
    TopicEntry,
    identifier,
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
POLL_STRATEGY_KINDS = range(1, 6)
"""offset, timestamp, first, last, next (BP/primitives/polling_strategy.rs)."""
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
        self.frozen_lists: dict[str, dict[int, list[int]]] = {}
        """The quirk groups-not-redealt: by engine group name, the members' lists as they
        were before the topic's partitions changed, until the group's next join or leave."""
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
        self.joined: list[tuple[str, GroupEntry]] = []  # engine group, entry: left at close
        if not self.classic:
            self.client.user_id = ROOT_USER_ID  # doc has no login

    # ------------------------------------------------------------ the session contract

    def closed(self) -> None:
        self.registry.clients.pop(self.client.id, None)
        broker_groups.leave_all(self)

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
            if self.classic:
                frame = self._send_checked(frame, payload)
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

    def _send_checked(self, frame: bytes, payload: bytes) -> bytes:
        """A classic SEND_MESSAGES judged on its raw bytes as the real server reads it,
        before any lookup (send_checks.py: 6 for a bad Identifier, the batch checks 4009,
        4031, 4032, 4017, 4022, 4036 ...); the frame with the index table the decoder
        expects when it passes."""
        refused = send_checks.refusal(payload, not self.quirks.send_index_unchecked())
        if refused is not None:
            raise Refusal(self.quirks.send_status(refused.status), str(refused))
        return frame[:4] + send_checks.as_decoded(payload)

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
        """Fields the schema lets through that the server's decoder refuses: a polling
        strategy kind outside 1..5 is an unknown discriminant (3,
        BP/primitives/polling_strategy.rs); an empty name or string Identifier fails
        validation (4, BP/primitives/identifier.rs).  The strategy follows POLL's Identifiers,
        so it is judged after them, as the decoder reads them."""
        for key, value in body.items():
            if key in ("name", "username") and value == "":
                raise Refusal(st.INVALID_FORMAT, f"{name}: the {key} is empty")
            if isinstance(value, dict) and value.get("kind") == 2 and value.get("value") == "":
                raise Refusal(st.INVALID_FORMAT, f"{name}: the {key} Identifier is empty")
        strategy = body.get("strategy") if name == "poll_messages" else None
        if isinstance(strategy, dict) and strategy.get("kind") not in POLL_STRATEGY_KINDS:
            raise Refusal(st.INVALID_COMMAND, f"{name}: no polling strategy {strategy['kind']}")

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


def _crash(quirk: str, why: str) -> NoReturn:
    """End the process at once, as a crash would (no cleanup, no reply)."""
    sys.stderr.write(f"conformance: fault quirk {quirk} fired ({why}); the broker dies\n")
    sys.stderr.flush()
    os._exit(CRASH_EXIT_CODE)


Handler = Callable[[IggySession, dict[str, Any]], "dict[str, Any] | Outcome | None"]
_COMMANDS: dict[str, Handler] = {
    "ping": broker_system.ping,
    "get_stats": broker_system.get_stats,
    "get_me": broker_system.get_me,
    "get_cluster_metadata": broker_system.get_cluster_metadata,
    "get_client": broker_system.get_client,
    "get_clients": broker_system.get_clients,
    "login_user": broker_system.login_user,
    "logout_user": broker_system.logout_user,
    "create_stream": broker_streams.create_stream,
    "get_stream": broker_streams.get_stream,
    "get_streams": broker_streams.get_streams,
    "delete_stream": broker_streams.delete_stream,
    "create_topic": broker_streams.create_topic,
    "get_topic": broker_streams.get_topic,
    "get_topics": broker_streams.get_topics,
    "delete_topic": broker_streams.delete_topic,
    "create_partitions": broker_streams.create_partitions,
    "delete_partitions": broker_streams.delete_partitions,
    "create_consumer_group": broker_groups.create_consumer_group,
    "get_consumer_group": broker_groups.get_consumer_group,
    "get_consumer_groups": broker_groups.get_consumer_groups,
    "delete_consumer_group": broker_groups.delete_consumer_group,
    "join_consumer_group": broker_groups.join_consumer_group,
    "leave_consumer_group": broker_groups.leave_consumer_group,
    "send_messages": broker_send.send_messages,
    "poll_messages": broker_messages.poll_messages,
    "get_consumer_offset": broker_messages.get_consumer_offset,
    "store_consumer_offset": broker_messages.store_consumer_offset,
    "delete_consumer_offset": broker_messages.delete_consumer_offset,
}
_NAMES_BY_CODE = dict(NAMES)
