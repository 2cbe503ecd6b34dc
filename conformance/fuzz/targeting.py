"""What ``conformance fuzz`` and ``conformance replay`` share: their target and their end.

A command's target is ``--target HOST:PORT`` (a broker someone else runs), ``--target-cmd``
(a broker the fuzzer starts and restarts itself, :mod:`.owned`) or else the embedded
reference broker (a subprocess, with the quirks and options the command gives).  A
cancelled job (SIGTERM, SIGHUP) ends either command as Ctrl-C does, so every target it
started is stopped.
"""

from __future__ import annotations

import argparse
import math
import shlex
from pathlib import Path
from typing import Any

from conformance.exits import UsageError
from conformance.fuzz import harness
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.owned import Owned, TargetFailed
from conformance.fuzz.target import Embedded, External, Target
from conformance.options import serve_args
from conformance.panics import compile_patterns
from conformance.plugin import Plugin


def seconds(value: float | None, flag: str) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be a positive number of seconds")


def target_flags(args: argparse.Namespace) -> str:
    """The target options to repeat in a replay command (none for the embedded broker)."""
    if args.target:
        return f" --target {args.target}"
    if args.target_cmd:
        patterns = "".join(f" --panic-pattern {shlex.quote(p)}" for p in args.panic_pattern)
        return f" --target-cmd {shlex.quote(args.target_cmd)}{patterns}"
    return ""


def check_targets(args: argparse.Namespace) -> None:
    seconds(args.target_start_timeout, "--target-start-timeout")
    if (args.target or args.target_cmd) and getattr(args, "quirk", None):
        raise UsageError(
            "--quirk applies to the embedded broker only; drop --target/--target-cmd to use it"
        )


def owned(args: argparse.Namespace, proto: FuzzProtocol, deadline: float, log: Path) -> Owned:
    try:
        patterns = compile_patterns(args.panic_pattern)
        spare = getattr(args, "spare", False)
        return Owned(
            args.target_cmd, proto, args.target_start_timeout, deadline, log, patterns, spare
        )
    except (ValueError, TargetFailed) as exc:
        raise UsageError(str(exc)) from None


def make_target(
    args: argparse.Namespace,
    plugin: Plugin,
    proto: FuzzProtocol,
    made_with: tuple[str, list[str], str, dict[str, Any]],
    deadline: float,
    log: Path,
) -> Target:
    """The target of ``fuzz`` or ``replay``: ``--target``, ``--target-cmd`` (its output to
    ``log``), or else the embedded broker (``made_with``: protocol, quirks, revision and
    option values; its log next to ``log``)."""
    if args.target:
        target: Target = External.parse(args.target)
        if not harness.accepts(target.host, target.port, deadline):
            raise UsageError(f"cannot reach target {target.address}")
        return target
    if args.target_cmd:
        return owned(args, proto, deadline, log)
    protocol, quirks, revision, values = made_with
    serve = ("--revision", revision, *serve_args(plugin.options, "fuzz", values))
    return Embedded(protocol, quirks, log.with_name("broker.log"), serve)
