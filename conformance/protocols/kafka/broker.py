"""The Kafka front-end of the reference broker: one request in, one response out.

A session decodes each request (:mod:`.codec`), hands it to the handler of its API key
(:mod:`.handlers`, one small module per API or family of APIs), and encodes what the
handler returns.  A handler returns a response body, :data:`NO_RESPONSE` (a Produce with
acks=0 gets none) or a :class:`Wait` whose body is ready later (JoinGroup, SyncGroup, a
long-poll Fetch); the server polls a wait on every change the broker reports.

What the broker does with a request it cannot serve:

* an unknown API key, or a version of a known API outside its range: an ApiVersions
  request is answered at v0 with UNSUPPORTED_VERSION and, so the client can ask again,
  the versions the broker knows (``doc``) or ApiVersions' own range alone (``apache``, as
  Apache Kafka's ``ApiVersionsRequest.getErrorResponse``); any other gets, in revision
  ``apache``, the connection closed (as Apache Kafka does) and in ``doc`` (pgcdc) the bare response
  ``[correlation id][int16 35]``;
* a body that does not decode, or a header shorter than 8 bytes: the connection is closed
  (a Kafka broker cannot answer what it cannot read);
* a size prefix over 100 MiB or below 0: the connection is closed before any of it is read.

A broker that requires SASL (``KafkaConfig.sasl_users``) puts a gate before the handlers
on every connection (:mod:`.sasl_session`, as Apache Kafka's ``SaslServerAuthenticator``):
before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are served,
anything else closes the connection (after SaslHandshake v1, once answered with
ILLEGAL_SASL_STATE), after SaslHandshake v0 the frames are bare SASL tokens, and a
failed authentication closes the connection once its answer is sent.

Revision ``doc`` answers with response header v0 everywhere (pgcdc); ``apache`` follows
Kafka's rule (v1 for flexible versions, ApiVersions excepted).  Both serve the same APIs.

What the handlers are given and may answer (:class:`Broker`, :class:`KafkaConfig`,
:data:`NO_RESPONSE`, :class:`Wait` ...) lives in :mod:`.context`, which the handlers
import instead of this module; the plug-in finds :class:`KafkaConfig` here too.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.engine import Engine
from conformance.errors import ProtocolError
from conformance.protocols.kafka import codec, quirks
from conformance.protocols.kafka.apis import API_VERSIONS_KEY, APIS
from conformance.protocols.kafka.codec import KafkaError, Request
from conformance.protocols.kafka.context import (
    Broker,
    Close,
    KafkaConfig,
    NoResponse,
    Wait,
)
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.fault_replies import error_body
from conformance.protocols.kafka.handlers import HANDLERS
from conformance.protocols.kafka.handlers.api_versions import supported
from conformance.protocols.kafka.sasl_session import SaslConnection
from conformance.server import Outcome
from conformance.wire.framing import LengthPrefixDeframer

__all__ = ["KafkaConfig", "KafkaFrontend", "KafkaSession"]

log = logging.getLogger("conformance.kafka")


@dataclass
class _Pending:
    """A waiting handler's answer, as the server polls it: framed replies when ready."""

    session: KafkaSession
    request: Request
    wait: Wait
    deadline: float = field(init=False)
    abandon_on_eof: bool = field(default=True, init=False)  # a Kafka broker closes on EOF

    def __post_init__(self) -> None:
        self.deadline = self.wait.deadline

    def poll(self, now: float) -> list[bytes] | None:
        body = self.wait.poll(now)
        if body is None:
            return None
        return [self.session.respond(self.request, body)]


FAILED_AUTH_CLOSE_S = 0.1
"""How long after a failed authentication's answer the connection is closed: Kafka's
``connection.failed.authentication.delay.ms`` default (100)."""


