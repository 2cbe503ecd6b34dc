"""JUnit XML of a run, rendered from the report model (``results.json``).

CI servers (GitLab, Jenkins, GitHub's test reporters) show a test's *name*, its
*classname*, the message of its failure, error or skip, and its body; so each
conformance case becomes:

* ``<testsuite name="cursus embedded">``: the protocol and the target's label, the same
  across runs of the same target, so a CI server's history lines up; its ``<properties>``
  say what ran against what and, when the target went away, ``target_lost``;
* ``<testcase name="cursus/ack/5: <its title>" classname="cursus.ack">``;
* FAIL: ``<failure type="CUR-ACK-4" message="CUR-ACK-4: last_offset 3, expected 2">`` whose
  body holds the requirement's text, the reason, the evidence the check named (hex, the
  judged fields marked ``>``) and the command that reproduces it;
* ERROR (the case could not run: a dead target, a bug): ``<error>``; when the target was
  lost, ``type="target-lost"``, the message says when and after which case, and the case
  has a ``target_lost`` property;
* WARN (a broken SHOULD): ``<skipped type="WARN" message="WARN: CUR-ACK-9 (SHOULD): ...">``;
  a ``<failure>`` under ``--strict``.  **Why skipped:** JUnit has no "passed with a
  warning", and each reporter shows a skipped test apart from the passing ones with its
  message (GitLab's test report: the "skipped" status and its message; Jenkins' JUnit
  plugin: the "Skipped" list with the message; GitHub's test-reporter actions: a skipped
  mark and the message), while none fails the build for it, as the run's exit code 0 does
  not; a ``<failure>`` would turn Jenkins' build UNSTABLE and fail GitHub checks for a
  SHOULD, and a plain pass hides it;
* UNSUPPORTED: ``<skipped type="UNSUPPORTED" message="UNSUPPORTED: ...">``; a failure the
  baseline expects: ``<skipped type="xfail" message="known failure (FAIL, baseline): ...">``,
  so known failures, WARNs and UNSUPPORTED cases are told apart by type and message;
* ``system-out``: for FAIL, WARN and ERROR the evidence and the whole kept wire log; for a
  passing or UNSUPPORTED case only the wire log's one-line summaries (the bytes are in
  ``results.json`` when the run kept them); properties (case ID, requirements, verdict).

:func:`render_unreachable` is the JUnit of a run whose target could not be reached: one
``<error>`` testcase saying why, so CI shows the failed run instead of no tests.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.plugin import ErrorCodes
from conformance.report import (
    case_requirements,
    cases,
    count_verdicts,
    is_lost,
    lost_line,
    printable,
    reason_of,
    verdict_of,
)
from conformance.report.wire import error_codes, evidence_text, render_text


def suite_name(results: Mapping[str, Any]) -> str:
    """``cursus embedded``: the protocol and the target's label."""
    label = results.get("target_name") or results.get("target") or "?"
    return printable(f"{results.get('protocol') or '?'} {label}", one_line=True)


def case_name(case: Mapping[str, Any]) -> str:
    """``cursus/ack/5: <title>``: the case ID first, so every CI server shows it."""
    cid = printable(case.get("case_id") or case.get("nodeid") or "?", one_line=True)
    title = printable(case.get("title"), one_line=True)
    return f"{cid}: {title}" if title else cid


def _reason(case: Mapping[str, Any]) -> str:
    violated = case.get("violated")
    message = reason_of(case, limit=500)
    return f"{printable(violated, one_line=True)}: {message}" if violated else message


def _body(
    case: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]], errors: ErrorCodes | None
) -> str:
    lines = []
    req_id = str(case.get("violated") or "")
    req = registry.get(req_id)
    if req:
        lines.append(f"{req_id} ({printable(req.get('level'))}): {printable(req.get('text'))}")
    lines.append(printable(case.get("message")))
    if verdict_of(case) in ("FAIL", "WARN"):
        shown = evidence_text(case, errors)
        lines.append(f"evidence:\n{shown}" if shown else "the case named no evidence")
    if case.get("reproduce"):
        lines.append(f"reproduce: {printable(case.get('reproduce'), one_line=True)}")
    return "\n".join(lines)


def _level(case: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]]) -> str:
    req = registry.get(str(case.get("violated") or ""), {})
    return printable(req.get("level") or case.get("level") or "?", one_line=True)


