"""``conformance serve``: run the reference broker until SIGINT or SIGTERM.

The protocol's plug-in supplies the front-end; the engine underneath is the shared,
protocol-neutral one.  When listening it prints ``serving PROTOCOL on HOST:PORT`` on
stdout (flushed), the line ``conformance run`` waits for when it starts the embedded
broker with ``--port 0``.  Bad options and a port that cannot be bound end with one line
on stderr and exit code 2.

``serve --all`` puts every registered protocol's front-end on the one engine, each behind
its own listener (its default port, or ``--port-base``: :mod:`conformance.all_protocols`),
all in one event loop, and prints one ``serving`` line per protocol, in that order, once
every listener is bound; then ``serving all``.  A message produced over one protocol is
consumed over another (docs/cross-protocol.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from conformance import all_protocols
from conformance.all_protocols import all_plugins
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
    checking = (
        args.validate or args.fault or args.fault_plan or args.max_time is not None or args.strict
    )
    if args.all:
        if checking:
            raise UsageError(
                "--validate, --fault, --fault-plan, --max-time and --strict check one "
                "protocol's clients: give --protocol P instead of --all"
            )
        return _serve_all_command(args)
    if args.port_base is not None:
        raise UsageError("--port-base places the listeners of --all; with one protocol use --port")
    plugin = plugin_of(args.protocol)
    if args.quirk == ["list"]:
        _print_quirks(plugin)
        return EXIT_OK
    check_quirks(plugin, args.quirk)
    revision = check_revision(plugin, args.revision)
    engine = _engine(args)
    try:
        options = protocol_options(plugin, "serve", args, embedded=False)
        config = ServeConfig(revision=revision, quirks=tuple(args.quirk), options=options)
        frontend = plugin.frontend(engine, config)
        port = plugin.default_port if args.port is None else args.port
        if checking:
            from conformance.validate.command import validate

            return validate(args, plugin, config, frontend, port, _serve)
        return asyncio.run(_serve([(frontend, port)], args.host))
    finally:
        engine.close()


def _engine(args: argparse.Namespace) -> Engine:
    if args.session_timeout <= 0:
        raise UsageError("--session-timeout must be a positive number of seconds")
    if args.max_partitions < 1:
        raise UsageError("--max-partitions must be at least 1")
    try:
        return Engine(
            data_dir=args.data_dir,
            fsync=args.fsync,
            session_timeout_s=args.session_timeout,
            assignor=args.assignor,
            max_partitions=args.max_partitions,
        )
    except OSError as exc:
        raise UsageError(f"cannot use --data-dir {args.data_dir}: {exc.strerror or exc}") from None


def _serve_all_command(args: argparse.Namespace) -> int:
    if args.port is not None:
        raise UsageError("--port names one listener; with --all use --port-base")
    if args.quirk == ["list"]:
        for plugin in all_plugins():
            print(f"{plugin.name}:")
            _print_quirks(plugin)
        return EXIT_OK
    plugins = all_plugins()
    revisions = all_protocols.revisions(args.revision, plugins)
    quirks = all_protocols.quirks(args.quirk, plugins)
    ports = all_protocols.ports(plugins, args.port_base)
    engine = _engine(args)
    try:
        listeners: list[tuple[Frontend, int]] = []
        for plugin in plugins:
            options = protocol_options(plugin, "serve", args, embedded=False)
            config = ServeConfig(
                revision=revisions[plugin.name], quirks=tuple(quirks[plugin.name]), options=options
            )
            listeners.append((plugin.frontend(engine, config), ports[plugin.name]))
        return asyncio.run(_serve(listeners, args.host, every=True))
    finally:
        engine.close()


async def _serve(
    listeners: list[tuple[Frontend, int]],
    host: str,
    every: bool = False,
    max_time: float | None = None,
) -> int:
    servers: list[Server] = []
    # the handlers first: a SIGTERM right after the "serving" lines must stop us cleanly
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        for frontend, port in listeners:
            server = Server(frontend, host=host, port=port)
            try:
                await server.start()
            except OSError as exc:
                raise UsageError(
                    f"cannot listen for {frontend.name} on {host}:{port}: {exc.strerror or exc}"
                ) from None
            servers.append(server)
        for server in servers:
            print(f"serving {server.frontend.name} on {server.host}:{server.port}", flush=True)
        if every:
            print("serving all", flush=True)
        if max_time is not None:
            loop.call_later(max_time, stop.set)
        await _until_stopped(servers, stop)
    finally:
        for server in servers:
            await server.close()
    for server in servers:
        print(f"stopped serving {server.frontend.name}", file=sys.stderr, flush=True)
    return EXIT_OK


async def _until_stopped(servers: list[Server], stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set (by SIGINT or SIGTERM)."""
    serving = [asyncio.create_task(server.serve_forever()) for server in servers]
    await stop.wait()
    for task in serving:
        task.cancel()
    for task in serving:
        with contextlib.suppress(asyncio.CancelledError):
            await task
