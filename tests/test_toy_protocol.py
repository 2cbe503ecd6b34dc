"""Adding a protocol is its folders, its vectors and one registration: the toy proves it.

The toy protocol (``tests/toy/``) registers itself with an entry point in the group
``conformance.protocols``, written here into a throw-away ``*.dist-info`` on PYTHONPATH,
exactly as an installed third-party package would.  Nothing in the ``conformance``
package names it, yet it runs through ``conformance run`` (embedded broker, a
``--target``, a spec quirk), ``serve``, ``fuzz``, ``replay`` and the vector loader, with its
own option (``--toy-password``, secret) and its session opener (HELLO) in every connection.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import protocols, vectors
from conformance.wire.framing import Deframer
from tests.support import broker

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Register the toy protocol for this process and every subprocess it starts."""
    site = tmp_path / "site"
    info = site / "conformance_toy-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: conformance-toy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[conformance.protocols]\ntoy = tests.toy.plugin:PLUGIN\n"
    )
    path = os.pathsep.join(filter(None, [str(site), str(ROOT), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(protocols, "_loaded", {})  # forget the toy when the test ends
    return tmp_path


def conformance(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def toy_fuzz(cwd: Path, cases: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """A short toy campaign: rows under ``out/``, reproducers under ``found/``."""
    options = ["--canary-every", "100", "--deadline", "1", "-q", "--out", "out"]
    return conformance(
        "fuzz",
        "--protocol",
        "toy",
        "--cases",
        cases,
        *options,
        "--findings",
        "found",
        *extra,
        cwd=cwd,
    )


def results(reports: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((reports / "results.json").read_text())
    return data


def test_a_plugin_installed_by_pip_is_found(tmp_path: Path) -> None:
    """The entry point written by a real build (pip and setuptools, not this test) works."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61", "wheel"]\n'
        'build-backend = "setuptools.build_meta"\n'
        '[project]\nname = "conformance-toy"\nversion = "1.0"\n'
        '[project.entry-points."conformance.protocols"]\ntoy = "conformance_toy:PLUGIN"\n'
        '[tool.setuptools]\npy-modules = ["conformance_toy"]\n'
    )
    (project / "conformance_toy.py").write_text("from tests.toy.plugin import PLUGIN as PLUGIN\n")
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site)]
    built = subprocess.run([*pip, str(project)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    r = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--protocol", "toy", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "toy/login/1" in r.stdout and "3 case(s) selected" in r.stdout
    assert "Warning" not in r.stdout + r.stderr


def test_the_toy_is_not_known_without_its_entry_point() -> None:
    assert "toy" not in protocols.names()
    with pytest.raises(protocols.UnknownProtocol, match="choose one of: cursus"):
        protocols.get("toy")


def test_help_lists_the_toy_options_under_its_name(toy: Path) -> None:
    r = conformance("run", "--protocol", "toy", "--help", cwd=toy)
    assert r.returncode == 0, r.stderr
    assert "toy options:" in r.stdout and "--toy-password" in r.stdout
    assert "--compression" not in r.stdout  # Cursus's options stay Cursus's
    cursus = conformance("run", "--help", cwd=toy)
    assert "cursus options:" in cursus.stdout and "--toy-password" not in cursus.stdout
    listed = conformance("serve", "--protocol", "toy", "--quirk", "list", cwd=toy)
    assert "get-off-by-one" in listed.stdout and "TOY-GET-1" in listed.stdout


def test_run_passes_against_the_embedded_toy_broker(toy: Path) -> None:
    r = conformance(
        "run", "--protocol", "toy", "--reports", "r", "--toy-password", "s3", "--wire-full", cwd=toy
    )  # --wire-full: the bytes of passing cases too, to see the opener's
    assert r.returncode == 0, r.stdout + r.stderr
    data = results(toy / "r")
    assert data["protocol"] == "toy" and data["revision"] == "v1"
    assert {c["case_id"]: c["verdict"] for c in data["cases"]} == {
        "toy/framing/1": "PASS",
        "toy/login/1": "PASS",
        "toy/data/1": "PASS",
    }
    assert "toy_password" not in data["options"]  # a secret option is not recorded
    sent = [e for c in data["cases"] for e in c["wire_log"] if e["dir"] == "send"]
    hello = [e for e in sent if b"HELLO s3".hex() in e["hex"]]
    assert hello and hello[0]["summary"] == "session opener", "the session opener did not run"
    # the wire log is labelled by the toy's annotator
    assert ["word0", 4, 9, "HELLO"] in hello[0]["fields"]


def test_run_against_a_served_toy_broker_uses_the_password(toy: Path) -> None:
    with broker.running("--toy-password", "open-sesame", protocol="toy") as b:
        good = conformance(
            "run",
            "--protocol",
            "toy",
            "--target",
            b.address,
            "--toy-password",
            "open-sesame",
            "--reports",
            "good",
            cwd=toy,
        )
        assert good.returncode == 0, good.stdout + good.stderr
        bad = conformance(
            "run", "--protocol", "toy", "--target", b.address, "--reports", "bad", cwd=toy
        )
        assert bad.returncode == 2, bad.stdout + bad.stderr  # only the user can fix it
        assert "refused the toy session" in bad.stderr and "--toy-password" in bad.stderr
        assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
        with socket.create_connection((b.host, b.port), timeout=5) as raw:  # the real wire
            raw.sendall(b"\x0d\x00\x00\x00HELLO toy")  # length 13 counts its own 4 bytes
            assert raw.recv(64) == b"\x06\x00\x00\x00NO"


def test_fuzz_finds_a_crash_behind_the_login_and_replay_reproduces_it(toy: Path) -> None:
    """The fault is reachable only on a connection that logged in: a fuzzer that skipped
    the session opener would get ``ERR login first`` for every case and find nothing."""
    r = toy_fuzz(toy, "500", "--quirk", "crash-on-nul-value")
    assert r.returncode == 1, r.stdout + r.stderr
    (found,) = sorted((toy / "found").glob("crash-*.yaml"))
    assert "TOY-PUT-1" in found.name
    replay = conformance("replay", str(found), cwd=toy)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "REPRODUCES" in replay.stdout
    # the toy's own options are taken wherever the reproducer stands among the words
    again = conformance("replay", "--timeout", "1", "--toy-password", "toy", str(found), cwd=toy)
    assert again.returncode == 1 and "REPRODUCES" in again.stdout, again.stdout + again.stderr
    prefix = conformance("fuzz", "--proto", "toy", "--cases", "1", cwd=toy)
    assert prefix.returncode == 2 and "unrecognized arguments: --proto" in prefix.stderr


def test_a_clean_toy_campaign_has_no_finding(toy: Path) -> None:
    r = toy_fuzz(toy, "300")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (toy / "found").exists()


def test_the_vector_loader_uses_the_toy_schema(toy: Path) -> None:
    loaded = vectors.load("toy")
    assert [v.id for v in loaded][:2] == ["toy/frame/ping", "toy/put/first"]
    ping = loaded[0]
    assert ping.payload == b"PING" and ping.message == b"PING"
    schema = protocols.get("toy").vectors()
    assert schema.reply_mismatch(ping.reply or {}, b"PONG", ping.payload) is None
    assert schema.reply_mismatch(ping.reply or {}, b"PANG", ping.payload) is not None
    folder = toy / "bad" / "toy"
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_text(
        "- {id: toy/x/y, requirements: [TOY-PUT-1], direction: request, description: d,\n"
        "   hex: '08000000 50494e47', decoded: {word: [PING]}}\n"
    )
    with pytest.raises(vectors.VectorError, match=r"toy/x/y.*'decoded'.*words"):
        vectors.load("toy", toy / "bad")


def next_frame(sock: socket.socket, deframer: Deframer) -> bytes:
    """The next frame on ``sock`` (whose timeout bounds each read); a close fails."""
    got: list[bytes] = []
    while not got:
        data = sock.recv(4096)
        assert data, "the toy broker closed the connection"
        got = deframer.feed(data)
    return got[0]


def test_each_toy_vector_gets_its_reply_from_the_toy_broker(toy: Path) -> None:
    plugin = protocols.get("toy")
    schema = plugin.vectors()
    with broker.running(protocol="toy") as b:
        for v in vectors.load("toy"):
            if v.reply is None:
                continue
            with socket.create_connection((b.host, b.port), timeout=5) as sock:
                deframer = plugin.framing.deframer("reply")
                for step in v.setup:
                    sock.sendall(
                        plugin.framing.frame(step.encode()) if isinstance(step, str) else step
                    )
                    next_frame(sock, deframer)
                sock.sendall(v.frame)
                got = [next_frame(sock, deframer)]
                assert schema.reply_mismatch(v.reply, got[0], v.payload) is None, (v.id, got)
