"""``conformance fuzz``.

``fuzz`` runs cases ``0..N-1`` of a seed against a target -- the embedded reference broker
(a subprocess), ``--target HOST:PORT``, or a broker the fuzzer starts and restarts itself
(``--target-cmd``) -- over ``--connections`` concurrent connections, in this process or,
with ``--spark-master``, as Spark tasks over seed ranges.  It writes one Parquet row per
case under ``--out`` and, the first time a finding's signature is seen, its reproducer
under ``--findings``; at the end it minimizes each one (when the target still serves or
can be restarted) and prints the triage.  A target that goes down and cannot be
restarted ends the campaign there, with one finding saved unminimized.  Exit 0 no
finding, 1 findings, 2 usage error, unreachable target or a ``--target-cmd`` that does
not serve.  ``conformance replay`` is :mod:`.replay`; what the two share
(their target) is :mod:`.targeting`.
"""

from __future__ import annotations

import argparse
import collections
import time
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
from conformance.fuzz.copies import run_copies
from conformance.fuzz.events import Event, events
from conformance.fuzz.findings import (
    Reproducer,
)
from conformance.fuzz.minimize import MINIMIZE_LATER, draft, minimize
from conformance.fuzz.mutators import generate
from conformance.fuzz.on_spark import run_on_spark, start_spark
from conformance.fuzz.target import Target
from conformance.fuzz.targeting import (
    check_targets,
    make_target,
    owned,
    seconds,
    target_flags,
)
from conformance.fuzz.triage import print_triage, triage, write_parquet
from conformance.options import public
from conformance.plugin import Plugin, SessionRefused
from conformance.runner import check_quirks, check_revision, plugin_of, protocol_options
from conformance.supervisor import on_termination

PROGRESS_EVERY_S = 10.0
"""Without a terminal, one progress line this often."""


MAX_CONNECTIONS = 512
MAX_INSTANCES = 32
RESTART_HINT = 10
"""Starts of a --target-cmd target after which the campaign suggests --spare/--instances."""


def _check(args: argparse.Namespace, plugin: Plugin) -> None:
    if args.cases < 1:
        raise UsageError("--cases must be at least 1")
    if args.seed < 0:
        raise UsageError("--seed must be 0 or more")
    seconds(args.deadline, "--deadline")
    if args.canary_every < 1:
        raise UsageError("--canary-every must be at least 1")
    if not 1 <= args.connections <= MAX_CONNECTIONS:
        raise UsageError(f"--connections must be from 1 to {MAX_CONNECTIONS}")
    seconds(args.max_time, "--max-time")
    if args.max_time is not None and args.spark_master:
        raise UsageError("--max-time is for campaigns in this process; drop it or --spark-master")
    check_targets(args)
    if not 1 <= args.instances <= MAX_INSTANCES:
        raise UsageError(f"--instances must be from 1 to {MAX_INSTANCES}")
    if (args.instances > 1 or args.spare) and not args.target_cmd:
        flag = "--spare" if args.spare else "--instances"
        raise UsageError(
            f"{flag} is for a broker the fuzzer starts: give --target-cmd (the embedded "
            "broker and a --target are one process each)"
        )
    if args.target_cmd and args.spark_master:
        raise UsageError(
            "--target-cmd is for campaigns in this process (Spark tasks cannot restart the "
            "broker): drop --spark-master, or start the broker yourself and use --target"
        )
    check_quirks(plugin, args.quirk)


def fuzz_command(args: argparse.Namespace) -> int:
    on_termination()
    try:
        return _fuzz_all(args) if args.all else _fuzz(args)
    except harness.OutOfResources as exc:
        raise UsageError(str(exc)) from None


