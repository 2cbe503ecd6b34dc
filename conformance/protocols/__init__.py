"""The registry of protocols: each name maps to its plug-in (:class:`conformance.plugin.Plugin`).

The protocols built in are listed in :data:`BUILTIN`, one line each, as
``"module:attribute"`` of the plug-in object.  A protocol kept outside this package
registers itself the way Python packages do, with an entry point in the group
``conformance.protocols`` (name = protocol, value = ``module:attribute``); the tests'
toy protocol does so.  This is the one module of the generic code that names a
protocol's module, and it only does so as a string: a plug-in is imported when it is
first asked for.
"""

from __future__ import annotations

import importlib
from importlib import metadata

from conformance.plugin import Plugin

BUILTIN: dict[str, str] = {
    "cursus": "conformance.protocols.cursus.plugin:PLUGIN",
    "kafka": "conformance.protocols.kafka.plugin:PLUGIN",
    "iggy": "conformance.protocols.iggy.plugin:PLUGIN",
    "v1line": "conformance.protocols.v1line.plugin:PLUGIN",
    "minikafka": "conformance.protocols.minikafka.plugin:PLUGIN",
}
ENTRY_POINT_GROUP = "conformance.protocols"

_loaded: dict[str, Plugin] = {}


class UnknownProtocol(ValueError):
    pass


def _registered() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def names() -> tuple[str, ...]:
    """Every protocol that can be asked for: the built-in ones first, then by name."""
    found = _registered()
    return (*BUILTIN, *sorted(n for n in found if n not in BUILTIN))


def get(name: str) -> Plugin:
    """The plug-in of protocol ``name``; UnknownProtocol naming the known ones otherwise."""
    plugin = _loaded.get(name)
    if plugin is not None:
        return plugin
    where = _registered().get(name)
    if where is None:
        raise UnknownProtocol(f"unknown protocol {name!r}; choose one of: {', '.join(names())}")
    module, _, attribute = where.partition(":")
    try:
        plugin = getattr(importlib.import_module(module), attribute or "PLUGIN")
    except Exception as exc:  # a broken third-party plug-in: one line, not a traceback
        raise UnknownProtocol(
            f"the plug-in of protocol {name!r} ({where}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(plugin, Plugin) or plugin.name != name:
        raise UnknownProtocol(f"{where} is not the plug-in of protocol {name!r}")
    _loaded[name] = plugin
    return plugin
