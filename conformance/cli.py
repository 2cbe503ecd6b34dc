"""``conformance``: the command line.

Exit codes, the same for every command (:mod:`conformance.exits`): 0 clean; 1 a FAIL,
ERROR or finding; 2 usage error, unreachable target, or a broker that failed to start,
reported in one line on stderr without a traceback.

Each protocol may add options to ``run``, ``serve`` and ``fuzz`` (its plug-in declares
them); the parser is built for the protocol the command line names (``--protocol``, or
for ``replay`` the protocol of the reproducer), and ``--help`` shows them in a group
named after it.  Nothing imports this module back.

Without ``--protocol``, a command speaks :data:`DEFAULT_PROTOCOL`, Cursus: the protocol
the project began with and the one whose document is complete enough to serve on its own
(the choice is the command line's; no generic module has a default protocol).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from conformance import protocols
from conformance.client import HEX_KEEP
from conformance.engine import MAX_PARTITIONS
from conformance.exits import EXIT_USAGE, UsageError
from conformance.options import Option, options_for
from conformance.plugin import Plugin
from conformance.supervisor import TARGET_START_TIMEOUT_S

DEFAULT_PROTOCOL = "cursus"


def _add_quirk(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument(
        "--quirk",
        action="append",
        default=[],
        metavar="NAME",
        help=help_text + "; with --all spelled PROTO=NAME",
    )


def _add_protocol(p: argparse.ArgumentParser, all_help: str) -> None:
    p.add_argument(
        "--protocol",
        default=None,
        choices=protocols.names(),
        help=f"the wire protocol (default {DEFAULT_PROTOCOL}); "
        "its own options, if it has any, are listed under its name",
    )
    p.add_argument("--all", action="store_true", help=all_help)


def _add_revision(p: argparse.ArgumentParser, everything: bool, help_text: str) -> None:
    if everything:
        p.add_argument(
            "--revision",
            action="append",
            metavar="PROTO=REV",
            help="a protocol's revision (repeatable; default: each protocol's own)",
        )
    else:
        p.add_argument("--revision", help=help_text)


def _add_protocol_options(
    p: argparse.ArgumentParser, plugins: Sequence[Plugin], command: str
) -> None:
    """The options each plug-in adds to ``command``, in a group named after its protocol
    (with ``--all`` several; a flag two protocols declare is added once, for both)."""
    added: set[str] = set()
    for plugin in plugins:
        options = [o for o in options_for(plugin.options, command) if o.flag not in added]
        if options:
            _add_options(p, plugin, options)
        added.update(o.flag for o in options)


def _add_options(p: argparse.ArgumentParser, plugin: Plugin, options: Sequence[Option]) -> None:
    group = p.add_argument_group(f"{plugin.name} options", plugin.title)
    for o in options:
        group.add_argument(
            o.flag,
            dest=o.dest,
            default=None,
            type=_converter(o.convert),
            metavar=o.metavar or ("{" + ",".join(o.choices) + "}" if o.choices else "VALUE"),
            help=o.help,
        )


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port); argparse says why not in one line."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _converter(convert: Callable[[str], object]) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _add_run(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    plugins: Sequence[Plugin],
    everything: bool,
) -> None:
    p = sub.add_parser(
        "run",
        allow_abbrev=False,
        help="run the conformance suite against a target (default: the embedded reference broker)",
        description="Run every conformance case (or those selected) against a target broker.",
    )
    p.add_argument(
        "select",
        nargs="*",
        metavar="SELECT",
        help="case-ID prefixes (cursus/framing) or requirement IDs (CUR-FRAME-3)",
    )
    _add_protocol(
        p,
        "run every protocol's suite (against one embedded broker serving them all, or the "
        "--target of each), then the cross-protocol matrix",
    )
    if everything:
        p.add_argument(
            "--target",
            action="append",
            metavar="PROTO=HOST:PORT",
            help="a protocol's broker (repeatable); with none, the embedded broker serves all",
        )
        p.add_argument(
            "--target-cmd",
            action="append",
            metavar="PROTO=CMD",
            help="a protocol's broker, started (and restarted after a crash, a stop or a "
            "panic) by that suite with CMD ({port}: a free port); repeatable",
        )
        p.add_argument(
            "--target-start-timeout",
            type=float,
            default=TARGET_START_TIMEOUT_S,
            metavar="S",
            help="seconds a --target-cmd broker has to serve after each start (default 30)",
        )
        p.add_argument(
            "--panic-pattern",
            action="append",
            default=[],
            metavar="REGEX",
            help="with --target-cmd: an output line that means the broker broke (repeatable)",
        )
        p.add_argument(
            "--cross",
            action="store_true",
            help="with --target: the targets are one broker; check that messages cross "
            "between its protocols (always done against the embedded broker)",
        )
    else:
        _add_targets(p, "broker to test; omitted: start the embedded reference broker")
        # run --all's children: the target is the embedded serve --all (with --quirk)
        p.add_argument("--embedded-target", action="store_true", help=argparse.SUPPRESS)
    _add_revision(p, everything, "protocol revision the target speaks (default: the document's)")
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="SELECT",
        help="leave out the cases a case-ID prefix or requirement ID selects (repeatable; "
        "also with --dry-run and --all)",
    )
    p.add_argument("--strict", action="store_true", help="a broken SHOULD (WARN) fails the run")
    p.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="deadline in seconds for each read from the target (default 5)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the selected cases without running them"
    )
    p.add_argument(
        "--reports", default="reports", metavar="DIR", help="output folder (default ./reports)"
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="known failures (from --write-baseline): exit 0 when exactly those fail again; "
        "1 on a new failure or on a listed one that now passes",
    )
    p.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="write every case's verdict to FILE, for a later --baseline",
    )
    p.add_argument(
        "--target-name",
        metavar="NAME",
        help="the target's label in reports, e.g. 'mybroker 2.1' (default: 'embedded' for the "
        "embedded broker, else HOST:PORT); JUnit suites and the report matrix are named by it",
    )
    p.add_argument(
        "--wire-keep",
        type=int,
        default=HEX_KEEP,
        metavar="BYTES",
        help=f"bytes of each frame kept in the wire log (default {HEX_KEEP}); reports mark "
        "where a frame was cut",
    )
    p.add_argument(
        "--wire-full",
        action="store_true",
        help="keep every case's whole wire log (bytes and fields) in results.json; by default "
        "passing and unsupported cases keep each frame's summary and length only",
    )
    _add_quirk(p, "start the embedded broker with this deliberate spec violation (repeatable)")
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="parallel workers (pytest-xdist; default 1); with --all, suites run at once "
        "(default all)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only the summary line (and what a --baseline found): no progress, no "
        "failure blocks (the reports have them)",
    )
    _add_protocol_options(p, plugins, "run")


def _add_serve(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    plugins: Sequence[Plugin],
    everything: bool,
) -> None:
    p = sub.add_parser(
        "serve",
        allow_abbrev=False,
        help="run the reference broker",
        description="Run the reference broker.  With --port 0 the system picks a free port; the "
        "line 'serving PROTOCOL on HOST:PORT' on stdout says which.",
    )
    _add_protocol(
        p,
        "serve every protocol from one process over one engine, each on its own port "
        "(its default, or from --port-base)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--port", type=port_number, default=None, help="default: the protocol's own port"
    )
    p.add_argument(
        "--port-base",
        type=port_number,
        metavar="N",
        help="with --all: protocol i of 'conformance serve --all' listens on N+i, in the "
        "order it prints (0: a free port each); default: each protocol's own port",
    )
    p.add_argument(
        "--data-dir", metavar="DIR", help="keep topics, messages, offsets and groups here"
    )
    _add_revision(p, everything, "the protocol revision to serve (default: the protocol's default)")
    _add_quirk(p, "misbehave on purpose (repeatable); --quirk list shows them")
    p.add_argument(
        "--session-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds without a heartbeat before a group member is expired",
    )
    p.add_argument("--assignor", choices=("range", "roundrobin"), default="range")
    p.add_argument(
        "--max-partitions",
        type=int,
        default=MAX_PARTITIONS,
        metavar="N",
        help=f"most partitions a topic may have: a resource limit (default {MAX_PARTITIONS})",
    )
    p.add_argument("--fsync", action="store_true", help="fsync every acknowledged write")
    g = p.add_argument_group(
        "validating a client",
        "--validate checks every frame a client sends against the protocol's client "
        "requirements and writes a report when the broker stops (SIGINT, SIGTERM or "
        "--max-time); exit 1 if the client broke a MUST",
    )
    g.add_argument("--validate", action="store_true", help="check the clients' frames")
    g.add_argument(
        "--reports",
        default="reports",
        metavar="DIR",
        help="where the report goes (default: reports)",
    )
    g.add_argument(
        "--max-time", type=float, metavar="S", help="stop after S seconds and write the report"
    )
    g.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND:KEY=VALUE,...",
        help="inject a fault (repeatable), e.g. Produce:error=NOT_LEADER_OR_FOLLOWER,count=2; "
        "--fault list shows the protocol's",
    )
    g.add_argument("--fault-plan", metavar="FILE", help="faults from a YAML plan")
    g.add_argument("--client-name", metavar="NAME", help="the client's name in the report")
    g.add_argument("--strict", action="store_true", help="a broken SHOULD fails too (exit 1)")
    _add_protocol_options(p, plugins, "serve")


DEFAULT_CONNECTIONS = 32
"""Chosen by measurement on 2 cores: against the reference broker, cases/s are flat from 8
to 64 connections (the broker's core is the limit); against a target that stalls one
connection in ten, each slot more shortens the campaign (bench/hang_campaign.py: 20,000
cases in about 400 s with 32)."""


def _add_fuzz(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    plugins: Sequence[Plugin],
    everything: bool,
) -> None:
    p = sub.add_parser(
        "fuzz",
        allow_abbrev=False,
        help="fuzz a target with malformed frames (default: the embedded reference broker)",
        description="Run cases 0..N-1 of a seeded fuzz campaign against a target; write one "
        "Parquet row per case under --out and a YAML reproducer per finding under --findings.",
    )
    _add_protocol(
        p,
        "one campaign per protocol, --cases split between them, findings in one folder "
        "(against the embedded broker of each)",
    )
    _add_targets(p, "broker to fuzz; omitted: the embedded broker")
    p.add_argument("--cases", type=int, default=10_000, help="number of cases (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument(
        "--out", default="reports/fuzz", metavar="DIR", help="rows and logs (default reports/fuzz)"
    )
    p.add_argument(
        "--findings",
        default="fuzz/findings",
        metavar="DIR",
        help="where reproducers are saved (default fuzz/findings)",
    )
    p.add_argument(
        "--spark-master",
        metavar="URL",
        help="run the campaign on Spark (local[*], spark://HOST:PORT); omitted: in this process",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds the target has to answer or close after a case (default 2)",
    )
    p.add_argument(
        "--canary-every",
        type=int,
        default=250,
        metavar="N",
        help="run the canary round trip every N cases (default 250)",
    )
    p.add_argument(
        "--connections",
        type=int,
        default=DEFAULT_CONNECTIONS,
        metavar="N",
        help="cases in flight at once, each on its own connection: a target that stalls holds "
        f"up one of them, not the campaign (default {DEFAULT_CONNECTIONS})",
    )
    p.add_argument(
        "--instances",
        type=int,
        default=1,
        metavar="N",
        help="with --target-cmd: run N copies of your broker, each on its own {port}, and "
        "fuzz them at once (a copy is restarted while the others go on: for a broker that "
        "crashes or stops often); the copies must not share a data folder or a fixed port "
        "(default 1)",
    )
    p.add_argument(
        "--spare",
        action="store_true",
        help="with --target-cmd: keep one more copy of your broker started ahead, so that a "
        "restart takes a copy that already serves (same condition as --instances)",
    )
    p.add_argument(
        "--max-time",
        type=float,
        metavar="S",
        help="start no case after S seconds; the campaign ends with what it has",
    )
    _add_revision(p, everything, "protocol revision the target speaks (default: the protocol's)")
    _add_quirk(p, "start the embedded broker with this quirk (repeatable; see serve --quirk list)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_protocol_options(p, plugins, "fuzz")


def _add_targets(p: argparse.ArgumentParser, target_help: str) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--target", metavar="HOST:PORT", help=target_help)
    where.add_argument(
        "--target-cmd",
        metavar="CMD",
        help="start your broker with CMD (split like a shell, run without one; {port} is "
        "replaced by a free port), keep its output, and restart it after a crash or a stop; "
        "a panic in its output is a finding too",
    )
    p.add_argument(
        "--target-start-timeout",
        type=float,
        default=TARGET_START_TIMEOUT_S,
        metavar="S",
        help="seconds --target-cmd has to serve after each start (default 30)",
    )
    p.add_argument(
        "--panic-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="with --target-cmd: a line of the target's output that means it broke, besides "
        "the default (Go and Rust panics, uncaught Java exceptions, Python tracebacks, "
        "sanitizer reports, failed assertions, out of memory); repeatable",
    )


def _add_replay(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], plugin: Plugin | None
) -> None:
    p = sub.add_parser(
        "replay",
        allow_abbrev=False,
        help="replay a fuzz finding (exit 1 if it still reproduces, 0 if not)",
        description="Run a YAML reproducer written by 'conformance fuzz' against a target.",
    )
    p.add_argument("file", metavar="FILE", help="a reproducer (fuzz/findings/*.yaml)")
    _add_targets(
        p, "broker to replay against; omitted: the embedded broker with the reproducer's quirks"
    )
    p.add_argument(
        "--minimize",
        action="store_true",
        help="minimize the reproducer against the target and save it over FILE",
    )
    p.add_argument("--timeout", type=float, metavar="S", help="override the reproducer's deadline")
    p.add_argument("--revision", help="protocol revision of the target (default: the reproducer's)")
    _add_protocol_options(p, [] if plugin is None else [plugin], "fuzz")


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        allow_abbrev=False,
        help="render reports again from saved results; several runs side by side",
        description="Render the HTML report, JUnit XML and Allure results again from saved "
        "results.json files (or folders holding one).  Given several runs, each gets a folder "
        "under --out and matrix.html puts them side by side: requirements x targets.",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="a results.json or its folder")
    p.add_argument(
        "--out", default="reports/rendered", metavar="DIR", help="default reports/rendered"
    )
    p.add_argument(
        "--allure",
        action="store_true",
        help="also build a single-file Allure report (needs Node.js and npm: npx allure@3)",
    )
    p.add_argument(
        "--only-differing",
        action="store_true",
        help="matrix.html lists only the requirements the runs disagree on",
    )


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser, with the options of the protocol ``argv`` names (see :func:`protocol_named`)."""
    everything = "--all" in argv
    if everything:
        plugins = [p for p in map(_plugin_or_none, protocols.names()) if p is not None]
    else:
        plugins = [p for p in [_plugin_or_none(protocol_named(argv))] if p is not None]
    plugin = plugins[0] if plugins and not everything else None
    parser = argparse.ArgumentParser(
        prog="conformance",
        allow_abbrev=False,
        description="Conformance suite and fuzzer for message-broker wire protocols.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(sub, plugins, everything)
    _add_serve(sub, plugins, everything)
    _add_fuzz(sub, plugins, everything)
    _add_replay(sub, plugin)
    _add_report(sub)
    return parser


def protocol_named(argv: Sequence[str]) -> str:
    """The protocol a command line is about: its ``--protocol`` value (abbreviations are
    off), for ``replay`` the ``protocol`` of the reproducer it names (the first readable
    ``*.yaml`` among its words), else the default."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--protocol" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--protocol="):
            return arg.split("=", 1)[1]
    words = [a for a in args if not a.startswith("-")]
    if words and words[0] == "replay":  # the file may stand anywhere among the options
        from conformance.fuzz.findings import protocol_of

        named = (protocol_of(w) for w in words[1:] if w.endswith((".yaml", ".yml")))
        return next((p for p in named if p), DEFAULT_PROTOCOL)
    return DEFAULT_PROTOCOL


def _plugin_or_none(name: str) -> Plugin | None:
    try:
        return protocols.get(name)
    except protocols.UnknownProtocol:
        return None  # argparse's choices say so, with the list


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
    except argparse.ArgumentError as exc:  # a plug-in option clashes with a generic one
        print(
            f"conformance: the {protocol_named(argv)} plug-in declares an option that "
            f"cannot be added: {exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    args = parser.parse_args(argv)  # argparse exits 2 on a usage error
    if getattr(args, "all", False) and args.protocol is not None:
        print(
            f"conformance {args.command}: --all and --protocol exclude each other", file=sys.stderr
        )
        return EXIT_USAGE
    if getattr(args, "protocol", "") is None:
        args.protocol = DEFAULT_PROTOCOL
    try:
        if args.command == "run" and args.all:
            from conformance.run_all import run_all_command

            return run_all_command(args)
        if args.command == "run":
            from conformance.runner import run_command

            return run_command(args)
        if args.command == "serve":
            from conformance.serve import serve_command

            return serve_command(args)
        if args.command == "fuzz":
            from conformance.fuzz.command import fuzz_command

            return fuzz_command(args)
        if args.command == "replay":
            from conformance.fuzz.replay import replay_command

            return replay_command(args)
        if args.command == "report":
            from conformance.report.command import report_command

            return report_command(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"conformance {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped (`| head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet too
        return 0


if __name__ == "__main__":
    sys.exit(main())
