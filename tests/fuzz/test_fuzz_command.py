"""``conformance fuzz`` and ``conformance replay`` end to end, as a platform team runs them.

The fault quirks of the reference broker are the proof that the fuzzer finds what it
exists to find: each is found within the stated case budget, the minimized reproducer
replays against the faulty broker (exit 1) and not against a clean one (exit 0).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support import broker, net
from tests.support.cli import conformance

BUDGET = 2000
"""Cases within which each fault quirk must be found (the issue allows up to 20,000)."""


def fuzz(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return conformance(tmp_path, "fuzz", "-q", "--deadline", "0.3", *args)


def rows(tmp_path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(tmp_path / "reports" / "fuzz" / "cases.parquet")
    return [
        {k: v for k, v in r.items() if k not in ("latency_ms", "rss_mb")} for r in table.to_pylist()
    ]


def reproducers(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "fuzz" / "findings").glob("*.yaml"))


@pytest.mark.parametrize(
    ("quirk", "finding", "minimized_max"),
    [
        ("crash-on-negative-payload-len", "CRASH", 400),
        ("hang-on-empty-frame", "HANG", 4),
        ("burst-loses-acked", "CORRUPTION", 64),
    ],
)
def test_each_fault_quirk_is_found_and_its_reproducer_replays(
    tmp_path: Path, quirk: str, finding: str, minimized_max: int
) -> None:
    proc = fuzz(tmp_path, "--cases", str(BUDGET), "--seed", "0", "--quirk", quirk)
    assert proc.returncode == 1, proc.stderr
    assert f"{finding}:" in proc.stderr
    found = [yaml.safe_load(p.read_text()) for p in reproducers(tmp_path)]
    ours = [f for f in found if f["finding"] == finding]
    assert ours, found
    repro = ours[0]
    assert repro["broker_quirks"] == [quirk]
    assert repro["size"]["bytes"] <= min(minimized_max, repro["original"]["bytes"])
    assert repro["size"]["writes"] == 1
    path = reproducers(tmp_path)[[f["finding"] for f in found].index(finding)]
    replay = conformance(tmp_path, "replay", str(path))
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "REPRODUCES" in replay.stdout
    clean = broker.start()
    try:
        replay = conformance(tmp_path, "replay", str(path), "--target", clean.address)
    finally:
        clean.stop()
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "does not reproduce" in replay.stdout


def test_clean_broker_has_no_finding_and_the_same_seed_gives_the_same_rows(tmp_path: Path) -> None:
    first = fuzz(tmp_path, "--cases", "1500", "--seed", "3")
    assert first.returncode == 0, first.stderr
    assert "no finding" in first.stderr
    assert not reproducers(tmp_path)
    a = rows(tmp_path)
    assert [r["index"] for r in a] == list(range(1500))
    assert sum(1 for r in a if r["canary"] == "ok") == 1500 // 250
    second = fuzz(tmp_path, "--cases", "1500", "--seed", "3")
    assert second.returncode == 0, second.stderr
    assert rows(tmp_path) == a


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("fuzz", "--cases", "0"), "--cases must be at least 1"),
        (("fuzz", "--deadline", "-1"), "--deadline must be a positive"),
        (("fuzz", "--quirk", "nope"), "unknown quirk 'nope'"),
        (("fuzz", "--target", "127.0.0.1:1", "--quirk", "hang-on-empty-frame"), "--quirk applies"),
        (("fuzz", "--target", "nohostport"), "is not HOST:PORT"),
        (("replay", "missing.yaml"), "cannot read missing.yaml"),
        (("fuzz", "--cases", "10", "--spark-master", "bogus"), "cannot start Spark"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    proc = conformance(tmp_path, *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unreachable_target_and_bad_reproducer_exit_2(tmp_path: Path) -> None:
    port = net.closed_port()
    proc = conformance(tmp_path, "fuzz", "--target", f"127.0.0.1:{port}", "--cases", "10")
    assert proc.returncode == 2
    assert f"cannot reach target 127.0.0.1:{port}" in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("finding: [unclosed\n")
    proc = conformance(tmp_path, "replay", str(bad))
    assert proc.returncode == 2
    assert "is not a fuzz reproducer" in proc.stderr
    assert "Traceback" not in proc.stderr


EMPTY_FRAME_HANG: dict[str, Any] = {
    "finding": "HANG",
    "requirement": "CUR-TEXT-1",
    "protocol": "cursus",
    "seed": 0,
    "index": 1,
    "mutator": "valid",
    "check": "case",
    "deadline_s": 0.3,
    "cases": [{"writes": ["00000000"]}],
}
"""A hand-written reproducer: one empty frame."""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"protocol": "nope"}, "protocol 'nope' is not one of"),
        ({"cases": []}, "it has no cases"),
        ({"check": "leak"}, "a LEAK is judged over a whole campaign"),
    ],
)
def test_replay_refuses_reproducers_it_cannot_judge(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**EMPTY_FRAME_HANG, **change}))
    proc = conformance(tmp_path, "replay", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_replay_against_a_target_that_never_answers_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(EMPTY_FRAME_HANG))
    with net.silent_server() as (host, port):
        proc = conformance(tmp_path, "replay", str(path), "--target", f"{host}:{port}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "did not take the set-up requests" in proc.stderr
