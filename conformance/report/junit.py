"""JUnit XML of a run, rendered from the report model (``results.json``).

CI servers (GitLab, Jenkins, GitHub's test reporters) show a test's *name*, its
*classname* and the body of its failure; so each conformance case becomes:

* ``<testsuite name="cursus embedded">``: the protocol and the target's label, the same
  across runs of the same target, so a CI server's history lines up;
* ``<testcase name="cursus/ack/5: <its title>" classname="cursus.ack">``;
* FAIL: ``<failure type="CUR-ACK-4" message="CUR-ACK-4: last_offset 3, expected 2">`` whose
  body holds the requirement's text, the reason and the command that reproduces it;
* ERROR (the case could not run: a dead target, a bug): ``<error>``;
* WARN (a broken SHOULD): passes with a note in ``system-out``; a failure under ``--strict``;
* UNSUPPORTED: ``<skipped>``; a failure the baseline expects: ``<skipped type="xfail">``;
* every case: the whole kept wire log in ``<system-out>``, and properties (case ID,
  requirements, verdict).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.report import (
    case_requirements,
    cases,
    count_verdicts,
    printable,
    reason_of,
    verdict_of,
)
from conformance.report.wire import error_codes, render_text


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


def _body(case: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]]) -> str:
    lines = []
    req_id = str(case.get("violated") or "")
    req = registry.get(req_id)
    if req:
        lines.append(f"{req_id} ({printable(req.get('level'))}): {printable(req.get('text'))}")
    lines.append(printable(case.get("message")))
    if case.get("reproduce"):
        lines.append(f"reproduce: {printable(case.get('reproduce'), one_line=True)}")
    return "\n".join(lines)


def _testcase(
    parent: ET.Element,
    case: Mapping[str, Any],
    results: Mapping[str, Any],
    registry: Mapping[str, Mapping[str, Any]],
) -> None:
    verdict = verdict_of(case)
    area = printable(case.get("area") or "cases", one_line=True)
    el = ET.SubElement(
        parent,
        "testcase",
        name=case_name(case),
        classname=f"{printable(results.get('protocol') or '?', one_line=True)}.{area}",
        time=f"{float(case.get('duration_s') or 0):.3f}",
    )
    props = ET.SubElement(el, "properties")
    for name, value in (
        ("case_id", case.get("case_id")),
        ("requirements", " ".join(case_requirements(case))),
        ("verdict", verdict),
        ("violated", case.get("violated")),
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
        failure.text = _body(case, registry)
    elif verdict == "ERROR":
        error = ET.SubElement(el, "error", message=_reason(case), type="ERROR")
        error.text = _body(case, registry)
    elif verdict == "UNSUPPORTED":
        ET.SubElement(el, "skipped", message=f"UNSUPPORTED: {_reason(case)}")
    if verdict == "WARN" and not strict:
        out.append(f"WARN (a broken SHOULD; fails only with --strict): {_reason(case)}")
    if case.get("reproduce"):
        out.append(f"reproduce: {printable(case.get('reproduce'), one_line=True)}")
    log = render_text(case, errors=error_codes(results))
    out.append(f"wire log:\n{log}" if log else "no wire log")
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
    attrs = {
        "tests": str(len(listed)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(counted["UNSUPPORTED"] + known),
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
