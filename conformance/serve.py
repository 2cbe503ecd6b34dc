"""``conformance serve``: run the reference broker until SIGINT or SIGTERM.

The protocol's plug-in supplies the front-end; the engine underneath is the shared,
protocol-neutral one.  When listening it prints ``serving PROTOCOL on HOST:PORT`` on
stdout (flushed), the line ``conformance run`` waits for when it starts the embedded
broker with ``--port 0``.  Bad options and a port that cannot be bound end with one line
on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from conformance.engine import Engine
from conformance.exits import EXIT_OK, UsageError
from conformance.plugin import Plugin, ServeConfig
from conformance.runner import check_quirks, check_revision, plugin_of, protocol_options
from conformance.server import Frontend, Server


def _print_quirks(plugin: Plugin) -> None:
    for q in plugin.quirks.values():
        breaks = ", ".join(q.breaks) or "-"
        print(f"{q.name:28} {q.kind:5} {q.area:12} breaks {breaks}: {q.description}")


def serve_command(args: argparse.Namespace) -> int:
    plugin = plugin_of(args.protocol)
    if args.quirk == ["list"]:
        _print_quirks(plugin)
        return EXIT_OK
    check_quirks(plugin, args.quirk)
    revision = check_revision(plugin, args.revision)
    if args.session_timeout <= 0:
        raise UsageError("--session-timeout must be a positive number of seconds")
    if args.max_partitions < 1:
        raise UsageError("--max-partitions must be at least 1")
    try:
        engine = Engine(
            data_dir=args.data_dir,
            fsync=args.fsync,
            session_timeout_s=args.session_timeout,
            assignor=args.assignor,
            max_partitions=args.max_partitions,
        )
    except OSError as exc:
        raise UsageError(f"cannot use --data-dir {args.data_dir}: {exc.strerror or exc}") from None
    options = protocol_options(plugin, "serve", args, embedded=False)
    config = ServeConfig(revision=revision, quirks=tuple(args.quirk), options=options)
    frontend = plugin.frontend(engine, config)
    port = plugin.default_port if args.port is None else args.port
    try:
        return asyncio.run(_serve(frontend, args.host, port))
    finally:
        engine.close()


async def _serve(frontend: Frontend, host: str, port: int) -> int:
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
