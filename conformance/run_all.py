"""``conformance run --all``: every protocol's suite, one summary line each, one report.

Against the embedded broker, one ``conformance serve --all --port-base 0`` process serves
every protocol over one engine (started with each protocol's embedded option values, the
same values its suite is told); with ``--target PROTO=HOST:PORT`` (repeatable) only the
protocols named are run, each against its target.  Each suite runs as ``conformance run
--protocol P --target ...`` in a child process (``-j N`` at once; default all of them:
their time goes mostly to waiting on timers, not to the CPU), with its own reports under
``--reports``/P/; when all have ended this prints every protocol's findings and summary
line, in protocol order, a total line, and writes ``--reports``/report.html (a section
per protocol; :mod:`conformance.report.all_html`) and ``--reports``/results-all.json.

Selection works as for one protocol (``SELECT`` prefixes or requirement IDs, given to
every suite; a suite with no selected case is left out), and so do ``--strict`` and
``--timeout``; ``--baseline`` and ``--write-baseline`` name a folder holding one baseline
per protocol, ``<folder>/<protocol>.yaml`` (a protocol without one has no baseline).

Exit codes: 0 every protocol passed; 1 any FAIL or ERROR (or a baseline difference); 2 a
usage error, or a protocol that could not be checked (an unreachable target, a broker
that did not start).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from conformance import all_protocols
from conformance.all_protocols import all_plugins
from conformance.embedded import SERVING, read_until, stop_process
from conformance.exits import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError
from conformance.options import option_values, options_for, serve_args
from conformance.plugin import Plugin
from conformance.runner import parse_target

CHILD_DEADLINE_S = 3600.0
"""A suite that has not ended after an hour is stopped (each read has its own deadline)."""


@dataclass
class Suite:
    """One protocol's part of the run."""

    plugin: Plugin
    revision: str
    quirks: list[str] = field(default_factory=list)
    address: str = ""
    command: str = ""
    """``--target-cmd PROTO=CMD``: the command its child run starts the broker with."""
    options: dict[str, Any] = field(default_factory=dict)
    code: int | None = None
    results: dict[str, Any] | None = None
    output: str = ""
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.plugin.name


def run_all_command(args: argparse.Namespace) -> int:
    plugins = all_plugins()
    revisions = all_protocols.revisions(args.revision, plugins)
    quirks = all_protocols.quirks(args.quirk, plugins)
    targets = {
        name: values
        for name, values in all_protocols.per_protocol(
            args.target or [], "--target", plugins
        ).items()
    }
    commands = all_protocols.per_protocol(args.target_cmd or [], "--target-cmd", plugins)
    for flag, each in (("--target", targets), ("--target-cmd", commands)):
        for name, values in each.items():
            if len(values) > 1:
                raise UsageError(f"{flag} names {name} {len(values)} times")
    for name, values in targets.items():
        parse_target(values[0])
        if name in commands:
            raise UsageError(f"--target and --target-cmd both name {name}: give one of them")
    if commands and args.cross:
        raise UsageError(
            "--cross checks brokers that serve for the whole run; a --target-cmd broker "
            "serves only while its own suite runs: drop --cross or give --target"
        )
    if (targets or commands) and any(quirks.values()):
        raise UsageError(
            "--quirk applies to the embedded broker only; drop --target/--target-cmd to use it"
        )
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError("--timeout must be a positive number of seconds")
    jobs = args.jobs or len(plugins)
    if jobs < 1:
        raise UsageError("-j/--jobs must be at least 1")
    named = {**targets, **commands}
    chosen = [p for p in plugins if not named or p.name in named]
    suites = [Suite(p, revisions[p.name], quirks[p.name]) for p in chosen]
    for suite in suites:
        given = {
            o.dest: getattr(args, o.dest, None) for o in options_for(suite.plugin.options, "run")
        }
        suite.options = option_values(suite.plugin.options, "run", given, embedded=not named)
    reports = Path(args.reports)
    try:
        reports.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --reports {reports}: {exc.strerror or exc}") from None
    if args.dry_run:
        return _dry_run(args, suites)
    started = time.monotonic()
    cross: dict[str, Any] | None = None
    if named:
        for suite in suites:
            suite.address = targets.get(suite.name, [""])[0]
            suite.command = commands.get(suite.name, [""])[0]
        _run_suites(args, suites, reports, jobs, embedded=False)
        if args.cross:
            cross = _cross(args, suites)
    else:
        broker = _start_all(suites, quirks, reports)
        try:
            _run_suites(args, suites, reports, jobs, embedded=True)
            cross = _cross(args, suites)
        finally:
            stop_process(broker)
    return _finish(args, suites, reports, time.monotonic() - started, quirks, cross)


