"""The only import circles left in the ``conformance`` package are type-only ones.

The graph has one node per module of the package (a package is its ``__init__.py``) and
an edge A -> B for each module B that a statement of A imports, read with :mod:`ast`:

1. ``import a.b.c`` and ``from a.b import c`` (``c`` a module) are edges to ``a.b.c``;
   ``from a.b import name`` (``name`` defined in ``a.b``) is an edge to ``a.b``.  Relative
   imports are resolved the same way.  Modules outside the package are not nodes.
2. The parent packages Python runs first (``a`` and ``a.b`` for ``import a.b.c``) are not
   edges of their own: otherwise every package ``__init__`` that imports its children
   would be in a circle with each child that imports a sibling.
3. An import under ``if TYPE_CHECKING:`` is not an edge: it never runs, and with
   ``from __future__ import annotations`` its names only appear in annotations.  That is
   the one way a circle may stay: a type-only circle.
4. An import inside a function or method body *is* an edge.  A lazy import is fine for
   what it is meant for (a module kept out of the load of every command: the plug-ins
   load the broker, the vector schema and the fuzzer that way), but when the module it
   names imports the first one back, the two need each other all the same: the circle is
   only hidden until the function first runs, and comes back as a load-time error the
   day someone moves the import to the top.
5. A module named in a string (``importlib.import_module``, the registry's entry points)
   is not an edge: that is the plug-in seam, which tests/test_imports.py checks.

A circle is an elementary cycle of this graph, written from its smallest module name,
each step with the line of the import that makes it.  :data:`KNOWN` is the allow-list of
circles kept on purpose, each with its reason; the test fails on any other circle, and
on an entry of :data:`KNOWN` that is gone (so the list only shrinks).  It is empty: the
two circles found when this test was written (kafka.broker <-> kafka.handlers through a
lazy import in ``KafkaSession.handle``, and kafka.plugin -> kafka.vectors -> kafka.plugin
through the plug-in's lazy import of the vector schema) were both broken (issue 19).
The checker itself is tested on planted circles, of every kind of import, and on a
type-only circle that must pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_CYCLES = 10_000
"""More elementary cycles than this and the graph is tangled past reading: an error."""

Cycle = tuple[str, ...]
"""A circle's modules, from its smallest name, each importing the next (the last the first)."""

KNOWN: dict[Cycle, str] = {}
"""Circles kept on purpose, each with its reason, as ``(a, b, ...): "why"``.  Remove an
entry when its circle is broken; never add one to let a new circle in."""


# --------------------------------------------------------------------- the graph


def modules(root: Path, package: str = "conformance") -> dict[str, Path]:
    """Every module of ``package`` under ``root``, by dotted name."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node`` that can run (none under TYPE_CHECKING)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                yield from _imports_in(other)
        else:
            yield from _imports(child)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _imports(node)


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]
) -> Iterator[str]:
    """The modules of ``known`` an import statement of ``module`` loads (rules 1 and 2)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in known:
            yield sub
        elif source in known:
            yield source


def graph(root: Path, package: str = "conformance") -> dict[str, dict[str, int]]:
    """``graph[a][b]``: the first line of module ``a`` that imports module ``b``."""
    found = modules(root, package)
    known = set(found)
    edges: dict[str, dict[str, int]] = {}
    for module, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out = edges.setdefault(module, {})
        for node in _imports(tree):
            for target in _targets(node, module, path.name == "__init__.py", known):
                if target != module:
                    out[target] = min(out.get(target, node.lineno), node.lineno)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[Cycle]:
    """Every elementary cycle, each from its smallest module (one DFS per start module,
    through larger names only, so each cycle is found once)."""
    found: list[Cycle] = []
    for start in sorted(edges):
        path, on_path = [start], {start}
        stack = [iter(sorted(n for n in edges[start] if n >= start))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
            elif nxt == start:
                found.append(tuple(path))
                if len(found) > MAX_CYCLES:
                    raise RuntimeError(f"more than {MAX_CYCLES} import cycles")
            elif nxt not in on_path:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(n for n in edges.get(nxt, {}) if n >= start)))
    return found


def describe(cycle: Cycle, edges: dict[str, dict[str, int]]) -> str:
    """``a:12 -> b:3 -> a``: each module with the line of its import of the next."""
    steps = [f"{m}:{edges[m][cycle[(i + 1) % len(cycle)]]}" for i, m in enumerate(cycle)]
    return " -> ".join([*steps, cycle[0]])


def new_and_gone(root: Path, known: dict[Cycle, str]) -> tuple[list[str], list[Cycle]]:
    """(the circles under ``root`` that ``known`` does not list, described; the entries
    of ``known`` that are no circle any more)."""
    edges = graph(root)
    found = cycles(edges)
    return [describe(c, edges) for c in found if c not in known], [
        c for c in known if c not in found
    ]


# --------------------------------------------------------------------- the package


