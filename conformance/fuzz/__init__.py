"""The fuzzer: mutators, the harness and its oracle, campaigns (local or on Spark), findings.

:func:`protocol` returns the fuzz plug-in of a protocol (see :mod:`conformance.fuzz.case`),
made by the protocol's plug-in (:mod:`conformance.protocols`) for the given option values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import protocols
from conformance.fuzz.case import FuzzProtocol


def protocol(
    name: str, options: Mapping[str, Any] | None = None, revision: str | None = None
) -> FuzzProtocol:
    """The fuzz plug-in of protocol ``name`` (UnknownProtocol if there is none) as
    ``revision`` (default: the protocol's) sees the wire, with the protocol's ``fuzz``
    options: those given, the defaults for the rest."""
    plugin = protocols.get(name)
    plugin = plugin.at(revision or plugin.default_revision)
    return plugin.fuzzing(plugin.option_values("fuzz", options or {}))
