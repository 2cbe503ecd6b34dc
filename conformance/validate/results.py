"""The report model (``results.json``) of a ``serve --validate`` session.

The same document ``conformance run`` writes, so every report (terminal, HTML, JUnit,
Allure, ``conformance report``) renders it; ``"mode": "validate"`` tells it apart.  Its
*cases* are the client's verdicts, three kinds:

* ``P/client/REQ-ID``, one per client requirement of the revision: FAIL (a MUST) or WARN
  (a SHOULD) when some request broke it (a MAY broken is UNSUPPORTED), PASS when requests
  were checked against it and none broke it, UNSUPPORTED ("not exercised") when none was;
  its wire log holds the first few violating requests with the frames before them;
* ``P/client/connection/N``, one per client connection: the worst of what its requests
  broke, with its frames as the wire log;
* ``P/client/fault/N``, one per fault that fired: what the client did next (read from the
  frames that followed) against what the client requirement behind it expects.

In a wire log, ``send`` is what the client sent (a request, the whole frame) and ``recv``
what it got back (a reply payload): the suite's directions, seen from the client.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from conformance import __version__
from conformance.annotation import annotate_frame, annotate_payload
from conformance.client import FIELDS_KEEP, HEX_KEEP, json_value
from conformance.errors import ProtocolError
from conformance.evidence import fields_named
from conformance.plugin import Plugin
from conformance.report import SCHEMA_ID, SCHEMA_VERSION, VERDICTS, requirement_rollup
from conformance.spec import Requirement
from conformance.suite.results import rows_of
from conformance.validate.contract import Expectation, Validation
from conformance.validate.ledger import Found, Frame, Ledger
from conformance.validate.reactions import CLOSED, NOTHING, react

logger = logging.getLogger("conformance.validate")

EXAMPLES = 5
"""Violations of one requirement shown with their frames (all are counted)."""
BEFORE = 3
"""Frames of the connection shown before a violating request."""
CONNECTION_ENTRIES = 300
STEPS_SHOWN = 8
"""Next steps after a fault spelled out in its message (all are in its ``fault.next``)."""
BROKEN = {"MUST": "FAIL", "SHOULD": "WARN", "MAY": "UNSUPPORTED"}
LEVELS = ("MUST", "SHOULD", "MAY")


class _Log:
    """Wire-log entries of one case, each frame annotated once, in the order added."""

    def __init__(self, plugin: Plugin, ledger: Ledger, compact: bool) -> None:
        self.plugin = plugin
        self.ledger = ledger
        self.compact = compact
        self.entries: list[dict[str, Any]] = []
        self._at: dict[int, int] = {}

    def add(self, frame: Frame, earlier: tuple[bytes, ...] = ()) -> int:
        if frame.index in self._at:
            return self._at[frame.index]
        entry: dict[str, Any] = {
            "t": round(frame.t, 6),
            "conn": frame.conn,
            "dir": frame.dir,
            "len": frame.size,
            "hex": "",
            "truncated": False,
            "summary": frame.summary,
        }
        if frame.dir != "event" and frame.data is not None:
            if frame.dir == "send":
                read = annotate_frame(self.plugin, frame.data, "request", earlier)
            else:
                read = annotate_payload(self.plugin, frame.data, "reply", earlier)
            entry["summary"] = (
                frame.summary if frame.dir == "send" and frame.summary else read.summary
            )
            if not self.compact:
                entry["hex"] = frame.data[:HEX_KEEP].hex()
                entry["truncated"] = len(frame.data[:HEX_KEEP]) < frame.size
                kept = [s for s in read.fields if s.start < HEX_KEEP][:FIELDS_KEEP]
                if kept:
                    entry["fields"] = [[s.name, s.start, s.end, json_value(s.value)] for s in kept]
        elif frame.dir != "event":
            entry["summary"] = frame.summary or f"{frame.dir} (not kept)"
        self.entries.append(entry)
        self._at[frame.index] = len(self.entries) - 1
        return self._at[frame.index]

    def add_window(self, conn: int, frames: list[int]) -> None:
        """``frames`` of connection ``conn`` (in order), each with the requests before it
        on the connection as context (read once, in one pass)."""
        earlier: deque[bytes] = deque(maxlen=64)
        wanted = set(frames)
        last = max(frames, default=-1)
        for index in self.ledger.connections[conn].frames:
            if index > last:
                break
            frame = self.ledger.frames[index]
            if index in wanted:
                self.add(frame, tuple(earlier))
            if frame.dir == "send" and frame.data is not None:
                with contextlib.suppress(ProtocolError):
                    earlier.extend(self.plugin.framing.deframer("request").feed(frame.data))

    def has(self, frame: int) -> bool:
        return frame in self._at

    def evidence(self, frame: int, names: tuple[str, ...]) -> dict[str, Any]:
        entry = self._at[frame]
        listed = [f[0] for f in self.entries[entry].get("fields", [])]
        judged = [n for n in names if fields_named(n, listed)]
        return {"entry": entry, "fields": judged}


def _around(ledger: Ledger, found: Found) -> list[int]:
    """The frame of a violation with the :data:`BEFORE` frames before it and its reply."""
    frames = ledger.connections[found.conn].frames
    at = frames.index(found.frame)
    return frames[max(0, at - BEFORE) : at + 2]


def _case(
    case_id: str, req: Requirement, verdict: str, message: str, log: _Log, broken: bool = False
) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "title": f"{req.id}, checked on what the clients sent",
        "area": req.area,
        "requirements": [req.id],
        "level": req.level,
        "verdict": verdict,
        "violated": req.id if verdict in ("FAIL", "WARN") else None,
        # a MAY the client went its own way on (not one that was merely not exercised)
        "unsupported": req.id if broken and verdict == "UNSUPPORTED" else None,
        "message": message,
        "duration_s": 0.0,
        "wire_log": log.entries,
        "wire_compact": log.compact,
    }


def requirement_case(
    protocol: str,
    plugin: Plugin,
    ledger: Ledger,
    req: Requirement,
    faults: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The case of one client requirement, from the requests checked against it and the
    ``faults`` cases whose expectation it is."""
    found = ledger.violations_of(req.id)
    checked, conns = ledger.checked_count(req.id)
    mine = [f for f in faults if f["requirements"] == [req.id]]
    if not found and mine:
        order = ("FAIL", "WARN", "UNSUPPORTED")
        missed = sorted(
            (f for f in mine if f["verdict"] != "PASS"), key=lambda f: order.index(f["verdict"])
        )
        numbers = ", ".join(f["case_id"].rsplit("/", 1)[-1] for f in missed or mine)
        if missed:
            verdict = missed[0]["verdict"]
            did = ", ".join(missed[0]["fault"]["did"]) or "nothing"
            how = "inconclusive" if verdict == "UNSUPPORTED" else "not met"
            message = f"{req.id}: {how} after fault {numbers}; what the client did: {did}"
            log = _Log(plugin, ledger, compact=False)
            broke = how == "not met"
            case = _case(f"{protocol}/client/{req.id}", req, verdict, message, log, broke)
            case["wire_log"] = missed[0]["wire_log"]  # the fault's frames are the evidence
            case["evidence"] = missed[0].get("evidence") or []
            return case
        message = f"met after fault{'s' if len(mine) > 1 else ''} {numbers}"
        return _case(
            f"{protocol}/client/{req.id}", req, "PASS", message, _Log(plugin, ledger, True)
        )
    log = _Log(plugin, ledger, compact=not found)
    if found:
        verdict = BROKEN[req.level]
        where = sorted({f.conn for f in found})
        evidence = []
        for f in found[:EXAMPLES]:
            log.add_window(f.conn, _around(ledger, f))
            evidence.append(log.evidence(f.frame, f.violation.fields))
        count = ledger.broken.get(req.id, len(found))
        times = "once" if count == 1 else f"{count} times"
        message = (
            f"{req.id}: broken {times} (connection{'s' if len(where) > 1 else ''} "
            f"{', '.join(map(str, where))}): {found[0].violation.message}"
        )
        case = _case(f"{protocol}/client/{req.id}", req, verdict, message, log, broken=True)
        case["evidence"] = evidence
        return case
    if checked:
        message = (
            f"checked on {checked} request{'s' if checked > 1 else ''} over "
            f"{len(conns)} connection{'s' if len(conns) > 1 else ''}; never broken"
        )
        return _case(f"{protocol}/client/{req.id}", req, "PASS", message, log)
    message = "not exercised: the client sent nothing this requirement applies to"
    return _case(f"{protocol}/client/{req.id}", req, "UNSUPPORTED", message, log)


