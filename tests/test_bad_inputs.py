"""Bad input to every command ends in one clear line on stderr and exit 2, never a traceback:
ports, counts, seconds, files, selections, fault specs, target commands (DESIGN.md, "Exit
codes").  Each row runs the installed command in a subprocess, as a user would; none of them
starts a broker that serves a case."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import conformance

BAD = [
    # run
    (["run", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
    (["run", "--timeout", "nan"], "--timeout must be a positive number of seconds"),
    (["run", "--wire-keep", "3"], "--wire-keep must be at least 16 bytes"),
    (["run", "--jobs", "0"], "-j/--jobs must be at least 1"),
    (["run", "--reports", "/proc/nope/r"], "cannot write --reports /proc/nope/r"),
    (["run", "--baseline", "/nonexistent.yaml"], "cannot read baseline /nonexistent.yaml"),
    (["run", "--target", "127.0.0.1:99999"], "is not HOST:PORT"),
    (["run", "--target", "127.0.0.1:1"], "cannot reach target 127.0.0.1:1"),
    (["run", "--revision", "nosuch"], "unknown revision 'nosuch' of cursus"),
    (["run", "--quirk", "nosuch"], "unknown quirk 'nosuch' of cursus"),
    (["run", "cursus/no-such-area"], "no case was selected"),
    (["run", "--skip", "cursus"], "no case was selected"),
    (["run", "--target-cmd", "x {port}", "--target-start-timeout", "nan"], "positive number"),
    (["run", "--target-cmd", "x"], "has no {port}"),
    (["run", "--all", "--target", "kafka"], "takes PROTO=VALUE"),
    (["run", "--all", "--target", "nosuch=127.0.0.1:1"], "no protocol 'nosuch'"),
    (["run", "--all", "--target", "kafka=127.0.0.1:1"], "cannot reach target 127.0.0.1:1"),
    # serve
    (["serve", "--port", "99999"], "99999 is not a port number (0 to 65535)"),
    (["serve", "--port", "-1"], "-1 is not a port number (0 to 65535)"),
    (["serve", "--all", "--port-base", "65534"], "leaves no room for 5 ports"),
    (["serve", "--data-dir", "/proc/nope/d"], "cannot use --data-dir /proc/nope/d"),
    (["serve", "--fault", "nosuch"], "go with --validate"),
    (["serve", "--quirk", "nosuch"], "unknown quirk 'nosuch' of cursus"),
    # fuzz
    (["fuzz", "--cases", "-5"], "--cases must be at least 1"),
    (["fuzz", "--cases", "abc"], "invalid int value: 'abc'"),
    (["fuzz", "--deadline", "nan"], "--deadline must be a positive number of seconds"),
    (["fuzz", "--connections", "100000"], "--connections must be from 1 to 512"),
    (["fuzz", "--canary-every", "0"], "--canary-every must be at least 1"),
    (["fuzz", "--instances", "0"], "--instances must be from 1 to 32"),
    (["fuzz", "--instances", "2"], "--instances is for a broker the fuzzer starts"),
    (["fuzz", "--spare"], "--spare is for a broker the fuzzer starts"),
    (["fuzz", "--max-time", "-1"], "--max-time must be a positive number of seconds"),
    (["fuzz", "--seed", "-1"], "--seed must be 0 or more"),
    (["fuzz", "--target", "127.0.0.1:1"], "cannot reach target 127.0.0.1:1"),
    (["fuzz", "--out", "/proc/nope/o", "--cases", "1"], "cannot write --out /proc/nope/o"),
    (["fuzz", "--target-cmd", "x {port}", "--panic-pattern", "("], "not a regular expression"),
    (["fuzz", "--target-cmd", "/nonexistent/broker {port}"], "cannot run --target-cmd"),
    # replay and report
    (["replay", "/nonexistent.yaml"], "cannot read /nonexistent.yaml"),
    (["replay", "notes.yaml"], "is not a fuzz reproducer"),
    (["report", "/nonexistent"], "/nonexistent: no such file"),
]


@pytest.mark.parametrize(("argv", "said"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path: Path, argv: list[str], said: str) -> None:
    (tmp_path / "notes.yaml").write_text("- a list, not a reproducer\n")
    done = conformance(tmp_path, *argv, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stdout[-1000:], done.stderr[-1000:])
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"conformance {argv[0]}"), done.stderr
    assert said in last, done.stderr
