"""Every V1 line command, declared once: its arguments and its reply payload.

The declarations follow the document's "Supported Commands" table (seed l.38-50, whose
PRODUCE, JOIN and SET_PARTITION_ROLE rows lost their ``|`` alternatives to the table
rendering; the validation list, seed l.74-79, restores them), the handler-level rules
(seed l.72-79) and "Command Payloads" (seed l.90-103), as SPEC.md numbers them.  PING is
not in the table; it takes no arguments (V1L-ENV-9, V1L-PING-1).  The codec
(:mod:`codec`) parses, encodes and generates from these tables; nothing else in the
package spells a command's grammar.

Argument kinds (``Field.kind``):

* ``name``: a topic, group or consumer id: any non-empty token (it cannot hold a space
  or ``|``: SPEC preamble, values).
* ``int``: an integer in ASCII decimal with an optional sign (``[+-]?[0-9]+``, leading
  zeros allowed), in the int64 range (V1L-ENV-16).  ``minimum`` 0 refuses a negative
  partition, or offset to read, as BAD_REQUEST (V1L-CONS-5, V1L-CONS-6); a generation
  has none (any other generation is GENERATION_MISMATCH, V1L-GRP-9, -10, -13,
  V1L-OFF-2), nor has an offset COMMIT stores (as given, V1L-OFF-6) or REPLICA_FETCH
  reports (echoed, V1L-REPL-15).  A replica id's
  range (V1L-REPL-7) needs the broker's replication factor, so the handler checks it.
* ``message``: PRODUCE's ``<key>:<value>``, split on the first ``:`` (V1L-PROD-3,
  V1L-PROD-4); the key and the value may each be empty.
* ``choice``: one of ``choices`` (SET_PARTITION_ROLE's role, V1L-REPL-2; exact in
  ``doc``, V1L-REPL-3, any case in ``real``, V1L-REPL-16).

An ``Option`` is an optional last token ``<key>=<choice>``: PRODUCE's ``acks``
(V1L-PROD-5, -6, -10) and JOIN's ``assignor`` (V1L-GRP-7, -8, -14); exact in ``doc``,
key and choice in any case in ``real``.  Absent, its value is None and the broker picks
the default.  Error texts are the real broker's (V1L-ENV-19): ``usage`` and ``error``.

Reply payload kinds (``ReplyField.kind``, SPEC preamble, reply payload grammar):
``int`` (signed int64 decimal; ``hw`` is -1 when nothing is committed), ``bool``
(``true``/``false``), ``word`` (a non-empty token), ``literal`` (exactly ``literal``),
``int_list`` (``[0 1 2]``: items separated by one space, ``[]`` when empty),
``messages`` (``<offset>:<value>`` items joined by ``,``, nothing when none).

The values the codec produces are declared here too: :class:`Request` (its ``args`` in
the order of ``CommandSpec.arg_names``), :class:`KeyValue`, :class:`OkReply`,
:class:`ErrReply`; :mod:`codec` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FieldKind = Literal["name", "int", "message", "choice"]
ReplyKind = Literal["int", "bool", "word", "literal", "int_list", "messages"]
Revision = Literal["doc", "real"]
REVISIONS: tuple[Revision, ...] = ("doc", "real")
"""SPEC.md's revisions: the document as written, and the real broker (FACTS.md)."""

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
ACKS = ("0", "1", "all")
ASSIGNORS = ("round_robin", "range")
ROLES = ("leader", "follower")


@dataclass(frozen=True)
class Field:
    name: str
    kind: FieldKind
    minimum: int | None = None
    choices: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return "<key>:<value>" if self.kind == "message" else f"<{self.name}>"


@dataclass(frozen=True)
class Option:
    key: str
    choices: tuple[str, ...]
    what: str
    """What the real broker calls it in its error text (``ack mode``, ``assignor``)."""

    @property
    def usage(self) -> str:
        return f"[{self.key}={'|'.join(self.choices)}]"

    @property
    def error(self) -> str:
        return f"invalid {self.what}; expected {self.key}={'|'.join(self.choices)}"


@dataclass(frozen=True)
class ReplyField:
    name: str
    kind: ReplyKind
    literal: str = ""


@dataclass(frozen=True)
class CommandSpec:
    name: str
    fields: tuple[Field, ...]
    option: Option | None
    reply: tuple[ReplyField, ...]
    purpose: str

    @property
    def usage(self) -> str:
        """The wrong-arg-count error text (V1L-ENV-19)."""
        parts = [f.usage for f in self.fields]
        if self.option is not None:
            parts.append(self.option.usage)
        return f"{self.name} requires: {' '.join(parts) or 'no args'}"

    @property
    def arg_names(self) -> tuple[str, ...]:
        """Every value of a parsed request, in order: the fields, then the option."""
        names = tuple(f.name for f in self.fields)
        return names if self.option is None else (*names, self.option.key)


def _name(n: str) -> Field:
    return Field(n, "name")


def _count(n: str) -> Field:
    return Field(n, "int", minimum=0)


