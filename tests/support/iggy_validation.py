"""A raw Iggy client for the ``serve --validate`` tests: classic framing written here with
``struct`` (FACTS.md section 1), independently of the package's codec, so that a test can
send exactly the bytes it means, right or wrong.

Request ``u32 length = 4 + payload, u32 code, payload``; reply ``u32 status, u32 length,
payload``; little-endian.  Every read has a deadline (``DEADLINE_S``).
"""

from __future__ import annotations

import socket
import struct

DEADLINE_S = 10.0
PING, LOGIN_USER, LOGOUT_USER = 1, 38, 39
POLL_MESSAGES, SEND_MESSAGES = 100, 101
GET_CONSUMER_OFFSET, STORE_CONSUMER_OFFSET = 120, 121
GET_STREAM, GET_STREAMS, CREATE_STREAM = 200, 201, 202
GET_TOPIC, CREATE_TOPIC = 300, 302
HEADER = 64


def ident(value: int | str) -> bytes:
    """An Identifier: numeric (kind 1, length 4) or string (kind 2)."""
    if isinstance(value, int):
        return b"\x01\x04" + struct.pack("<I", value)
    raw = value.encode()
    return b"\x02" + bytes([len(raw)]) + raw


def name(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw)]) + raw


def login_body(user: str = "iggy", password: str = "iggy") -> bytes:
    """Username and password (u8 length each), no version and no context (u32 0 each)."""
    return name(user) + name(password) + struct.pack("<II", 0, 0)


def create_topic_body(stream: int | str, topic: str, partitions: int) -> bytes:
    """Stream, partitions count, compression 1 (none), expiry 0, max size 0, replication 0,
    the name."""
    return ident(stream) + struct.pack("<IBQQB", partitions, 1, 0, 0, 0) + name(topic)


def poll_body(
    stream: int | str,
    topic: int | str,
    partition: int | None,
    kind: int = 1,
    value: int = 0,
    count: int = 10,
    auto_commit: bool = False,
) -> bytes:
    """Consumer kind 1 id 0; the partition flag 1 and its id (or flag 0); the strategy."""
    flag = b"\x01" if partition is not None else b"\x00"
    where = flag + struct.pack("<I", partition or 0)
    strategy = struct.pack("<BQ", kind, value)
    tail = struct.pack("<IB", count, int(auto_commit))
    return b"\x01" + ident(0) + ident(stream) + ident(topic) + where + strategy + tail


def message(payload: bytes, headers: bytes = b"", message_id: int = 0) -> bytes:
    """The 64-byte header (checksum, id, offset, timestamp, origin timestamp, headers
    length, payload length, reserved), the payload, the user-header bytes."""
    head = struct.pack("<Q", 0) + message_id.to_bytes(16, "little")
    head += struct.pack("<QQQIIQ", 0, 0, 1_700_000_000_000_000, len(headers), len(payload), 0)
    return head + payload + headers


def send_body(stream: int | str, topic: int | str, partition: int, messages: list[bytes]) -> bytes:
    """SEND_MESSAGES: metadata length, stream, topic, partition-id partitioning, count, the
    index table (u32 0, u32 cumulative end, u64 0 each), the messages."""
    meta = ident(stream) + ident(topic) + b"\x02\x04" + struct.pack("<I", partition)
    meta += struct.pack("<I", len(messages))
    index, end = b"", 0
    for m in messages:
        end += len(m)
        index += struct.pack("<IIQ", 0, end, 0)
    return struct.pack("<I", len(meta)) + meta + index + b"".join(messages)


def header_entry(key: bytes, value: bytes, key_kind: int = 2, value_kind: int = 1) -> bytes:
    """One user-header entry: u8 kind, u32 length, bytes, for the key and the value."""
    return (
        bytes([key_kind])
        + struct.pack("<I", len(key))
        + key
        + bytes([value_kind])
        + struct.pack("<I", len(value))
        + value
    )


class RawIggy:
    """One connection to ``host:port``; ``send`` writes bytes as given, ``call`` one request
    and its reply."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=DEADLINE_S)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawIggy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, code: int, body: bytes = b"", length: int | None = None) -> tuple[int, bytes]:
        """Send one request (``length``: a lie in its length field) and read its reply:
        (status, payload)."""
        size = 4 + len(body) if length is None else length
        self.send(struct.pack("<II", size, code) + body)
        return self.reply()

    def reply(self) -> tuple[int, bytes]:
        status, length = struct.unpack("<II", self._read(8))
        return status, self._read(length)

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"closed after {len(buf)} of {n} reply bytes")
            buf += chunk
        return buf
