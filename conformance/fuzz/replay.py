"""``conformance replay``: one reproducer against a target.

The target is the embedded broker with the quirks, revision and options the reproducer
was found with, unless ``--target`` or ``--target-cmd`` says otherwise.  ``--minimize``
minimizes the reproducer and saves it over the file.  Exit 1 it still reproduces, 0 it
does not, 2 a bad file or an unreachable target.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from conformance.exits import EXIT_FAIL, EXIT_OK, UsageError
from conformance.fuzz import harness
from conformance.fuzz import protocol as fuzz_protocol
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.findings import (
    LEAK_NOT_REPLAYED,
    BadReproducer,
    Reproducer,
    SetupFailed,
    reproduces,
)
from conformance.fuzz.minimize import minimize
from conformance.fuzz.target import Target
from conformance.fuzz.targeting import check_targets, make_target, seconds
from conformance.options import option_values, options_for
from conformance.plugin import Plugin
from conformance.runner import check_quirks, check_revision, plugin_of
from conformance.supervisor import on_termination


def replay_command(args: argparse.Namespace) -> int:
    on_termination()
    try:
        return _replay(args)
    except harness.OutOfResources as exc:
        raise UsageError(str(exc)) from None


def _replay(args: argparse.Namespace) -> int:
    seconds(args.timeout, "--timeout")
    check_targets(args)
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
    log = Path(tempfile.gettempdir()) / "conformance-replay" / "target.log"
    log.parent.mkdir(exist_ok=True)
    made_with = (repro.protocol, repro.broker_quirks, revision, values)
    target = make_target(args, plugin, proto, made_with, repro.deadline_s, log)
    try:
        if args.minimize:
            return _minimize_file(args, proto, target, repro)
        still, detail = reproduces(proto, repro, target)
    except SetupFailed as exc:
        raise UsageError(str(exc)) from None
    finally:
        target.close()
    verdict = "REPRODUCES" if still else "does not reproduce"
    print(f"{repro.signature} ({args.file}) on {target.describe()}: {verdict} ({detail})")
    return EXIT_FAIL if still else EXIT_OK


def _minimize_file(
    args: argparse.Namespace, proto: FuzzProtocol, target: Target, repro: Reproducer
) -> int:
    before = repro.size()
    kept = Reproducer.load(Path(args.file))
    repro, still = minimize(proto, target, repro, args.target_start_timeout)
    if still is False and repro.cases == kept.cases:  # nothing better: the file stays
        flaky = not repro.detail.startswith("did not reproduce")
        print(
            f"{repro.signature} ({args.file}) on {target.describe()}: "
            + (
                "it reproduced while minimizing, but not in the final check (flaky?)"
                if flaky
                else "does not reproduce"
            )
            + f" ({repro.detail}); {args.file} left as it was"
        )
        return EXIT_FAIL if flaky else EXIT_OK
    try:
        repro.save_as(Path(args.file))
    except OSError as exc:
        raise UsageError(f"cannot save {args.file}: {exc.strerror or exc}") from None
    after = repro.size()
    print(
        f"{repro.signature} ({args.file}) on {target.describe()}: {before[1]} case(s), "
        f"{before[0]} bytes -> {after[1]} case(s), {after[0]} bytes; "
        + ("minimized" if repro.minimized else f"not fully minimized ({repro.note})")
        + f"; {repro.detail}; saved over {args.file}"
    )
    return EXIT_FAIL if still or still is None else EXIT_OK


def _replay_options(args: argparse.Namespace, plugin: Plugin, repro: Reproducer) -> dict[str, Any]:
    """The fuzz options for a replay: given on this command line, else as the reproducer
    recorded them, else the defaults (secret ones are never recorded: give them again)."""
    known = {o.dest: o for o in options_for(plugin.options, "fuzz")}
    given = {k: v for k, v in repro.options.items() if k in known}
    for dest in known:
        if getattr(args, dest, None) is not None:
            given[dest] = getattr(args, dest)
    embedded = not (args.target or args.target_cmd)
    return option_values(plugin.options, "fuzz", given, embedded=embedded)