def test_the_only_import_circles_are_type_only() -> None:
    new, _ = new_and_gone(ROOT, KNOWN)
    assert new == [], "import circles (a:line -> b ...):\n" + "\n".join(new)


def test_every_known_circle_still_exists() -> None:
    _, gone = new_and_gone(ROOT, KNOWN)
    assert gone == [], f"remove these from KNOWN, they are broken now: {gone}"


def test_every_known_circle_says_why() -> None:
    for cycle, reason in KNOWN.items():
        assert cycle[0] == min(cycle) and len(reason) > 20, cycle


# ----------------------------------------------------------------- planted circles


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small package: ``a`` imports ``b``, ``pkg/__init__`` imports its children, and
    ``pkg.one`` imports its sibling ``pkg.two``: no circle (rule 2)."""
    files = {
        "conformance/__init__.py": '"""x"""\n',
        "conformance/a.py": "from conformance import b\n",
        "conformance/b.py": "import json\n",
        "conformance/pkg/__init__.py": "from conformance.pkg import one, two\nNAME = 1\n",
        "conformance/pkg/one.py": "from conformance.pkg.two import X\n",
        "conformance/pkg/two.py": "X = 2\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_planted_tree_has_no_circle(tree: Path) -> None:
    assert cycles(graph(tree)) == []
    assert graph(tree)["conformance.pkg.one"] == {"conformance.pkg.two": 1}


@pytest.mark.parametrize(
    ("where", "source", "cycle"),
    [
        ("b", "from conformance import a\n", ("conformance.a", "conformance.b")),
        ("b", "import conformance.a\n", ("conformance.a", "conformance.b")),
        ("b", "from conformance.a import f\n", ("conformance.a", "conformance.b")),
        ("b", "from . import a\n", ("conformance.a", "conformance.b")),
        ("b", "from .a import f\n", ("conformance.a", "conformance.b")),
        ("b", "def g():\n    from conformance.a import f\n", ("conformance.a", "conformance.b")),
        ("b", "class C:\n    def m(self):\n        import conformance.a\n",
         ("conformance.a", "conformance.b")),
        ("b", "if FLAG:\n    from conformance import a\n", ("conformance.a", "conformance.b")),
        ("b", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n"
              "    from conformance import a\n", ("conformance.a", "conformance.b")),
        ("pkg/one", "from conformance.pkg import NAME\n",
         ("conformance.pkg", "conformance.pkg.one")),
        ("pkg/two", "from .. import a\n", None),
        ("pkg/two", "from ..pkg.one import Y\n", ("conformance.pkg.one", "conformance.pkg.two")),
    ],
    ids=[
        "from-import",
        "import",
        "from-module-import",
        "relative",
        "relative-module",
        "inside-a-function",
        "inside-a-method",
        "under-an-if",
        "type-checking-else",
        "package-init",
        "no-circle",
        "relative-two-levels",
    ],
)  # fmt: skip
def test_a_planted_circle_is_found(
    tree: Path, where: str, source: str, cycle: Cycle | None
) -> None:
    (tree / f"conformance/{where}.py").write_text(source)
    found = cycles(graph(tree))
    assert found == ([] if cycle is None else [cycle])
    if cycle is not None:
        new, gone = new_and_gone(tree, {})
        assert len(new) == 1 and gone == []
        assert new[0].startswith(f"{cycle[0]}:") and new[0].endswith(f" -> {cycle[0]}")


@pytest.mark.parametrize(
    "guard",
    [
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:",
        "import typing\nif typing.TYPE_CHECKING:",
    ],
)
def test_a_type_only_circle_is_no_circle(tree: Path, guard: str) -> None:
    (tree / "conformance/b.py").write_text(f"{guard}\n    from conformance.a import f\n")
    assert cycles(graph(tree)) == []


def test_a_longer_circle_is_found_once_with_its_lines(tree: Path) -> None:
    (tree / "conformance/b.py").write_text("import json\n\nfrom conformance.pkg import one\n")
    (tree / "conformance/pkg/two.py").write_text("import conformance.a\n")
    edges = graph(tree)
    (cycle,) = cycles(edges)
    assert cycle == ("conformance.a", "conformance.b", "conformance.pkg.one", "conformance.pkg.two")
    assert describe(cycle, edges) == (
        "conformance.a:1 -> conformance.b:3 -> conformance.pkg.one:1 -> "
        "conformance.pkg.two:1 -> conformance.a"
    )


def test_a_known_circle_passes_and_a_gone_one_is_reported(tree: Path) -> None:
    (tree / "conformance/b.py").write_text("from conformance import a\n")
    known: dict[Cycle, str] = {("conformance.a", "conformance.b"): "planted"}
    assert new_and_gone(tree, known) == ([], [])
    (tree / "conformance/b.py").write_text("import json\n")
    assert new_and_gone(tree, known) == ([], [("conformance.a", "conformance.b")])