def _cross(args: argparse.Namespace, suites: Sequence[Suite]) -> dict[str, Any] | None:
    """The cross-protocol matrix over every suite's target (None: fewer than two take part)."""
    from conformance.cross import Peer, check_matrix, matrix_summary

    peers = []
    for suite in suites:
        host, port = parse_target(suite.address)
        peers.append(Peer(suite.plugin, host, port, suite.revision, suite.options))
    if sum(1 for p in peers if p.plugin.messaging is not None) < 2:
        return None
    begun = time.monotonic()
    results = check_matrix(peers, timeout=args.timeout)
    summary = matrix_summary(peers, results)
    summary["wall_s"] = round(time.monotonic() - begun, 3)
    return summary


# ------------------------------------------------------------------ the broker


def _start_all(
    suites: Sequence[Suite], quirks: dict[str, list[str]], reports: Path
) -> subprocess.Popen[bytes]:
    """``conformance serve --all --port-base 0`` with every suite's revision, quirks and
    embedded option values; each suite's address once every listener is up."""
    cmd = [sys.executable, "-m", "conformance", "serve", "--all", "--port-base", "0"]
    flags: set[str] = set()
    for suite in suites:
        cmd += ["--revision", f"{suite.name}={suite.revision}"]
        cmd += [a for q in quirks[suite.name] for a in ("--quirk", f"{suite.name}={q}")]
        extra = serve_args(suite.plugin.options, "run", suite.options)
        for flag, value in zip(extra[::2], extra[1::2], strict=True):
            if flag not in flags:  # a flag two protocols share is given once
                cmd += [flag, value]
                flags.add(flag)
    log_path = reports / "broker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log)
    addresses = _wait_all_serving(proc)
    if addresses is None:
        stop_process(proc)
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:]
        raise UsageError(
            "the embedded broker (serve --all) did not start: "
            f"{tail[0] if tail else 'no output'} (see {log_path})"
        )
    for suite in suites:
        suite.address = addresses[suite.name]
    return proc


def _wait_all_serving(proc: subprocess.Popen[bytes]) -> dict[str, str] | None:
    """Every ``serving P on HOST:PORT`` line, once ``serving all`` is printed."""
    said = read_until(proc, lambda text: "serving all" in text.splitlines())
    if said is None:
        return None
    found = {}
    for line in said.splitlines():
        m = SERVING.match(line)
        if m:
            found[line.split()[1]] = f"{m.group(1)}:{m.group(2)}"
    return found


# ------------------------------------------------------------------ the suites


def _child_command(
    args: argparse.Namespace, suite: Suite, reports: Path, embedded: bool
) -> list[str]:
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", suite.name, "-q"]
    if suite.command:  # the child starts (and restarts) the broker itself
        cmd += ["--target-cmd", suite.command]
        cmd += ["--target-start-timeout", str(args.target_start_timeout)]
        cmd += [a for p in args.panic_pattern for a in ("--panic-pattern", p)]
    else:
        cmd += ["--target", suite.address]
    cmd += ["--revision", suite.revision]
    cmd += ["--reports", str(reports / suite.name), "--timeout", str(args.timeout)]
    cmd += ["--wire-keep", str(args.wire_keep)]
    label = "embedded" if embedded else suite.command or suite.address
    cmd += ["--target-name", args.target_name or label]
    if embedded:  # its reports and reproduce commands name the embedded broker and quirks
        cmd.append("--embedded-target")
        cmd += [a for q in suite.quirks for a in ("--quirk", q)]
    for o in options_for(suite.plugin.options, "run"):
        if suite.options.get(o.dest) is not None:
            cmd += [o.flag, str(suite.options[o.dest])]
    if args.strict:
        cmd.append("--strict")
    if args.wire_full:
        cmd.append("--wire-full")
    if args.baseline:
        own = Path(args.baseline) / f"{suite.name}.yaml"
        if own.exists():
            cmd += ["--baseline", str(own)]
    if args.write_baseline:
        cmd += ["--write-baseline", str(Path(args.write_baseline) / f"{suite.name}.yaml")]
    return [*cmd, *_skips(args), *args.select]


