"""The Kafka front-end of the reference broker: one request in, one response out.

A session decodes each request (:mod:`.codec`), hands it to the handler of its API key
(:mod:`.handlers`, one small module per API or family of APIs), and encodes what the
handler returns.  A handler returns a response body, :data:`NO_RESPONSE` (a Produce with
acks=0 gets none) or a :class:`Wait` whose body is ready later (JoinGroup, SyncGroup, a
long-poll Fetch); the server polls a wait on every change the broker reports.

What the broker does with a request it cannot serve:

* an unknown API key, or a version of a known API outside its range: an ApiVersions
  request is answered at v0 with UNSUPPORTED_VERSION and the versions the broker knows
  (so the client can ask again); any other gets, in revision ``apache``, the connection
  closed (as Apache Kafka does) and in ``doc`` (pgcdc) the bare response
  ``[correlation id][int16 35]``;
* a body that does not decode, or a header shorter than 8 bytes: the connection is closed
  (a Kafka broker cannot answer what it cannot read);
* a size prefix over 100 MiB or below 0: the connection is closed before any of it is read.

Revision ``doc`` answers with response header v0 everywhere (pgcdc); ``apache`` follows
Kafka's rule (v1 for flexible versions, ApiVersions excepted).  Both serve the same APIs.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.engine import Engine
from conformance.errors import ProtocolError
from conformance.protocols.kafka import codec, quirks
from conformance.protocols.kafka.apis import APIS
from conformance.protocols.kafka.codec import KafkaError, Request
from conformance.protocols.kafka.coordinator import Coordinator
from conformance.protocols.kafka.errors import code
from conformance.server import Outcome
from conformance.wire.framing import LengthPrefixDeframer

log = logging.getLogger("conformance.kafka")

API_VERSIONS_KEY = 18
NODE_ID = 1


@dataclass(frozen=True)
class KafkaConfig:
    revision: str = "doc"
    quirks: tuple[str, ...] = ()
    join_delay_s: float = 0.3
    auto_create_topics: bool = True
    default_partitions: int = 1
    fetch_max_records: int = 10_000


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class _Close(_NoResponse):
    def __repr__(self) -> str:
        return "CLOSE"


CLOSE = _Close()
"""No response, and the connection closed (a refused acks=0 produce)."""


class Wait(Protocol):
    """A response body that is not ready yet; ``poll`` must give it by ``deadline``."""

    deadline: float

    def poll(self, now: float) -> dict[str, Any] | None: ...


Answer = dict[str, Any] | Wait | _NoResponse
Handler = Callable[["Broker", Request, str], Answer]
"""``handler(broker, request, peer)``: the answer to one request from ``peer`` (host:port)."""


class Broker:
    """The state every connection shares: engine, coordinator, topic ids, producer ids."""

    def __init__(self, engine: Engine, config: KafkaConfig, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.config = config
        self.clock = clock
        self.host = "127.0.0.1"
        self.port = 9092
        self.cluster_id = "conformance-reference"
        self.stopped = False
        """Set by the fault quirk stop-after-unknown-api-key: nothing is answered any more."""
        self._listeners: list[Callable[[], None]] = []
        self.coordinator = Coordinator(
            clock, join_delay_s=config.join_delay_s, on_change=self.changed
        )
        self._topic_ids: dict[str, str] = {}
        self._names_by_id: dict[str, str] = {}
        # producer ids keep growing across restarts (microseconds since the epoch at start):
        # with --data-dir the journal remembers old producers' sequences, and a new
        # producer given an old id would be refused as out of order
        self._producer_ids = itertools.count(time.time_ns() // 1000)
        self.commit_metadata: dict[tuple[str, str, int], str | None] = {}
        self.producer_epochs: dict[int, int] = {}
        self.time_indexes: dict[tuple[str, int], Any] = {}
        """ListOffsets' running timestamp maximum per partition (handlers/list_offsets.py)."""

    def changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def topic_id(self, name: str) -> str:
        """The topic's id (Metadata v10+, Fetch v13+), given at first sight."""
        known = self._topic_ids.get(name)
        if known is None:
            known = self._topic_ids[name] = str(uuid.uuid4())
            self._names_by_id[known] = name
        return known

    def topic_named(self, topic_id: str) -> str | None:
        name = self._names_by_id.get(topic_id)
        return name if name is not None and self.engine.has_topic(name) else None

    def forget_topic(self, name: str) -> None:
        known = self._topic_ids.pop(name, None)
        if known is not None:
            self._names_by_id.pop(known, None)
        for key in [k for k in self.commit_metadata if k[1] == name]:
            del self.commit_metadata[key]
        for index in [k for k in self.time_indexes if k[0] == name]:
            del self.time_indexes[index]

    def new_producer_id(self) -> int:
        return next(self._producer_ids)