def connection_case(
    protocol: str, plugin: Plugin, ledger: Ledger, conn: int, reqs: Mapping[str, Requirement]
) -> dict[str, Any]:
    c = ledger.connections[conn]
    found = [f for f in ledger.found if f.conn == conn]
    ranked = sorted(found, key=lambda f: LEVELS.index(reqs[f.violation.requirement].level))
    worst_found = ranked[0] if ranked else None  # the violation of the highest level, first
    worst = BROKEN[reqs[worst_found.violation.requirement].level] if worst_found else None
    checked = sorted(c.checked) or sorted(reqs)[:1]
    first = reqs[worst_found.violation.requirement] if worst_found else reqs[checked[0]]
    log = _Log(plugin, ledger, compact=worst is None)
    log.add_window(conn, c.frames[:CONNECTION_ENTRIES])
    until = f"{c.closed:.1f} s" if c.closed is not None else "the end"
    lifetime = f"open from {c.opened:.1f} s to {until}"
    head = f"client {c.peer}, {lifetime}, {c.requests} request{'s' if c.requests != 1 else ''}"
    if found:
        broken = ", ".join(sorted({f.violation.requirement for f in found}))
        assert worst_found is not None
        message = f"{first.id}: {head}; broke {broken}: {worst_found.violation.message}"
    elif c.requests:
        message = f"{head}; nothing broken"
    else:
        message = f"{head}: sent no whole request"
    case = _case(
        f"{protocol}/client/connection/{conn}", first, worst or "PASS", message, log, bool(found)
    )
    if not c.requests and not found:
        case["verdict"] = "UNSUPPORTED"
    case["requirements"] = checked
    case["title"] = f"connection {conn} from {c.peer}"
    if found:
        case["evidence"] = [
            log.evidence(f.frame, f.violation.fields)
            for f in found[:EXAMPLES]
            if f.frame in log._at
        ]
    return case