def _skips(args: argparse.Namespace) -> list[str]:
    return [a for sel in args.skip for a in ("--skip", sel)]


def _run_suites(
    args: argparse.Namespace, suites: Sequence[Suite], reports: Path, jobs: int, embedded: bool
) -> None:
    if args.baseline and not Path(args.baseline).is_dir():
        raise UsageError(
            f"with --all, --baseline names a folder of <protocol>.yaml files: {args.baseline}"
        )
    if args.write_baseline:
        Path(args.write_baseline).mkdir(parents=True, exist_ok=True)
    console = Console(highlight=False, stderr=True)
    if not args.quiet:
        names = ", ".join(f"{s.name} ({s.revision})" for s in suites)
        plural = "suite" if len(suites) == 1 else "suites"
        console.print(Text(f"running {len(suites)} {plural}: {names}", style="dim"))

    def one(suite: Suite) -> Suite:
        cmd = _child_command(args, suite, reports, embedded)
        begun = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=CHILD_DEADLINE_S, check=False)
            suite.code = proc.returncode
            suite.output = (proc.stdout + proc.stderr).decode(errors="replace")
        except subprocess.TimeoutExpired:
            suite.code = EXIT_FAIL
            suite.output = f"the {suite.name} suite did not end within {CHILD_DEADLINE_S:.0f} s"
        suite.seconds = time.monotonic() - begun
        file = reports / suite.name / "results.json"
        if file.exists():  # a selection with no case of this suite: results without cases
            suite.results = json.loads(file.read_text(encoding="utf-8"))
        if not args.quiet:
            console.print(Text(f"  {suite.name} done in {suite.seconds:.1f} s", style="dim"))
        return suite

    for suite in suites:
        (reports / suite.name / "results.json").unlink(missing_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, suites))


def _dry_run(args: argparse.Namespace, suites: Sequence[Suite]) -> int:
    code = EXIT_OK
    for suite in suites:
        cmd = [sys.executable, "-m", "conformance", "run", "--protocol", suite.name, "--dry-run"]
        cmd += ["--revision", suite.revision, *_skips(args), *args.select]
        proc = subprocess.run(cmd, capture_output=True, check=False)
        sys.stdout.write(proc.stdout.decode(errors="replace"))
        if proc.returncode not in (EXIT_OK,):
            code = max(code, proc.returncode)
    return code


# ------------------------------------------------------------------ the end


