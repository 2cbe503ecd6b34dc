"""Bench targets, each a TCP server in its own process: a minimal Cursus-framed server and
a proxy that stalls one connection in N.

``python -m bench.targets minimal --port 0``
    Answers every complete frame ``[u32 big-endian length][payload]`` with one fixed,
    well-formed Cursus reply frame (``OK``: an ``OkReply`` to the codec, a reply frame to
    the fuzzer's oracle); closes the connection on EOF and on a length over the 64 MiB
    frame limit (after answering the frames before it).  Payloads are counted, never
    buffered or parsed: the target costs as little per case as a Python process can, so
    that what a bench measures against it is the fuzzer's own cost per case.  It stores
    nothing, so our fuzzer's canary round trip fails against it (a CORRUPTION row at each
    canary check): expected, and one round trip per check.

``python -m bench.targets stall --upstream HOST:PORT --every 10 --port 0``
    A proxy in front of a broker: forwards both ways (a half-close included), except
    that every ``--every``-th accepted connection (the 10th, 20th, ...) is stalled: it is
    accepted and read from, but nothing is forwarded or answered.  It is closed ``--hold``
    seconds (default 30) after the client's EOF: a half-close and a close look the same
    from the proxy, and a stall must outlast a half-close.  On exit it prints how many
    connections it accepted and stalled.

Both are one single-threaded :mod:`selectors` loop, print ``serving on 127.0.0.1:PORT``
(flushed) once listening, and exit 0 on SIGTERM or SIGINT.  :func:`spawn` starts one and
waits for that line; :func:`spawn_broker` does the same for the reference broker.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from types import FrameType
from typing import IO

from conformance.embedded import stop_process
from conformance.protocols.cursus.codec import frame
from conformance.protocols.cursus.messages import FRAME_LIMIT
from conformance.runner import parse_target

REPLY = frame(b"OK")  # the minimal target's one reply
RECV = 65536
SERVING = re.compile(rb"serving (?:\S+ )?on (\S+):(\d+)")
START_S = 30.0
HOLD_S = 30.0
"""How long a stalled connection stays open after the client's EOF (a half-close or a
close: the two look the same from the proxy's side)."""
REPO = Path(__file__).resolve().parent.parent

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


# --------------------------------------------------------------------- minimal target


