"""A front-end served by :class:`conformance.server.Server` on an event loop of its own thread.

For tests that need a broker that misbehaves in one way: subclass a protocol's front-end or
session, and serve it here, in this process, on 127.0.0.1 (port 0: the system picks one).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from conformance.server import Frontend, Server

START_DEADLINE_S = 10.0


@contextmanager
def serving(frontend: Frontend, server: Server | None = None) -> Iterator[str]:
    """``frontend`` (or the ``server`` given, built on it) listening; yields ``HOST:PORT``
    and closes it, its connections and its loop afterwards."""
    server = server if server is not None else Server(frontend)
    loop = asyncio.new_event_loop()
    address: list[str] = []
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        host, port = loop.run_until_complete(server.start())
        address.append(f"{host}:{port}")
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(START_DEADLINE_S), "the in-process broker did not start"
    try:
        yield address[0]
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(START_DEADLINE_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_DEADLINE_S)
        loop.close()
