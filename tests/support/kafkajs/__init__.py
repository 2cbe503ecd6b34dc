"""KafkaJS (npm ``kafkajs``, pinned by this directory's package.json and package-lock.json)
installed once per machine and run: the Node scripts beside this file, each printing one
JSON object a line (see each script's header for its lines).

:func:`install` runs ``npm ci`` into a cache directory keyed by the lockfile's hash
(``$XDG_CACHE_HOME/broker-conformance/kafkajs-<hash>``, else ``~/.cache/...``), under a file
lock (pytest-xdist workers install once between them), in a scratch directory renamed into
place only when complete: an interrupted install is never mistaken for a finished one.
Nothing here is installed by hand: a new lockfile is a new directory.  When npm cannot
install (no registry, no npm) it raises :class:`NotInstalled` with what to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PINNED = str(json.loads((HERE / "package.json").read_text())["dependencies"]["kafkajs"])
"""The KafkaJS version package.json pins (exactly: no range)."""
LOCK_FILES = ("package.json", "package-lock.json")
INSTALL_DEADLINE_S = 240.0
"""Below pytest-timeout's 300 s a test, so a slow registry ends in our message, not a kill."""
NPM_CI = ("ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline")
NPM_NETWORK = ("--fetch-retries", "1", "--fetch-timeout", "30000")


class NotInstalled(RuntimeError):
    """KafkaJS could not be installed (the message says why and what to do)."""


def lock_hash() -> str:
    digest = hashlib.sha256()
    for name in LOCK_FILES:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "broker-conformance"


def _installed(target: Path) -> bool:
    """A finished install (its marker written last) of the pinned version."""
    return (target / "installed").is_file() and _installed_files(target)


def install(deadline_s: float = INSTALL_DEADLINE_S) -> Path:
    """The ``node_modules`` directory holding the pinned KafkaJS (installed now if needed)."""
    npm = shutil.which("npm")
    if npm is None:
        raise NotInstalled(
            "npm is not installed (the KafkaJS interop tests need Node.js and npm: "
            "apt-get install nodejs npm)"
        )
    root = cache_root()
    target = root / f"kafkajs-{lock_hash()}"
    if _installed(target):
        return target / "node_modules"
    root.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + deadline_s
    with open(root / f"kafkajs-{lock_hash()}.lock", "w") as lock:
        while True:  # bounded: another worker's install ends within its own deadline
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise NotInstalled(f"another KafkaJS install holds {lock.name}") from None
                time.sleep(0.2)
        if _installed(target):
            return target / "node_modules"
        work = Path(tempfile.mkdtemp(prefix="kafkajs-partial-", dir=root))
        try:
            for name in LOCK_FILES:
                shutil.copyfile(HERE / name, work / name)
            _npm_ci(npm, work, max(10.0, end - time.monotonic()))
            if not _installed_files(work):
                raise NotInstalled(f"npm ci did not install kafkajs {PINNED} in {work}")
            (work / "installed").write_text(f"kafkajs {PINNED} from lockfile {lock_hash()}\n")
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            if work.exists():
                shutil.rmtree(work)
    return target / "node_modules"


def _installed_files(where: Path) -> bool:
    meta = where / "node_modules" / "kafkajs" / "package.json"
    return meta.is_file() and json.loads(meta.read_text()).get("version") == PINNED


def _npm_ci(npm: str, work: Path, deadline_s: float) -> None:
    try:
        done = subprocess.run(
            [npm, *NPM_CI, *NPM_NETWORK],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=deadline_s,
        )
    except subprocess.TimeoutExpired:
        raise NotInstalled(
            f"npm ci did not finish within {deadline_s:.0f} s: is the npm registry "
            f"reachable ({_registry(npm)})?"
        ) from None
    if done.returncode != 0:
        said = [
            line.strip()
            for line in (done.stderr or done.stdout).splitlines()
            if line.strip() and not line.removeprefix("npm error").strip().startswith("at ")
        ]
        tail = " | ".join(said[:4])
        raise NotInstalled(
            f"npm ci failed (exit {done.returncode}) installing kafkajs {PINNED} from "
            f"{_registry(npm)}; is the registry reachable? npm said: {tail}"
        )


