"""The conformance cases of a suite package, read from its modules (no pytest run): each
``test_*`` function's case ID, requirement IDs and the function itself."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any, NamedTuple

from conformance import protocols


class Case(NamedTuple):
    case_id: str
    requirements: tuple[str, ...]
    fn: Any


def cases(package: ModuleType) -> list[Case]:
    found = []
    for mod in pkgutil.iter_modules(package.__path__):
        if not mod.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{mod.name}")
        for name, fn in vars(module).items():
            if not name.startswith("test_"):
                continue
            marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "conformance"]
            assert len(marks) == 1, f"{mod.name}.{name} is not marked with @case"
            found.append(Case(marks[0].kwargs["case_id"], marks[0].kwargs["requirements"], fn))
    return found


def of_protocol(name: str) -> list[Case]:
    """The cases of the registered protocol ``name`` (its plug-in's suite package)."""
    return cases(importlib.import_module(protocols.get(name).suite_package))
