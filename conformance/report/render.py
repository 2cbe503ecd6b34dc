"""Every file report of a run, rendered from one report model (``results.json``).

``conformance run`` calls :func:`write_reports` when the cases end and
``conformance report`` calls it again on saved results, so the HTML, JUnit XML and Allure
results and ``bugs.md`` are always rendered from the same data as the terminal summary,
and agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.report import SCHEMA_ID, SCHEMA_VERSION

HTML_NAME = "report.html"
JUNIT_NAME = "junit.xml"
ALLURE_DIR = "allure-results"


class ResultsError(Exception):
    """A results file that cannot be read; the message says which and why."""


def load_results(path: Path) -> dict[str, Any]:
    """The results in ``path`` (a ``results.json`` or a folder holding one), checked to be
    this tool's report model at the version this tool renders."""
    file = path / "results.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{file}: no such file (give a results.json or its folder)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{file}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        raise ResultsError(f"{file}: not the results of `conformance run`")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(
            f"{file}: results schema version {data.get('schema_version')!r}; this "
            f"conformance renders version {SCHEMA_VERSION} (run the cases again with it)"
        )
    return data


def write_reports(
    results: Mapping[str, Any], out: Path, *, link_base: str = HTML_NAME
) -> list[str]:
    """Write the HTML report, JUnit XML and Allure results of ``results`` under ``out``;
    return the names written."""
    from conformance.report.allure_results import write_allure
    from conformance.report.bugs import BUGS_NAME, write_bugs
    from conformance.report.html import write_html
    from conformance.report.junit import write_junit

    write_html(results, out / HTML_NAME)
    write_junit(results, out / JUNIT_NAME)
    write_allure(results, out / ALLURE_DIR, link_base=f"../{link_base}")
    write_bugs(results, out / BUGS_NAME)
    return [HTML_NAME, JUNIT_NAME, BUGS_NAME, "results.json", f"{ALLURE_DIR}/"]
