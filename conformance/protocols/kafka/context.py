"""What a Kafka handler is given and what it may answer: the broker's shared state.

Every handler (:mod:`.handlers`) is ``handler(broker, request, peer)``: ``broker`` is the
:class:`Broker` here (engine, coordinator, config, topic and producer ids), and the
handler returns a response body, :data:`NO_RESPONSE`, :data:`CLOSE` or a :class:`Wait`.
The session that calls the handlers lives in :mod:`.broker`, which imports the handlers;
so the handlers import this module and never :mod:`.broker` (no import circle).

Rules: nothing here decodes, encodes or touches a socket.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.coordinator import Coordinator
from conformance.protocols.kafka.sasl_session import MECHANISMS, SaslConnection, SaslUsers

if TYPE_CHECKING:
    from conformance.engine import Engine

NODE_ID = 1
"""The one broker's node id (it leads every partition and coordinates every group)."""

REVISIONS = ("doc", "apache")
"""The broker revisions (:data:`conformance.protocols.kafka.plugin.REVISIONS` names the
same two: tests/kafka/test_handlers_table.py checks it)."""


@dataclass(frozen=True)
class KafkaConfig:
    revision: str = "doc"
    quirks: tuple[str, ...] = ()
    join_delay_s: float = 0.3
    auto_create_topics: bool = True
    default_partitions: int = 1
    fetch_max_records: int = 10_000
    consumer_session_timeout_ms: int = 45_000
    """A KIP-848 member's session timeout (Kafka's ``group.consumer.session.timeout.ms``)."""
    sasl_users: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """(user, password) pairs; any makes every connection authenticate first (SASL)."""
    sasl_mechanisms: tuple[str, ...] = MECHANISMS
    """The SASL mechanisms enabled when ``sasl_users`` are given."""

    @property
    def sasl(self) -> bool:
        """Whether every connection must authenticate (SASL) before it is served."""
        return bool(self.sasl_users)


class NoResponse:
    """A handler's answer that sends nothing back (a Produce with acks=0)."""

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = NoResponse()


class Close(NoResponse):
    def __repr__(self) -> str:
        return "CLOSE"


CLOSE = Close()
"""No response, and the connection closed (a refused acks=0 produce)."""


class Wait(Protocol):
    """A response body that is not ready yet; ``poll`` must give it by ``deadline``."""

    deadline: float

    def poll(self, now: float) -> dict[str, Any] | None: ...


Answer = dict[str, Any] | Wait | NoResponse
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
        self.sasl_users = SaslUsers(config.sasl_users)
        self.sasl_connections: dict[str, SaslConnection] = {}
        """The SASL state of each open connection, by peer, when SASL is required (the
        session adds and removes its own; handlers/sasl.py drives it)."""

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
