"""``--all``: one broker serving every protocol, every suite in one run, one fuzz campaign each.

Each test runs the installed command as a user would (``python -m conformance``), in a
scratch folder.  ``run --all`` starts one ``serve --all`` and a child run per protocol, so
these tests take seconds each: the selections keep most of them to one protocol's cases.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import protocols
from conformance.protocols.minikafka import codec as mk
from conformance.run_all import _wait_all_serving
from tests.support.cli import conformance

pytestmark = pytest.mark.xdist_group("all-protocols")


def _serve_all(*extra: str) -> tuple[subprocess.Popen[bytes], dict[str, tuple[str, int]]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "serve", "--all", "--port-base", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    addresses = _wait_all_serving(proc)
    if addresses is None:
        proc.kill()
        _, err = proc.communicate(timeout=20)
        pytest.fail(f"serve --all did not start: {err.decode(errors='replace')}")
    found = {}
    for name, address in addresses.items():
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port))
    return proc, found


def test_serve_all_serves_every_protocol_over_one_engine() -> None:
    proc, found = _serve_all()
    try:
        assert list(found) == list(protocols.names())  # in the documented order
        assert len({port for _, port in found.values()}) == len(found)
        for name, (host, port) in found.items():
            plugin = protocols.get(name)
            with socket.create_connection((host, port), timeout=5) as sock:
                sock.settimeout(5)
                opening = plugin.open({}, plugin.default_revision)
                if opening is None:  # a login would need credentials: the port answered
                    sock.sendall(plugin.framing.frame(plugin.probe_request))
                    assert sock.recv(65536), f"{name} on {port} did not answer its probe"
        # one engine: a message produced over mini-Kafka is there for the next PRODUCE
        host, port = found["minikafka"]
        with socket.create_connection((host, port), timeout=5) as sock:
            for expected in (0, 1):
                sock.sendall(mk.frame(mk.encode_request(mk.Produce("shared", b"x"))))
                reply = sock.recv(64)
                assert mk.decode_reply(reply[4:]) == mk.ProduceOk(expected)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    text = err.decode()
    assert "Traceback" not in text
    for name in protocols.names():
        assert f"stopped serving {name}" in text


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--all", "--protocol", "kafka"], "--all and --protocol exclude each other"),
        (["--all", "--port", "9000"], "with --all use --port-base"),
        (["--all", "--revision", "doc"], "with --all, --revision takes PROTO=VALUE"),
        (["--all", "--revision", "nosuch=doc"], "no protocol 'nosuch'"),
        (["--all", "--quirk", "minikafka=nosuch"], "unknown quirk 'nosuch' of minikafka"),
        (["--all", "--port-base", "65534"], "leaves no room for"),
        (["--port-base", "9000"], "--port-base places the listeners of --all"),
    ],
)
def test_serve_all_refuses_bad_options_in_one_line(
    tmp_path: Path, args: list[str], says: str
) -> None:
    proc = conformance(tmp_path, "serve", *args, timeout=60)
    assert proc.returncode == 2
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_run_all_passes_every_suite_and_writes_one_report(tmp_path: Path) -> None:
    proc = conformance(tmp_path, "run", "--all", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for name in protocols.names():
        assert any(line.startswith(f"PASSED {name} ") for line in lines), proc.stdout
    assert any(line.startswith("PASSED all protocols: ") for line in lines), proc.stdout
    summary = json.loads((tmp_path / "reports" / "results-all.json").read_text())
    assert summary["exit_code"] == 0 and not summary["failing"]
    assert [p["protocol"] for p in summary["protocols"]] == list(protocols.names())
    page = (tmp_path / "reports" / "report.html").read_text()
    for name in protocols.names():
        assert f'id="{name}"' in page
        assert (tmp_path / "reports" / name / "report.html").exists()


def test_run_all_fails_when_one_protocol_fails_and_a_baseline_folder_takes_it(
    tmp_path: Path,
) -> None:
    quirk = ("--quirk", "minikafka=next-offset-of-last")
    select = ("minikafka/consume", "v1line/consume")
    proc = conformance(
        tmp_path, "run", "--all", *select, *quirk, "--write-baseline", "known", timeout=600
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED minikafka doc against embedded" in proc.stdout
    assert "PASSED v1line doc against embedded" in proc.stdout
    assert "failing: minikafka" in proc.stdout and "MK-CONS-5" in proc.stdout
    again = [line for line in proc.stdout.splitlines() if line.strip().startswith("again")]
    assert again and all("--target" not in line for line in again), again  # its port is gone
    assert any("--quirk next-offset-of-last minikafka/consume/5" in line for line in again)
    summary = json.loads((tmp_path / "reports" / "results-all.json").read_text())
    skipped = {p["protocol"] for p in summary["protocols"] if p.get("skipped")}
    assert skipped == set(protocols.names()) - {"minikafka", "v1line"}
    assert (tmp_path / "known" / "minikafka.yaml").exists()
    rerun = conformance(
        tmp_path, "run", "--all", *select, *quirk, "--baseline", "known", timeout=600
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "known failures (baseline)" in rerun.stdout


def test_run_all_selection_that_matches_nothing_is_a_usage_error(tmp_path: Path) -> None:
    proc = conformance(tmp_path, "run", "--all", "nosuch/case", timeout=300)
    assert proc.returncode == 2
    assert "no case was selected in any suite" in proc.stderr


def test_fuzz_all_runs_one_campaign_each_with_one_findings_folder(tmp_path: Path) -> None:
    proc = conformance(
        tmp_path,
        "fuzz",
        "--all",
        "--cases",
        "500",
        "-q",
        "--quirk",
        "minikafka=stop-on-unknown-type",
        "--deadline",
        "0.5",
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fuzz --all: " in proc.stderr and "findings in minikafka" in proc.stderr
    for name in protocols.names():
        assert (tmp_path / "reports" / "fuzz" / name / "cases.parquet").exists()
    found = list((tmp_path / "fuzz" / "findings").glob("*.yaml"))
    assert found and all("MK-" in f.name for f in found), found


def test_fuzz_all_refuses_a_target(tmp_path: Path) -> None:
    proc = conformance(tmp_path, "fuzz", "--all", "--target", "127.0.0.1:9", timeout=60)
    assert proc.returncode == 2
    assert "fuzz --all fuzzes the embedded broker of each protocol" in proc.stderr


def test_a_sigterm_right_after_serving_all_stops_it_cleanly() -> None:
    """The signal handlers are in place before the first 'serving' line: a supervisor that
    stops the broker as soon as it says it serves gets exit 0 and every listener closed."""
    for _ in range(3):
        proc, _found = _serve_all()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert all(f"stopped serving {n}" in err.decode() for n in protocols.names()), err
