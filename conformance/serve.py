"""``conformance serve``: run the reference broker until SIGINT or SIGTERM.

When listening it prints ``serving PROTOCOL on HOST:PORT`` on stdout (flushed), the
line ``conformance run`` waits for when it starts the embedded broker with
``--port 0``.  Bad options and a port that cannot be bound end with one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from conformance.cli import EXIT_OK, UsageError
from conformance.engine import Engine
from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
from conformance.protocols.cursus.messages import DEFAULT_PORT
from conformance.protocols.cursus.quirks import QUIRKS, Quirks, UnknownQuirk
from conformance.server import Server


def _print_quirks() -> None:
    for q in QUIRKS.values():
        breaks = ", ".join(q.breaks) or "-"
        print(f"{q.name:28} {q.kind:5} {q.area:12} breaks {breaks}: {q.description}")


def serve_command(args: argparse.Namespace) -> int:
    if args.quirk == ["list"]:
        _print_quirks()
        return EXIT_OK
    try:
        quirks = Quirks.of(args.quirk)
    except UnknownQuirk as exc:
        raise UsageError(str(exc)) from None
    if args.max_poll_records < 1:
        raise UsageError("--max-poll-records must be at least 1")
    try:
        engine = Engine(
            data_dir=args.data_dir,
            fsync=args.fsync,
            session_timeout_s=args.session_timeout,
            assignor=args.assignor,
        )
    except OSError as exc:
        raise UsageError(f"cannot use --data-dir {args.data_dir}: {exc.strerror or exc}") from None
    config = CursusConfig(
        compression=args.compression, max_poll_records=args.max_poll_records, quirks=quirks
    )
    frontend = CursusFrontend(engine, config)
    port = DEFAULT_PORT if args.port is None else args.port
    try:
        return asyncio.run(_serve(frontend, args.host, port))
    finally:
        engine.close()


async def _serve(frontend: CursusFrontend, host: str, port: int) -> int:
    server = Server(frontend, host=host, port=port)
    try:
        bound_host, bound_port = await server.start()
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    print(f"serving {frontend.name} on {bound_host}:{bound_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    serving = asyncio.create_task(server.serve_forever())
    await stop.wait()
    serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving
    await server.close()
    print(f"stopped serving {frontend.name}", file=sys.stderr, flush=True)
    return EXIT_OK
