"""The protocols the tool speaks, by name.

Each protocol package exposes a codec module with ``new_deframer()`` and
``frame(payload)``; :func:`get` returns that module so protocol-generic code (the
client, the server shell, the fuzzer) can frame and deframe without knowing the
protocol.
"""

from __future__ import annotations

import importlib
from types import ModuleType

PROTOCOLS = ("cursus",)
"""Protocols implemented so far (DESIGN.md lists five; the rest are later issues)."""

REVISIONS: dict[str, tuple[str, ...]] = {"cursus": ("doc",)}
DEFAULT_REVISION: dict[str, str] = {"cursus": "doc"}


class UnknownProtocol(ValueError):
    pass


def codec(name: str) -> ModuleType:
    """The sans-IO codec module of protocol ``name``."""
    if name not in PROTOCOLS:
        raise UnknownProtocol(f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOLS)}")
    return importlib.import_module(f"conformance.protocols.{name}.codec")
