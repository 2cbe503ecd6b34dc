"""``conformance report``: reports rendered again from saved runs, several side by side."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support import broker
from tests.support.cli import conformance

pytestmark = pytest.mark.slow

QUIRK = "ack-last-offset-off-by-one"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two saved runs of the cursus suite: the reference broker, and the same with a quirk."""
    out = tmp_path_factory.mktemp("runs")
    clean: subprocess.CompletedProcess[str] = conformance(
        out, "run", "-q", "--reports", str(out / "clean")
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    quirk = conformance(out, "run", "-q", "--quirk", QUIRK, "--reports", str(out / "quirk"))
    assert quirk.returncode == 1, quirk.stdout + quirk.stderr
    return out / "clean", out / "quirk"


def _cells(matrix: str, req_id: str) -> list[str]:
    row = re.search(rf'<tr id="{req_id}"( class="differs")?>(.*?)</tr>', matrix, re.S)
    assert row is not None, req_id
    return re.findall(r'<td class="cell"><a class="[^"]+" href="([^"]+)">([^<]+)</a>', row.group(2))


def test_two_runs_make_a_matrix_of_requirements_by_target(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    clean, quirk = runs
    done = conformance(tmp_path, "report", str(clean), str(quirk / "results.json"), "--out", "m")
    assert done.returncode == 0, done.stdout + done.stderr
    matrix = (tmp_path / "m" / "matrix.html").read_text()
    found = re.findall(r'<th class="run" title="([^"]+)"><a href="([^"]+)">([^<]+)</a>', matrix)
    assert [re.sub(r" @ \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", t) for t, _, _ in found] == [
        "embedded",
        f"embedded +{QUIRK}",
    ]
    assert [name for _, _, name in found] == ["embedded", "embedded"]  # the target's name
    assert all(" @ 20" in title for title, _, _ in found)  # and the run's time
    assert len(re.findall(r'<span class="when">20\d\d-\d\d-\d\d \d\d:\d\d UTC</span>', matrix)) == 2
    heads = [(href, name) for _, href, name in found]
    for href, _ in heads:
        assert (tmp_path / "m" / href).is_file(), href
    ack = _cells(matrix, "CUR-ACK-4")
    assert [verdict for _, verdict in ack] == ["PASS", "FAIL"]
    assert '<tr id="CUR-ACK-4" class="differs">' in matrix
    assert [verdict for _, verdict in _cells(matrix, "CUR-FRAME-1")] == ["PASS", "PASS"]
    # a cell opens the requirement in that run's own report
    page, anchor = ack[1][0].split("#")
    assert f'<tr id="{anchor}">' in (tmp_path / "m" / page).read_text()
    assert (tmp_path / "m" / page).with_name("junit.xml").is_file()


def test_one_run_renders_again_to_the_same_page(runs: tuple[Path, Path], tmp_path: Path) -> None:
    _, quirk = runs
    done = conformance(tmp_path, "report", str(quirk), "--out", "again")
    assert done.returncode == 0, done.stdout + done.stderr
    again = tmp_path / "again"
    assert (again / "report.html").read_bytes() == (quirk / "report.html").read_bytes()
    assert (again / "junit.xml").read_bytes() == (quirk / "junit.xml").read_bytes()
    assert len(list((again / "allure-results").glob("*-result.json"))) == 80
    assert not (again / "matrix.html").exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "no such file"),
        ("{}", "not the results of `conformance run`"),
        ('{"schema": "broker-conformance/results", "schema_version": 9}', "schema version 9"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content: str | None, said: str) -> None:
    given = tmp_path / "results.json"
    if content is not None:
        given.write_text(content)
    done = conformance(tmp_path, "report", str(given))
    assert done.returncode == 2
    assert done.stderr.startswith("conformance report: ") and said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_readme_report_examples_run_as_written(tmp_path: Path) -> None:
    """The ``sh`` block of the README's Reports section, with ``mybroker:9000`` replaced by a
    reference broker started here."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    _, found, after = text.partition("\n## Reports\n")
    block = re.search(r"^```sh\n(.*?)^```", after, re.S | re.M)
    assert found and block is not None
    lines = [shlex.split(line, comments=True) for line in block.group(1).splitlines()]
    assert [words[:2] for words in lines] == [["conformance", "run"]] * 2 + [
        ["conformance", "report"]
    ] * 3
    with broker.running() as reference:
        for words in lines:
            words = [w.replace("mybroker:9000", reference.address) for w in words[1:]]
            if (
                "--allure" in words
                and shutil.which("npx") is None
                and os.environ.get("CI") != "true"
            ):
                words.remove("--allure")
            done = conformance(tmp_path, *words)
            assert done.returncode == 0, (words, done.stdout[-1500:], done.stderr[-1500:])
    assert (tmp_path / "reports" / "compare" / "matrix.html").is_file()
    assert (tmp_path / "reports" / "compare" / "mybroker-2.1" / "report.html").is_file()
    assert (tmp_path / "reports" / "diff" / "matrix.html").is_file()  # --only-differing


def test_an_unreachable_target_still_writes_junit_with_one_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        done = conformance(
            tmp_path,
            "run",
            "--target",
            f"127.0.0.1:{port}",
            "--timeout",
            "1",
            "--target-name",
            "gone",
            "--reports",
            str(tmp_path / "r"),
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"conformance run: cannot reach target 127.0.0.1:{port}")
    junit = (tmp_path / "r" / "junit.xml").read_text()
    assert junit.count("<testcase ") == 1 and 'errors="1"' in junit
    assert '<testsuite name="cursus gone"' in junit
    assert f'<error type="unreachable" message="cannot reach target 127.0.0.1:{port}' in junit
