"""``--all``: every registered protocol at once, and the per-protocol values it takes.

``serve --all`` runs one broker process with one engine and one listener per protocol;
``run --all`` certifies every protocol; ``fuzz --all`` runs one campaign per protocol.
The protocols are :func:`conformance.protocols.names`, in that order (the built-in ones
first, then any registered through an entry point, by name), and that order is the
port order of ``--port-base``: protocol ``i`` listens on ``base + i``, ``--port-base 0``
on a free port each.

What is given once per protocol is spelled ``PROTO=VALUE`` with ``--all``:
``--revision kafka=pgcdc``, ``--quirk v1line=isr-never-shrinks`` (repeatable), ``--target
iggy=127.0.0.1:8090``.  A protocol not named gets its default.  A protocol's own options
(``--ack-timeout-ms``) keep their plain spelling: with ``--all`` the parser offers every
protocol's, and a value applies to the protocol that declares the flag.
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance import protocols
from conformance.exits import UsageError
from conformance.plugin import Plugin, UnknownQuirk


def all_plugins() -> list[Plugin]:
    """Every registered protocol's plug-in, in :func:`protocols.names` order."""
    plugins: list[Plugin] = []
    for name in protocols.names():
        try:
            plugins.append(protocols.get(name))
        except protocols.UnknownProtocol as exc:  # a broken third-party plug-in
            raise UsageError(str(exc)) from None
    return plugins


def per_protocol(
    items: Sequence[str], flag: str, plugins: Sequence[Plugin]
) -> dict[str, list[str]]:
    """``PROTO=VALUE`` items of ``flag`` by protocol; a UsageError for an item without a
    protocol or naming one that is not registered."""
    known = {p.name for p in plugins}
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(
                f"with --all, {flag} takes PROTO=VALUE (for example {flag} "
                f"{plugins[0].name}=...), not {item!r}"
            )
        if name not in known:
            raise UsageError(
                f"{flag} {item!r}: no protocol {name!r}; choose one of: {', '.join(sorted(known))}"
            )
        out.setdefault(name, []).append(value)
    return out


def revisions(items: Sequence[str] | None, plugins: Sequence[Plugin]) -> dict[str, str]:
    """Each protocol's revision: the one ``--revision PROTO=REV`` names, else its default."""
    given = per_protocol(items or [], "--revision", plugins)
    out: dict[str, str] = {}
    for plugin in plugins:
        chosen = given.get(plugin.name, [plugin.default_revision])
        if len(chosen) > 1:
            raise UsageError(f"--revision names {plugin.name} {len(chosen)} times")
        try:
            out[plugin.name] = plugin.check_revision(chosen[0])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return out


def quirks(items: Sequence[str], plugins: Sequence[Plugin]) -> dict[str, list[str]]:
    """Each protocol's quirks, from ``--quirk PROTO=NAME`` items (checked)."""
    given = per_protocol(items, "--quirk", plugins)
    out: dict[str, list[str]] = {}
    for plugin in plugins:
        names = given.get(plugin.name, [])
        try:
            plugin.check_quirks(names)
        except UnknownQuirk as exc:
            raise UsageError(str(exc)) from None
        out[plugin.name] = names
    return out


def ports(plugins: Sequence[Plugin], base: int | None) -> dict[str, int]:
    """Where each protocol listens: its default port, or ``base + i`` (0: a free port)."""
    if base is None:
        return {p.name: p.default_port for p in plugins}
    if base < 0 or base + len(plugins) - 1 > 65535:
        raise UsageError(
            f"--port-base {base} leaves no room for {len(plugins)} ports (0 for free ports, "
            f"or at most {65536 - len(plugins)})"
        )
    return {p.name: 0 if base == 0 else base + i for i, p in enumerate(plugins)}
