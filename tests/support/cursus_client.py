"""A minimal blocking Cursus client for the project's own tests (every read has a deadline)."""

from __future__ import annotations

import socket

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import Reply, Request


class CursusTestClient:
    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.deframer = codec.new_deframer()
        self.frames: list[bytes] = []

    def send(self, req: Request, *, compression: str | None = None) -> None:
        self.sock.sendall(codec.frame(codec.encode_request(req, compression=compression)))

    def recv(self) -> Reply:
        while not self.frames:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.frames.extend(self.deframer.feed(data))
        return codec.decode_reply(self.frames.pop(0))

    def request(self, req: Request, *, compression: str | None = None) -> Reply:
        self.send(req, compression=compression)
        return self.recv()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> CursusTestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
