"""A recording TCP proxy for the official Cursus client: every frame it sends and every frame
the broker answers, as they cross a socket on 127.0.0.1 (revision real's client bytes).

``Recorder(upstream_port)`` listens on a free port of 127.0.0.1 and forwards each accepted
connection to the broker, keeping the whole frames each way (``requests``, ``replies``, per
connection in order).  The client follows the addresses the broker names (FIND_COORDINATOR's
``port=``, METADATA's ``leaders=``), so in text replies the broker's port is rewritten to the
proxy's: every connection of the client crosses the proxy.  Every wait is bounded;
``close()`` ends every thread it started.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

from conformance.protocols.cursus import codec

CHUNK = 1 << 16


@dataclass
class Flow:
    """One proxied connection: the frames each way, in order."""

    requests: list[bytes] = field(default_factory=list)
    replies: list[bytes] = field(default_factory=list)


class Recorder:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self.upstream = (host, upstream_port)
        self.listener = socket.create_server((host, 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.flows: list[Flow] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._spawn(self._accept)

    @property
    def address(self) -> str:
        return f"{self.upstream[0]}:{self.port}"

    def _spawn(self, target: object, *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            flow = Flow()
            with self._lock:
                self.flows.append(flow)
                self._socks += [client, server]
            self._spawn(self._pump, client, server, flow.requests, False)
            self._spawn(self._pump, server, client, flow.replies, True)

    def _rewrite(self, frame: bytes) -> bytes:
        if frame[:2] == b"OK":
            ours, theirs = str(self.port).encode(), str(self.upstream[1]).encode()
            frame = frame.replace(b"port=" + theirs, b"port=" + ours)
            frame = frame.replace(b":" + theirs, b":" + ours)
        return frame

    def _pump(
        self, src: socket.socket, dst: socket.socket, frames: list[bytes], rewrite: bool
    ) -> None:
        deframer = codec.new_deframer()
        src.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = src.recv(CHUNK)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            got = deframer.feed(data)
            with self._lock:
                frames.extend(got)
            out = b"".join(codec.frame(self._rewrite(f)) for f in got) if rewrite else data
            try:
                dst.sendall(out)
            except OSError:
                break
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def requests(self) -> list[bytes]:
        with self._lock:
            return [f for flow in self.flows for f in flow.requests]

    def pairs(self) -> list[tuple[bytes, bytes | None]]:
        """Each request with the reply after it on its connection (None when none came)."""
        out: list[tuple[bytes, bytes | None]] = []
        with self._lock:
            for flow in self.flows:
                for i, req in enumerate(flow.requests):
                    out.append((req, flow.replies[i] if i < len(flow.replies) else None))
        return out

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        with self._lock:
            for s in self._socks:
                s.close()
        for t in self._threads:
            t.join(timeout=2)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