@dataclass
class _Pending:
    """A waiting handler's answer, as the server polls it: framed replies when ready."""

    session: KafkaSession
    request: Request
    wait: Wait
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = self.wait.deadline

    def poll(self, now: float) -> list[bytes] | None:
        body = self.wait.poll(now)
        if body is None:
            return None
        return [self.session.respond(self.request, body)]


class KafkaFrontend:
    name = "kafka"

    def __init__(
        self, engine: Engine, config: KafkaConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.broker = Broker(engine, config, clock)
        self.config = config

    def set_address(self, host: str, port: int) -> None:
        self.broker.host, self.broker.port = host, port

    def new_deframer(self) -> LengthPrefixDeframer:
        return codec.new_deframer()

    def new_session(self, peer: str) -> KafkaSession:
        return KafkaSession(self, peer)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        return Outcome(close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        remove_engine = self.broker.engine.add_listener(lambda _topic, _partition: callback())
        remove_broker = self.broker.add_listener(callback)

        def remove() -> None:
            remove_engine()
            remove_broker()

        return remove


class KafkaSession:
    def __init__(self, frontend: KafkaFrontend, peer: str) -> None:
        self.frontend = frontend
        self.broker = frontend.broker
        self.peer = peer

    def closed(self) -> None:
        pass

    def received(self, count: int) -> None:
        pass

    @property
    def pgcdc(self) -> bool:
        return self.frontend.config.revision == "doc"

    def respond(self, request: Request, body: dict[str, Any]) -> bytes:
        if self.frontend.config.quirks:
            body = quirks.after(self.frontend.config.quirks, request, body)
        header = 0 if self.pgcdc else None
        return codec.frame(
            codec.encode_response(
                request.api_key,
                request.api_version,
                request.correlation_id,
                body,
                header_version=header,
            )
        )

    def handle(self, frame: bytes) -> Outcome:
        from conformance.protocols.kafka.handlers import HANDLERS

        active = self.frontend.config.quirks
        if active and self._stopped(active, frame):
            return Outcome()
        try:
            request = codec.decode_request(frame)
        except KafkaError as exc:
            return self._undecodable(exc, frame)
        answer: Any
        if active:
            quirks.fault(active, request)
            seen = quirks.before(active, request)
            if isinstance(seen, dict):
                return Outcome([self.respond(request, seen)])
            request = seen
        answer = HANDLERS[request.api_key](self.broker, request, self.peer)
        if isinstance(answer, _NoResponse):
            return Outcome(close=isinstance(answer, _Close))
        if isinstance(answer, dict):
            return Outcome([self.respond(request, answer)])
        return Outcome(pending=_Pending(self, request, answer))

    def _stopped(self, active: tuple[str, ...], frame: bytes) -> bool:
        """Fault quirk stop-after-unknown-api-key: once a request names an API key the
        broker does not know, nothing is answered any more, on any connection."""
        if "stop-after-unknown-api-key" not in active:
            return False
        if len(frame) >= 2 and int.from_bytes(frame[:2], "big", signed=True) not in APIS:
            self.broker.stopped = True
        return self.broker.stopped

    def _undecodable(self, exc: KafkaError, frame: bytes) -> Outcome:
        corr = exc.correlation_id
        log.warning(
            "kafka: request from %s not served (%s): %s; payload %s%s",
            self.peer,
            exc.error,
            exc,
            frame[:256].hex(),
            "..." if len(frame) > 256 else "",
        )
        if corr is None or exc.error != "UNSUPPORTED_VERSION":
            return Outcome(close=True)
        if exc.api_key == API_VERSIONS_KEY:
            from conformance.protocols.kafka.handlers.api_versions import supported

            keys = supported(self.frontend.config.revision)
            body = {"error_code": code("UNSUPPORTED_VERSION"), "api_keys": keys}
            payload = codec.encode_response(API_VERSIONS_KEY, 0, corr, body, header_version=0)
            return Outcome([codec.frame(payload)])
        if self.pgcdc:
            bare = corr.to_bytes(4, "big", signed=True) + code("UNSUPPORTED_VERSION").to_bytes(
                2, "big", signed=True
            )
            return Outcome([codec.frame(bare)])
        return Outcome(close=True)
