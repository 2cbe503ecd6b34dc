"""Small loopback servers for tests: a plain TCP relay and a target that never answers."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


def _listener() -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    s.settimeout(0.2)
    return s


def _pump(src: socket.socket, dst: socket.socket, stop: threading.Event) -> None:
    src.settimeout(0.2)
    try:
        while not stop.is_set():
            try:
                data = src.recv(65536)
            except TimeoutError:
                continue
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def relay(host: str, port: int) -> Iterator[tuple[str, int]]:
    """A byte-for-byte TCP relay to host:port; yields its own address."""
    lsock, stop = _listener(), threading.Event()
    threads: list[threading.Thread] = []
    socks: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = lsock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection((host, port), timeout=5)
            socks.extend([client, upstream])
            for a, b in ((client, upstream), (upstream, client)):
                t = threading.Thread(target=_pump, args=(a, b, stop), daemon=True)
                t.start()
                threads.append(t)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield lsock.getsockname()[:2]
    finally:
        stop.set()
        acceptor.join(5)
        for t in threads:
            t.join(5)
        for s in [lsock, *socks]:
            s.close()


@contextlib.contextmanager
def silent_server() -> Iterator[tuple[str, int]]:
    """Accepts connections and reads them, but never answers."""
    lsock, stop = _listener(), threading.Event()
    conns: list[socket.socket] = []

    def accept() -> None:
        lsock.settimeout(0.02)
        while not stop.is_set():
            try:
                c, _ = lsock.accept()
                c.setblocking(False)
                conns.append(c)
            except TimeoutError:
                pass
            except OSError:
                return
            for old in conns:  # drain so the peer's writes never block
                with contextlib.suppress(OSError):
                    while old.recv(1 << 20):
                        pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield lsock.getsockname()[:2]
    finally:
        stop.set()
        t.join(5)
        for s in [lsock, *conns]:
            s.close()


def closed_port() -> int:
    """A loopback port with nothing listening on it (bound then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def babbling_server(reply: bytes) -> Iterator[tuple[str, int]]:
    """Answers whatever a connection sends first with ``reply`` (any bytes), then reads on."""
    lsock, stop = _listener(), threading.Event()

    def serve() -> None:
        lsock.settimeout(0.05)
        while not stop.is_set():
            try:
                c, _ = lsock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with c:
                c.settimeout(2)
                with contextlib.suppress(OSError):
                    if c.recv(1 << 16):
                        c.sendall(reply)
                        c.recv(1 << 16)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield lsock.getsockname()[:2]
    finally:
        stop.set()
        t.join(5)
        lsock.close()
