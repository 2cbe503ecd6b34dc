"""``conformance run --target-cmd`` against brokers that crash, stop and panic, for every
protocol: exactly the case that sends the fatal request is convicted, with the target's
message in its record, and every other case gets the verdict it gets from the same broker
when nothing breaks.

The faulty target is ``tests/support/faulty_proxy.py``: a relay in front of a reference
broker that breaks when a client sends bytes matching a trigger.  Each trigger is a topic
(or stream, or group) name that exactly one case makes for itself (``<name>-<10 hex>``),
so exactly one case sends it.  The verdicts of the same relay with a trigger that never
matches are what every other case must get.  Every command runs as a subprocess in
``tmp_path``; the targets are started and stopped by the tool under test.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import conformance

PROXY = Path(__file__).resolve().parents[1] / "support" / "faulty_proxy.py"
NEVER = "(?!)"
"""A trigger that matches nothing: the relay never breaks."""


@dataclass(frozen=True)
class Fatal:
    protocol: str
    trigger: str
    case: str
    """The one case that sends the trigger."""
    verdict: str
    """Its verdict when convicted: FAIL for a MUST case, WARN for a SHOULD one."""
    options: tuple[str, ...] = ()
    """Options given to both ``serve`` (behind the relay) and ``run``."""
    select: tuple[str, ...] = ()
    """The cases run (default: all)."""


V1LINE_TIMES = ("--ack-timeout-ms", "400", "--replica-lag-timeout-ms", "500")
FATAL = {
    "cursus": Fatal(
        "cursus",
        "status-[0-9a-f]{10}",
        "cursus/ack/4",
        "FAIL",
        ("--compression", "gzip", "--keepalive-ms", "300"),
    ),
    "v1line": Fatal(
        "v1line",
        "negative-[0-9a-f]{10}",
        "v1line/consume/5",
        "WARN",
        (*V1LINE_TIMES, "--session-timeout-ms", "600"),
    ),
    "minikafka": Fatal("minikafka", "layout-[0-9a-f]{10}", "minikafka/consume/1", "FAIL"),
    "iggy": Fatal("iggy", "getgroup-[0-9a-f]{10}", "iggy/groups/2", "FAIL"),
    "kafka": Fatal(
        "kafka",
        "doomed-[0-9a-f]{10}",
        "kafka/admin/6",
        "FAIL",
        ("--join-delay-ms", "50", "--consumer-session-timeout-ms", "3000"),
        ("kafka/admin", "kafka/produce", "kafka/framing"),
    ),
}


def proxy_command(fatal: Fatal, fault: str, trigger: str, *extra: str) -> str:
    words = [sys.executable, str(PROXY), "--port", "{port}", "--trigger", trigger]
    words += ["--fault", fault, *extra, "--", "--protocol", fatal.protocol]
    if fatal.protocol == "kafka":
        words += ["--revision", "apache"]
    return shlex.join([*words, *fatal.options])


def run(
    tmp: Path, fatal: Fatal, command: str, name: str, *extra: str
) -> tuple[Any, dict[str, Any]]:
    reports = tmp / name
    args = ["run", "--protocol", fatal.protocol, "--target-cmd", command, "--reports", str(reports)]
    if fatal.protocol == "kafka":
        args += ["--revision", "apache"]
    done = conformance(tmp, *args, *fatal.options, *extra, *fatal.select, timeout=600)
    results = json.loads((reports / "results.json").read_text())
    return done, results


def verdicts(results: dict[str, Any]) -> dict[str, str]:
    return {c["case_id"]: c["verdict"] for c in results["cases"]}


_CLEAN: dict[str, dict[str, str]] = {}


def clean(tmp: Path, fatal: Fatal, *extra: str) -> dict[str, str]:
    """The verdicts of every case through a relay that never breaks (once per protocol and
    options)."""
    key = f"{fatal.protocol} {extra}"
    if key not in _CLEAN:
        done, results = run(tmp, fatal, proxy_command(fatal, "crash", NEVER), "clean", *extra)
        assert not results["target_events"], done.stdout[-3000:]
        _CLEAN[key] = verdicts(results)
    return _CLEAN[key]


def convicted(results: dict[str, Any], fatal: Fatal, kind: str) -> dict[str, Any]:
    """The one case with a target event: ``fatal.case``, convicted of ``kind``."""
    events = results["target_events"]
    assert [(e["case_id"], e["kind"], e["reproduced"]) for e in events] == [
        (fatal.case, kind, True)
    ]
    case = next(c for c in results["cases"] if c["case_id"] == fatal.case)
    assert case["verdict"] == fatal.verdict, case["message"]
    assert case["violated"] in case["requirements"]
    assert case["target_event"]["kind"] == kind
    assert "lost" not in case
    (judged,) = case["evidence"]  # the last request the case sent, the one that did it
    entry = case["wire_log"][judged["entry"]]
    assert entry["dir"] == "send"
    return case


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(FATAL))
def test_a_crash_convicts_exactly_the_case_that_sent_the_fatal_request(
    tmp_path: Path, protocol: str
) -> None:
    fatal = FATAL[protocol]
    expected = clean(tmp_path, fatal)
    done, results = run(tmp_path, fatal, proxy_command(fatal, "crash", fatal.trigger), "crash")
    assert done.returncode == 1, done.stderr
    case = convicted(results, fatal, "crash")
    assert case["message"].startswith("the target crashed during this case: exit status 2")
    assert "panic: runtime error: slice bounds out of range [-1:]" in case["target_output"]
    assert case["target_event"]["panic"]["signature"] == "Go panic at log.go:87"
    sent = bytes.fromhex(case["wire_log"][case["evidence"][0]["entry"]]["hex"])
    assert fatal.trigger.split("-")[0].encode() in sent
    others = {k: v for k, v in verdicts(results).items() if k != fatal.case}
    assert others == {k: v for k, v in expected.items() if k != fatal.case}
    # what a user reads: the crash first, with the panic, and the summary says so
    out = done.stdout
    heads = [line for line in out.splitlines() if line.startswith(("FAIL ", "WARN ", "ERROR "))]
    assert heads[0].startswith(f"{fatal.verdict} CRASH {fatal.case} "), heads
    assert "output panic: runtime error" in out
    assert "the target crashed in 1 case" in out.splitlines()[-2]
    bugs = (tmp_path / "crash" / "bugs.md").read_text()
    assert f"## {fatal.verdict} CRASH" in bugs and "### What the target printed" in bugs
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["stop", "panic"])
@pytest.mark.parametrize("protocol", sorted(FATAL))
def test_a_stop_or_a_panic_convicts_exactly_the_case_that_sent_the_fatal_request(
    tmp_path: Path, protocol: str, fault: str
) -> None:
    fatal = dataclasses.replace(FATAL[protocol], select=(FATAL[protocol].case.rsplit("/", 1)[0],))
    quick = ("--timeout", "2")
    expected = clean(tmp_path, fatal, *quick)
    command = proxy_command(fatal, fault, fatal.trigger)
    done, results = run(tmp_path, fatal, command, fault, *quick)
    assert done.returncode == 1, done.stderr
    case = convicted(results, fatal, fault)
    output = "\n".join(case["target_output"])
    if fault == "stop":
        assert "stopped serving during this case" in case["message"]
        assert case["target_event"]["panic"]["signature"].startswith(
            "java.lang.IllegalArgumentException at broker.RequestDecoder.decode"
        )
    else:
        assert "lives on" in case["message"]
        assert "panicked at src/handler/produce.rs:211:38" in output
        assert case["target_event"]["panic"]["signature"] == (
            "Rust panic at src/handler/produce.rs:211"
        )
    others = {k: v for k, v in verdicts(results).items() if k != fatal.case}
    assert others == {k: v for k, v in expected.items() if k != fatal.case}


@pytest.mark.slow
def test_a_crash_that_does_not_happen_again_is_an_error_not_reproduced(tmp_path: Path) -> None:
    fatal = dataclasses.replace(FATAL["cursus"], select=("cursus/ack",))
    once = tmp_path / "broke-once"
    command = proxy_command(fatal, "crash", fatal.trigger, "--once", str(once))
    done, results = run(tmp_path, fatal, command, "once")
    assert done.returncode == 1, done.stderr
    assert [(e["case_id"], e["reproduced"]) for e in results["target_events"]] == [
        (fatal.case, False)
    ]
    case = next(c for c in results["cases"] if c["case_id"] == fatal.case)
    assert case["verdict"] == "ERROR"
    assert "not reproduced" in case["message"]
    assert [c["case_id"] for c in results["cases"] if c["verdict"] != "PASS"] == [fatal.case]


@pytest.mark.slow
def test_a_target_that_does_not_come_back_ends_the_run_in_one_line(tmp_path: Path) -> None:
    fatal = dataclasses.replace(FATAL["cursus"], select=("cursus/ack",))
    gone = tmp_path / "crashed"
    command = proxy_command(fatal, "crash", fatal.trigger, "--fail-start", str(gone))
    done, results = run(tmp_path, fatal, command, "gone")
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("conformance run: the target did not serve again after a restart")
    assert "exited with code 3" in last
    assert "Traceback" not in done.stderr
    case = next(c for c in results["cases"] if c["case_id"] == fatal.case)
    assert case["verdict"] == "ERROR" and "was not run again" in case["message"]
    ran = [c["case_id"] for c in results["cases"]]
    assert ran[-1] == fatal.case  # nothing ran after it


@pytest.mark.slow
def test_run_all_starts_each_named_broker_and_convicts_its_crash(tmp_path: Path) -> None:
    fatal = FATAL["minikafka"]
    crashing = f"minikafka={proxy_command(fatal, 'crash', fatal.trigger)}"
    clean_iggy = f"iggy={proxy_command(FATAL['iggy'], 'crash', NEVER)}"
    reports = tmp_path / "all"
    done = conformance(
        tmp_path, "run", "--all", "--target-cmd", crashing, "--target-cmd", clean_iggy,
        "--reports", str(reports), timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    every = json.loads((reports / "results-all.json").read_text())
    assert sorted(p["protocol"] for p in every["protocols"]) == ["iggy", "minikafka"]
    mk = json.loads((reports / "minikafka" / "results.json").read_text())
    convicted(mk, fatal, "crash")
    iggy = json.loads((reports / "iggy" / "results.json").read_text())
    # (through the relay, iggy/system/6 FAILs: the broker lists the port behind the relay)
    assert not iggy["target_events"] and iggy["counts"]["PASS"] >= len(iggy["cases"]) - 1
    assert f"FAILED minikafka doc against {sys.executable}" in done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--target", "iggy=127.0.0.1:1", "--target-cmd", "iggy=b {port}"],
            "--target and --target-cmd both name iggy",
        ),
        (["--target-cmd", "iggy=b {port}", "--cross"], "drop --cross or give --target"),
        (["--target-cmd", "b {port}"], "takes PROTO=VALUE"),
        (["--target-cmd", "iggy=b {port}", "--quirk", "iggy=any-password"], "embedded broker only"),
    ],
)
def test_run_all_target_cmd_usage_errors_are_one_line(
    tmp_path: Path, args: list[str], said: str
) -> None:
    done = conformance(tmp_path, "run", "--all", *args, timeout=60)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


USAGE = [
    (("--target-cmd", "broker --port 1"), "has no {port}"),
    (("--target-cmd", "broker --port {port}", "-j", "2"), "drop -j/--jobs"),
    (("--target-cmd", "broker '--port {port}"), "cannot be split into words"),
    (("--target-cmd", "/nonexistent/broker {port}"), "cannot run --target-cmd"),
    (("--target-cmd", "b {port}", "--panic-pattern", "("), "is not a regular expression"),
    (("--target-cmd", "b {port}", "--target-start-timeout", "0"), "positive number of seconds"),
    (("--target-cmd", "b {port}", "--quirk", "x"), "applies to the embedded broker only"),
    (("--target-cmd", "b {port}", "--target", "127.0.0.1:1"), "not allowed with argument"),
    (
        (f"--target-cmd={shlex.quote(sys.executable)} -c 'raise SystemExit(4)' {{port}}",),
        "exited with code 4",
    ),
]


@pytest.mark.parametrize(("args", "said"), USAGE)
def test_bad_target_commands_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = conformance(tmp_path, "run", "--protocol", "minikafka", *args, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
