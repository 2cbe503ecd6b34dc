"""Findings: the YAML reproducer, and replaying it.

A reproducer holds everything a replay needs: the protocol, the input (one case, or for
a CORRUPTION the cases that lead to it), how to judge it (``check: case`` -- the last
case's own outcome shows the finding; ``check: canary`` -- a canary round trip after
the cases fails), the deadline, and, when it was found on the embedded broker, the quirks
that broker ran with, so that ``conformance replay FILE`` with no target starts the same
broker.

A reproducer is made smaller before it is saved (:mod:`.minimize`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance import protocols
from conformance.errors import ProtocolError
from conformance.fuzz import harness
from conformance.fuzz.campaign import setup
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.fuzz.target import Target
from conformance.plugin import SessionRefused

LEAK_NOT_REPLAYED = (
    "a LEAK is judged over a whole campaign, not one replay: run the campaign again "
    "(conformance fuzz --seed SEED --cases N) against the embedded broker"
)


class BadReproducer(ValueError):
    pass


@dataclass
class Reproducer:
    finding: str
    requirement: str
    protocol: str
    seed: int
    index: int
    mutator: str
    check: str  # "case", "canary" or "leak" (not replayable)
    cases: list[FuzzCase]
    deadline_s: float
    detail: str = ""
    broker_quirks: list[str] = field(default_factory=list)
    original: dict[str, int] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    """The protocol's fuzz options the finding was made with (secret ones left out)."""
    revision: str = ""
    """The protocol revision the campaign fuzzed ('' in reproducers older than the field:
    the protocol's default)."""
    minimized: bool = False
    note: str = ""
    """Why it is not minimized, and how to minimize it."""
    target_output: list[str] = field(default_factory=list)
    """The last lines a target started by the fuzzer printed before the crash or stop."""
    panic: str = ""
    """A PANIC's signature (:mod:`conformance.panics`): a replay must print the same."""

    @property
    def signature(self) -> str:
        return f"{self.finding}:{self.requirement}" + (f":{self.panic}" if self.panic else "")

    def size(self) -> tuple[int, int]:
        """Bytes sent (on every connection) and cases."""
        return sum(len(c.sent) + sum(map(len, c.abandon)) for c in self.cases), len(self.cases)

    def filename(self) -> str:
        return f"{self.finding.lower()}-{self.requirement}-seed{self.seed}-case{self.index}.yaml"

    def as_dict(self) -> dict[str, Any]:
        return {
            "finding": self.finding,
            "signature": self.signature,
            "requirement": self.requirement,
            "protocol": self.protocol,
            "revision": self.revision,
            "seed": self.seed,
            "index": self.index,
            "mutator": self.mutator,
            "detail": self.detail,
            "check": self.check,
            "deadline_s": self.deadline_s,
            "broker_quirks": self.broker_quirks,
            "options": self.options,
            "original": self.original,
            "minimized": self.minimized,
            **({"note": self.note} if self.note else {}),
            **({"panic": self.panic} if self.panic else {}),
            "size": {
                "bytes": self.size()[0],
                "writes": sum(len(c.writes) for c in self.cases),
            },
            "cases": [c.as_dict() for c in self.cases],
            **({"target_output": self.target_output} if self.target_output else {}),
        }

    def save(self, folder: Path) -> Path:
        return self.save_as(folder / self.filename())

    def save_as(self, path: Path) -> Path:
        """Write it to ``path`` whole (a reader never sees half a file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(yaml.safe_dump(self.as_dict(), sort_keys=False, width=100))
        os.replace(partial, path)
        return path

    @classmethod
    def load(cls, path: Path) -> Reproducer:
        try:
            d = yaml.safe_load(path.read_text())
            repro = cls(
                finding=str(d["finding"]),
                requirement=str(d["requirement"]),
                protocol=str(d["protocol"]),
                seed=int(d["seed"]),
                index=int(d["index"]),
                mutator=str(d["mutator"]),
                check=str(d["check"]),
                cases=[FuzzCase.from_dict(c) for c in d["cases"]],
                deadline_s=float(d["deadline_s"]),
                detail=str(d.get("detail", "")),
                broker_quirks=[str(q) for q in d.get("broker_quirks") or []],
                original={str(k): int(v) for k, v in (d.get("original") or {}).items()},
                options=dict(d.get("options") or {}),
                revision=str(d.get("revision") or ""),
                minimized=bool(d.get("minimized") is not False),
                note=str(d.get("note") or ""),
                target_output=[str(line) for line in d.get("target_output") or []],
                panic=str(d.get("panic") or ""),
            )
            if repro.protocol not in protocols.names():
                raise ValueError(
                    f"protocol {repro.protocol!r} is not one of {', '.join(protocols.names())}"
                )
            if not repro.cases:
                raise ValueError("it has no cases")
            if repro.check not in ("case", "canary", "leak"):
                raise ValueError(f"check {repro.check!r} is not case, canary or leak")
            return repro
        except OSError as exc:
            raise BadReproducer(f"cannot read {path}: {exc.strerror or exc}") from None
        except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadReproducer(
                f"{path} is not a fuzz reproducer ({type(exc).__name__}: {exc}); "
                "reproducers are the YAML files a campaign writes under fuzz/findings/"
            ) from None


def protocol_of(path: str) -> str | None:
    """The ``protocol`` a reproducer file names, or None if it cannot be read as one."""
    try:
        d = yaml.safe_load(Path(path).read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return None
    value = d.get("protocol") if isinstance(d, dict) else None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------- replay


class SetupFailed(Exception):
    """The target did not take the protocol's set-up requests: nothing can be judged."""


