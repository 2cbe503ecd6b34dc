"""A hostile target for any protocol: the ways a broken broker's replies have been seen to
go wrong, one per ``--behaviour``:

* ``drip``: the reference broker's replies, a byte every ``DRIP_S`` seconds;
* ``reset``: every connection is reset as soon as it is accepted (SO_LINGER 0);
* ``garbage``: every connection is sent random bytes without end, as fast as it reads;
* ``midframe``: the first half of the reference broker's first reply, then a close;
* ``other``: a well-framed reply to another request: every reply is replaced by the one
  the broker gave to the request before it (on any connection; the first goes through).

The behaviours that need replies relay every connection to a reference broker the target
starts itself (``python -m conformance serve --port 0`` with the arguments after ``--``).
``python tests/support/hostile_target.py --port N --behaviour B --protocol P [--pid-file F]
-- SERVE-ARGS...`` prints ``serving hostile on 127.0.0.1:N`` once it listens; SIGTERM ends
it and its broker (it leads its process group, as ``--target-cmd`` starts it).  With
``--pid-file`` it writes its own and its broker's PIDs there, one a line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance import protocols
from tests.support.faulty_proxy import start_backend

BEHAVIOURS = ("drip", "reset", "garbage", "midframe", "other")
DRIP_S = 0.2
RELAYED = ("drip", "midframe", "other")


class Hostile:
    def __init__(self, behaviour: str, protocol: str, backend: tuple[str, int] | None) -> None:
        self.behaviour, self.backend = behaviour, backend
        self.framing = protocols.get(protocol).framing
        self.lock = threading.Lock()
        self.previous: bytes | None = None

    def serve(self, listener: socket.socket) -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        with client, contextlib.suppress(OSError):
            if self.behaviour == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            if self.behaviour == "garbage":
                while True:
                    client.sendall(os.urandom(65536))
            assert self.backend is not None
            with socket.create_connection(self.backend, timeout=10) as upstream:
                upstream.settimeout(None)
                up = threading.Thread(target=self.requests, args=(client, upstream), daemon=True)
                up.start()
                self.replies(upstream, client)

    @staticmethod
    def requests(client: socket.socket, upstream: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                upstream.sendall(data)
            upstream.shutdown(socket.SHUT_WR)

    def replies(self, upstream: socket.socket, client: socket.socket) -> None:
        deframer = self.framing.deframer("reply")
        while data := upstream.recv(65536):
            if self.behaviour == "drip":
                for i in range(len(data)):
                    client.sendall(data[i : i + 1])
                    time.sleep(DRIP_S)
            elif self.behaviour == "midframe":
                client.sendall(data[: max(len(data) // 2, 1)])
                client.shutdown(socket.SHUT_RDWR)
                return
            else:  # other
                for payload in deframer.feed(data):
                    reply = self.framing.frame(payload, "reply")
                    with self.lock:
                        sent, self.previous = self.previous or reply, reply
                    client.sendall(sent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--behaviour", choices=BEHAVIOURS, required=True)
    parser.add_argument("--protocol", required=True)
    parser.add_argument("--pid-file")
    parser.add_argument("serve", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    backend_proc, backend = None, None
    if args.behaviour in RELAYED:
        serve = [a for a in args.serve if a != "--"]
        backend_proc, backend = start_backend(["--protocol", args.protocol, *serve])
    if args.pid_file:
        pids = [os.getpid(), *([backend_proc.pid] if backend_proc else [])]
        Path(args.pid_file).write_text("".join(f"{p}\n" for p in pids))
    try:
        listener = socket.create_server(("127.0.0.1", args.port))
        print(f"serving hostile on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
        Hostile(args.behaviour, args.protocol, backend).serve(listener)
    finally:
        if backend_proc is not None:
            backend_proc.terminate()


if __name__ == "__main__":
    main()
