"""Messages across protocols: produced over one protocol, consumed over another.

One broker serves several protocols over one engine (``serve --all``); a message it
acknowledged over one protocol is the same message, at the same offset, over every other
(docs/cross-protocol.md has the mapping rules).  :func:`check_pair` checks that for one
ordered pair of protocols, over sockets, through each plug-in's :class:`Messaging`:

1. a fresh one-partition topic: created over whichever of the pair owns its topics
   (Iggy), else over the first protocol, the producer, then the consumer, then any other
   (in :func:`conformance.protocols.names` order), that can create one (Kafka:
   CreateTopics); with none, the producer's first message creates it;
2. :data:`VALUES` produced over the producer, each acknowledged with its offset;
3. the same number of messages consumed over the consumer from the first offset: the
   pair PASSES when it reads back exactly the produced values at exactly the
   acknowledged offsets, FAILS when it reads anything else, and is an ERROR when a
   request is refused or a connection fails (the reason says which step, which protocol).

Every connection is opened by its protocol's session opener (Iggy's login) and every
read has the deadline ``timeout``.  Nothing here knows a protocol.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from conformance.client import ClientError, Connection, WireLog
from conformance.plugin import Messaging, MessagingRefused, Plugin, SessionRefused, open_session

VALUES = (b"cross-0", b"cross-1", b"cross-2")
"""What each pair carries: short, ASCII, no separator any text protocol reserves (no
space, ``|``, ``,``, ``:`` or newline), so every protocol can carry them as they are."""

T = TypeVar("T")


@dataclass(frozen=True)
class Peer:
    """One protocol of the broker under test: how to reach it and talk to it."""

    plugin: Plugin
    host: str
    port: int
    revision: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.plugin.name

    def messaging(self) -> Messaging:
        assert self.plugin.messaging is not None
        return self.plugin.messaging(self.options, self.revision)


@dataclass
class PairResult:
    producer: str
    consumer: str
    verdict: str  # PASS, FAIL or ERROR
    reason: str = ""
    topic: str = ""
    log: WireLog = field(default_factory=WireLog)

    def as_dict(self) -> dict[str, Any]:
        return {
            "producer": self.producer,
            "consumer": self.consumer,
            "verdict": self.verdict,
            "reason": self.reason,
            "topic": self.topic,
        }


class _Step(Exception):
    """A step that could not be done: the pair is an ERROR, for this reason."""


def _talk(
    peer: Peer,
    log: WireLog,
    timeout: float,
    what: str,
    make: Callable[[], Generator[bytes, bytes, T]],
) -> T:
    """Open a connection to ``peer``, open its session, run one generator on it."""
    try:
        with Connection(
            peer.host,
            peer.port,
            deframer=peer.plugin.framing.deframer("reply"),
            log=log,
            timeout=timeout,
        ) as conn:
            conn.open(peer.plugin.open(peer.options, peer.revision))

            def send(data: bytes) -> None:
                conn.send(data, what)

            result: T = open_session(make(), send, conn.recv_frame)
            return result
    except SessionRefused as exc:
        raise _Step(f"{what} over {peer.name}: the session was refused: {exc}") from None
    except MessagingRefused as exc:
        raise _Step(f"{what} over {peer.name} was refused: {exc}") from None
    except ClientError as exc:
        raise _Step(f"{what} over {peer.name}: {exc}") from None


def consume_all(
    messaging: Messaging, topic: str, offset: int, count: int
) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
    """``count`` messages from ``offset`` (fewer if the log ends first), read by as many
    ``messaging.consume`` rounds as it takes: each goes on after the last offset read, and
    what a round returns before the offset it asked for is left out."""
    out: list[tuple[int, bytes]] = []
    while len(out) < count:
        got = yield from messaging.consume(topic, offset, count - len(out))
        read = [(o, v) for o, v in got if o >= offset]
        if not read:
            break
        out += read[: count - len(out)]
        offset = read[-1][0] + 1
    return out


def creator(producer: Peer, consumer: Peer, others: Sequence[Peer]) -> Peer | None:
    """Which protocol creates a pair's topic (see the module doc); None: no one can."""
    for peer in (consumer, producer):
        if peer.plugin.messaging is not None and peer.messaging().owns_topics:
            return peer
    for peer in (producer, consumer, *others):
        if peer.plugin.messaging is not None and peer.messaging().create is not None:
            return peer
    return None


def check_pair(
    producer: Peer, consumer: Peer, others: Sequence[Peer] = (), *, timeout: float = 5.0
) -> PairResult:
    """Produce :data:`VALUES` over ``producer``, consume them over ``consumer``."""
    result = PairResult(producer.name, consumer.name, "ERROR")
    base = f"xp.{producer.name}.{consumer.name}.{secrets.token_hex(3)}"
    try:
        maker = creator(producer, consumer, others)
        topic = base
        if maker is not None:
            create = maker.messaging().create
            assert create is not None
            topic = _talk(maker, result.log, timeout, "create the topic", lambda: create(base))
        result.topic = topic
        sent = producer.messaging()
        offsets = _talk(
            producer, result.log, timeout, "produce", lambda: sent.produce(topic, VALUES)
        )
        if len(offsets) != len(VALUES):
            raise _Step(
                f"produce over {producer.name} acknowledged {len(offsets)} of {len(VALUES)}"
            )
        read = consumer.messaging()
        got = _talk(
            consumer,
            result.log,
            timeout,
            "consume",
            lambda: consume_all(read, topic, offsets[0], len(VALUES)),
        )
    except _Step as exc:
        result.reason = str(exc)
        return result
    expected = list(zip(offsets, VALUES, strict=True))
    if list(got) == expected:
        result.verdict = "PASS"
        result.reason = f"offsets {offsets} read back as produced"
    else:
        result.verdict = "FAIL"
        result.reason = (
            f"produced over {producer.name} at offsets {offsets} the values "
            f"{[v.decode() for v in VALUES]}; consumed over {consumer.name} from offset "
            f"{offsets[0]}: {[(o, v.decode(errors='replace')) for o, v in got]}"
        )
    return result


def check_matrix(peers: Sequence[Peer], *, timeout: float = 5.0) -> list[PairResult]:
    """Every ordered pair of distinct peers that take part (a plug-in with messaging)."""
    taking = [p for p in peers if p.plugin.messaging is not None]
    out = []
    for producer in taking:
        for consumer in taking:
            if producer is not consumer:
                others = [p for p in taking if p is not producer and p is not consumer]
                out.append(check_pair(producer, consumer, others, timeout=timeout))
    return out


def matrix_summary(peers: Sequence[Peer], results: Sequence[PairResult]) -> dict[str, Any]:
    """The ``cross`` section of ``results-all.json``: rows by producer, cells by consumer."""
    names = [p.name for p in peers if p.plugin.messaging is not None]
    by_pair = {(r.producer, r.consumer): r for r in results}
    rows = []
    for producer in names:
        cells = []
        for consumer in names:
            r = by_pair.get((producer, consumer))
            cells.append(
                {"consumer": consumer, "verdict": r.verdict, "reason": r.reason}
                if r is not None
                else {"consumer": consumer, "verdict": "", "reason": ""}
            )
        rows.append({"producer": producer, "cells": cells})
    passed = sum(1 for r in results if r.verdict == "PASS")
    return {
        "protocols": names,
        "rows": rows,
        "pairs": [r.as_dict() for r in results],
        "passed": passed,
        "note": f"{passed} of {len(results)} ordered pairs read back what was produced, "
        "at the same offsets (docs/cross-protocol.md)",
    }