def _expectation(validation: Validation, effect: str, value: object) -> Expectation:
    if effect == "error":
        return validation.errors[str(value)]
    if effect == "action":
        return validation.actions[str(value)]
    return validation.transport[effect]


def fault_cases(
    protocol: str,
    plugin: Plugin,
    ledger: Ledger,
    validation: Validation,
    reqs: Mapping[str, Requirement],
) -> list[dict[str, Any]]:
    out = []
    for fired in ledger.fired:
        expected = _expectation(validation, fired.fault.effect, fired.fault.value)
        req = reqs[expected.requirement]
        reaction = react(fired, validation.next_steps)
        met = reaction.met(expected.expect)
        # what was expected, done only after another fault fired: cannot be told apart from
        # an answer to that fault; neither a pass nor a failure
        late = not met and any(tag in reaction.later for tag in expected.expect)
        # a client that sent nothing more may simply have been done, except after a reset,
        # where not coming back is what is judged
        late = late or (reaction.tags == (NOTHING,) and fired.fault.effect != "reset")
        # a reply read whole, then the client closed: it was done, nothing to judge
        done = {NOTHING, CLOSED}
        late = late or (fired.fault.effect in ("slow", "split") and set(reaction.tags) <= done)
        verdict = "PASS" if met else "UNSUPPORTED" if late else BROKEN[req.level]
        shown = list(reaction.steps[:STEPS_SHOWN])
        if len(reaction.steps) > STEPS_SHOWN:
            shown.append(f"{len(reaction.steps) - STEPS_SHOWN} more (see the wire log)")
        then = "; then ".join(shown) or "nothing followed before the broker stopped"
        wanted = " or ".join(expected.expect)
        message = (
            f"{'inconclusive: ' if late else '' if met else req.id + ': '}"
            f"{fired.seen.summary}: {fired.fault.describe()}; "
            f"then {then}. Expected: {wanted}; did: {', '.join(reaction.tags) or 'nothing'}"
            + (f" (after another fault: {', '.join(reaction.later)})" if reaction.later else "")
        )
        log = _Log(plugin, ledger, compact=False)
        log.add_window(fired.conn, [fired.frame])
        for index in ledger.connections[fired.conn].frames:
            if index > fired.frame and ledger.frames[index].dir != "send":
                log.add(ledger.frames[index])
                if ledger.frames[index].dir == "recv":
                    break
        for event in fired.after:
            if event.frame is not None:
                log.add_window(event.conn, [event.frame])
        broke = not met and not late
        case = _case(f"{protocol}/client/fault/{fired.number}", req, verdict, message, log, broke)
        case["title"] = f"fault {fired.number}: {fired.fault.describe()}"
        case["fault"] = {
            "fault": fired.fault.describe(),
            "origin": fired.fault.origin,
            "request": fired.seen.summary,
            "connection": fired.conn,
            "expected": list(expected.expect),
            "did": list(reaction.tags),
            "later": list(reaction.later),
            "next": list(reaction.steps),
        }
        if not met:
            # the request the fault hit, then what followed it on its connection
            after = [i for i in ledger.connections[fired.conn].frames if i > fired.frame]
            case["evidence"] = [
                log.evidence(i, ()) for i in [fired.frame, *after[:2]] if log.has(i)
            ]
        out.append(case)
    return out