def _fuzz_all(args: argparse.Namespace) -> int:
    """``fuzz --all``: one campaign per protocol, against each one's embedded broker, the
    cases split between them (the first ones get one more when they do not divide), rows
    under ``--out``/P/, every reproducer in the one ``--findings`` folder (their names carry
    the requirement, hence the protocol).  Exit 1 if any campaign found something."""
    from conformance import all_protocols

    if args.target or args.target_cmd:
        raise UsageError(
            "fuzz --all fuzzes the embedded broker of each protocol; to fuzz your broker, "
            "run one campaign per protocol with --protocol P --target HOST:PORT"
        )
    plugins = all_protocols.all_plugins()
    if args.cases < len(plugins):
        raise UsageError(f"--cases must be at least {len(plugins)} with --all (one per protocol)")
    revisions = all_protocols.revisions(args.revision, plugins)
    quirks = all_protocols.quirks(args.quirk, plugins)
    console = Console(stderr=True, soft_wrap=True)
    share, extra = divmod(args.cases, len(plugins))
    codes: dict[str, int] = {}
    begun = time.monotonic()
    for i, plugin in enumerate(plugins):
        one = argparse.Namespace(**vars(args))
        one.all, one.protocol = False, plugin.name
        one.revision, one.quirk = revisions[plugin.name], quirks[plugin.name]
        one.cases = share + (1 if i < extra else 0)
        one.out = str(Path(args.out) / plugin.name)
        console.rule(f"{plugin.name} ({one.revision}): {one.cases} cases")
        codes[plugin.name] = _fuzz(one)
    found = [name for name, code in codes.items() if code == EXIT_FAIL]
    console.rule()
    console.print(
        f"fuzz --all: {len(plugins)} campaigns, {args.cases} cases, "
        + (f"findings in {', '.join(found)} (see {args.findings}/)" if found else "no finding")
        + f"; {time.monotonic() - begun:.1f} s"
    )
    return max(codes.values())


def _fuzz(args: argparse.Namespace) -> int:
    plugin = plugin_of(args.protocol)
    _check(args, plugin)
    revision = check_revision(plugin, args.revision)
    embedded = not (args.target or args.target_cmd)
    values = protocol_options(plugin, "fuzz", args, embedded=embedded)
    out, findings_dir = Path(args.out), Path(args.findings)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    proto = fuzz_protocol(args.protocol, values, revision)
    options = Options(
        deadline=args.deadline, canary_every=args.canary_every, connections=args.connections
    )
    console = Console(stderr=True, soft_wrap=True)  # a path is never cut in two
    made_with = (args.protocol, list(args.quirk), revision, values)
    target = make_target(args, plugin, proto, made_with, args.deadline, out / "target.log")
    copies = [target]
    try:
        for n in range(2, args.instances + 1):  # --instances: more copies of --target-cmd
            copies.append(owned(args, proto, args.deadline, out / f"target.{n}.log"))
        for one in copies:
            try:
                campaign.setup(proto, one, args.deadline)
            except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
                raise UsageError(
                    f"{one.describe()} did not answer the set-up requests: {exc}"
                ) from None
        if args.spark_master:
            start_spark(args.spark_master)
        console.print(
            f"fuzzing {target.describe()}"
            + (f" and {len(copies) - 1} more copies" if len(copies) > 1 else "")
            + f": {args.cases} cases, seed {args.seed}, {args.connections} connection(s)"
            + (" per copy" if len(copies) > 1 else "")
            + (f", Spark {args.spark_master}" if args.spark_master else ", in this process")
        )
        saver = _Saver(
            args, proto, target, findings_dir, console, (public(plugin.options, values), revision)
        )
        start = time.monotonic()
        rows = _run(args, proto, copies, options, console, values, revision, saver)
        elapsed = time.monotonic() - start
        target.lost = next((one.lost for one in copies if one.lost), "")
        gave_up = next((w for one in copies if (w := _spare_failed(one))), "")
        if gave_up:
            console.print(f"--spare was given up ({gave_up}): restarts waited for a start")
        for one in copies[1:]:  # minimizing needs one copy
            one.close()
        parquet = _write_rows(args, rows, out)
        return _report(args, proto, target, rows, elapsed, parquet, saver, console)
    finally:
        for one in copies:
            one.close()


def _spare_failed(target: Target) -> str:
    """Why a --target-cmd target's spares were given up ('' if they were not)."""
    supervisor = getattr(target, "supervisor", None)
    return "" if supervisor is None else str(supervisor.spare_failed)