def _finish(
    args: argparse.Namespace,
    suites: Sequence[Suite],
    reports: Path,
    seconds: float,
    quirks: dict[str, list[str]],
    cross: dict[str, Any] | None,
) -> int:
    from conformance.report.all_html import write_all_report
    from conformance.report.terminal import print_summary

    console = Console(highlight=False)
    ran = [s for s in suites if s.results is not None and s.results.get("cases")]
    empty = [s for s in suites if s.results is not None and not s.results.get("cases")]
    broken = [s for s in suites if s.results is None]
    for suite in suites:
        if suite.results is not None and suite in ran:
            print_summary(suite.results, console, quiet=args.quiet)
        elif suite in broken:
            lines = suite.output.strip().splitlines() or ["no output"]
            console.print(
                Text(f"NOT CHECKED {suite.name}: {lines[-1]}", style="bold magenta"), soft_wrap=True
            )
    if not ran:
        selected = (args.select or args.skip) and not broken
        why = "no case was selected in any suite" if selected else "no suite ran a case"
        if broken:  # say why each did not, in the one line (an unreachable target, say)
            said = [(s.output.strip().splitlines() or ["no output"])[-1] for s in broken]
            why += ": " + "; ".join(
                f"{s.name}: {line.removeprefix('conformance run: ')}"
                for s, line in zip(broken, said, strict=True)
            )
        print(f"conformance run: {why}", file=sys.stderr)
        return EXIT_USAGE
    codes = [s.code for s in ran]
    crossed = cross is not None and cross["passed"] < len(cross["pairs"])
    failed = crossed or any(c != EXIT_OK for c in codes)
    code = EXIT_USAGE if broken else EXIT_FAIL if failed else EXIT_OK
    summary = _summary(suites, ran, empty, broken, seconds, code, quirks)
    if cross is not None:
        summary["cross"] = cross
        for pair in cross["pairs"]:
            if pair["verdict"] != "PASS":
                console.print(
                    Text(f"{pair['verdict']} ", style="bold red").append(
                        f"cross {pair['producer']} -> {pair['consumer']}: {pair['reason']}",
                        style="",
                    ),
                    soft_wrap=True,
                )
        word = "PASSED" if not crossed else "FAILED"
        console.print(
            Text(f"{word} ", style="bold green" if not crossed else "bold red").append(
                f"cross-protocol: {cross['passed']} of {len(cross['pairs'])} ordered pairs "
                f"read back what was produced; {cross['wall_s']:.2f} s"
            ),
            soft_wrap=True,
        )
    (reports / "results-all.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_all_report(summary, [s.results for s in ran if s.results is not None], reports)
    total = summary["total"]
    counts = ", ".join(f"{n} {v}" for v, n in total["counts"].items() if n)
    word, style = ("PASSED", "bold green") if code == EXIT_OK else ("FAILED", "bold red")
    line = Text(f"{word} ", style=style)
    line.append(
        f"all protocols: {len(ran)} suite{'' if len(ran) == 1 else 's'}, "
        f"{total['cases']} cases, {counts}"
        + (f"; failing: {', '.join(summary['failing'])}" if summary["failing"] else "")
        + ("; cross-protocol pairs failing" if crossed else "")
        + (f"; not checked: {', '.join(s.name for s in broken)}" if broken else "")
        + f"; {seconds:.1f} s"
    )
    console.print(line, soft_wrap=True)
    if not args.quiet:
        print(f"reports: {reports}/ (report.html, results-all.json, one folder per protocol)")
    return code


def _summary(
    suites: Sequence[Suite],
    ran: Sequence[Suite],
    empty: Sequence[Suite],
    broken: Sequence[Suite],
    seconds: float,
    code: int,
    quirks: dict[str, list[str]],
) -> dict[str, Any]:
    from conformance.report import count_verdicts

    protocols: list[dict[str, Any]] = []
    totals: dict[str, int] = {}
    for suite in suites:
        entry: dict[str, Any] = {
            "protocol": suite.name,
            "revision": suite.revision,
            "target": suite.command or suite.address,
            "quirks": quirks.get(suite.name, []),
            "wall_s": round(suite.seconds, 3),
            "exit_code": suite.code,
        }
        if suite in ran and suite.results is not None:
            counted = dict(count_verdicts(suite.results))
            entry["counts"] = counted
            entry["cases"] = sum(counted.values())
            entry["duration_s"] = suite.results.get("duration_s")
            entry["report"] = f"{suite.name}/report.html"
            for verdict, n in counted.items():
                totals[verdict] = totals.get(verdict, 0) + n
        elif suite in empty:
            entry["skipped"] = "no case selected"
        else:
            entry["not_checked"] = (suite.output.strip().splitlines() or ["no output"])[-1]
        protocols.append(entry)
    failing = [s.name for s in ran if s.code != EXIT_OK]
    return {
        "exit_code": code,
        "wall_s": round(seconds, 3),
        "protocols": protocols,
        "failing": failing,
        "total": {"cases": sum(totals.values()), "counts": totals},
    }
