"""No import cycles in the packages (issue 9 §2).

Module-level imports only, read with the standard library's ``ast``: imports
under ``if TYPE_CHECKING:`` and inside functions do not run at import time
and do not count.  Importing ``a.b.c`` also runs ``a`` and ``a.b`` (unless the
importer sits inside them, where they are already being initialised), so
those count as edges too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "tokenbox_core", "tokenbox_langchain", "tokenbox_llamaindex", "tokenbox_pydantic_ai", "tokenbox_openai_agents",
)  # fmt: skip


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported (not in functions, not under TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _import_nodes(node.body)
            yield from _import_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _import_nodes(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _import_nodes(node.body)


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the package modules its module-level imports run."""
    modules = _modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
        edges = set()
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
                module = ".".join(parts[:i])
                ancestor = name == module or name.startswith(module + ".")
                if module in modules and not ancestor:
                    edges.add(module)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles_in_the_packages() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert "tokenbox_core.box._core" in graph and "tokenbox_core.layout" in graph
    assert find_cycles(graph) == []


def test_box_and_selection_meet_through_the_public_selector_protocol() -> None:
    graph = import_graph(ROOT, PACKAGES)
    box = {m for m in graph if m == "tokenbox_core.box" or m.startswith("tokenbox_core.box.")}
    assert not any(t.startswith("tokenbox_core.select") for m in box for t in graph[m])
    assert "tokenbox_core.box" in graph["tokenbox_core.select._boxing"]
    source = (ROOT / "tokenbox_core" / "select" / "_boxing.py").read_text(encoding="utf-8")
    assert "_Slot" not in source and "_Unit" not in source and "box._" not in source


def test_layout_and_report_do_not_import_each_other_at_module_level() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert not any(t.startswith("tokenbox_core.report") for t in graph["tokenbox_core.layout"])
    report = [m for m in graph if m.startswith("tokenbox_core.report")]
    assert report and not any("tokenbox_core.layout" in graph[m] for m in report)


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.sub import b\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n\n"
        "def f():\n    from pkg import c\n"
    )
    (pkg / "c.py").write_text("from . import a\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from ..c import x\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.a"] == set()  # TYPE_CHECKING and function-local imports do not count
    assert graph["pkg.c"] == {"pkg.a"}
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert find_cycles(graph) == []
    (pkg / "a.py").write_text("import pkg.sub.b\n")  # a -> pkg.sub.b -> c -> a
    assert find_cycles(import_graph(tmp_path, ("pkg",))) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