PANIC_NEEDS_OUTPUT = (
    "a PANIC is judged from what the target prints: replay it with --target-cmd, so that "
    "the tool starts the broker and reads its output"
)


def judge(
    proto: FuzzProtocol,
    case: FuzzCase,
    finding: str,
    target: Target,
    deadline: float,
    panic: str = "",
) -> tuple[bool, str]:
    """Run ``case`` and say whether it shows ``finding`` (see :func:`harness.shows`); a
    PANIC, whether the target printed a panic (of signature ``panic``, when given) while
    the case ran and a probe after it was answered."""
    if finding != "PANIC":
        return harness.shows(proto, case, finding, target.host, target.port, deadline, target.looks)
    if not target.reads_output:
        return False, PANIC_NEEDS_OUTPUT
    mark = target.output_mark()
    result = harness.execute(proto, case, target.host, target.port, deadline, target.looks)
    # it has read the case by then
    harness.serves(proto, target.host, target.port, deadline, target.looks)
    _, found = target.panic_since(mark)
    detail = f"outcome {result.outcome}" + (f": {result.detail}" if result.detail else "")
    if found is None:
        return False, f"{detail}; the target printed no panic"
    if panic and found.signature != panic:
        return False, f"{detail}; the target printed another panic: {found.signature}"
    return True, f"{detail}; the target printed {found.line.strip()!r} ({found.signature})"


def reproduces(proto: FuzzProtocol, repro: Reproducer, target: Target) -> tuple[bool, str]:
    """Run the reproducer once against ``target``: (still reproduces, what happened).

    Raises :class:`SetupFailed` when the target does not take the set-up requests."""
    deadline = repro.deadline_s
    try:
        setup(proto, target, deadline)
    except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
        raise SetupFailed(f"{target.describe()} did not take the set-up requests: {exc}") from None
    *before, last = repro.cases
    for case in before:
        result = harness.execute(proto, case, target.host, target.port, deadline, target.looks)
        if repro.check == "case" and result.finding == repro.finding in ("CRASH", "STOPPED"):
            return True, f"case {case.index}: outcome {result.outcome}: {result.detail}"
    if repro.check == "canary":
        harness.execute(proto, last, target.host, target.port, deadline)
        problem = harness.Canary(proto, target.host, target.port, "replay", deadline).check()
        return bool(problem), problem or "the canary round trip returned what was acknowledged"
    return judge(proto, last, repro.finding, target, deadline, repro.panic)
