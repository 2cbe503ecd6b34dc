"""A Kafka test client on the project's own connection (``conformance.client.Connection``:
a deframer and a deadline on every read): requests built with the Kafka codec, responses
decoded for the API and version asked."""

from __future__ import annotations

from typing import Any

from conformance.client import Connection, PeerClosed, WireLog
from conformance.protocols.kafka import codec


class KafkaConn:
    def __init__(self, address: tuple[str, int], timeout: float = 5) -> None:
        self.conn = Connection(
            address[0], address[1], deframer=codec.new_deframer(), log=WireLog(), timeout=timeout
        )
        self.corr = 0

    def send(self, key: int, version: int, body: dict[str, Any]) -> int:
        self.corr += 1
        payload = codec.encode_request(key, version, body, correlation_id=self.corr)
        self.conn.send(codec.frame(payload))
        return self.corr

    def raw(self, data: bytes) -> None:
        self.conn.send(data)

    def frame(self, timeout: float = 5) -> bytes | None:
        """The next response payload; None if the broker closed the connection (no reply
        within ``timeout`` raises ReplyTimeout)."""
        try:
            return self.conn.recv_frame(timeout)
        except PeerClosed:
            return None

    def call(
        self, key: int, version: int, body: dict[str, Any], header: int | None = None
    ) -> dict[str, Any]:
        corr = self.send(key, version, body)
        payload = self.frame()
        assert payload is not None, "the broker closed the connection"
        got, reply = codec.decode_response(payload, key, version, header_version=header)
        assert got == corr
        return reply

    def call_raw(self, payload: bytes) -> bytes:
        """Send a ready request payload; its response payload."""
        self.conn.send(codec.frame(payload))
        reply = self.frame()
        assert reply is not None, "the broker closed the connection"
        return reply

    def close(self) -> None:
        self.conn.close()
