"""An in-process Iggy connection for the broker tests: bytes through the front-end's
deframer and session, replies read back with the reply deframer."""

from __future__ import annotations

from typing import Any

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.handler import IggyFrontend
from conformance.protocols.iggy.messages import CODES, identifier
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
