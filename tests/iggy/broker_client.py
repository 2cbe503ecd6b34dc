"""An in-process Iggy connection for the broker tests: bytes through the front-end's
deframer and session, replies read back with the reply deframer."""

from __future__ import annotations

from typing import Any

from conformance.engine import Engine
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.handler import IggyConfig, IggyFrontend
from conformance.protocols.iggy.messages import CODES, identifier
from conformance.protocols.iggy.quirks import Quirks
from conformance.server import Outcome


class Conn:
    def __init__(self, frontend: IggyFrontend, peer: str = "127.0.0.1:40000") -> None:
        self.frontend = frontend
        self.revision = frontend.config.revision
        self.session = frontend.new_session(peer)
        self.deframer = frontend.new_deframer()
        self.outcomes: list[Outcome] = []

    def raw(self, data: bytes) -> list[tuple[int, bytes]]:
        """Every reply to ``data`` as (status, payload)."""
        out = codec.new_deframer("reply")
        replies: list[tuple[int, bytes]] = []
        for frame in self.deframer.feed(data):
            outcome = self.session.handle(frame)
            self.outcomes.append(outcome)
            for chunk in outcome.replies:
                replies += [codec.split_reply(f) for f in out.feed(chunk)]
        return replies

    def call(self, name: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        payload = codec.encode_request(name, body or {}, self.revision)
        [(status, reply)] = self.raw(codec.frame_request(CODES[name], payload))
        if status:
            assert reply == b"", f"{name}: error {status} with a payload"
            return status, None
        return 0, codec.decode_reply(name, reply, self.revision)

    def ok(self, name: str, body: dict[str, Any] | None = None) -> Any:
        status, reply = self.call(name, body)
        assert status == 0, f"{name} answered {status}"
        return reply

    def login(self, user: str = "iggy", password: str = "iggy") -> int:
        body = {"username": user, "password": password, "version": "", "context": ""}
        status, _ = self.call("login_user", body)
        return status

    def close(self) -> None:
        self.session.closed()


def ident(value: int | str) -> dict[str, Any]:
    return identifier(value)


def consumer(value: int | str, kind: int = 1) -> dict[str, Any]:
    return {"kind": kind, "value": identifier(value)}


S0, T0 = identifier(0), identifier(0)
"""The first stream and topic a fresh classic broker makes."""


def frontend(revision: str = "classic", *quirks: str) -> IggyFrontend:
    """A broker front-end on a fresh in-memory engine, with ``quirks``."""
    return IggyFrontend(Engine(), IggyConfig(revision=revision, quirks=Quirks.of(quirks)))


def logged(fe: IggyFrontend, peer: str = "127.0.0.1:40000") -> Conn:
    """A connection, logged in when the revision has a login."""
    c = Conn(fe, peer)
    if fe.config.revision == "classic":
        assert c.login() == 0
    return c


def setup(c: Conn, partitions: int = 3, name: str = "t") -> dict[str, Any]:
    """Stream "s" (classic: the first, id 0) and a topic of ``partitions`` in it; the topic."""
    if not any(s["name"] == "s" for s in c.ok("get_streams")["streams"]):
        c.ok("create_stream", {"name": "s"})
    body = {
        "stream": S0,
        "partitions_count": partitions,
        "compression": 1,
        "message_expiry": 0,
        "max_topic_size": 0,
        "replication_factor": 0,
        "name": name,
    }
    return c.ok("create_topic", body)  # type: ignore[no-any-return]