class _Saver:
    """Saves each finding's reproducer the first time its signature is seen (not
    minimized yet), then, at the end, minimizes it in place."""

    def __init__(
        self,
        args: argparse.Namespace,
        proto: FuzzProtocol,
        target: Target,
        folder: Path,
        console: Console,
        made_with: tuple[dict[str, Any], str],
    ) -> None:
        self.args, self.proto, self.target, self.folder = args, proto, target, folder
        self.console, (self.public, self.revision) = console, made_with
        self.pool = proto.pool(args.seed)
        self.rows: list[Row] = []
        self.source = target
        self.drafts: dict[str, Reproducer] = {}
        self.saved: dict[str, Path] = {}
        self.counts: collections.Counter[str] = collections.Counter()

    def add(self, batch: list[Row], source: Target | None = None) -> None:
        """Take a batch of rows; ``source``: the copy of the target that ran them (the
        first one by default), whose output a CRASH's or STOPPED's reproducer quotes."""
        self.rows += batch
        self.source = source or self.target
        for r in batch:
            for name in _classes(r):
                self.counts[name] += 1
        if not any(_classes(r) for r in batch):
            return
        for event in events(self.proto, self.rows, self.args.connections):
            if event.signature not in self.drafts:
                self._first(event)

    def _first(self, event: Event) -> None:
        cases = {i: generate(self.proto, self.pool, self.args.seed, i) for i in event.window}
        repro = draft(
            self.proto,
            event,
            cases,
            self.args.seed,
            self.args.deadline,
            list(self.args.quirk),
            self.public,
            self.revision,
        )
        if event.finding == "PANIC":  # it lives on: what it prints now holds the panic
            repro.target_output = self.source.output()
        elif event.finding in ("CRASH", "STOPPED"):
            repro.target_output = self.source.down_output or self.source.output()
        repro.note = "not minimized yet: the campaign minimizes it when it ends"
        self.drafts[event.signature] = repro
        self._save(event.signature, repro)

    def _save(self, signature: str, repro: Reproducer) -> None:
        old = self.saved.get(signature)
        try:
            path = repro.save(self.folder)
        except OSError as exc:
            self.console.print(
                f"cannot save the reproducer of {signature} under --findings {self.folder}: "
                f"{exc.strerror or exc}"
            )
            return
        if old is not None and old != path:
            old.unlink(missing_ok=True)
        self.saved[signature] = path

    def finish(self, usable: bool, why_not: str) -> None:
        """Minimize every reproducer if the target is ``usable``; else say why not."""
        if not self.drafts:
            return
        if usable:
            self.console.print(f"minimizing {len(self.drafts)} finding signature(s)...")
        filed: dict[str, str] = {}  # signature after minimizing -> the one first filed so
        for sig, repro in self.drafts.items():
            if repro.check == "leak":
                repro.note = ""
            elif usable:
                repro, _ = minimize(self.proto, self.target, repro, self.args.target_start_timeout)
                self._refile(sig, repro)
                first = filed.setdefault(repro.signature, sig)
                if first != sig and first in self.saved:  # one fault, found twice: keep one
                    self.console.print(
                        f"{sig} is the same finding as {first} once minimized: one reproducer"
                    )
                    self.saved.pop(sig, Path()).unlink(missing_ok=True)
                    self.saved[sig] = self.saved[first]
                    continue
            else:
                path = self.saved.get(sig, Path("FILE"))
                repro.note = f"not minimized: {why_not}; " + MINIMIZE_LATER.replace(
                    "FILE", str(path)
                )
            self._save(sig, repro)

    def _refile(self, signature: str, repro: Reproducer) -> None:
        """File a minimized reproducer against the requirement its own bytes break: the
        signature came from the case as it ran, which may have held other suspects (a
        negative batch size and an unknown type byte in one case).  Read from the shrunk
        case when that is unambiguous: a CRASH or STOPPED, or a HANG on its one frame."""
        if not repro.minimized or repro.check != "case" or len(repro.cases) != 1:
            return
        case = repro.cases[0]
        if repro.finding == "HANG":
            try:
                frames = self.proto.new_deframer().feed(case.sent)
            except ProtocolError:
                return
            if len(frames) != 1:
                return
        elif repro.finding not in ("CRASH", "STOPPED", "PANIC"):
            return
        found = self.proto.requirement(repro.finding, case)
        if found != repro.requirement:
            self.console.print(
                f"{signature} minimized to a case that breaks {found}: filed as "
                f"{repro.finding}:{found}"
            )
            repro.requirement = found


def _classes(row: Row) -> list[str]:
    out = [row.finding] if row.finding else []
    if row.canary == "lost":
        out.append("CORRUPTION")
    if row.leak:
        out.append("LEAK")
    return out


