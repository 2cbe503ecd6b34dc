"""The fuzzer: mutators, the harness and its oracle, campaigns (local or on Spark), findings.

:func:`protocol` returns a protocol as the fuzzer drives it (:class:`FuzzProtocol`, see
:mod:`conformance.fuzz.case`): its plug-in (:mod:`conformance.protocols`) with the
fuzzing part the plug-in makes for the given option values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance import protocols
from conformance.fuzz.case import FuzzProtocol
from conformance.options import option_values


def protocol(
    name: str, options: Mapping[str, Any] | None = None, revision: str | None = None
) -> FuzzProtocol:
    """Protocol ``name`` (UnknownProtocol if there is none) as the fuzzer drives it at
    ``revision`` (default: the protocol's; ValueError if it has no such revision), with
    its ``fuzz`` options: those given, the defaults for the rest."""
    plugin = protocols.get(name)
    fuzzed = plugin.check_revision(revision or plugin.default_revision)
    values = option_values(plugin.options, "fuzz", options or {})
    return FuzzProtocol(plugin, plugin.fuzzing(values, fuzzed), values, fuzzed)