class _Framed:
    """One connection of the minimal target: counts frames, owes one REPLY for each."""

    __slots__ = ("closing", "head", "out", "skip", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.head = b""  # the part of a length prefix received so far
        self.skip = 0  # payload bytes of the current frame still to come
        self.out = b""  # replies not yet written
        self.closing = False  # close once ``out`` is written

    def frames_in(self, data: bytes) -> int:
        """Frames completed by ``data``; sets ``closing`` on a length over the limit."""
        done, pos, size = 0, 0, len(data)
        while pos < size:
            if self.skip:
                take = min(self.skip, size - pos)
                self.skip -= take
                pos += take
                done += self.skip == 0
                continue
            need = 4 - len(self.head)
            self.head += data[pos : pos + need]
            pos += need
            if len(self.head) < 4:
                break
            length = int.from_bytes(self.head, "big")
            self.head = b""
            if length > FRAME_LIMIT:
                self.closing = True
                break
            if length:
                self.skip = length
            else:
                done += 1
        return done


def serve_minimal(listener: socket.socket) -> None:
    sel = selectors.DefaultSelector()
    sel.register(listener, READ, None)
    try:
        while True:
            for key, events in sel.select():
                conn = key.data
                if conn is None:
                    _accept_all(listener, sel)
                elif events & WRITE or _read_frames(conn):
                    _flush(sel, conn)
    finally:
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        sel.close()


def _accept_all(listener: socket.socket, sel: selectors.BaseSelector) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EMFILE and the like: the next select tries again
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sel.register(sock, READ, _Framed(sock))


def _read_frames(conn: _Framed) -> bool:
    """Read what came; True when something is to be written or the connection closed."""
    try:
        data = conn.sock.recv(RECV)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        data = b""
    if not data:
        conn.closing = True
        return True
    replies = conn.frames_in(data)
    if replies:
        conn.out += REPLY * replies
    return bool(replies) or conn.closing


def _flush(sel: selectors.BaseSelector, conn: _Framed) -> None:
    if conn.out:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            conn.out, conn.closing = b"", True
            sent = 0
        conn.out = conn.out[sent:]
    if conn.out:
        sel.modify(conn.sock, WRITE, conn)  # stop reading until the replies are written
    elif conn.closing:
        sel.unregister(conn.sock)
        conn.sock.close()
    elif sel.get_key(conn.sock).events != READ:
        sel.modify(conn.sock, READ, conn)


# ---------------------------------------------------------------------- stalling proxy


class _Link:
    """A forwarded connection: bytes read on one socket are written to the other."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.peer = {client: upstream, upstream: client}
        self.out: dict[socket.socket, bytes] = {client: b"", upstream: b""}
        self.eof: set[socket.socket] = set()  # sockets that sent EOF
        self.shut: set[socket.socket] = set()  # sockets we half-closed


class _Proxy:
    def __init__(
        self, listener: socket.socket, upstream: tuple[str, int], every: int, hold: float
    ) -> None:
        self.listener, self.upstream, self.every, self.hold = listener, upstream, every, hold
        self.parked: deque[tuple[float, socket.socket]] = deque()
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, READ, None)
        self.accepted = self.stalled = 0

    def run(self) -> None:
        try:
            while True:
                timeout = self.parked[0][0] - time.monotonic() if self.parked else None
                for key, events in self.sel.select(timeout):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if key.data is None:
                        self._accept()
                    elif key.data == "stalled":
                        self._drain_stalled(sock)
                    else:
                        self._step(key.data, sock, events)
                while self.parked and self.parked[0][0] <= time.monotonic():
                    self.parked.popleft()[1].close()
        finally:
            for key in list(self.sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            for _, sock in self.parked:
                sock.close()
            self.sel.close()
            print(f"accepted {self.accepted}, stalled {self.stalled}", file=sys.stderr, flush=True)

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        self.accepted += 1
        if self.every > 0 and self.accepted % self.every == 0:
            self.stalled += 1
            client.setblocking(False)
            self.sel.register(client, READ, "stalled")
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = _Link(client, upstream)
        self.sel.register(client, READ, link)
        self.sel.register(upstream, READ, link)

    def _drain_stalled(self, sock: socket.socket) -> None:
        """Read and drop what the client sends.  At its EOF, hold the connection open for
        ``hold`` seconds: a half-close (our fuzzer's, after a case that ends inside a
        frame) and a close look the same from here, and a stall must outlast the first."""
        try:
            if sock.recv(RECV):
                return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # reset: the client is gone
            self.sel.unregister(sock)
            sock.close()
            return
        self.sel.unregister(sock)
        self.parked.append((time.monotonic() + self.hold, sock))

    def _step(self, link: _Link, sock: socket.socket, events: int) -> None:
        if not link.peer:  # closed earlier in this round of events
            return
        try:
            if events & READ:
                self._forward(link, sock)
            if events & WRITE and sock.fileno() >= 0:
                self._write(link, sock)
        except OSError:
            self._close(link)
            return
        if len(link.eof) == 2 and not any(link.out.values()):
            self._close(link)
        elif link.peer:
            for s in link.peer:
                self._interest(link, s)

    def _forward(self, link: _Link, sock: socket.socket) -> None:
        try:
            data = sock.recv(RECV)
        except (BlockingIOError, InterruptedError):
            return
        peer = link.peer[sock]
        if data:
            link.out[peer] += data
            self._write(link, peer)
        else:
            link.eof.add(sock)
            self._write(link, peer)  # half-closes the peer once its bytes are written

    def _write(self, link: _Link, sock: socket.socket) -> None:
        if link.out[sock]:
            try:
                sent = sock.send(link.out[sock])
            except (BlockingIOError, InterruptedError):
                sent = 0
            link.out[sock] = link.out[sock][sent:]
        if not link.out[sock] and link.peer[sock] in link.eof and sock not in link.shut:
            link.shut.add(sock)
            sock.shutdown(socket.SHUT_WR)

    def _interest(self, link: _Link, sock: socket.socket) -> None:
        """Read a socket while it is open and its peer has nothing pending; write it while
        it has something pending."""
        events = 0
        if sock not in link.eof and not link.out[link.peer[sock]]:
            events |= READ
        if link.out[sock]:
            events |= WRITE
        key = self.sel.get_map().get(sock)
        if not events:  # not even for its close: a socket at EOF always reads as ready
            if key is not None:
                self.sel.unregister(sock)
        elif key is None:
            self.sel.register(sock, events, link)
        elif key.events != events:
            self.sel.modify(sock, events, link)

    def _close(self, link: _Link) -> None:
        for s in link.peer:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(s)
            s.close()
        link.peer = {}


# ------------------------------------------------------------------- start and stop


def _listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    return listener


def spawn(*args: str, stderr: IO[bytes] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m bench.targets ARGS`` and return it with its ``HOST:PORT``; its
    stderr goes to ``stderr`` (default: nowhere)."""
    cmd = [sys.executable, "-m", "bench.targets", *args]
    err = stderr if stderr is not None else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err)
    return proc, _address(proc, f"bench target {' '.join(args)}")


def spawn_broker() -> tuple[subprocess.Popen[bytes], str]:
    """Start a fresh Cursus reference broker (``conformance serve --port 0``)."""
    cmd = [sys.executable, "-m", "conformance", "serve", "--protocol", "cursus", "--port", "0"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return proc, _address(proc, "the reference broker")


def _address(proc: subprocess.Popen[bytes], what: str) -> str:
    """The ``HOST:PORT`` of a ``serving [NAME] on HOST:PORT`` line on its stdout."""
    assert proc.stdout is not None
    end, seen = time.monotonic() + START_S, b""
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        chunk = os.read(proc.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            break
        seen += chunk
        if m := SERVING.search(seen):
            return f"{m.group(1).decode()}:{m.group(2).decode()}"
    stop_process(proc)
    raise SystemExit(f"{what} did not start")


stop = stop_process
"""SIGTERM by PID, then SIGKILL after 10 s."""


def _stop_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.targets")
    sub = parser.add_subparsers(dest="kind", required=True)
    minimal = sub.add_parser("minimal", help="answer every frame with one fixed reply")
    stall = sub.add_parser("stall", help="proxy to --upstream, stalling one connection in N")
    stall.add_argument("--upstream", required=True, metavar="HOST:PORT")
    stall.add_argument("--every", type=int, default=10, metavar="N")
    hold = f"keep a stalled connection open S seconds after its EOF (default {HOLD_S:g})"
    stall.add_argument("--hold", type=float, default=HOLD_S, metavar="S", help=hold)
    for p in (minimal, stall):
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    listener = _listen(args.host, args.port)
    host, port = listener.getsockname()[:2]
    print(f"serving on {host}:{port}", flush=True)
    with contextlib.suppress(SystemExit), listener:
        if args.kind == "minimal":
            serve_minimal(listener)
        else:
            _Proxy(listener, parse_target(args.upstream), args.every, args.hold).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
