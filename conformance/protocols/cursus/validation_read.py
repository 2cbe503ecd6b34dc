"""One Cursus client frame read against the client requirements of its layout (SPEC.md,
``client: commands`` and ``client: batches``), for revision ``doc`` or ``real``, sans-IO.

:func:`read_request` never raises: what it cannot read is a violation of the requirement
it breaks.  What the result carries for the checks that span frames (a member's
generation, a producer's sequence) is plain data: the command name and its named values,
or the decoded batch.

Which requirement a finding names:

* ``doc``: CUR-CLI-2 not UTF-8, empty, or no command of the document; CUR-CLI-3 a wrong
  field count, two spaces, a number that is no int64 decimal, a bad offsetsPayload;
  CUR-CLI-6 a batch off the document's layout; CUR-CLI-8 an acks level not ``1``/``0``/``-1``;
* ``real``: CUR-CLI-4 a text the real broker knows no command in (it closes), a bad
  envelope, a known name in a form no handler takes; CUR-CLI-5 a key missing, a number of
  the wrong kind, a malformed BATCH_COMMIT entry; CUR-CLI-7 a batch off the real layout or
  empty; CUR-CLI-8 acks outside ``0``, ``1``, ``-1``, ``all``, empty;
* both: CUR-CLI-9 seqStart/seqEnd not the first/last seqNum, or an idempotent batch whose
  seqNums do not run up by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import COMMANDS, Batch
from conformance.protocols.cursus.real_messages import SERVED, RealCommand
from conformance.validate.contract import Violation

FRAMING = "CUR-CLI-1"
DOC_COMMAND = "CUR-CLI-2"
DOC_FIELDS = "CUR-CLI-3"
REAL_COMMAND = "CUR-CLI-4"
REAL_KEYS = "CUR-CLI-5"
DOC_BATCH = "CUR-CLI-6"
REAL_BATCH = "CUR-CLI-7"
ACKS = "CUR-CLI-8"
SEQUENCE = "CUR-CLI-9"

UNREADABLE = "unreadable"
"""The kind of a frame whose command cannot be read."""
BATCH = "BATCH"
_DOC_ACKS = ("1", "0", "-1")
_REAL_ACKS = ("0", "1", "-1", "all", "")
_DOC_CODES = {
    "INVALID_UTF8": DOC_COMMAND,
    "EMPTY_COMMAND": DOC_COMMAND,
    "UNKNOWN_COMMAND": DOC_COMMAND,
    "BAD_ARGUMENTS": DOC_FIELDS,
    "BAD_ARGUMENT": DOC_FIELDS,
}
_INTEGERS = ("partition", "generation", "partitions")


def shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


@dataclass
class Request:
    """A frame as read: its kind (a command name, ``BATCH``, ``unreadable``), the values
    the cross-frame checks need, what it was checked against and what it broke."""

    kind: str
    summary: str
    values: dict[str, str | int] = field(default_factory=dict)
    batch: Batch | None = None
    entries: tuple[tuple[int, int], ...] = ()
    """BATCH_COMMIT's (partition, offset) entries."""
    checked: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def check(self, *requirements: str) -> None:
        for r in requirements:
            if r not in self.checked:
                self.checked.append(r)

    def broke(self, requirement: str, message: str, *fields: str) -> None:
        self.check(requirement)
        self.violations.append(Violation(requirement, message, fields))

    @property
    def sound(self) -> bool:
        return not self.violations


def read_request(payload: bytes, revision: str, compression: str = "none") -> Request:
    """``payload`` (one frame's bytes) read as a client request of ``revision``; a whole
    frame that reached the checker kept to the framing (CUR-CLI-1)."""
    if revision == "real":
        req = _read_real(_inflated(payload) if compression == "gzip" else payload)
    else:
        req = _read_doc(payload, compression)
    req.checked.insert(0, FRAMING)
    return req


# ------------------------------------------------------------------------- doc


def _read_doc(payload: bytes, compression: str) -> Request:
    body = payload
    if compression == "gzip" and payload[:2] == b"\x1f\x8b":
        try:
            body = codec.inflate_gzip(payload)
        except codec.CursusError as exc:
            req = Request(BATCH, "gzip body that does not inflate")
            req.broke(DOC_BATCH, f"a gzip body that does not inflate: {exc}")
            return req
    if codec.is_batch(body):
        req = Request(BATCH, "batch")
        req.check(DOC_BATCH)
        try:
            batch = codec.decode_batch(body)
            codec.partition_number(batch)
        except codec.CursusError as exc:
            req.broke(DOC_BATCH, f"the batch does not fit the document's layout: {exc}")
            return req
        _batch(req, batch, _DOC_ACKS)
        return req
    text = body.decode("utf-8", "replace")
    word = text.split(" ", 1)[0]
    req = Request(word if word in COMMANDS else UNREADABLE, shown(text, 100))
    req.check(DOC_COMMAND)
    try:
        cmd = codec.parse_command(body)
    except codec.CursusError as exc:
        req.broke(_DOC_CODES.get(exc.code, DOC_FIELDS), f"{shown(text)}: {exc}")
        if req.kind != UNREADABLE:
            req.check(DOC_FIELDS)
        return req
    req.check(DOC_FIELDS)
    for arg, value in zip(cmd.spec.args, cmd.args, strict=True):
        if arg.kind == "offsets":
            assert isinstance(value, tuple)
            req.entries = value
        elif isinstance(value, (int, str)):
            req.values[arg.name] = value
    if "memberId" in req.values:
        req.values["member"] = req.values["memberId"]
    return req


