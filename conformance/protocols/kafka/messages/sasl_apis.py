"""The APIs of SASL authentication (SaslHandshake, SaslAuthenticate): (key, name, message
module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

APIS: list[tuple[int, str, ModuleType]] = []
