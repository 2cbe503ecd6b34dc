"""Every README example of ``conformance fuzz`` and ``conformance replay`` runs as written.

The command lines are read from the first ``sh`` block of the README's fuzzing section at
test time.  Only the placeholders are replaced: the address ``broker:9000`` by a reference
broker started here, and ``./mybroker --port {port}`` by ``conformance serve --port {port}``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support import broker

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Fuzzing: `conformance fuzz` and `conformance replay`"
ADDRESS = "broker:9000"
MYBROKER = "./mybroker --port {port}"
SERVE = f"{shlex.quote(sys.executable)} -m conformance serve --port {{port}}"
# The examples' --cases counts are for users; what is checked is that the flags and paths
# work as written, so every count is capped here.
MAX_CASES = 300
TIMEOUT_S = 180


def examples() -> list[str]:
    """The lines of the section's first ``sh`` block that run ``fuzz`` or ``replay``."""
    text = (ROOT / "README.md").read_text()
    _, found, after = text.partition("\n" + SECTION + "\n")
    block = re.search(r"^```sh\n(.*?)^```", after, re.S | re.M)
    if not found or block is None:
        return []
    lines = [line.strip() for line in block.group(1).splitlines()]
    return [x for x in lines if x.startswith(("conformance fuzz ", "conformance replay "))]


def param(line: str) -> object:
    words = shlex.split(line, comments=True)
    marks = []
    if "--spark-master" in words:
        marks = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
    return pytest.param(words, id=shlex.join(words[1:]), marks=marks)


@pytest.fixture(scope="module")
def reference() -> Iterator[broker.Broker]:
    b = broker.start()
    try:
        yield b
    finally:
        b.stop()


def test_the_readme_has_fuzz_and_replay_examples() -> None:
    subcommands = {shlex.split(line, comments=True)[1] for line in examples()}
    assert {"fuzz", "replay"} <= subcommands, f"{SECTION}: examples found: {examples()}"


def command(words: list[str], address: str | None) -> list[str]:
    out = []
    for i, word in enumerate(words[1:], 1):
        if word == ADDRESS:
            assert address is not None
            word = address
        elif word == MYBROKER and words[i - 1] == "--target-cmd":
            word = SERVE
        elif words[i - 1] == "--cases":
            word = str(min(int(word), MAX_CASES))
        out.append(word)
    return [sys.executable, "-m", "conformance", *out]


@pytest.mark.parametrize("words", [param(line) for line in examples()])
def test_readme_example_runs(
    words: list[str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    shutil.copytree(ROOT / "fuzz" / "examples", tmp_path / "fuzz" / "examples")
    files = [w for w in words if w.endswith((".yaml", ".yml"))]
    for name in files:
        source = ROOT / name
        assert source.is_file(), f"README example names {name}, not in the repository"
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, tmp_path / name)
    address = None
    if ADDRESS in words:
        address = request.getfixturevalue("reference").address
    env = dict(os.environ)
    if "--spark-master" in words:
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    proc = subprocess.run(
        command(words, address),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=tmp_path,
        env=env,
    )
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    if words[1] == "fuzz":  # a clean reference broker: no finding
        assert proc.returncode == 0, output
        assert "no finding" in proc.stderr, output
    elif "--minimize" not in words:  # the CRASH reproducer on a clean broker
        assert proc.returncode == 0, output
        assert "does not reproduce" in proc.stdout, output
    else:
        # Against a clean broker the finding does not show: the exit is 0, as for a replay
        # that does not reproduce, with one summary line, and no case of the file is lost.
        (name,) = files
        before = yaml.safe_load((ROOT / name).read_text())
        after = yaml.safe_load((tmp_path / name).read_text())
        assert proc.returncode == 0, output
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, output
        assert "did not reproduce" in lines[0], output
        assert (after["signature"], after["cases"]) == (before["signature"], before["cases"])
