"""``conformance serve --protocol P --validate``: the reference broker, checking its clients.

The broker serves as usual; every frame a client sends is checked against P's client
requirements (:mod:`conformance.validate.frontend`) and the fault plan (``--fault``,
``--fault-plan``) is applied.  When the broker stops (SIGINT, SIGTERM, or ``--max-time``)
the report is written under ``--reports`` (results.json, report.html, junit.xml, Allure
results, bugs.md) and summed up on the terminal; the exit code is the report's: 1 when a
client broke a MUST (or a SHOULD, with ``--strict``), else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.exits import EXIT_OK, EXIT_USAGE, UsageError
from conformance.plugin import Plugin, ServeConfig
from conformance.server import Frontend
from conformance.spec import client_requirements
from conformance.validate.contract import Validation
from conformance.validate.faults import Fault, FaultPlan, PlanError, load_plan, parse_flag
from conformance.validate.frontend import CheckingFrontend
from conformance.validate.ledger import Ledger

Serve = Callable[..., Coroutine[Any, Any, int]]


def _print_faults(validation: Validation) -> None:
    width = max(map(len, [*validation.errors, *validation.actions]), default=0)
    print("errors (error=NAME): the requirement, what a client should do next [on which kinds]")
    for name, e in sorted(validation.errors.items()):
        only = f" [{', '.join(e.kinds)}]" if e.kinds else ""
        then = " (the broker then closes)" if e.closes else ""
        print(f"  {name:{width}} {e.requirement:12} {' or '.join(e.expect)}{only}{then}")
    if validation.actions:
        print("actions (action=NAME):")
        for name, e in sorted(validation.actions.items()):
            only = f" [{', '.join(e.kinds)}]" if e.kinds else ""
            print(f"  {name:{width}} {e.requirement:12} {e.description}{only}")
    print("every protocol: slow=MS, split=PIECES, reset=FRACTION; after=N, count=N (0: all)")


def _plan(args: argparse.Namespace, validation: Validation) -> FaultPlan:
    errors, actions = sorted(validation.errors), sorted(validation.actions)
    faults: list[Fault] = []
    try:
        if args.fault_plan:
            faults += load_plan(Path(args.fault_plan), errors, actions)
        faults += [parse_flag(text, errors, actions) for text in args.fault]
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    wording = {"error": ("is not an answer to", "it answers"), "action": ("does not apply to",
               "it applies to")}  # fmt: skip
    for f in faults:  # an error answers, an action applies to, only the kinds it names
        table = {"error": validation.errors, "action": validation.actions}.get(f.effect)
        kinds = table[f.value].kinds if table is not None else ()
        if kinds and f.on not in kinds:
            isnt, does = wording[f.effect]
            raise UsageError(f"{f.origin}: {f.value} {isnt} {f.on}; {does} {', '.join(kinds)}")
    return FaultPlan(faults)


def validate(
    args: argparse.Namespace,
    plugin: Plugin,
    config: ServeConfig,
    frontend: Frontend,
    port: int,
    serve: Serve,
) -> int:
    if plugin.validation is None:
        raise UsageError(f"{plugin.name} clients cannot be validated yet (no client checks)")
    validation = plugin.validation(frontend, config)
    if args.fault == ["list"]:
        _print_faults(validation)
        return EXIT_OK
    if not args.validate:
        raise UsageError("--fault, --fault-plan, --max-time and --strict go with --validate")
    if args.max_time is not None and not 0 < args.max_time < float("inf"):
        raise UsageError("--max-time must be a positive number of seconds")
    plan = _plan(args, validation)
    reports = Path(args.reports)
    try:
        reports.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --reports {reports}: {exc.strerror or exc}") from None
    (reports / "results.json").unlink(missing_ok=True)
    ledger = Ledger()
    checking = CheckingFrontend(frontend, plugin, validation, plan, ledger)
    for fault in plan.faults:
        print(f"fault planned: {fault.describe()}", file=sys.stderr, flush=True)
    started = datetime.now(UTC)
    asyncio.run(serve([(checking, port)], args.host, max_time=args.max_time))
    return _report(args, plugin, config, validation, checking, plan, started, reports)


def _again(args: argparse.Namespace, plugin: Plugin, config: ServeConfig, plan: FaultPlan) -> str:
    """The command that checks a client the same way again (then run the client at it)."""
    words = ["conformance", "serve", "--protocol", plugin.name, "--revision", config.revision]
    words += ["--port", str(args.port if args.port is not None else plugin.default_port)]
    words.append("--validate")
    for quirk in config.quirks:
        words += ["--quirk", quirk]
    for fault in plan.faults:
        words += ["--fault", fault.flag()]
    if args.strict:
        words.append("--strict")
    return shlex.join(words)


def _report(
    args: argparse.Namespace,
    plugin: Plugin,
    config: ServeConfig,
    validation: Validation,
    checking: CheckingFrontend,
    plan: FaultPlan,
    started: datetime,
    reports: Path,
) -> int:
    from conformance.report.render import write_reports
    from conformance.report.terminal import print_summary
    from conformance.validate.results import build

    results = build(
        plugin=plugin,
        validation=validation,
        ledger=checking.ledger,
        requirements=client_requirements(plugin.name),
        revision=config.revision,
        address=checking.address or f"{args.host}:?",
        client_name=args.client_name,
        started=started,
        strict=args.strict,
        faults=[{"fault": f.describe(), "fired": f.fired, "seen": f.seen} for f in plan.faults],
        reproduce=_again(args, plugin, config, plan),
    )
    (reports / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    written = write_reports(results, reports)
    print_summary(results)
    for case in results["cases"]:  # every fault, with what the client did next
        fault = case.get("fault")
        if fault:
            did = ", ".join(fault["did"]) or "nothing"
            print(
                f"{case['verdict']:5} fault {case['case_id'].rsplit('/', 1)[-1]}: "
                f"{fault['fault']}; the client then: {did}"
            )
    if results["checker_failures"]:
        print(
            f"warning: {results['checker_failures']} frame(s) were not checked: the client "
            "checker failed on them (a bug of this tool; the log above says where)",
            file=sys.stderr,
        )
    for planned in results["faults"]:
        if not planned["fired"]:
            print(f"never fired: {planned['fault']} (no request of that kind came)")
    print(f"reports: {reports}/ ({', '.join(written)})")
    if not results["connections"]:
        print(
            f"conformance serve: no client connected to {results['target']}: nothing was "
            "checked (is the client pointed at this address?)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return int(results["exit_code"])
