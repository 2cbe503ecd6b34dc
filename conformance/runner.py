"""``conformance run``: run the installed suite under pytest against a target.

With no ``--target`` the embedded reference broker is started as a subprocess on a
free port (and stopped by its PID afterwards).  pytest runs in this process over the
``conformance.suite`` package, isolated from any pytest configuration in the current
directory, with pytest's own terminal output, JUnit and Allure writers off: the suite
plugin writes ``results.json`` (the report model), and every other report is rendered
from it when pytest returns (:mod:`conformance.report.render`).  Output: progress while
the cases run (:mod:`conformance.progress`), a block per problem and one summary line
(:mod:`conformance.report.terminal`) and, under ``--reports`` (default ``./reports``),
``results.json``, ``junit.xml``, ``report.html``, ``bugs.md`` (a Markdown bug report per
finding), ``allure-results/`` and, for the embedded broker, ``broker.log``.  An
unreachable ``--target`` still writes ``junit.xml``: one error testcase saying why.
``--wire-full`` keeps every case's whole wire log in ``results.json`` (by default passing
cases keep summaries only).

With ``--target-cmd`` the tool starts the broker under test itself
(:mod:`conformance.supervisor`, its output in ``target.log``), and a case during which it
crashes, stops serving or prints a panic is run again alone on a fresh start and
convicted if it does so again (:mod:`conformance.suite.supervised`); the run goes on
after a restart.

Exit codes: 0 every case PASS, UNSUPPORTED or (without ``--strict``) WARN; 1 any FAIL
or ERROR, or a case that crashed, stopped or wounded (a panic) a ``--target-cmd``
broker; 2 a usage error, an unreachable target, a broker that did not start, or one that
did not serve again after a restart.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from conformance import baseline, protocols
from conformance.client import ClientError, Connection, WireLog
from conformance.embedded import embedded_broker
from conformance.errors import ProtocolError
from conformance.exits import EXIT_FAIL, EXIT_USAGE, UsageError
from conformance.options import option_values, options_for, serve_args
from conformance.plugin import Plugin, SessionRefused, UnknownQuirk
from conformance.progress import RunProgress


def parse_target(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--target {text!r} is not HOST:PORT (for example 127.0.0.1:9000)")
    return host.strip("[]"), int(port)


def check_reachable(host: str, port: int, timeout: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise UsageError(f"cannot reach target {host}:{port}: {exc.strerror or exc}") from None


def plugin_of(name: str) -> Plugin:
    """The plug-in of protocol ``name``; a UsageError naming the known ones otherwise."""
    try:
        return protocols.get(name)
    except protocols.UnknownProtocol as exc:
        raise UsageError(str(exc)) from None


def check_quirks(plugin: Plugin, names: list[str]) -> None:
    try:
        plugin.check_quirks(names)
    except UnknownQuirk as exc:
        raise UsageError(str(exc)) from None


def check_revision(plugin: Plugin, revision: str | None) -> str:
    """``revision`` (default: the plug-in's), or a UsageError naming the known ones."""
    if revision is None:
        return plugin.default_revision
    try:
        plugin.check_revision(revision)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return revision


def check_session(
    plugin: Plugin, host: str, port: int, timeout: float, values: dict[str, Any], revision: str
) -> None:
    """A UsageError when the target refuses the protocol's session (wrong credentials):
    every case would end in ERROR for a reason only the user can fix.  Nothing to check
    for a protocol without a session opener; an unresponsive target is the suite's to find."""
    opening = plugin.open(values, revision)
    if opening is None:
        return
    try:
        with Connection(
            host, port, deframer=plugin.framing.deframer("reply"), log=WireLog(), timeout=timeout
        ) as conn:
            conn.open(opening)
    except SessionRefused as exc:
        run = options_for(plugin.options, "run")
        named = [o for o in run if o.session] or list(run)
        flags = " ".join(o.flag for o in named) or "its options"
        raise UsageError(
            f"{host}:{port} refused the {plugin.name} session: {exc}; check {flags}"
        ) from None
    except (ClientError, ProtocolError):
        pass  # gone, or a reply that is not a session's: the cases find and judge it


def protocol_options(
    plugin: Plugin, command: str, args: argparse.Namespace, embedded: bool
) -> dict[str, Any]:
    """The values of ``plugin``'s options of ``command`` on this command line (defaults filled)."""
    given = {o.dest: getattr(args, o.dest, None) for o in options_for(plugin.options, command)}
    return option_values(plugin.options, command, given, embedded=embedded)


def pytest_args(
    args: argparse.Namespace,
    plugin: Plugin,
    target: str | None,
    options: dict[str, Any],
    reports: Path,
) -> list[str]:
    suite_dir = str(plugin.suite_dir())
    out = [
        suite_dir,
        "-c",
        os.devnull,
        "--rootdir",
        suite_dir,
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-o",
        "console_output_style=classic",
        # the cases end in shared verifiers, not asserts; with the package on PYTHONPATH as
        # well as installed, pytest warns that it cannot rewrite asserts it does not need
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        "--conformance-protocol",
        args.protocol,
        "--conformance-timeout",
        str(args.timeout),
    ]
    for name, value in options.items():
        if value is not None:
            out += ["--conformance-option", f"{name}={value}"]
    if args.revision:
        out += ["--conformance-revision", args.revision]
    for sel in args.select:
        out += ["--conformance-select", sel]
    for sel in args.skip:
        out += ["--conformance-skip", sel]
    if args.dry_run:
        return [*out, "--conformance-dry-run", "-qq"]
    assert target is not None
    out += [
        "--conformance-target",
        target,
        "--conformance-results",
        str(reports / "results.json"),
        "--conformance-wire-keep",
        str(args.wire_keep),
        *(["--conformance-wire-full"] if getattr(args, "wire_full", False) else []),
        # the tool prints its own progress and summary (conformance.progress and
        # conformance.report.terminal); JUnit and Allure are rendered from results.json
        "-p",
        "no:terminal",
        "-p",
        "no:junitxml",
        "-p",
        "no:allure_pytest",
    ]
    if args.target_name or getattr(args, "target_cmd", None):
        out += ["--conformance-target-name", args.target_name or args.target_cmd]
    if args.strict:
        out.append("--conformance-strict")
    if args.baseline:
        out += ["--conformance-baseline", str(Path(args.baseline).resolve())]
    if (args.target is None and not getattr(args, "target_cmd", None)) or getattr(
        args, "embedded_target", False
    ):
        out.append("--conformance-embedded")
    for q in args.quirk:
        out += ["--conformance-quirk", q]
    if args.jobs > 1:
        out += ["-n", str(args.jobs)]
    return out


def run_command(args: argparse.Namespace) -> int:
    import pytest

    plugin = plugin_of(args.protocol)
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError("--timeout must be a positive number of seconds")
    revision = check_revision(plugin, args.revision)
    target_cmd = getattr(args, "target_cmd", None)
    embedded = not (args.target or target_cmd) or args.embedded_target
    if not embedded and args.quirk:
        raise UsageError(
            "--quirk applies to the embedded broker only; drop --target/--target-cmd to use it"
        )
    args.jobs = 1 if args.jobs is None else args.jobs
    if args.jobs < 1:
        raise UsageError("-j/--jobs must be at least 1")
    if target_cmd is not None:
        from conformance.target_cmd import check_supervised

        check_supervised(args)
    if args.wire_keep < 16:
        raise UsageError("--wire-keep must be at least 16 bytes")
    check_quirks(plugin, args.quirk)
    if args.baseline:
        try:
            baseline.load(args.baseline, plugin.name, revision)
        except baseline.BaselineError as exc:
            raise UsageError(str(exc)) from None
    reports = Path(args.reports)
    options = protocol_options(plugin, "run", args, embedded=embedded)
    if args.dry_run:
        code = int(pytest.main(pytest_args(args, plugin, None, options, reports)))
        return 0 if code in (0, 5) else EXIT_USAGE if code == 4 else EXIT_FAIL
    try:
        reports.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --reports {reports}: {exc.strerror or exc}") from None
    results_file = reports / "results.json"
    results_file.unlink(missing_ok=True)
    progress = [RunProgress(quiet=args.quiet)]
    if args.target:
        host, port = parse_target(args.target)
        try:
            check_reachable(host, port, args.timeout)
            check_session(plugin, host, port, args.timeout, options, revision)
        except UsageError as exc:
            _unreachable_junit(reports, args, f"{host}:{port}", str(exc))
            raise
        argv = pytest_args(args, plugin, f"{host}:{port}", options, reports)
        code = int(pytest.main(argv, plugins=progress))
    elif target_cmd is not None:
        code, failed = run_supervised(args, plugin, revision, options, reports, progress)
        if failed is not None:
            _finish(plugin, results_file, code, bool(args.select or args.skip), args.quiet)
            raise UsageError(failed)
    else:
        serve = ["--revision", revision, *serve_args(plugin.options, "run", options)]
        with embedded_broker(args.protocol, args.quirk, reports, *serve) as broker:
            argv = pytest_args(args, plugin, broker.address, options, reports)
            code = int(pytest.main(argv, plugins=progress))
    code = _finish(plugin, results_file, code, bool(args.select or args.skip), args.quiet)
    if args.write_baseline and results_file.exists() and code != EXIT_USAGE:
        counts = baseline.write(args.write_baseline, json.loads(results_file.read_text()))
        failing = counts.get("FAIL", 0) + counts.get("ERROR", 0)
        print(
            f"baseline written to {args.write_baseline}: {sum(counts.values())} cases, "
            f"{failing} known failure(s)"
        )
    return code


def run_supervised(
    args: argparse.Namespace,
    plugin: Plugin,
    revision: str,
    options: dict[str, Any],
    reports: Path,
    progress: list[Any],
) -> tuple[int, str | None]:
    """The suite against ``--target-cmd`` (:mod:`conformance.target_cmd`): pytest's exit
    code, and why the run ended early (None: it did not)."""
    import pytest

    from conformance import target_cmd
    from conformance.suite.supervised import Supervised

    supervisor = target_cmd.start(args, plugin, revision, options, reports)
    try:
        check_session(plugin, supervisor.host, supervisor.port, args.timeout, options, revision)
        argv = pytest_args(args, plugin, supervisor.address, options, reports)
        watch = Supervised(supervisor, args.panic_patterns)
        code = int(pytest.main([*argv, *target_cmd.suite_args(args)], plugins=[*progress, watch]))
    finally:
        supervisor.close()
    return code, watch.failed


def _unreachable_junit(reports: Path, args: argparse.Namespace, target: str, why: str) -> None:
    """``junit.xml`` with one error testcase, so CI shows why no case ran."""
    from datetime import UTC, datetime

    from conformance.report.junit import write_unreachable

    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    name = args.target_name or target
    write_unreachable(reports / "junit.xml", args.protocol, target, name, why, started)


def _finish(
    plugin: Plugin, results_file: Path, pytest_code: int, selected: bool, quiet: bool
) -> int:
    if not results_file.exists():
        if pytest_code == 4:  # pytest's usage error: it printed why
            return EXIT_USAGE
        print(
            f"conformance run: the suite did not finish (pytest exit code {pytest_code}); "
            "no results were written",
            file=sys.stderr,
        )
        return EXIT_FAIL
    results: dict[str, Any] = json.loads(results_file.read_text())
    if not results["cases"]:
        if pytest_code == 2:  # pytest was interrupted: a suite module did not load
            why = f"the {plugin.name} suite could not be loaded (see above): nothing was checked"
        elif selected:
            why = "no case was selected; check the SELECT and --skip arguments (try --dry-run)"
        else:
            why = f"the {plugin.name} suite has no cases yet: nothing was checked"
        print(f"conformance run: {why}", file=sys.stderr)
        return EXIT_USAGE
    from conformance.report.render import write_reports
    from conformance.report.terminal import print_summary

    written = write_reports(results, results_file.parent)
    print_summary(results, quiet=quiet)
    if not quiet:
        print(f"reports: {results_file.parent}/ ({', '.join(written)})")
    return int(results["exit_code"])