def _registry(npm: str) -> str:
    try:
        got = subprocess.run(
            [npm, "config", "get", "registry"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return "the configured npm registry"
    return got.stdout.strip() or "the configured npm registry"


@dataclass
class Output:
    """What a script printed: its JSON lines, its stderr and how it ended."""

    script: str
    lines: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("event") == kind]

    def why(self) -> str:
        """How the script failed, for an assertion message."""
        errors = self.events("error")
        said = errors[-1] if errors else "no error line"
        return f"{self.script} exit {self.returncode}: {said}; stderr: {self.stderr[-1500:]}"

    def check_done(self) -> None:
        assert self.returncode == 0 and self.events("done"), self.why()


def _argv(node: str, script: str, deadline_s: float, opts: dict[str, object]) -> list[str]:
    args = [node, str(HERE / script), "--deadline-ms", str(int(deadline_s * 1000))]
    for name, value in opts.items():
        args += ["--" + name.replace("_", "-"), str(value)]
    return args


def _env(modules: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NODE_PATH"] = str(modules)
    env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1"
    return env


def _lines(text: str) -> list[dict[str, Any]]:
    out = []
    for raw in text.splitlines():
        if raw.strip():
            try:
                out.append(json.loads(raw))
            except json.JSONDecodeError:
                out.append({"event": "unparsed", "text": raw})
    return out


def run(node: str, modules: Path, script: str, deadline_s: float, **opts: object) -> Output:
    """Run ``script`` to its end; it stops itself at ``deadline_s`` and is killed (by its
    PID, by subprocess) a few seconds later if it did not."""
    out = Output(script)
    try:
        done = subprocess.run(
            _argv(node, script, deadline_s, opts),
            env=_env(modules),
            capture_output=True,
            text=True,
            timeout=deadline_s + 10,
        )
    except subprocess.TimeoutExpired as exc:
        out.lines = _lines(_text(exc.stdout))
        out.stderr = _text(exc.stderr) + f"\n(killed after {deadline_s + 10:.0f} s)"
        return out
    out.lines, out.stderr, out.returncode = _lines(done.stdout), done.stderr, done.returncode
    return out


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


class Running:
    """A script started in the background: its lines read as they come (from the pipe's
    descriptor, no buffer in between) until one of a kind arrives, then the rest up to its
    end. Every wait is bounded; past its deadline the process is killed by its PID."""

    def __init__(self, node: str, modules: Path, script: str, deadline_s: float, **opts: object):
        self.output = Output(script)
        self.end = time.monotonic() + deadline_s + 10
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - closed by finish()
        self.proc = subprocess.Popen(
            _argv(node, script, deadline_s, opts),
            env=_env(modules),
            stdout=subprocess.PIPE,
            stderr=self.err,
        )
        self.pending = b""
        self.eof = False

    def _read(self, until: float) -> bool:
        """Read what the script printed (waiting until ``until``); False at its end or
        when the time is up."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            self.eof = True
            return False
        self.pending += chunk
        *whole, self.pending = self.pending.split(b"\n")
        self.output.lines += _lines(b"\n".join(whole).decode(errors="replace"))
        return True

    def wait_for(self, kind: str, within_s: float) -> dict[str, Any] | None:
        """The first line of ``kind``; None if the script ended or ``within_s`` passed."""
        until = min(self.end, time.monotonic() + within_s)
        seen = 0
        while True:
            for line in self.output.lines[seen:]:
                if line.get("event") == kind:
                    return line
            seen = len(self.output.lines)
            if self.eof or not self._read(until):
                return None

    def finish(self) -> Output:
        if self.err.closed:  # finished already
            return self.output
        while not self.eof and self._read(self.end):
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(max(0.1, self.end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                self.output.stderr = "(killed: past its deadline)\n"
        self.output.lines += _lines(self.pending.decode(errors="replace"))
        self.pending = b""
        self.err.seek(0)
        self.output.stderr += self.err.read().decode(errors="replace")
        self.err.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.output.returncode = self.proc.returncode
        return self.output

    def stop(self) -> Output:
        """Kill it if it still runs; what it printed."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.end = min(self.end, time.monotonic() + 5)
        return self.finish()
