"""Fault plans: legal but hostile things the checking broker does on purpose.

A plan is a list of faults, each aimed at one *kind* of request (a Kafka API name, a
Cursus or V1 command, an Iggy command name: what the protocol's checker calls the
request, :attr:`conformance.validate.contract.Seen.kind`) and fired on some of them:
skip ``after`` matching requests, then hit the next ``count`` (``count: 0``: every one
after that).  What a fault does is one of:

``error: NAME``
    answer with the error a real broker gives (the protocol's list: ``--fault list``);
    the request is not served, so nothing is written.
``slow: MS``
    serve the request, hold its reply MS milliseconds.
``split: N``
    serve it, write its reply in N pieces, 10 ms apart.
``reset: FRACTION``
    serve it, write that fraction of the reply (0 to 1) and reset the connection.
``action: NAME``
    a protocol's own fault (Kafka's ``rebalance``), then serve the request.

In YAML (``--fault-plan FILE``)::

    faults:
      - on: Produce
        error: NOT_LEADER_OR_FOLLOWER
        count: 2
      - {on: Fetch, slow: 800, after: 3}

and on the command line (``--fault``, repeatable), the same as ``KIND:KEY=VALUE,...``:
``--fault Produce:error=NOT_LEADER_OR_FOLLOWER,count=2``.  Every mistake is reported as a
:class:`PlanError` naming the fault and what was wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EFFECTS = ("error", "slow", "split", "reset", "action")
SPLIT_GAP_S = 0.01
"""The pause between the pieces of a split reply."""


class PlanError(ValueError):
    """A fault plan that cannot be used; the message says which fault and why."""


@dataclass
class Fault:
    on: str
    effect: str
    value: Any
    after: int = 0
    count: int = 1
    origin: str = ""
    """Where the fault was given: ``plan.yaml fault 2`` or ``--fault Produce:...``."""
    seen: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def describe(self) -> str:
        if self.effect == "error":
            what = f"answer {self.value}"
        elif self.effect == "slow":
            what = f"hold the reply {self.value} ms"
        elif self.effect == "split":
            what = f"write the reply in {self.value} pieces"
        elif self.effect == "reset":
            what = f"reset the connection after {float(self.value):g} of the reply"
        else:
            what = str(self.value)
        which = "every" if self.count == 0 else f"{self.count}"
        skip = f" after the first {self.after}" if self.after else ""
        return f"{self.on}: {what} ({which}{skip})"

    def flag(self) -> str:
        """This fault as a ``--fault`` value."""
        value = f"{float(self.value):g}" if self.effect == "reset" else self.value
        parts = [f"{self.effect}={value}"]
        if self.after:
            parts.append(f"after={self.after}")
        if self.count != 1:
            parts.append(f"count={self.count}")
        return f"{self.on}:{','.join(parts)}"

    def take(self) -> bool:
        """A request this fault aims at arrived: whether the fault fires on it."""
        self.seen += 1
        if self.seen <= self.after:
            return False
        if self.count and self.fired >= self.count:
            return False
        self.fired += 1
        return True


@dataclass
class FaultPlan:
    faults: list[Fault] = field(default_factory=list)

    def fire(self, kind: str) -> Fault | None:
        """The fault, if any, that fires on this request of ``kind``: the first in the plan
        that takes it.  Every fault aimed at ``kind`` counts the request for its ``after``;
        only the one that fires counts it for its ``count``."""
        hit = None
        for fault in self.faults:
            if fault.on != kind:
                continue
            if hit is None:
                if fault.take():
                    hit = fault
            else:
                fault.seen += 1
        return hit

    def __bool__(self) -> bool:
        return bool(self.faults)


def _number(origin: str, key: str, raw: object, kind: type, low: float, high: float | None) -> Any:
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = kind(raw)
        if not math.isfinite(value) or (kind is int and float(raw) != value):  # type: ignore[arg-type]
            raise ValueError
    except (TypeError, ValueError):
        whole = "a whole number" if kind is int else "a number"
        raise PlanError(f"{origin}: {key} must be {whole}, not {raw!r}") from None
    if value < low or (high is not None and value > high):
        span = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise PlanError(f"{origin}: {key} must be {span}, not {raw!r}")
    return value


def make_fault(
    raw: Mapping[str, Any], origin: str, errors: Sequence[str], actions: Sequence[str]
) -> Fault:
    """One fault from its keys; ``errors`` and ``actions``: what the protocol allows."""
    keys = set(raw)
    unknown = keys - {"on", "after", "count", *EFFECTS}
    if unknown:
        raise PlanError(
            f"{origin}: unknown key {sorted(unknown)[0]!r}; a fault has on, one of "
            f"{', '.join(EFFECTS)}, and optionally after and count"
        )
    on = raw.get("on")
    if not isinstance(on, str) or not on:
        raise PlanError(f"{origin}: 'on' must name the kind of request it aims at")
    effects = [k for k in EFFECTS if k in keys]
    if len(effects) != 1:
        raise PlanError(f"{origin}: give exactly one of {', '.join(EFFECTS)}")
    effect = effects[0]
    value = raw[effect]
    if effect == "error":
        if str(value) not in errors:
            raise PlanError(
                f"{origin}: unknown error {value!r}; this protocol's: {', '.join(errors)}"
            )
        value = str(value)
    elif effect == "action":
        if str(value) not in actions:
            known = ", ".join(actions) or "none"
            raise PlanError(f"{origin}: unknown action {value!r}; this protocol's: {known}")
        value = str(value)
    elif effect == "slow":
        value = _number(origin, "slow (milliseconds)", value, int, 1, 600_000)
    elif effect == "split":
        value = _number(origin, "split (pieces)", value, int, 2, 10_000)
    else:
        value = _number(origin, "reset (fraction of the reply)", value, float, 0.0, 1.0)
    after = _number(origin, "after", raw.get("after", 0), int, 0, None)
    count = _number(origin, "count", raw.get("count", 1), int, 0, None)
    return Fault(on, effect, value, after, count, origin)


def parse_flag(text: str, errors: Sequence[str], actions: Sequence[str]) -> Fault:
    """``KIND:KEY=VALUE,...`` (``--fault``) as a fault."""
    origin = f"--fault {text}"
    kind, sep, rest = text.partition(":")
    if not sep or not kind or not rest:
        raise PlanError(f"{origin}: write KIND:KEY=VALUE,... (e.g. Produce:error=NAME,count=2)")
    raw: dict[str, Any] = {"on": kind}
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise PlanError(f"{origin}: {part!r} is not KEY=VALUE")
        raw[key.strip()] = value.strip()
    return make_fault(raw, origin, errors, actions)


def load_plan(path: Path, errors: Sequence[str], actions: Sequence[str]) -> list[Fault]:
    """The faults of a YAML plan file (``faults: [...]``, or a bare list)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"cannot read fault plan {path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PlanError(f"fault plan {path} is not YAML{at}: {why}") from None
    if isinstance(data, dict) and set(data) == {"faults"}:
        data = data["faults"]
    if not isinstance(data, list):
        raise PlanError(f"fault plan {path}: expected 'faults:' with a list of faults")
    out = []
    for i, raw in enumerate(data, 1):
        origin = f"{path.name} fault {i}"
        if not isinstance(raw, dict):
            raise PlanError(f"{origin}: a fault is a mapping (on: ..., error: ...)")
        # YAML 1.1, as PyYAML reads it, takes a bare `on` for the boolean true
        raw = {("on" if key is True else key): value for key, value in raw.items()}
        out.append(make_fault(raw, origin, errors, actions))
    return out
