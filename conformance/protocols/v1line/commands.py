"""Every V1 line command, declared once: its arguments and its reply payload.

The declarations follow the document's "Supported Commands" table (seed l.38-50, whose
PRODUCE, JOIN and SET_PARTITION_ROLE rows lost their ``|`` alternatives to the table
rendering; the validation list, seed l.74-79, restores them), the handler-level rules
(seed l.72-79) and "Command Payloads" (seed l.90-103).  PING is not in the table; the
document shows it with no arguments (seed l.19-21).  The codec
(:mod:`codec`) parses, encodes and generates from these tables; nothing else in the
package spells a command's grammar.

Argument kinds (``Field.kind``):

* ``name``: a topic, group or consumer id: any non-empty token.  The document gives no
  character rule; a space separates fields and ``|`` sections, so neither can occur.
* ``int``: an integer in ASCII decimal with an optional sign (``[+-]?[0-9]+``, leading
  zeros allowed), in the int64 range; ``minimum`` (0 for partitions, offsets and
  generations) refuses what names nothing.  The document says only "valid integers"
  (seed l.76); BAD_REQUEST is its only code that fits a negative offset.  A replica id
  has no minimum here: its range, 1..replication_factor-1 (seed l.77), needs the
  broker's replication factor, so the handler checks it.
* ``message``: PRODUCE's ``<key>:<value>`` (seed l.74), split on the first ``:``; the
  key and the value may each be empty and the value may hold more ``:``.
* ``choice``: exactly one of ``choices`` (SET_PARTITION_ROLE's role, seed l.78).

An ``Option`` is an optional last token ``<key>=<choice>``: PRODUCE's ``acks`` (exactly
``0``, ``1`` or ``all``, seed l.75) and JOIN's ``assignor`` (exactly ``round_robin`` or
``range``, seed l.79).  Absent, its value is None and the broker picks the default.

Reply payload kinds (``ReplyField.kind``): ``int`` (signed int64 decimal), ``bool``
(``true``/``false``), ``word`` (a non-empty token), ``literal`` (exactly ``literal``),
``int_list`` (``[...]``, items separated by commas: the document shows no separator),
``messages`` (``<offset>:<value>`` items separated by commas, empty when none).

The values the codec produces are declared here too: :class:`Request` (its ``args`` in
the order of ``CommandSpec.arg_names``), :class:`KeyValue`, :class:`OkReply`,
:class:`ErrReply`; :mod:`codec` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FieldKind = Literal["name", "int", "message", "choice"]
ReplyKind = Literal["int", "bool", "word", "literal", "int_list", "messages"]

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


@dataclass(frozen=True)
class Option:
    key: str
    choices: tuple[str, ...]

    @property
    def usage(self) -> str:
        return f"[{self.key}={'|'.join(self.choices)}]"


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
        parts = [f"<{f.name}>" for f in self.fields]
        if self.option is not None:
            parts.append(self.option.usage)
        return " ".join([self.name, *parts])

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
PARTITION, OFFSET, GENERATION = _count("partition"), _count("offset"), _count("generation")
MEMBER = (GROUP, TOPIC, CONSUMER, GENERATION)

ASSIGNMENT = (ReplyField("generation", "int"), ReplyField("assigned", "int_list"))

COMMANDS: dict[str, CommandSpec] = {
    s.name: s
    for s in (
        CommandSpec(
            "PRODUCE",
            (TOPIC, Field("message", "message")),
            Option("acks", ACKS),
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
            Option("assignor", ASSIGNORS),
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
            (*MEMBER, PARTITION, OFFSET),
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
            (TOPIC, PARTITION, Field("replica_id", "int"), OFFSET),
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
        CommandSpec("PING", (), None, (), "check the broker answers (seed l.19-21)"),
    )
}
"""Every command of the document, in its order, PING last."""


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
