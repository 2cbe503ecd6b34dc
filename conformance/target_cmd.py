"""``conformance run --target-cmd``: the runner's side of a run against a broker the tool
starts itself.

The command's options are checked (:func:`check_supervised`), the broker is started by a
:class:`~conformance.supervisor.Supervisor` whose probe is the protocol's
(:func:`serving_check`), and the suite runs under pytest with the
:class:`~conformance.suite.supervised.Supervised` plugin, which restarts the broker and
convicts the cases that crash, stop or wound it (:func:`start`, :func:`suite_args`; the
runner drives them).
"""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance import panics
from conformance.client import probe
from conformance.exits import UsageError
from conformance.plugin import Plugin
from conformance.supervisor import (
    TARGET_START_TIMEOUT_S,
    Supervisor,
    TargetFailed,
    on_termination,
    split,
)


def check_supervised(args: argparse.Namespace) -> None:
    """The options of ``run --target-cmd`` that cannot be checked by the parser."""
    if args.jobs > 1:
        raise UsageError(
            "--target-cmd runs one case at a time (a case that crashes the target is run "
            "again alone): drop -j/--jobs"
        )
    start = args.target_start_timeout
    if not (math.isfinite(start) and start > 0):
        raise UsageError("--target-start-timeout must be a positive number of seconds")
    try:
        split(args.target_cmd)
        args.panic_patterns = panics.compile_patterns(args.panic_pattern)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def serving_check(
    plugin: Plugin, options: dict[str, Any], revision: str
) -> Callable[[str, int, float], bool | str]:
    """Whether a target answers the protocol's probe on a fresh connection (any answer)."""
    request = plugin.framing.frame(plugin.probe_request, "request")

    def serving(host: str, port: int, timeout: float) -> bool | str:
        deframer = plugin.framing.deframer("reply")
        opening = plugin.open(options, revision)  # a generator: a fresh one for each look
        problem = probe(host, port, request, deframer, timeout, opening, lenient=True)
        return problem or True

    return serving


def start(
    args: argparse.Namespace, plugin: Plugin, revision: str, options: dict[str, Any], reports: Path
) -> Supervisor:
    """The broker of ``--target-cmd``, started and serving (its output in ``target.log``);
    a UsageError in one line if it does not serve.  SIGTERM and SIGHUP stop it as Ctrl-C
    does."""
    log = reports / "target.log"
    log.write_text("")
    serving = serving_check(plugin, options, revision)
    supervisor = Supervisor(args.target_cmd, serving, args.target_start_timeout, args.timeout, log)
    on_termination()
    try:
        supervisor.start()
    except TargetFailed as exc:
        raise UsageError(exc.one_line(log)) from None
    return supervisor


def suite_args(args: argparse.Namespace) -> list[str]:
    """The suite plugin's options that record the command (and the flags every reproduce
    command repeats)."""
    out = ["--conformance-target-cmd", args.target_cmd]
    flags = [f for p in args.panic_pattern for f in ("--panic-pattern", p)]
    if args.target_start_timeout != TARGET_START_TIMEOUT_S:
        flags += ["--target-start-timeout", f"{args.target_start_timeout:g}"]
    if flags:
        out += ["--conformance-target-flags", shlex.join(flags)]
    return out