# ------------------------------------------------------------------------ real


def _inflated(payload: bytes) -> bytes:
    """With ``--compression gzip`` the broker inflates a gzip payload before reading it
    (CUR-RCONV-6); one that does not inflate is read as it came."""
    if payload[:2] != b"\x1f\x8b":
        return payload
    try:
        return codec.inflate_gzip(payload)
    except codec.CursusError:
        return payload


def _read_real(payload: bytes) -> Request:
    got = real_codec.classify(payload)
    if isinstance(got, real_codec.RealRefusal):
        if got.reply.code == "batch_decode_failed":
            req = Request(BATCH, "batch")
            req.broke(REAL_BATCH, f"the batch does not fit the real layout: {got.reply.text}")
            return req
        text = payload.decode("utf-8", "replace")
        req = Request(UNREADABLE, shown(text, 100))
        closes = " (the real broker closes the connection)" if got.close else ""
        req.broke(
            REAL_COMMAND,
            f"{shown(text)} holds no command the real broker knows: it answers "
            f"ERROR: {got.reply.text}{closes}",
        )
        return req
    if isinstance(got, Batch):
        req = Request(BATCH, "batch")
        req.check(REAL_BATCH)
        partition = int(got.partition)
        if partition < 0:
            req.broke(REAL_BATCH, f"partition {partition} is negative", "partition")
        if not got.messages:
            req.broke(REAL_BATCH, "the batch holds no message (the real broker refuses it)")
        _batch(req, got, _REAL_ACKS)
        return req
    return _real_command(got)


def _real_command(cmd: RealCommand) -> Request:
    req = Request(cmd.name, shown(cmd.text(), 100))
    req.check(REAL_COMMAND)
    served = SERVED.get(cmd.name)
    if served is None:
        return req  # a command of the real broker the reference broker does not serve
    if served.exact:
        if cmd.args or cmd.words:
            req.broke(REAL_COMMAND, f"{cmd.name} takes no argument, got {shown(cmd.text())}")
        return req
    req.check(REAL_KEYS)
    missing = [k for k in served.required if not cmd.get(k)]
    if missing:
        req.broke(
            REAL_KEYS,
            f"{cmd.name} lacks {', '.join(f'{k}=' for k in missing)} (the real broker needs "
            f"{' '.join(f'{k}=' for k in served.required)})",
            *missing,
        )
    for key, value in cmd.args:
        _real_value(req, cmd.name, key, value)
    if cmd.name == "BATCH_COMMIT":
        _entries(req, cmd.last)
    return req


def _real_value(req: Request, name: str, key: str, value: str) -> None:
    if key in _INTEGERS:
        number = real_codec.atoi(value)
        low = 1 if key == "partitions" else 0 if key == "partition" else None
        if number is None or (low is not None and number < low):
            kind = "a decimal integer" if low is None else f"a decimal integer of {low} or more"
            req.broke(REAL_KEYS, f"{name}'s {key}={shown(value)} is not {kind}", key)
            return
        req.values[key] = number
    elif key == "offset":
        number = real_codec.parse_uint(value)
        if number is None:
            req.broke(REAL_KEYS, f"{name}'s offset={shown(value)} is not an unsigned integer", key)
            return
        req.values[key] = number
    else:
        req.values[key] = value


def _entries(req: Request, last: str) -> None:
    entries = []
    for item in last.split(","):
        p, sep, o = item.partition(":")
        partition = real_codec.atoi(p[1:]) if p.startswith("P") else None
        offset = real_codec.parse_uint(o) if sep else None
        if partition is None or offset is None or partition < 0:
            req.broke(
                REAL_KEYS,
                f"BATCH_COMMIT entry {shown(item)} is not P<partition>:<offset>",
                "entries",
            )
            return
        entries.append((partition, offset))
    req.entries = tuple(entries)


# ----------------------------------------------------------------------- batches


def _batch(req: Request, batch: Batch, acks: tuple[str, ...]) -> None:
    req.batch = batch
    req.summary = batch_summary(batch)
    req.check(ACKS, SEQUENCE)
    level = batch.acks.lower() if acks is _REAL_ACKS else batch.acks
    if level not in acks:
        allowed = ", ".join(repr(a) for a in acks)
        req.broke(ACKS, f"acks {shown(batch.acks)} is none of {allowed}", "acks")
    if not batch.messages:
        return
    first, last = batch.messages[0].seq_num, batch.messages[-1].seq_num
    if (batch.seq_start, batch.seq_end) != (first, last):
        req.broke(
            SEQUENCE,
            f"seqStart..seqEnd {batch.seq_start}..{batch.seq_end} is not the first and last "
            f"message's seqNum {first}..{last}",
            "seq_start",
            "seq_end",
        )
    if batch.idempotent:
        for i, (a, b) in enumerate(zip(batch.messages, batch.messages[1:], strict=False)):
            if b.seq_num != a.seq_num + 1:
                req.broke(
                    SEQUENCE,
                    f"in an idempotent batch message {i + 1} has seqNum {b.seq_num} after "
                    f"{a.seq_num}",
                )
                break


def batch_summary(batch: Batch) -> str:
    producer = batch.messages[0].producer_id if batch.messages else ""
    seq = f"seq {batch.seq_start}..{batch.seq_end}"
    flag = " idempotent" if batch.idempotent else ""
    return (
        f"BATCH {batch.topic}/{batch.partition} acks {batch.acks}{flag}: "
        f"{len(batch.messages)} message(s) of {producer!r}, {seq}"
    )
