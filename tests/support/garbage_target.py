"""A target whose replies cannot be framed, for any protocol: it answers whatever it reads
with the same bytes (``--reply HEX``, or ``--line-bytes N``: N bytes of ``x`` and no line
end, a line longer than a line protocol's limit).  It reads and answers until the client
closes.

``python tests/support/garbage_target.py --port N (--reply HEX | --line-bytes N)`` prints
``serving garbage on 127.0.0.1:N`` once it listens; SIGTERM ends it.
"""

from __future__ import annotations

import argparse
import socket
import threading


def serve(conn: socket.socket, reply: bytes) -> None:
    with conn:
        try:
            while conn.recv(65536):
                conn.sendall(reply)
        except OSError:
            pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--reply")
    what.add_argument("--line-bytes", type=int)
    args = parser.parse_args()
    reply = bytes.fromhex(args.reply) if args.reply is not None else b"x" * args.line_bytes
    listener = socket.create_server(("127.0.0.1", args.port))
    print(f"serving garbage on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, reply), daemon=True).start()


if __name__ == "__main__":
    main()
