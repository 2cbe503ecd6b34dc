"""What a user of ``conformance run --protocol iggy`` sees at the edges: credentials the target
refuses end the run with exit 2 and one line, a classic run against a broker that speaks
the document's revision says which flag to use, the options show in the ``iggy`` group of
``--help`` for run, serve and fuzz, and ``--dry-run`` lists every case of the revision."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.spec import requirements
from tests.support.iggy_serve import running

COMMAND = [sys.executable, "-m", "conformance"]


def conformance(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_refused_credentials_end_the_run_with_exit_2_and_one_line(tmp_path: Path) -> None:
    with running("--password", "s3cret", directory=tmp_path / "broker") as served:
        target = f"{served.host}:{served.port}"
        refused = conformance("run", "--protocol", "iggy", "--target", target, cwd=tmp_path)
        accepted = conformance(
            "run", "--protocol", "iggy", "--target", target, "--password", "s3cret", "-q",
            "--reports", str(tmp_path / "ok"), cwd=tmp_path,
        )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "status 42 (INVALID_CREDENTIALS)" in lines[0], refused.stderr
    assert "--username --password" in lines[0] and "Traceback" not in refused.stderr
    assert accepted.returncode == 0, accepted.stdout[-2000:] + accepted.stderr[-2000:]


def test_a_classic_run_against_a_doc_broker_names_the_revision_flag(tmp_path: Path) -> None:
    with running("--revision", "doc", directory=tmp_path / "broker") as served:
        target = f"{served.host}:{served.port}"
        proc = conformance("run", "--protocol", "iggy", "--target", target, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "INVALID_COMMAND" in proc.stderr and "--revision doc" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["run", "serve", "fuzz"])
def test_the_credentials_are_in_the_iggy_group_of_help(command: str, tmp_path: Path) -> None:
    proc = conformance(command, "--protocol", "iggy", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    group = proc.stdout.split("iggy options:", 1)[1]
    assert "--username NAME" in group and "--password SECRET" in group
    assert ("--login {after,before,both}" in group) == (command == "fuzz")


@pytest.mark.parametrize("revision", ["classic", "doc"])
def test_dry_run_lists_every_case_of_the_revision(revision: str, tmp_path: Path) -> None:
    args = ("run", "--protocol", "iggy", "--revision", revision, "--dry-run")
    proc = conformance(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("iggy/")]
    reqs = requirements("iggy")
    named = {r for line in rows for r in line.split()[2].split(",")}
    assert rows and all(revision in reqs[r].revisions for r in named), named
    assert f"{len(rows)} case(s) selected; nothing was sent (--dry-run)" in proc.stdout
    login = [line for line in rows if line.startswith("iggy/login/")]
    assert bool(login) == (revision == "classic")  # the document has no login
