"""A threaded TCP server on loopback for the tests' recorders (Kafka's proxy, Iggy's recorder).

:class:`LoopbackServer` owns the listening socket (port 0: the system picks one), a thread
that accepts with a short timeout so that :meth:`LoopbackServer.stop` ends it, the sockets
and threads its subclass starts, and their orderly stop (shutdown, close, join with a
deadline).  A subclass calls :meth:`LoopbackServer.init_server` from its ``__post_init__``
and handles each accepted connection in :meth:`LoopbackServer.accepted`, registering the
sockets it opens with :meth:`LoopbackServer.track` and its threads with ``spawn``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any, Self

JOIN_DEADLINE_S = 5.0
"""How long :meth:`LoopbackServer.stop` waits for each thread."""


class LoopbackServer:
    host: str
    port: int
    backlog = 16

    def init_server(self) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections = 0
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None

    def start(self) -> tuple[str, int]:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(self.backlog)
        listener.settimeout(0.2)
        self._listener = listener
        self.host, self.port = listener.getsockname()[:2]
        self.spawn(self._accept)
        return self.host, self.port

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(JOIN_DEADLINE_S)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def spawn(self, target: Callable[..., None], *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def track(self, *sockets: socket.socket) -> int:
        """Register the sockets of a new connection (closed by :meth:`stop`); its number."""
        with self._lock:
            self._connections += 1
            self._sockets += sockets
            return self._connections

    def accepted(self, conn: socket.socket) -> None:
        """Handle a connection just accepted (a subclass's job)."""
        raise NotImplementedError

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted(conn)
