"""A client's V1 request line read against the client requirements of the envelope and of
the commands (SPEC.md, ``client: envelope`` and ``client: commands``), sans-IO.

:func:`read_line` never raises: what it cannot read is a violation of the requirement it
breaks, and reading stops at the first thing that hides the rest (an envelope that is not
four sections, an unknown command, a wrong argument count).  Arguments are read one by one,
so a line with two bad arguments shows both.  Under ``doc`` the line is read as the
document's parser reads it (exact sections, one space between args, exact option values);
under ``real`` as the real broker does (the fourth section runs to the end of the line,
sections trimmed, the command and option values in any case, args split on runs of
whitespace; V1L-ENV-18).

Which requirement a finding names:

* V1L-CLI-1: not UTF-8, fewer than four sections, a version other than ``V1``, an empty
  correlation id or command;
* V1L-CLI-2 (``doc`` only): a ``|`` in the args, a ``\\r`` before the ``\\n``;
* V1L-CLI-4: a correlation id that is not digits, or is 0;
* V1L-CLI-6: an unknown command; V1L-CLI-7: a wrong argument count, an empty argument;
* V1L-CLI-8: a numeric argument that is not an integer; V1L-CLI-9: a negative partition,
  or a negative offset of CONSUME or COMMIT;
* V1L-CLI-10: a message without ``:``, a bad ack mode, assignor or role;
* V1L-CLI-15: a replica_id outside 1..factor-1.

``Violation.fields`` names the annotator's fields (:mod:`.annotate`): ``version``,
``correlation_id``, ``command`` and each argument by its grammar name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conformance.protocols.v1line.codec import VERSION, integer
from conformance.protocols.v1line.commands import (
    COMMANDS,
    DOC_ONLY,
    ArgValue,
    KeyValue,
    Revision,
    command_spec,
)
from conformance.validate.contract import Violation

ENVELOPE = "V1L-CLI-1"
EXACT = "V1L-CLI-2"
LINE_LIMIT = "V1L-CLI-3"
CORRELATION = "V1L-CLI-4"
COMMAND = "V1L-CLI-6"
ARGUMENTS = "V1L-CLI-7"
INTEGER = "V1L-CLI-8"
NON_NEGATIVE = "V1L-CLI-9"
VALUES = "V1L-CLI-10"
REPLICA = "V1L-CLI-15"

UNREADABLE = "unreadable"
"""The kind of a line whose command cannot be read (a fault plan may name it)."""

_DIGITS = re.compile(r"[0-9]+")
_SHOWN = 60


def shown(text: str, limit: int = _SHOWN) -> str:
    cut = text if len(text) <= limit else text[:limit] + "..."
    return repr(cut)


@dataclass
class Line:
    """What a request line is: its command (the document's name, when known) and
    argument values by name, the requirements it was checked against and what it broke."""

    text: str
    correlation_id: str | None = None
    command: str | None = None
    """The document's name of the command (``PRODUCE``), once it is known to be one."""
    sent_command: str | None = None
    values: dict[str, ArgValue] = field(default_factory=dict)
    """Each argument read well, by its grammar name (an absent option: None)."""
    checked: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """What a fault plan names: the command (as sent, when unknown)."""
        if self.command is not None:
            return self.command
        return self.sent_command or UNREADABLE

    @property
    def complete(self) -> bool:
        """Every argument of a known command was read (the group checks need them)."""
        if self.command is None:
            return False
        names = COMMANDS[self.command].arg_names
        return all(n in self.values for n in names)

    def check(self, *requirements: str) -> None:
        for r in requirements:
            if r not in self.checked:
                self.checked.append(r)

    def broke(self, requirement: str, message: str, *fields: str) -> None:
        self.check(requirement)
        self.violations.append(Violation(requirement, message, tuple(fields)))


def _sections(line: Line, text: str, revision: Revision) -> list[str] | None:
    if revision == "doc":
        sections = text.split("|")
        if len(sections) > 4:
            line.broke(
                EXACT,
                f"{len(sections)} '|'-separated sections: the args hold a '|' "
                "(the document's parser wants exactly four)",
            )
            sections = [*sections[:3], "|".join(sections[3:])]
    else:
        sections = [s.strip() for s in text.strip().split("|", 3)]
    if len(sections) < 4:
        line.broke(
            ENVELOPE,
            f"{len(sections)} '|'-separated section{'s' if len(sections) != 1 else ''} "
            f"in {shown(text)}: a request is V1|<correlation_id>|<command>|<args> "
            "(with the last '|' even when there are no args)",
        )
        return None
    return sections


def _envelope(line: Line, payload: bytes, revision: Revision) -> list[str] | None:
    """The four sections, or None when the envelope hides the rest."""
    line.check(ENVELOPE, LINE_LIMIT)
    if revision == "doc":
        line.check(EXACT)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        line.broke(ENVELOPE, f"the line is not UTF-8 (byte {exc.start}: {payload[exc.start]:#04x})")
        return None
    line.text = text
    if revision == "doc" and text.endswith("\r"):
        line.broke(EXACT, "a '\\r' comes before the '\\n' (the document's parser keeps it)")
        text = text[:-1]
    sections = _sections(line, text, revision)
    if sections is None:
        return None
    version, cid, command, _ = sections
    if version != VERSION:
        line.broke(ENVELOPE, f"version {shown(version)}, not V1", "version")
        return None
    if not cid:
        line.broke(ENVELOPE, "the correlation id is empty", "correlation_id")
        return None
    line.correlation_id = cid
    line.check(CORRELATION)
    if not _DIGITS.fullmatch(cid):
        line.broke(
            CORRELATION, f"correlation id {shown(cid)} is not a decimal number", "correlation_id"
        )
    elif int(cid) == 0:
        line.broke(
            CORRELATION,
            "correlation id 0 is the id of a parse error's reply (V1|0|ERR|BAD_REQUEST|...)",
            "correlation_id",
        )
    if not command:
        line.broke(ENVELOPE, "the command is empty", "command")
        return None
    line.sent_command = command
    return sections


def _tokens(line: Line, args: str, revision: Revision) -> list[str] | None:
    if revision == "real":
        return args.split()
    tokens = args.split(" ") if args else []
    if "" in tokens:
        line.broke(
            ARGUMENTS,
            f"args {shown(args)} hold an empty argument (two spaces in a row, or a space "
            "at an end): arguments are separated by one space",
        )
        return None
    return tokens


def _option(line: Line, token: str, revision: Revision) -> None:
    spec = COMMANDS[line.command or ""]
    option = spec.option
    assert option is not None
    key, sep, choice = token.partition("=")
    if revision == "real":
        key, choice = key.lower(), choice.lower()
    line.check(VALUES)
    if not sep or key != option.key or choice not in option.choices:
        line.broke(
            VALUES,
            f"{spec.name}'s last argument {shown(token)} is not {option.key}="
            f"{'|'.join(option.choices)}",
            option.key,
        )
        return
    line.values[option.key] = choice


def _argument(line: Line, name: str, kind: str, token: str, revision: Revision) -> None:
    command = line.command or ""
    if kind == "name":
        line.values[name] = token
        return
    if kind == "message":
        line.check(VALUES)
        key, sep, value = token.partition(":")
        if not sep:
            line.broke(VALUES, f"PRODUCE's message {shown(token)} has no ':' (<key>:<value>)", name)
            return
        line.values[name] = KeyValue(key, value)
        return
    if kind == "choice":
        line.check(VALUES)
        choices = COMMANDS[command].fields[2].choices
        choice = token.lower() if revision == "real" else token
        if choice not in choices:
            line.broke(VALUES, f"{name} {shown(token)} is not {' or '.join(choices)}", name)
            return
        line.values[name] = choice
        return
    line.check(INTEGER)
    number = integer(token)
    if number is None:
        line.broke(INTEGER, f"{name} {shown(token)} is not a decimal integer", name)
        return
    if name == "partition" or (name == "offset" and command in ("CONSUME", "COMMIT")):
        line.check(NON_NEGATIVE)
        if number < 0:
            line.broke(NON_NEGATIVE, f"{command} {name} {number} is negative", name)
            return
    line.values[name] = number


def read_line(payload: bytes, revision: Revision, replication_factor: int) -> Line:
    """``payload`` (a request line without its ``\\n``) read under ``revision``."""
    line = Line(payload.decode("utf-8", "replace"))
    sections = _envelope(line, payload, revision)
    if sections is None:
        return line
    command, args = sections[2], sections[3]
    name = command.upper() if revision == "real" else command
    line.check(COMMAND)
    spec = command_spec(name, revision)
    if spec is None:
        said = (
            "is a command of the document only: the real broker answers it UNKNOWN_COMMAND"
            if name in DOC_ONLY
            else "is not a command of the V1 protocol"
        )
        line.broke(COMMAND, f"{shown(command)} {said}", "command")
        return line
    line.command = spec.name
    line.check(ARGUMENTS)
    tokens = _tokens(line, args, revision)
    if tokens is None:
        return line
    need = len(spec.fields)
    most = need + (spec.option is not None)
    if not need <= len(tokens) <= most:
        count = f"{need}" if need == most else f"{need} or {most}"
        line.broke(
            ARGUMENTS,
            f"{spec.name} takes {count} argument{'s' if most != 1 else ''} "
            f"({spec.usage.split(': ', 1)[1]}), got {len(tokens)}",
        )
        return line
    for f, token in zip(spec.fields, tokens, strict=False):
        _argument(line, f.name, f.kind, token, revision)
    if spec.option is not None:
        if len(tokens) > need:
            _option(line, tokens[need], revision)
        else:
            line.values[spec.option.key] = None
    replica = line.values.get("replica_id")
    if spec.name == "REPLICA_FETCH" and isinstance(replica, int):
        line.check(REPLICA)
        if not 1 <= replica <= replication_factor - 1:
            line.broke(
                REPLICA,
                f"replica_id {replica} is outside 1..{replication_factor - 1} (the "
                f"followers of replication factor {replication_factor}; 0 is the leader)",
                "replica_id",
            )
    return line
