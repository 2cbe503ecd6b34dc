"""``conformance fuzz`` and ``conformance replay``.

``fuzz`` runs cases ``0..N-1`` of a seed against a target (default: the embedded
reference broker, as a subprocess), in this process or, with ``--spark-master``, as Spark
tasks over seed ranges.  It writes one Parquet row per case under ``--out``, minimizes
the first finding of each signature and saves it as a YAML reproducer under
``--findings``, and prints the triage.  Exit 0 no finding, 1 findings, 2 usage error or
unreachable target.

``replay`` runs one reproducer against ``--target`` (default: the embedded broker with the
quirks the reproducer was found with).  Exit 1 it still reproduces, 0 it does not, 2 a bad
file or an unreachable target.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from conformance.errors import ProtocolError
from conformance.exits import EXIT_FAIL, EXIT_OK, UsageError
from conformance.fuzz import campaign, harness
from conformance.fuzz import protocol as fuzz_protocol
from conformance.fuzz.campaign import Options, Row
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.fuzz.findings import (
    LEAK_NOT_REPLAYED,
    BadReproducer,
    Reproducer,
    SetupFailed,
    minimize,
    reproduces,
)
from conformance.fuzz.mutators import generate
from conformance.fuzz.target import Embedded, External, Target
from conformance.fuzz.triage import print_triage, triage, write_parquet
from conformance.plugin import Plugin, SessionRefused
from conformance.runner import check_quirks, check_revision, plugin_of, protocol_options


def _check(args: argparse.Namespace, plugin: Plugin) -> None:
    if args.cases < 1:
        raise UsageError("--cases must be at least 1")
    if args.seed < 0:
        raise UsageError("--seed must be 0 or more")
    if args.deadline <= 0:
        raise UsageError("--deadline must be a positive number of seconds")
    if args.canary_every < 1:
        raise UsageError("--canary-every must be at least 1")
    if args.target and args.quirk:
        raise UsageError("--quirk applies to the embedded broker only; drop --target to use it")
    check_quirks(plugin, args.quirk)


def _target(
    args: argparse.Namespace, plugin: Plugin, revision: str, values: dict[str, Any], out: Path
) -> Target:
    if args.target:
        target: Target = External.parse(args.target)
        if not harness.accepts(target.host, target.port, args.deadline):
            raise UsageError(f"cannot reach target {target.address}")
        return target
    serve = ("--revision", revision, *plugin.serve_args("fuzz", values))
    return Embedded(args.protocol, list(args.quirk), out / "broker.log", serve)


def fuzz_command(args: argparse.Namespace) -> int:
    plugin = plugin_of(args.protocol)
    _check(args, plugin)
    revision = check_revision(plugin, args.revision)
    values = protocol_options(plugin, "fuzz", args, embedded=not args.target)
    out, findings_dir = Path(args.out), Path(args.findings)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    proto = fuzz_protocol(args.protocol, values, revision)
    options = Options(deadline=args.deadline, canary_every=args.canary_every)
    console = Console(stderr=True)
    target = _target(args, plugin, revision, values, out)
    try:
        try:
            campaign.setup(proto, target, args.deadline)
        except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
            raise UsageError(
                f"{target.describe()} did not answer the set-up requests: {exc}"
            ) from None
        if args.spark_master:
            _start_spark(args.spark_master)
        console.print(
            f"fuzzing {target.describe()}: {args.cases} cases, seed {args.seed}"
            + (f", Spark {args.spark_master}" if args.spark_master else ", in this process")
        )
        start = time.monotonic()
        rows = _run(args, proto, target, options, console, values, revision)
        elapsed = time.monotonic() - start
        parquet = _write_rows(args, rows, out)
        made_with = (plugin.public(values), revision)
        return _report(
            args, proto, target, rows, elapsed, parquet, findings_dir, console, made_with
        )
    finally:
        target.close()


def _run(
    args: argparse.Namespace,
    proto: FuzzProtocol,
    target: Target,
    options: Options,
    console: Console,
    values: dict[str, Any],
    revision: str,
) -> list[Row]:
    found = 0
    with Progress(
        TextColumn("[bold]fuzz"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>7.0f} cases/s"),
        TextColumn("findings {task.fields[found]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        refresh_per_second=2,
        disable=args.quiet,
    ) as progress:
        task = progress.add_task("fuzz", total=args.cases, rate=0.0, found=0)
        t0 = time.monotonic()

        def advance(batch: list[Row]) -> None:
            nonlocal found
            found += sum(1 for r in batch if r.finding or r.canary == "lost" or r.leak)
            done = progress.tasks[0].completed + len(batch)
            rate = done / max(time.monotonic() - t0, 1e-6)
            progress.update(task, advance=len(batch), rate=rate, found=found)

        if args.spark_master:
            return _run_on_spark(args, target, options, advance, values, revision)
        rows: list[Row] = []
        pending: list[Row] = []

        def on_row(row: Row) -> None:
            pending.append(row)
            if len(pending) >= 200 or row.finding:
                advance(pending)
                pending.clear()

        for start, stop in campaign.seed_ranges(args.cases, options):
            rows += campaign.run_range(proto, target, args.seed, start, stop, options, on_row)
        advance(pending)
        return rows


def _run_on_spark(
    args: argparse.Namespace,
    target: Target,
    options: Options,
    advance: Callable[[list[Row]], None],
    values: dict[str, Any],
    revision: str,
) -> list[Row]:
    from conformance.fuzz import spark

    try:
        return spark.run_campaign(
            args.spark_master,
            args.protocol,
            target.address,
            args.seed,
            args.cases,
            options,
            Path(args.out),
            on_rows=advance,
            protocol_options=values,
            revision=revision,
        )
    except Exception as exc:
        raise UsageError(f"the Spark campaign failed: {_first_line(exc)}") from None


def _start_spark(master: str) -> None:
    """Start the Spark session before the progress bar (its start is not campaign time)."""
    from conformance.fuzz import spark

    try:
        spark.session(master)
    except Exception as exc:  # py4j and pyspark raise many kinds; the user needs one line
        raise UsageError(
            f"cannot start Spark on --spark-master {master}: {_first_line(exc)}"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _write_rows(args: argparse.Namespace, rows: list[Row], out: Path) -> Path:
    if args.spark_master:
        return out / "cases.parquet"  # written by the Spark job
    return write_parquet(rows, out)


def _report(
    args: argparse.Namespace,
    proto: FuzzProtocol,
    target: Target,
    rows: list[Row],
    elapsed: float,
    parquet: Path,
    findings_dir: Path,
    console: Console,
    made_with: tuple[dict[str, Any], str],
) -> int:
    public, revision = made_with
    dummy = FuzzCase(0, "", "frame", (b"",))
    corruption_req = proto.requirement("CORRUPTION", dummy)
    leak_req = proto.requirement("LEAK", dummy)
    if args.spark_master:
        from conformance.fuzz import spark

        triaged = spark.triage(Path(args.out), corruption_req, leak_req)
    else:
        triaged = triage(rows, corruption_req, leak_req)
    events = campaign.events(proto, rows)
    saved: dict[str, Path] = {}
    if events:
        pool = proto.pool(args.seed)
        by_sig = campaign.first_by_signature(events)
        console.print(f"minimizing {len(by_sig)} finding signature(s)...")
        for sig, (event, _count) in by_sig.items():
            cases = {i: generate(proto, pool, args.seed, i) for i in event.window}
            repro = minimize(
                proto,
                target,
                event,
                cases,
                args.seed,
                args.deadline,
                list(args.quirk),
                public,
                revision,
            )
            try:
                saved[sig] = repro.save(findings_dir)
            except OSError as exc:
                console.print(
                    f"cannot save the reproducer of {sig} under --findings {findings_dir}: "
                    f"{exc.strerror or exc}"
                )
    not_run = args.cases - len(rows)
    print_triage(triaged, saved, console)
    rate = len(rows) / max(elapsed, 1e-6)
    console.print(
        f"{len(rows)} cases in {elapsed:.1f} s ({rate:.0f} cases/s); rows: {parquet}"
        + (f"; {not_run} cases not run (the target stopped accepting)" if not_run else "")
    )
    if saved:
        console.print(f"replay a finding with: conformance replay {next(iter(saved.values()))}")
    return EXIT_FAIL if events or not_run else EXIT_OK


def replay_command(args: argparse.Namespace) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    try:
        repro = Reproducer.load(Path(args.file))
    except BadReproducer as exc:
        raise UsageError(str(exc)) from None
    if args.timeout is not None:
        repro.deadline_s = args.timeout
    if repro.check == "leak":
        raise UsageError(f"{args.file}: {LEAK_NOT_REPLAYED}")
    plugin = plugin_of(repro.protocol)
    check_quirks(plugin, repro.broker_quirks)
    revision = check_revision(plugin, args.revision or repro.revision or None)
    values = _replay_options(args, plugin, repro)
    proto = fuzz_protocol(repro.protocol, values, revision)
    if args.target:
        target: Target = External.parse(args.target)
        if not harness.accepts(target.host, target.port, repro.deadline_s):
            raise UsageError(f"cannot reach target {target.address}")
    else:
        log = Path(tempfile.gettempdir()) / "conformance-replay-broker.log"
        serve = ("--revision", revision, *plugin.serve_args("fuzz", values))
        target = Embedded(repro.protocol, repro.broker_quirks, log, serve)
    try:
        still, detail = reproduces(proto, repro, target)
    except SetupFailed as exc:
        raise UsageError(str(exc)) from None
    finally:
        target.close()
    verdict = "REPRODUCES" if still else "does not reproduce"
    print(f"{repro.signature} ({args.file}) on {target.describe()}: {verdict} ({detail})")
    return EXIT_FAIL if still else EXIT_OK


def _replay_options(args: argparse.Namespace, plugin: Plugin, repro: Reproducer) -> dict[str, Any]:
    """The fuzz options for a replay: given on this command line, else as the reproducer
    recorded them, else the defaults (secret ones are never recorded: give them again)."""
    known = {o.dest: o for o in plugin.options_for("fuzz")}
    given = {k: v for k, v in repro.options.items() if k in known}
    for dest in known:
        if getattr(args, dest, None) is not None:
            given[dest] = getattr(args, dest)
    return plugin.option_values("fuzz", given, embedded=not args.target)
