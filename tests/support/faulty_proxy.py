"""A broker that breaks on one chosen request, for any protocol: the faulty target of the
``run --target-cmd`` tests.

It listens on ``--port`` and relays every connection, byte for byte and close for close, to
a reference broker it starts itself (``python -m conformance serve --port 0`` with the
arguments after ``--``), so that every case that does not send the chosen request gets the
verdict the reference broker gets.  When the bytes a client has sent on a connection match
``--trigger`` (a regular expression over bytes), it breaks the way ``--fault`` says, as
real brokers have been seen to break:

* ``crash``: prints a Go panic with its stack on stderr and exits with status 2 before the
  request reaches the broker (the real V1 line broker on a negative CONSUME offset);
* ``stop``: prints a Java exception and stops serving everyone: the port still accepts,
  nothing is relayed either way again (the real mini-Kafka server after a bad type byte);
* ``panic``: prints a Rust panic, relays the request all the same and lives on (a worker
  thread that panicked while the process serves on, as Tansu's do);
* ``slow``: relays everything, but for the next :data:`SLOW_FOR_S` seconds every reply, on
  every connection, is held :data:`SLOW_BY_S` seconds first (a broker on a loaded machine:
  slow, never stopped; with ``--once``, only the first start is slowed).

``--once FILE``: break only if FILE does not exist yet, and create it (a fault that does not
happen again on the next start: the case cannot be convicted).  ``--fail-start FILE``: if
FILE exists, exit at once with status 3 before listening (a target that does not come back
after a restart); a crash creates FILE when this is given.

``python tests/support/faulty_proxy.py --port N --trigger REGEX --fault KIND [--once F]
[--fail-start F] -- SERVE-ARGS...`` prints ``serving faulty proxy on 127.0.0.1:N`` once it
listens.  SIGTERM ends it and its broker (it leads its process group, as ``--target-cmd``
starts it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVING = re.compile(rb"serving \S+ on (\S+):(\d+)")
SLOW_FOR_S = 1.5
SLOW_BY_S = 0.4
KEEP = 4096
"""Bytes of a connection's client stream kept for matching (the trigger may span reads)."""

GO_PANIC = """panic: runtime error: slice bounds out of range [-1:]

goroutine 18 [running]:
broker/internal/storage.(*Log).Read(0xc000112000, 0xffffffffffffffff, 0x64)
\t/src/broker/internal/storage/log.go:87 +0x1d4
broker/internal/server.(*Conn).handle(0xc00010e000, {0xc000120000, 0x27})
\t/src/broker/internal/server/conn.go:142 +0x2b1
created by broker/internal/server.(*Server).Serve in goroutine 1
\t/src/broker/internal/server/server.go:61 +0x118"""

JAVA_STOP = """Exception in thread "tcp-server" java.lang.IllegalArgumentException: bad request
\tat broker.RequestDecoder.decode(RequestDecoder.java:41)
\tat broker.TcpServer.serve(TcpServer.java:77)
\tat java.base/java.lang.Thread.run(Thread.java:840)"""

RUST_PANIC = """thread 'tokio-runtime-worker' panicked at src/handler/produce.rs:211:38:
attempt to subtract with overflow
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"""


class Proxy:
    def __init__(self, args: argparse.Namespace, backend: tuple[str, int]) -> None:
        self.args, self.backend = args, backend
        self.trigger = re.compile(args.trigger.encode())
        self.stopped = threading.Event()
        self.slow_until = 0.0

    def serve(self, listener: socket.socket) -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.backend, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        back = threading.Thread(target=self.pump, args=(upstream, client, False), daemon=True)
        back.start()
        self.pump(client, upstream, True)
        back.join()
        client.close()
        upstream.close()

    def pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        seen = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if self.stopped.is_set():
                if not data:
                    return
                continue  # a stopped broker reads and answers nothing
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            if not from_client and time.monotonic() < self.slow_until:
                time.sleep(SLOW_BY_S)
            if from_client:
                seen = (seen + data)[-KEEP:]
                if self.trigger.search(seen) and self.fault():
                    seen = b""
                    if self.stopped.is_set():
                        continue
            try:
                dst.sendall(data)
            except OSError:
                return

    def fault(self) -> bool:
        """Break as ``--fault`` says; False when ``--once`` already broke on an earlier start."""
        once = self.args.once
        if once is not None:
            if Path(once).exists():
                return False
            Path(once).write_text("broke\n")
        kind = self.args.fault
        if kind == "crash":
            if self.args.fail_start is not None:
                Path(self.args.fail_start).write_text("crashed\n")
            print(GO_PANIC, file=sys.stderr, flush=True)
            os._exit(2)
        if kind == "stop":
            print(JAVA_STOP, file=sys.stderr, flush=True)
            self.stopped.set()
        elif kind == "slow":
            self.slow_until = time.monotonic() + SLOW_FOR_S
        else:
            print(RUST_PANIC, file=sys.stderr, flush=True)
        return True


def start_backend(serve_args: list[str]) -> tuple[subprocess.Popen[bytes], tuple[str, int]]:
    cmd = [sys.executable, "-m", "conformance", "serve", "--port", "0", *serve_args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    said = b""
    while not (m := SERVING.search(said)):
        chunk = proc.stdout.readline()
        if not chunk:
            sys.exit(f"faulty proxy: the reference broker did not start: {said!r}")
        said += chunk
    return proc, (m.group(1).decode(), int(m.group(2)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--trigger", required=True)
    parser.add_argument("--fault", choices=("crash", "stop", "panic", "slow"), required=True)
    parser.add_argument("--once")
    parser.add_argument("--fail-start")
    parser.add_argument("serve", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.fail_start is not None and Path(args.fail_start).exists():
        print("faulty proxy: refusing to start again (--fail-start)", file=sys.stderr, flush=True)
        sys.exit(3)
    serve = [a for a in args.serve if a != "--"]
    backend_proc, backend = start_backend(serve)
    try:
        listener = socket.create_server(("127.0.0.1", args.port))
        print(f"serving faulty proxy on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
        Proxy(args, backend).serve(listener)
    finally:
        backend_proc.terminate()


if __name__ == "__main__":
    main()
