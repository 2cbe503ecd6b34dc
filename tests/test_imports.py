"""The seam between the generic tool and the protocols, read from the package's imports.

Rules:

1. Generic code (everything in ``conformance`` outside ``conformance/protocols/<name>/``
   and ``conformance/suite/<name>/``) imports no module of a protocol, and names none in a
   string (``importlib.import_module("conformance.protocols.x...")``), except the registry
   ``conformance/protocols/__init__.py``, which names each built-in plug-in once.
2. A protocol's modules import no other protocol's.
3. Nothing imports ``conformance.cli`` but the program's entry point ``__main__``.

The project's own tests may import what they test; they are not checked.  The checker is
tested on a planted breach of each kind.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "conformance"
REGISTRY = Path("conformance/protocols/__init__.py")
ENTRY = Path("conformance/__main__.py")
_PROTOCOL_MODULE = re.compile(r"^conformance\.(protocols|suite)\.([a-z0-9_]+)(\.|$)")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _owner(module: str, protocol_names: set[str]) -> str | None:
    """The protocol a module belongs to (its own folder or suite folder), or None."""
    m = _PROTOCOL_MODULE.match(module)
    return m.group(2) if m and m.group(2) in protocol_names else None


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = ".".join(base[: len(base) - node.level + 1])
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
        # an attribute's docstring: a bare string right after an assignment
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for before, after in itertools.pairwise(body):
                if (
                    isinstance(before, ast.Assign | ast.AnnAssign)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                ):
                    ids.add(id(after.value))
    return ids


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for word in re.findall(r"conformance\.(?:protocols|suite)\.[a-z0-9_.]+", node.value):
                out.append((node.lineno, word))
    return out


def breaches(root: Path) -> list[str]:
    """Every import or module string in the ``conformance`` package under ``root`` that
    breaks a rule of this module, as ``path:line: what``."""
    package = root / "conformance"
    protocol_names = {
        p.name for p in (package / "protocols").iterdir() if (p / "__init__.py").exists()
    }
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root)
        module = _module_name(path, root)
        owner = _owner(module, protocol_names)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(rel))
        names = _imported(tree, module, path.name == "__init__.py")
        for line, target in names:
            if (target == "conformance.cli" or target.startswith("conformance.cli.")) and (
                rel != ENTRY
            ):
                found.append(f"{rel}:{line}: imports {target} (nothing imports cli.py back)")
            used = _owner(target, protocol_names)
            if used is not None and used != owner:
                found.append(f"{rel}:{line}: imports {target}, a module of protocol {used}")
        if owner is None and rel != REGISTRY:
            for line, word in _strings(tree):
                used = _owner(word, protocol_names)
                if used is not None:
                    found.append(f"{rel}:{line}: names {word}, a module of protocol {used}")
    return sorted(set(found))


def test_generic_code_imports_no_protocol_and_nothing_imports_the_cli() -> None:
    assert breaches(ROOT) == []


def test_the_registry_names_every_protocol_package() -> None:
    from conformance import protocols

    on_disk = {p.name for p in (PACKAGE / "protocols").iterdir() if (p / "__init__.py").exists()}
    assert on_disk <= set(protocols.BUILTIN), "a protocol package is not in the registry"
    for name in protocols.BUILTIN:
        plugin = protocols.get(name)
        assert plugin.name == name and plugin.suite_dir().is_dir()


# --------------------------------------------------------------- planted breaches

GENERIC = "conformance/report/planted.py"
PROTOCOL = "conformance/protocols/alpha/planted.py"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small copy of the package's shape: two protocols, a cli, a registry."""
    for rel in (
        "conformance/__init__.py",
        "conformance/cli.py",
        "conformance/__main__.py",
        "conformance/report/__init__.py",
        "conformance/protocols/__init__.py",
        "conformance/protocols/alpha/__init__.py",
        "conformance/protocols/alpha/codec.py",
        "conformance/protocols/beta/__init__.py",
        "conformance/suite/__init__.py",
        "conformance/suite/alpha/__init__.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('"""x"""\n')
    (tmp_path / ENTRY).write_text("from conformance.cli import main\n")
    (tmp_path / REGISTRY).write_text('BUILTIN = {"alpha": "conformance.protocols.alpha.p:P"}\n')
    (tmp_path / "conformance/suite/alpha/__init__.py").write_text(
        "from conformance.protocols.alpha import codec\n"
    )
    return tmp_path


def test_the_clean_planted_tree_has_no_breach(tree: Path) -> None:
    assert breaches(tree) == []


@pytest.mark.parametrize(
    ("where", "source", "words"),
    [
        (GENERIC, "import conformance.protocols.alpha.codec\n", ["protocol alpha"]),
        (GENERIC, "from conformance.protocols.alpha import codec\n", ["protocol alpha"]),
        (GENERIC, "from conformance.protocols.alpha.codec import x\n", ["protocol alpha"]),
        (GENERIC, "from ..protocols.alpha import codec\n", ["protocol alpha"]),
        (GENERIC, "from conformance.suite.alpha import verify\n", ["protocol alpha"]),
        (GENERIC, "def f():\n    from conformance.protocols import alpha\n", ["alpha"]),
        (GENERIC, 'M = "conformance.protocols.alpha.codec"\n', ["names", "alpha"]),
        (GENERIC, "from conformance.cli import EXIT_OK\n", ["cli.py"]),
        (GENERIC, "from conformance import cli\n", ["cli.py"]),
        (PROTOCOL, "from conformance.protocols.beta import x\n", ["protocol beta"]),
        (PROTOCOL, "from conformance.cli import UsageError\n", ["cli.py"]),
    ],
    ids=[
        "import",
        "from-import",
        "from-module-import",
        "relative",
        "suite",
        "inside-a-function",
        "string",
        "cli",
        "cli-as-name",
        "other-protocol",
        "protocol-imports-cli",
    ],
)
def test_a_planted_breach_is_found(tree: Path, where: str, source: str, words: list[str]) -> None:
    (tree / where).write_text(source)
    found = breaches(tree)
    assert len(found) >= 1, f"{source!r} in {where} was not found"
    assert all(where in f for f in found)
    for word in words:
        assert any(word in f for f in found), f"{word!r} not in {found}"


def test_a_docstring_may_name_a_protocol_module(tree: Path) -> None:
    (tree / GENERIC).write_text('"""See :mod:`conformance.protocols.alpha.codec`."""\n')
    assert breaches(tree) == []