def _testcase(
    parent: ET.Element,
    case: Mapping[str, Any],
    results: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
) -> None:
    verdict = verdict_of(case)
    errors = error_codes(results)
    area = printable(case.get("area") or "cases", one_line=True)
    el = ET.SubElement(
        parent,
        "testcase",
        name=case_name(case),
        classname=f"{printable(results.get('protocol') or '?', one_line=True)}.{area}",
        time=f"{float(case.get('duration_s') or 0):.3f}",
    )
    lost = lost_line(results) if is_lost(case) else None
    props = ET.SubElement(el, "properties")
    for name, value in (
        ("case_id", case.get("case_id")),
        ("requirements", " ".join(case_requirements(case))),
        ("verdict", verdict),
        ("violated", case.get("violated")),
        ("known_failure", "true" if case.get("expected") else None),
        ("target_lost", lost or ("true" if is_lost(case) else None)),
    ):
        if value:
            ET.SubElement(props, "property", name=name, value=printable(value, one_line=True))
    out = []
    strict = bool(results.get("strict"))
    if case.get("expected"):
        skipped = ET.SubElement(el, "skipped", type="xfail")
        skipped.set("message", f"known failure ({verdict}, baseline): {_reason(case)}")
    elif verdict == "FAIL" or (verdict == "WARN" and strict):
        failure = ET.SubElement(el, "failure", message=_reason(case))
        failure.set("type", printable(case.get("violated") or verdict, one_line=True))
        failure.text = _body(case, registry, errors)
    elif verdict == "WARN":
        message = f"WARN: {_reason(case)}"
        if case.get("violated"):
            req = printable(case.get("violated"), one_line=True)
            message = f"WARN: {req} ({_level(case, registry)}) broken: {reason_of(case, limit=500)}"
        skipped = ET.SubElement(el, "skipped", type="WARN", message=message)
        skipped.text = _body(case, registry, errors)
    elif verdict == "ERROR":
        message = f"{lost}; this case could not run: {_reason(case)}" if lost else _reason(case)
        error = ET.SubElement(el, "error", message=message, type="target-lost" if lost else "ERROR")
        error.text = _body(case, registry, errors)
    elif verdict == "UNSUPPORTED":
        ET.SubElement(el, "skipped", type="UNSUPPORTED", message=f"UNSUPPORTED: {_reason(case)}")
    if verdict == "WARN" and not strict:
        out.append(f"WARN (a broken SHOULD; fails only with --strict): {_reason(case)}")
    if case.get("reproduce"):
        out.append(f"reproduce: {printable(case.get('reproduce'), one_line=True)}")
    problem = verdict in ("FAIL", "WARN", "ERROR")
    log = render_text(case, errors=errors, summaries_only=not problem)
    label = "wire log" if problem and not case.get("wire_compact") else "wire log (summaries)"
    out.append(f"{label}:\n{log}" if log else "no wire log")
    ET.SubElement(el, "system-out").text = "\n".join(out)


def render_junit(results: Mapping[str, Any]) -> ET.ElementTree[ET.Element]:
    registry = {
        str(r.get("id")): r for r in results.get("requirements") or [] if isinstance(r, dict)
    }
    listed = cases(results)
    counted = count_verdicts(results)
    strict = bool(results.get("strict"))
    known = sum(1 for c in listed if c.get("expected"))
    failures = sum(
        1
        for c in listed
        if not c.get("expected")
        and (verdict_of(c) == "FAIL" or (strict and verdict_of(c) == "WARN"))
    )
    errors = sum(1 for c in listed if not c.get("expected") and verdict_of(c) == "ERROR")
    warned = sum(
        1 for c in listed if not c.get("expected") and not strict and verdict_of(c) == "WARN"
    )
    attrs = {
        "tests": str(len(listed)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(counted["UNSUPPORTED"] + known + warned),
        "time": f"{float(results.get('duration_s') or 0):.3f}",
    }
    root = ET.Element("testsuites", {"name": "broker-conformance", **attrs})
    suite_attrs = {
        "name": suite_name(results),
        "timestamp": printable(results.get("started"), one_line=True),
        "hostname": printable(results.get("target") or "", one_line=True),
        **attrs,
    }
    suite = ET.SubElement(root, "testsuite", suite_attrs)
    props = ET.SubElement(suite, "properties")
    for key in ("protocol", "revision", "target", "target_name", "target_software", "strict"):
        value = results.get(key)
        if value is not None and value != "":
            ET.SubElement(props, "property", name=key, value=printable(value, one_line=True))
    lost = lost_line(results)
    if lost:
        ET.SubElement(props, "property", name="target_lost", value=lost)
    quirks = results.get("quirks") or []
    if quirks:
        value = printable(", ".join(map(str, quirks)), one_line=True)
        ET.SubElement(props, "property", name="quirks", value=value)
    for case in listed:
        _testcase(suite, case, results, registry)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(results: Mapping[str, Any], path: Path) -> None:
    """Write the JUnit XML of ``results`` to ``path`` (atomically, like the HTML)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    render_junit(results).write(partial, encoding="utf-8", xml_declaration=True)
    os.replace(partial, path)


def render_unreachable(
    protocol: str, target: str, target_name: str | None, reason: str, started: str = ""
) -> ET.ElementTree[ET.Element]:
    """The JUnit of a run that never started: one ``<error>`` testcase saying why."""
    label = printable(target_name or target, one_line=True)
    attrs = {"tests": "1", "failures": "0", "errors": "1", "skipped": "0", "time": "0.000"}
    root = ET.Element("testsuites", {"name": "broker-conformance", **attrs})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": printable(f"{protocol} {label}", one_line=True),
            "timestamp": started,
            "hostname": printable(target, one_line=True),
            **attrs,
        },
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("protocol", protocol), ("target", target), ("target_name", target_name)):
        if value:
            ET.SubElement(props, "property", name=key, value=printable(value, one_line=True))
    case = ET.SubElement(
        suite,
        "testcase",
        name=f"{printable(protocol, one_line=True)}/target: the target is reachable",
        classname=f"{printable(protocol, one_line=True)}.target",
        time="0.000",
    )
    error = ET.SubElement(
        case, "error", type="unreachable", message=printable(reason, one_line=True)
    )
    error.text = (
        f"{printable(reason)}\nNo case ran: the target at {printable(target)} could not be "
        "reached or refused the session."
    )
    ET.indent(root)
    return ET.ElementTree(root)


def write_unreachable(path: Path, *args: str) -> None:
    """Write :func:`render_unreachable` of ``args`` to ``path`` (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    render_unreachable(*args).write(partial, encoding="utf-8", xml_declaration=True)
    os.replace(partial, path)
