"""SASL credentials as the Kafka plug-in's options: the session opener (sans-IO, against
the broker's session), the option parsers, and ``conformance run`` with and without
credentials, against the embedded broker and a served one that requires SASL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import Engine
from conformance.plugin import SessionRefused, open_session
from conformance.protocols.kafka.broker import KafkaConfig, KafkaFrontend
from conformance.protocols.kafka.plugin import PLUGIN
from conformance.protocols.kafka.sasl_opening import mechanisms_list, users_list
from tests.support import broker as support


def _open(values: dict[str, Any], revision: str = "apache", **config: Any) -> Any:
    """Run the plug-in's opener against a broker session in this process."""
    kafka = KafkaConfig(revision=revision, **config)
    session = KafkaFrontend(Engine(), kafka).new_session("127.0.0.1:4444")
    replies: list[bytes] = []

    def send(frame: bytes) -> None:
        out = session.handle(frame[4:])
        replies.extend(r[4:] for r in out.replies)

    opening = PLUGIN.open(values, revision)
    result = open_session(opening, send, lambda: replies.pop(0))
    assert session.sasl is None or session.sasl.open
    return result


@pytest.mark.parametrize("revision", ["apache", "doc"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_opener_authenticates(revision: str, mechanism: str) -> None:
    values = {"sasl_username": "al", "sasl_password": "pw", "sasl_mechanism": mechanism}
    last = _open(values, revision, sasl_users=(("al", "pw"),))
    assert last["error_code"] == 0 and last["session_lifetime_ms"] == 0


def test_without_credentials_there_is_no_opener() -> None:
    assert PLUGIN.open({"sasl_mechanism": "PLAIN"}, "apache") is None


@pytest.mark.parametrize(
    ("values", "config", "words"),
    [
        ({"sasl_password": "bad"}, {}, "SASL_AUTHENTICATION_FAILED (58)"),
        ({"sasl_mechanism": "SCRAM-SHA-256"}, {"sasl_mechanisms": ("PLAIN",)}, "enabled: PLAIN"),
        ({}, {"sasl_users": ()}, "ILLEGAL_SASL_STATE (34)"),
    ],
)
def test_the_opener_says_in_one_line_why_it_was_refused(
    values: dict[str, Any], config: dict[str, Any], words: str
) -> None:
    config.setdefault("sasl_users", (("al", "pw"),))
    given = {"sasl_username": "al", "sasl_password": "pw", "sasl_mechanism": "PLAIN", **values}
    with pytest.raises(SessionRefused, match=words.replace("(", r"\(").replace(")", r"\)")) as exc:
        _open(given, **config)
    assert "\n" not in str(exc.value)


def test_the_option_parsers() -> None:
    assert users_list("a:x,b:y:z") == (("a", "x"), ("b", "y:z"))
    assert mechanisms_list("plain, SCRAM-SHA-512") == ("PLAIN", "SCRAM-SHA-512")
    for bad in ("a", "a:", ":x", "a:x,"):
        with pytest.raises(ValueError, match="NAME:SECRET"):
            users_list(bad)
    with pytest.raises(ValueError, match="the mechanisms are"):
        mechanisms_list("GSSAPI")


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    reports = tmp_path / "reports"
    command = [sys.executable, "-m", "conformance", "run", "--protocol", "kafka"]
    command += ["--revision", "apache", "--reports", str(reports), *args, "kafka/sasl"]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    results = reports / "results.json"
    cases = json.loads(results.read_text())["cases"] if results.exists() else []
    return proc, cases


@pytest.mark.slow
def test_run_with_credentials_passes_every_sasl_case(tmp_path: Path) -> None:
    proc, cases = _run(
        tmp_path,
        "--sasl-username",
        "u",
        "--sasl-password",
        "p",
        "--sasl-mechanism",
        "SCRAM-SHA-512",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert len(cases) == 11 and {c["verdict"] for c in cases} == {"PASS"}
    assert "--sasl-password" not in proc.stdout  # secrets stay out of the reproducers


@pytest.mark.slow
def test_run_without_credentials_leaves_the_sasl_cases_unsupported(tmp_path: Path) -> None:
    proc, cases = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    verdicts = {c["case_id"]: c["verdict"] for c in cases}
    assert verdicts.pop("kafka/sasl/11") == "PASS"
    assert set(verdicts.values()) == {"UNSUPPORTED"}
    assert all("no SASL credentials" in c["message"] for c in cases if c["verdict"] != "PASS")


@pytest.mark.slow
def test_wrong_credentials_are_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    served = support.start(
        "--revision", "apache", "--sasl-username", "u", "--sasl-password", "p", protocol="kafka"
    )
    try:
        proc, _ = _run(
            tmp_path, "--target", served.address, "--sasl-username", "u", "--sasl-password", "x"
        )
    finally:
        served.stop()
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "SASL_AUTHENTICATION_FAILED (58)" in lines[0], proc.stderr
    assert lines[0].endswith("check --sasl-username --sasl-password --sasl-mechanism")
    assert "Traceback" not in proc.stderr
