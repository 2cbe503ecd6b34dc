"""The toy protocol: codec, broker front-end, session opener, fuzzing part (sans-IO)."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.engine import Engine, EngineError, NewRecord
from conformance.errors import ProtocolError
from conformance.fuzz.case import Blame, Pool
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.plugin import Annotation, FieldSpan, Opening, ServeConfig, SessionRefused
from conformance.server import Outcome
from conformance.wire.framing import LengthPrefixDeframer, LengthPrefixFraming

LIMIT = 1 << 20
CANARY = "__canary"


FRAMING = LengthPrefixFraming(limit=LIMIT, order="little", includes_self=True)


def new_deframer() -> LengthPrefixDeframer:
    return FRAMING.deframer()


def frame(payload: bytes) -> bytes:
    return FRAMING.frame(payload)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes] = ()) -> Annotation:
    words, out, pos = payload.split(b" "), [], 0
    for i, w in enumerate(words):
        start = pos if i == 0 else pos - 1
        out.append(
            FieldSpan(f"word{i}", start, pos + len(w), w.decode(errors="replace"), droppable=i > 0)
        )
        pos += len(w) + 1
    return Annotation(repr(payload[:40]), out)


def opening(options: Mapping[str, Any], revision: str) -> Opening:
    reply = yield frame(b"HELLO " + str(options["toy_password"]).encode())
    if reply != b"OK":
        raise SessionRefused(f"HELLO was answered {reply!r}")


class Session:
    def __init__(self, front: Frontend) -> None:
        self.front, self.logged_in = front, False

    def received(self, count: int) -> None: ...

    def closed(self) -> None: ...

    def handle(self, payload: bytes) -> Outcome:
        return Outcome([frame(self.reply(payload.split(b" ")))])

    def reply(self, words: list[bytes]) -> bytes:
        engine, quirks = self.front.engine, self.front.config.quirks
        if words[0] == b"HELLO":
            self.logged_in = words[1:] == [self.front.config.options["toy_password"].encode()]
            return b"OK" if self.logged_in else b"NO"
        if not self.logged_in:
            return b"ERR login first"
        try:
            if words[0] == b"PING" and len(words) == 1:
                return b"PONG"
            if words[0] == b"PUT" and len(words) == 3:
                if b"\0" in words[2] and "crash-on-nul-value" in quirks:
                    os._exit(70)
                topic = words[1].decode()
                if topic not in {t.name for t in engine.list_topics()}:
                    engine.create_topic(topic, 1)
                return b"OK %d" % engine.append(topic, 0, [NewRecord(b"", words[2])]).last_offset
            if words[0] == b"GET" and len(words) == 3:
                offset = int(words[2]) + ("get-off-by-one" in quirks)
                got = engine.read(words[1].decode(), 0, offset, 1)
                return b"VAL " + got[0].value if got else b"NONE"
        except (EngineError, ValueError) as exc:
            return b"ERR " + str(exc).encode()
        return b"ERR unknown request"


class Frontend:
    name = "toy"

    def __init__(self, engine: Engine, config: ServeConfig) -> None:
        self.engine, self.config = engine, config

    def new_deframer(self) -> LengthPrefixDeframer:
        return new_deframer()

    def new_session(self, peer: str) -> Session:
        return Session(self)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        return Outcome([frame(b"ERR bad frame")], close=True)

    def add_change_listener(self, callback: Any) -> Any:
        return self.engine.add_listener(lambda _t, _p: callback())

    def set_address(self, host: str, port: int) -> None: ...


class Fuzzing:
    canary_topic = CANARY
    frame_mutators = FRAME_MUTATORS
    blame = Blame(
        corruption="TOY-GET-1",
        serving="TOY-PUT-1",
        bad_reply="TOY-FRAME-1",
        oversize="TOY-PUT-1",
        partial="TOY-PUT-1",
        unanswered=lambda payload: "TOY-PUT-1",
    )

    def __init__(self, options: Mapping[str, Any], revision: str = "doc") -> None:
        self.options = options
        self.structure_mutators: dict[str, Any] = {}  # the generic mutators only

    def pool(self, seed: int) -> Pool:
        rng = random.Random(seed)
        return Pool(
            [b"PING", b"GET fuzz 0"] + [b"PUT fuzz v%d" % rng.randrange(99) for _ in range(6)]
        )

    def owes_reply(self, payload: bytes) -> bool:
        return True

    def setup_payloads(self) -> Sequence[bytes]:
        return [b"PUT fuzz first", b"PUT " + CANARY.encode() + b" first"]

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        return b"PUT " + CANARY.encode() + b" " + values[0].replace(b" ", b"_")

    def canary_acked(self, reply: bytes) -> int | None:
        return int(reply[3:]) if reply.startswith(b"OK ") else None

    def canary_consume(self, offset: int) -> bytes:
        return b"GET %s %d" % (CANARY.encode(), offset)

    def canary_values(self, reply: bytes) -> list[bytes]:
        return [reply[4:].replace(b"_", b" ")] if reply.startswith(b"VAL ") else []