TOPIC, GROUP, CONSUMER = _name("topic"), _name("group"), _name("consumer_id")
PARTITION, OFFSET = _count("partition"), _count("offset")
GENERATION = Field("generation", "int")
COMMITTED = REPORTED = Field("offset", "int")
MEMBER = (GROUP, TOPIC, CONSUMER, GENERATION)

ASSIGNMENT = (ReplyField("generation", "int"), ReplyField("assigned", "int_list"))

COMMANDS: dict[str, CommandSpec] = {
    s.name: s
    for s in (
        CommandSpec(
            "PRODUCE",
            (TOPIC, Field("message", "message")),
            Option("acks", ACKS, "ack mode"),
            (ReplyField("partition", "int"), ReplyField("offset", "int"), ReplyField("hw", "int")),
            "append one message",
        ),
        CommandSpec(
            "CONSUME",
            (TOPIC, PARTITION, OFFSET),
            None,
            (ReplyField("messages", "messages"), ReplyField("hw", "int")),
            "read messages from offset",
        ),
        CommandSpec(
            "JOIN",
            (GROUP, TOPIC, CONSUMER),
            Option("assignor", ASSIGNORS, "assignor"),
            ASSIGNMENT,
            "join a group and get assignments",
        ),
        CommandSpec(
            "SYNC", MEMBER, None, ASSIGNMENT, "validate generation and fetch latest assignment"
        ),
        CommandSpec(
            "HEARTBEAT",
            MEMBER,
            None,
            (ReplyField("heartbeat", "literal", "ok"),),
            "keep membership alive for session timeout",
        ),
        CommandSpec(
            "LEAVE",
            MEMBER,
            None,
            (ReplyField("left", "bool"),),
            "explicitly leave group and trigger rebalance",
        ),
        CommandSpec(
            "COMMIT",
            (*MEMBER, PARTITION, COMMITTED),
            None,
            (ReplyField("committed", "bool"),),
            "persist processed progress with generation validation",
        ),
        CommandSpec(
            "OFFSET",
            (GROUP, TOPIC, PARTITION),
            None,
            (ReplyField("offset", "int"),),
            "read committed progress",
        ),
        CommandSpec(
            "REPLICA_FETCH",
            (TOPIC, PARTITION, Field("replica_id", "int"), REPORTED),
            None,
            (
                ReplyField("replica", "int"),
                ReplyField("acked_offset", "int"),
                ReplyField("hw", "int"),
                ReplyField("isr", "int_list"),
                ReplyField("under_replicated", "bool"),
            ),
            "report follower replication progress",
        ),
        CommandSpec(
            "SET_PARTITION_ROLE",
            (TOPIC, PARTITION, Field("role", "choice", choices=ROLES)),
            None,
            (
                ReplyField("topic", "word"),
                ReplyField("partition", "int"),
                ReplyField("role", "word"),
                ReplyField("hw", "int"),
            ),
            "set a partition's replication role on this broker",
        ),
        CommandSpec("PING", (), None, (), "check the broker answers (V1L-PING-1)"),
    )
}
"""Every command of the document, in its order, PING last."""

DOC_ONLY = frozenset({"PING"})
"""Commands the document shows that the real broker does not have: its dispatch has no PING
branch and answers it UNKNOWN_COMMAND (FACTS.md, H; V1L-PING-3).  Known in ``doc`` only."""


def commands_of(revision: Revision | None) -> list[str]:
    """The commands ``revision`` has, in the document's order (None: those every revision
    has, which are ``real``'s)."""
    return [n for n in COMMANDS if revision == "doc" or n not in DOC_ONLY]


def command_spec(name: str, revision: Revision) -> CommandSpec | None:
    """The command named ``name`` (already upper-cased in ``real``) if ``revision`` has it."""
    spec = COMMANDS.get(name)
    if spec is None or (revision == "real" and spec.name in DOC_ONLY):
        return None
    return spec


# ------------------------------------------------------- what the codec produces


@dataclass(frozen=True)
class KeyValue:
    """PRODUCE's message: ``<key>:<value>``, split on the first ``:``."""

    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}:{self.value}"


ArgValue = str | int | KeyValue | None
PayloadValue = str | int | bool | tuple[int, ...] | tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Request:
    """A parsed request: ``args`` in the order of ``COMMANDS[command].arg_names`` (an
    absent option is None)."""

    correlation_id: str
    command: str
    args: tuple[ArgValue, ...] = ()

    @property
    def spec(self) -> CommandSpec:
        return COMMANDS[self.command]

    def arg(self, name: str) -> ArgValue:
        for n, v in zip(self.spec.arg_names, self.args, strict=True):
            if n == name:
                return v
        raise KeyError(f"{self.command} has no argument {name!r}")


@dataclass(frozen=True)
class OkReply:
    """``V1|<corr>|OK`` (payload None) or ``V1|<corr>|OK|<payload>``."""

    correlation_id: str
    payload: str | None = None


@dataclass(frozen=True)
class ErrReply:
    correlation_id: str
    code: str
    message: str


Reply = OkReply | ErrReply
