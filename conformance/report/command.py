"""``conformance report``: render the reports again from saved ``results.json`` files.

Given one run, it writes that run's HTML report, JUnit XML and Allure results under
``--out``.  Given several, it writes each run's reports in a folder of its own under
``--out`` and ``matrix.html``: requirements x targets (``--only-differing``: only the rows
the runs disagree on).  With ``--allure`` it also builds a
single-file Allure report (``allure-report/index.html``) of every run, with Allure 3 from
npm; without Node it says how to get it and exits 2, after writing everything else.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from conformance.exits import EXIT_USAGE, UsageError
from conformance.report.render import ALLURE_DIR, ResultsError, load_results, write_reports


def report_command(args: argparse.Namespace) -> int:
    runs: list[dict[str, Any]] = []
    for given in args.results:
        try:
            runs.append(load_results(Path(given)))
        except ResultsError as exc:
            raise UsageError(str(exc)) from None
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    from conformance.report.matrix import folder_names, labels, render_matrix

    folders = ["."] if len(runs) == 1 else folder_names(labels(runs, with_time=False))
    allure_dirs = []
    for run, folder in zip(runs, folders, strict=True):
        where = out / folder
        write_reports(run, where)
        allure_dirs.append(where / ALLURE_DIR)
        print(f"{where / 'report.html'}")
    if len(runs) > 1:
        from conformance.report.html import write_page

        differing = bool(getattr(args, "only_differing", False))
        write_page(render_matrix(runs, folders, only_differing=differing), out / "matrix.html")
        print(f"{out / 'matrix.html'}: {len(runs)} runs side by side")
    if args.allure:
        return _allure(allure_dirs, out)
    return 0


def _allure(sources: list[Path], out: Path) -> int:
    from conformance.report.allure_results import AllureUnavailable, build_allure_report

    merged = sources[0]
    if len(sources) > 1:
        merged = out / ALLURE_DIR
        shutil.rmtree(merged, ignore_errors=True)
        merged.mkdir(parents=True)
        for source in sources:
            for file in source.iterdir():
                if file.name not in ("environment.properties", "categories.json"):
                    shutil.copy2(file, merged / file.name)
        shutil.copy2(sources[0] / "categories.json", merged / "categories.json")
    try:
        page = build_allure_report(merged, out / "allure-report")
    except AllureUnavailable as exc:
        print(f"conformance report: no Allure report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{page}: the Allure report (one file; opens from disk)")
    return 0