@dataclass
class _Linger:
    """Nothing more to send; ready at ``deadline`` (then the connection is closed)."""

    deadline: float
    abandon_on_eof: bool = True

    def poll(self, now: float) -> list[bytes] | None:
        return [] if now >= self.deadline else None


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
        self.sasl: SaslConnection | None = None
        config = frontend.config
        if config.sasl:
            self.sasl = SaslConnection(self.broker.sasl_users, config.sasl_mechanisms)
            self.broker.sasl_connections[peer] = self.sasl

    def closed(self) -> None:
        if self.sasl is not None and self.broker.sasl_connections.get(self.peer) is self.sasl:
            del self.broker.sasl_connections[self.peer]

    def received(self, count: int) -> None:
        pass

    @property
    def pgcdc(self) -> bool:
        return self.frontend.config.revision == "doc"

    def respond(self, request: Request, body: dict[str, Any]) -> bytes:
        if self.frontend.config.quirks:
            body = quirks.after(self.frontend.config.quirks, request, body)
        if self.sasl is not None and not self.sasl.open:
            self.sasl.answered(request.api_key, int(body.get("error_code", 0)))
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
        active = self.frontend.config.quirks
        if active and self._stopped(active, frame):
            return Outcome()
        gate = self.sasl
        if gate is not None and not gate.open:
            return self._authenticating(gate, frame)
        try:
            request = codec.decode_request(frame)
        except KafkaError as exc:
            return self._undecodable(exc, frame)
        return self._serve(request)

    def _authenticating(self, gate: SaslConnection, frame: bytes) -> Outcome:
        """A frame before authentication: a bare token after SaslHandshake v0, else a
        request the gate serves, refuses or closes on (:mod:`.sasl_session`)."""
        if gate.raw:
            token = gate.token(frame)
            return Outcome(close=True) if token is None else Outcome([codec.frame(token)])
        if len(frame) < 8:
            return Outcome(close=True)
        action = gate.admit(int.from_bytes(frame[:2], "big", signed=True))
        if action == "close":
            return Outcome(close=True)
        try:
            request = codec.decode_request(frame)
        except KafkaError as exc:
            if exc.api_key == API_VERSIONS_KEY:
                return self._undecodable(exc, frame)
            return Outcome(close=True)  # Kafka cannot answer what it cannot read
        if action == "refuse":
            body = error_body(request, "ILLEGAL_SASL_STATE")
            return Outcome(close=True) if body is None else self._closing(request, body)
        outcome = self._serve(request)
        if gate.state != "failed":
            return outcome
        if not outcome.replies:
            return dataclasses.replace(outcome, close=True)
        # the refusal goes out at once, the close FAILED_AUTH_CLOSE_S later: a client that
        # reads the answer and the end of stream together may drop the answer otherwise
        # (kafka-python 3.0 does); Kafka delays both (connection.failed.authentication.delay.ms)
        linger = _Linger(self.broker.clock() + FAILED_AUTH_CLOSE_S)
        return dataclasses.replace(outcome, pending=linger, close=True)

    def _closing(self, request: Request, body: dict[str, Any]) -> Outcome:
        return Outcome([self.respond(request, body)], close=True)

    def _serve(self, request: Request) -> Outcome:
        active = self.frontend.config.quirks
        answer: Any
        if active:
            quirks.fault(active, request)
            try:
                seen = quirks.before(active, request)
            except quirks.CloseConnection:
                return Outcome(close=True)
            if isinstance(seen, dict):
                return Outcome([self.respond(request, seen)])
            request = seen
        answer = HANDLERS[request.api_key](self.broker, request, self.peer)
        if isinstance(answer, NoResponse):
            return Outcome(close=isinstance(answer, Close))
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
            keys = supported(self.frontend.config.revision)
            if not self.pgcdc:  # Apache Kafka lists ApiVersions alone (getErrorResponse)
                keys = [k for k in keys if k["api_key"] == API_VERSIONS_KEY]
            body = {"error_code": code("UNSUPPORTED_VERSION"), "api_keys": keys}
            payload = codec.encode_response(API_VERSIONS_KEY, 0, corr, body, header_version=0)
            return Outcome([codec.frame(payload)])
        if self.pgcdc:
            bare = corr.to_bytes(4, "big", signed=True) + code("UNSUPPORTED_VERSION").to_bytes(
                2, "big", signed=True
            )
            return Outcome([codec.frame(bare)])
        return Outcome(close=True)