def build(
    *,
    plugin: Plugin,
    validation: Validation,
    ledger: Ledger,
    requirements: Mapping[str, Requirement],
    revision: str,
    address: str,
    client_name: str | None,
    started: datetime,
    strict: bool,
    faults: list[dict[str, Any]],
    reproduce: str = "",
) -> dict[str, Any]:
    reqs = {k: r for k, r in requirements.items() if revision in r.revisions}
    stray = [f for f in ledger.found if f.violation.requirement not in reqs]
    if stray:  # a checker bug: a requirement this revision does not have
        logger.warning(
            "validate: %d violation(s) name requirements %s, not of revision %s: left out",
            len(stray),
            sorted({f.violation.requirement for f in stray}),
            revision,
        )
        ledger.found = [f for f in ledger.found if f.violation.requirement in reqs]
        ledger.checker_failures += len(stray)
    faulted = fault_cases(plugin.name, plugin, ledger, validation, requirements)
    cases = [requirement_case(plugin.name, plugin, ledger, r, faulted) for r in reqs.values()]
    cases += [connection_case(plugin.name, plugin, ledger, c, reqs) for c in ledger.connections]
    cases += faulted
    for case in cases:  # run the client again against a broker checking it the same way
        case["reproduce"] = reproduce
    counts = {v: sum(1 for c in cases if c["verdict"] == v) for v in VERDICTS}
    bad = counts["FAIL"] + counts["ERROR"] + (counts["WARN"] if strict else 0)
    rows = rows_of(reqs.values(), cases)
    by_id = {c["case_id"]: c for c in cases}
    for row in rows:
        row["verdict"] = requirement_rollup(row, by_id)[0]
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": "broker-conformance",
        "version": __version__,
        "mode": "validate",
        "protocol": plugin.name,
        "revision": revision,
        "target": address,
        "target_name": client_name or "clients",
        "target_software": None,
        "embedded": False,
        "selection": [],
        "quirks": [],
        "options": {},
        "strict": strict,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": round(time.monotonic() - ledger.start, 3),
        "target_unresponsive": False,
        "target_lost": None,
        "counts": counts,
        "exit_code": 1 if bad else 0,
        "cases": cases,
        "requirements": rows,
        "faults": faults,
        "connections": len(ledger.connections),
        "checker_failures": ledger.checker_failures,
    }
