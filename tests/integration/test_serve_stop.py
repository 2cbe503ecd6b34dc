"""``conformance serve`` stops cleanly on SIGTERM while clients are still connected."""

from __future__ import annotations

import socket

from conformance.protocols.cursus import codec
from tests.support import broker


def test_sigterm_with_open_connections_prints_no_traceback() -> None:
    b = broker.start()
    conns = [socket.create_connection((b.host, b.port), timeout=5) for _ in range(3)]
    try:
        conns[0].sendall(codec.frame(b"LIST"))
        assert conns[0].recv(64)  # served, and the connections stay open
        b.proc.terminate()
        _, err = b.proc.communicate(timeout=20)
    finally:
        for c in conns:
            c.close()
    assert b.proc.returncode == 0
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert "stopped serving cursus" in err
