"""Options a protocol adds to ``run``, ``serve`` and ``fuzz``, and their plumbing.

A protocol declares its options (:class:`Option`) in its plug-in; everything done with
them is generic and lives here: which belong to a command, their values (given, else the
default, else the default for an embedded broker), the ``serve`` arguments that pass them
on to an embedded broker, and the values a results file or reproducer may record (never a
``secret`` one, a password).  ``--help`` shows a protocol's options in a group named
after it (:mod:`conformance.cli`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COMMANDS = ("run", "serve", "fuzz")
"""The commands a protocol option can belong to (``replay`` takes the ``fuzz`` ones)."""


@dataclass(frozen=True)
class Option:
    """A command-line option a protocol adds to some of ``run``, ``serve`` and ``fuzz``.

    For ``run`` and ``fuzz`` against the embedded broker, an option that ``serve`` also
    takes is passed on to the broker with the same value, and ``embedded_default`` (when
    set) replaces ``default``."""

    flag: str
    help: str
    commands: tuple[str, ...]
    default: Any = None
    embedded_default: Any = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] = str
    metavar: str | None = None
    secret: bool = False
    minimum: int | None = None
    session: bool = False
    """Part of what opens a session (a user, a password, a mechanism): the options a
    refused session tells the user to check."""

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def convert(self, text: str) -> Any:
        """``text`` as this option's value; ValueError saying why not if it does not fit."""
        try:
            value = self.type(text)
        except (TypeError, ValueError) as exc:
            if self.type not in (int, float, str) and str(exc):  # a parser of its own says why
                raise ValueError(f"{text!r}: {exc}") from None
            kind = "a whole number" if self.type is int else "a valid value"
            raise ValueError(f"{text!r} is not {kind}") from None
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{text!r} is not one of {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum}, not {value}")
        return value


def options_for(options: Sequence[Option], command: str) -> tuple[Option, ...]:
    return tuple(o for o in options if command in o.commands)


def option_values(
    options: Sequence[Option],
    command: str,
    given: Mapping[str, Any],
    *,
    embedded: bool = False,
) -> dict[str, Any]:
    """Every option of ``command``: the value given, else its (embedded) default."""
    out: dict[str, Any] = {}
    for o in options_for(options, command):
        value = given.get(o.dest)
        if value is None:
            value = o.embedded_default if embedded and o.embedded_default is not None else o.default
        out[o.dest] = value
    return out


def serve_args(options: Sequence[Option], command: str, values: Mapping[str, Any]) -> list[str]:
    """The ``serve`` options for an embedded broker started by ``command``: those of its
    options that ``serve`` takes too, with their values."""
    serve_flags = {o.flag for o in options_for(options, "serve")}
    out: list[str] = []
    for o in options_for(options, command):
        if o.flag in serve_flags and values.get(o.dest) is not None:
            out += [o.flag, str(values[o.dest])]
    return out


def public(options: Sequence[Option], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without secret options (what results and reproducers may record)."""
    secret = {o.dest for o in options if o.secret}
    return {k: v for k, v in values.items() if k not in secret}