def _run(
    args: argparse.Namespace,
    proto: FuzzProtocol,
    copies: list[Target],
    options: Options,
    console: Console,
    values: dict[str, Any],
    revision: str,
    saver: _Saver,
) -> list[Row]:
    ticker = _Ticker(console, args.cases, saver, quiet=args.quiet or console.is_terminal)
    with Progress(
        TextColumn("[bold]fuzz"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>7.0f} cases/s"),
        TextColumn("{task.fields[found]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        refresh_per_second=2,
        disable=args.quiet or not console.is_terminal,
    ) as progress:
        task = progress.add_task("fuzz", total=args.cases, rate=0.0, found="findings 0")
        t0 = time.monotonic()

        def show() -> None:
            rate = ticker.done / max(time.monotonic() - t0, 1e-6)
            progress.update(task, completed=ticker.done, rate=rate, found=_found(saver.counts))
            ticker.tick()

        def ended(count: int) -> None:
            ticker.done += count
            show()

        def advance(batch: list[Row], source: Target | None = None) -> None:
            saver.add(batch, source)
            ticker.done = max(ticker.done, len(saver.rows))
            show()

        target = copies[0]
        until = None if args.max_time is None else t0 + args.max_time
        if len(copies) > 1:
            got = run_copies(proto, copies, args.seed, args.cases, options, advance, until, ended)
            ticker.tick(final=True)
            return got
        if args.spark_master:
            got = run_on_spark(args, target, options, advance, values, revision)
            ticker.tick(final=True)
            return got
        rows: list[Row] = []
        for start, stop in campaign.seed_ranges(args.cases, options):
            got = campaign.run_range(
                proto, target, args.seed, start, stop, options, advance, until, ended
            )
            ticker.done = len(rows) + len(got)
            rows += got
            if target.lost or (until is not None and time.monotonic() >= until):
                break
            if not target.restartable and any(r.outcome in harness.DOWN for r in got):
                break
        ticker.tick(final=True)
        return rows


def _found(counts: collections.Counter[str]) -> str:
    if not counts:
        return "findings 0"
    return "findings " + ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


class _Ticker:
    """Without a terminal (CI logs), one progress line every :data:`PROGRESS_EVERY_S`."""

    def __init__(self, console: Console, total: int, saver: _Saver, quiet: bool) -> None:
        self.console, self.total, self.saver, self.quiet = console, total, saver, quiet
        self.t0 = self.last = time.monotonic()
        self.done = 0
        """Cases that have ended (rows come later, at the campaign's pauses)."""
        self.said = ""

    def tick(self, final: bool = False) -> None:
        now = time.monotonic()
        if self.quiet or (not final and now - self.last < PROGRESS_EVERY_S):
            return
        self.last = now
        rate = self.done / max(now - self.t0, 1e-6)
        line = f"fuzz: {self.done}/{self.total} cases, {rate:.0f} cases/s, " + _found(
            self.saver.counts
        )
        key = f"{self.done} {_found(self.saver.counts)}"
        if key != self.said:  # the last line is not said twice
            self.console.print(f"{line} ({now - self.t0:.0f} s)")
            self.said = key


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
    saver: _Saver,
    console: Console,
) -> int:
    dummy = FuzzCase(0, "", "frame", (b"",))
    corruption_req = proto.requirement("CORRUPTION", dummy)
    leak_req = proto.requirement("LEAK", dummy)
    if args.spark_master:
        from conformance.fuzz import spark

        triaged = spark.triage(Path(args.out), corruption_req, leak_req)
    else:
        triaged = triage(rows, corruption_req, leak_req)
    down = next((r for r in rows if r.outcome in harness.DOWN), None)
    gone = target.lost
    if down is not None and not target.restartable and not gone:
        what = "serving" if down.outcome == harness.STOPPED else "accepting connections"
        gone = (
            f"{target.describe()} stopped {what} after case {down.index}, "
            "and the fuzzer cannot restart a target given by --target"
        )
    saver.finish(usable=not gone, why_not=gone)
    not_run = args.cases - len(rows)
    print_triage(triaged, saver.saved, console)
    rate = len(rows) / max(elapsed, 1e-6)
    timed_out = args.max_time is not None and not gone and not_run > 0
    reason = "the --max-time was reached" if timed_out else "the target went down"
    console.print(
        f"{len(rows)} cases in {elapsed:.1f} s ({rate:.0f} cases/s); rows: {parquet}"
        + (f"; {not_run} cases not run ({reason})" if not_run else "")
    )
    where = target_flags(args)
    starts = getattr(target, "starts", 0)
    if starts >= RESTART_HINT and args.instances == 1 and not args.spare:
        console.print(
            f"the target was started {starts} times: if two copies of it can run at once, "
            "--spare (a copy started ahead) and --instances N (N copies fuzzed at once) make "
            "its restarts cheaper"
        )
    if gone:
        console.print(f"the campaign stopped: {gone}")
        for path in saver.saved.values():
            console.print(
                f"saved unminimized: {path}; once the target serves again, minimize it with: "
                f"conformance replay --minimize {path}{where}"
            )
    elif saver.saved:
        first = next(iter(saver.saved.values()))
        console.print(f"replay a finding with: conformance replay {first}{where}")
    return EXIT_FAIL if saver.drafts or gone else EXIT_OK
