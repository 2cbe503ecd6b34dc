"""Allure results of a run, rendered from the report model (``results.json``).

allure-python-commons (the library under allure-pytest) provides Allure's result model
and its file writer; this module fills them from the results instead of from pytest, so
Allure shows exactly what the HTML, JUnit and terminal reports show:

* name ``cursus/ack/5: <title>``; full name ``cursus/cursus/ack/5``; history and test-case
  IDs from protocol, target label and case ID, so runs of one target line up;
* status: PASS passed, FAIL failed, WARN passed (failed under ``--strict``), UNSUPPORTED
  skipped, ERROR broken, a failure the baseline expects skipped and ``known`` with the tag
  ``known-failure`` and its own category (an UNSUPPORTED case has the tag ``UNSUPPORTED``);
* the trace: the reproduce command and the evidence the check named (hex, judged fields
  marked ``>``); a case lost with its target says when and after which case;
* labels: protocol (parent suite), area (suite, feature), target label (sub-suite, host),
  severity from the level (MUST critical, SHOULD normal, MAY minor), the verdict as a
  tag, every requirement checked and the violated one as ``requirement`` labels and as
  links into the HTML report (``report.html#CUR-ACK-4``);
* one step per exchange of the wire log (a sent frame and what came back); for FAIL, WARN
  and ERROR each with the whole kept hex of its frames attached, for other cases the
  step names (the frames' summaries) only;
* ``environment.properties`` (with ``target_lost`` when the target went away) and
  ``categories.json`` beside the results.

:func:`build_allure_report` turns the results into a single-file HTML report with
Allure 3 from npm (``npx allure@3``); without Node.js it raises :class:`AllureUnavailable`
saying how to get it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from allure_commons import logger as allure_logger
from allure_commons.model2 import (
    Attachment,
    Label,
    Link,
    Parameter,
    Status,
    StatusDetails,
    TestResult,
    TestStepResult,
)

from conformance.plugin import ErrorCodes
from conformance.report import (
    case_requirements,
    cases,
    is_lost,
    lost_line,
    printable,
    reason_of,
    verdict_of,
)
from conformance.report import wire as wirelog

#: allure-python-commons has no type hints: its file writer is used as Any.
AllureFileLogger: Any = allure_logger.AllureFileLogger

#: The Allure 3 release ``conformance report --allure`` runs (``npx allure@...``).
ALLURE_NPM = "allure@3.18.0"
#: Steps per case; a flood case's remaining exchanges are summed up in one last step.
STEP_LIMIT = 200
SEVERITY = {"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}
_STATUS = {
    "PASS": Status.PASSED,
    "FAIL": Status.FAILED,
    "WARN": Status.PASSED,
    "UNSUPPORTED": Status.SKIPPED,
    "ERROR": Status.BROKEN,
}
CATEGORIES = [
    {
        "name": "Known failures (baseline)",
        "matchedStatuses": ["skipped"],
        "messageRegex": "known failure.*",
    },
    {
        "name": "Requirement violations (MUST)",
        "matchedStatuses": ["failed"],
        "messageRegex": "(?!WARN).*",
    },
    {
        "name": "Broken SHOULD (WARN, --strict)",
        "matchedStatuses": ["failed"],
        "messageRegex": "WARN.*",
    },
    {
        "name": "Target lost (ERROR)",
        "matchedStatuses": ["broken"],
        "messageRegex": "target lost.*",
    },
    {"name": "Could not run (ERROR)", "matchedStatuses": ["broken"]},
    {"name": "Unsupported", "matchedStatuses": ["skipped"], "messageRegex": "UNSUPPORTED.*"},
]


class AllureUnavailable(Exception):
    """No single-file Allure report could be built; the message says what to do."""


def _ms(started: object) -> int:
    try:
        return int(datetime.fromisoformat(str(started).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def _hash(*parts: object) -> str:
    return hashlib.md5("\x1f".join(map(str, parts)).encode(), usedforsecurity=False).hexdigest()


def exchanges(
    case: Mapping[str, Any], errors: ErrorCodes | None = None
) -> list[list[wirelog.Entry]]:
    """The wire log cut into exchanges: each sent frame with the entries after it."""
    groups: list[list[wirelog.Entry]] = []
    for e in wirelog.entries(case, errors):
        if e.dir == "send" or not groups:
            groups.append([])
        groups[-1].append(e)
    return groups


def _dump(group: list[wirelog.Entry]) -> str:
    lines: list[str] = []
    for e in group:
        lines.append(e.header())
        lines += ["    " + line for line in wirelog.dump(e.data)]
        if e.cut:
            lines.append(f"    ({e.cut_note})")
        lines += ["    . " + wirelog.field_line(f) for f in e.fields]
    return "\n".join(lines) + "\n"


def _steps(
    case: Mapping[str, Any],
    logger: Any,
    start: int,
    status: str,
    errors: ErrorCodes | None,
    *,
    attach: bool,
) -> list[Any]:
    groups = exchanges(case, errors)
    steps = []
    for index, group in enumerate(groups[:STEP_LIMIT]):
        attachments = []
        if attach and not group[0].compact:
            source = f"{_hash(case.get('case_id'), index, start)}-attachment.txt"
            logger.report_attached_data(_dump(group), source)
            attachments = [Attachment(name="frames (hex)", source=source, type="text/plain")]
        last = index == len(groups) - 1
        steps.append(
            TestStepResult(
                name=printable(group[0].header(), one_line=True, limit=200),
                status=status
                if last and status in (Status.FAILED, Status.BROKEN)
                else Status.PASSED,
                start=start,
                stop=start,
                attachments=attachments,
            )
        )
    if len(groups) > STEP_LIMIT:
        left = len(groups) - STEP_LIMIT
        steps.append(
            TestStepResult(
                name=f"{left} more exchanges (see results.json)",
                status=Status.PASSED,
                start=start,
                stop=start,
            )
        )
    return steps


def _result(
    results: Mapping[str, Any], case: Mapping[str, Any], logger: Any, start: int, link_base: str
) -> TestResult:
    verdict = verdict_of(case)
    errors = wirelog.error_codes(results)
    protocol = printable(results.get("protocol") or "?", one_line=True)
    label = printable(results.get("target_name") or results.get("target") or "?", one_line=True)
    cid = printable(case.get("case_id") or "?", one_line=True)
    strict = bool(results.get("strict"))
    status = Status.FAILED if verdict == "WARN" and strict else _STATUS[verdict]
    violated = printable(case.get("violated") or "", one_line=True)
    reason = reason_of(case)
    message = f"{violated}: {reason}" if violated else reason
    if verdict in ("WARN", "UNSUPPORTED"):
        message = f"{verdict}: {message}"
    known = bool(case.get("expected"))
    if known:
        status, message = Status.SKIPPED, f"known failure ({verdict}, baseline): {message}"
    lost = lost_line(results) if is_lost(case) else None
    if lost:
        message = f"{lost}; this case could not run: {message}"
    reqs = [printable(r, one_line=True) for r in case_requirements(case)]
    if violated and violated not in reqs:
        reqs.append(violated)
    area = printable(case.get("area") or "?", one_line=True)
    labels = [
        Label("parentSuite", protocol),
        Label("suite", area),
        Label("subSuite", label),
        Label("feature", area),
        Label("host", label),
        Label("framework", "broker-conformance"),
        Label("severity", SEVERITY.get(str(case.get("level")), "normal")),
        Label("tag", verdict),
    ]
    labels += [Label("tag", "known-failure")] if known else []
    labels += [Label("tag", "target-lost")] if is_lost(case) else []
    labels += [Label("protocol", protocol), Label("area", area)]
    labels += [Label("level", printable(case.get("level") or "?", one_line=True))]
    labels += [Label("story", reqs[0])] if reqs else []
    labels += [Label("requirement", r) for r in reqs]
    labels += [Label("violated", violated)] if violated else []
    links = [Link("requirement", f"{link_base}#{r}", r) for r in reqs]
    links.append(Link("case", f"{link_base}#{cid}", cid))
    duration = case.get("duration_s")
    stop = start + int(float(duration) * 1000) if isinstance(duration, int | float) else start
    problem = verdict in ("FAIL", "WARN", "ERROR")
    trace = ""
    if verdict in ("FAIL", "WARN"):
        shown = wirelog.evidence_text(case, errors)
        trace = f"evidence:\n{shown}" if shown else "the case named no evidence (see the steps)"
    if case.get("reproduce"):
        trace = f"reproduce: {printable(case.get('reproduce'), one_line=True)}\n\n{trace}"
    return TestResult(
        uuid=_hash("result", protocol, label, cid, start),
        name=f"{cid}: {printable(case.get('title'), one_line=True)}",
        fullName=f"{protocol}/{cid}",
        historyId=_hash(protocol, label, cid),
        testCaseId=_hash(protocol, cid),
        status=status,
        statusDetails=StatusDetails(
            message=message or None, trace=trace or None, known=known or None
        ),
        stage="finished",
        start=start,
        stop=stop,
        labels=labels,
        links=links,
        parameters=[
            Parameter(name="revision", value=printable(results.get("revision"))),
            Parameter(name="target", value=label),
        ],
        steps=_steps(case, logger, start, status, errors, attach=problem),
    )


def write_allure(
    results: Mapping[str, Any], out_dir: Path, *, link_base: str = "../report.html"
) -> int:
    """Write the Allure results of every case into ``out_dir`` (emptied first); return how
    many.  ``link_base`` is where the HTML report is, seen from the Allure report."""
    logger = AllureFileLogger(str(out_dir), clean=True)
    clock = _ms(results.get("started"))
    listed = cases(results)
    for case in listed:
        result = _result(results, case, logger, clock, link_base)
        logger.report_result(result)
        clock = result.stop or clock
    env = {
        "protocol": results.get("protocol"),
        "revision": results.get("revision"),
        "target": results.get("target"),
        "target_name": results.get("target_name"),
        "target_software": results.get("target_software"),
        "quirks": ", ".join(map(str, results.get("quirks") or [])) or "none",
        "strict": results.get("strict"),
        "started": results.get("started"),
        "tool": f"{results.get('tool')} {results.get('version')}",
        "target_lost": lost_line(results),
    }
    lines = [f"{k}={printable(v, one_line=True)}" for k, v in env.items() if v not in (None, "")]
    (out_dir / "environment.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out_dir / "categories.json").write_text(json.dumps(CATEGORIES, indent=1), encoding="utf-8")
    return len(listed)


def build_allure_report(results_dir: Path, out_dir: Path, *, timeout: float = 600) -> Path:
    """A single-file Allure report of ``results_dir`` in ``out_dir``; returns its page."""
    npx = shutil.which("npx")
    if npx is None:
        raise AllureUnavailable(
            "npx was not found: install Node.js 18 or newer with npm (Debian: apt-get install "
            f"nodejs npm), then run again; the report is built with `npx {ALLURE_NPM}`"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="conformance-allure-") as work:
        config = Path(work) / "allurerc.mjs"
        config.write_text(
            "export default {\n"
            f"  name: {json.dumps('conformance: ' + results_dir.parent.name)},\n"
            f"  output: {json.dumps(str(out_dir.resolve()))},\n"
            "  plugins: { awesome: { options: { singleFile: true } } },\n"
            "};\n",
            encoding="utf-8",
        )
        cmd = [
            npx,
            "--yes",
            ALLURE_NPM,
            "generate",
            str(results_dir.resolve()),
            "--config",
            str(config),
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work)
        except subprocess.TimeoutExpired:
            raise AllureUnavailable(
                f"`npx {ALLURE_NPM} generate` took over {timeout:.0f} s"
            ) from None
    page = out_dir / "index.html"
    if done.returncode != 0 or not page.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise AllureUnavailable(f"`npx {ALLURE_NPM} generate` failed: {tail[0]}")
    return page
