"""The fuzzer: mutators, the harness and its oracle, campaigns (local or on Spark), findings.

:func:`protocol` returns the fuzz plug-in of a protocol (see :mod:`conformance.fuzz.case`).
"""

from __future__ import annotations

from conformance.fuzz.case import FuzzProtocol
from conformance.protocols import UnknownProtocol


def protocol(name: str) -> FuzzProtocol:
    if name == "cursus":
        from conformance.protocols.cursus.fuzzing import CursusFuzzing

        return CursusFuzzing()
    raise UnknownProtocol(f"no fuzzer for protocol {name!r}; choose one of: cursus")
