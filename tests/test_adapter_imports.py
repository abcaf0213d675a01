"""Adapters import no private core module (issue 32): they translate and call the core's public names only.

Every module of the four adapter packages is parsed (``ast``, so imports inside functions and under
``TYPE_CHECKING`` count too) and any import of a ``tokenbox_core`` module with a private part
(``tokenbox_core.chat._fixups``) or of a private name from one (``from tokenbox_core.chat import _Grouper``)
is reported as ``file:line``.  A name an adapter needs is made public in its subpackage's ``__init__``
(and pinned in ``tests/core/test_subpackage_exports.py``), or the decision moves into a public core function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = ("tokenbox_langchain", "tokenbox_llamaindex", "tokenbox_pydantic_ai", "tokenbox_openai_agents")
IMPORTERS = {"import_module", "__import__"}


def _private(module: str) -> bool:
    """True for a ``tokenbox_core`` module path with a part that starts with ``_`` (``__init__`` included)."""
    parts = module.split(".")
    return parts[0] == "tokenbox_core" and any(p.startswith("_") for p in parts[1:])


def private_imports(source: str, filename: str) -> list[str]:
    """``file:line: what`` for each private core import in ``source``, in line order."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "tokenbox_core":
                continue
            if _private(node.module):
                found.append((node.lineno, f"from {node.module} import ..."))
            found += [
                (node.lineno, f"from {node.module} import {a.name}") for a in node.names if a.name.startswith("_")
            ]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            target = node.args[0].value
            if name in IMPORTERS and isinstance(target, str) and _private(target):
                found.append((node.lineno, f"{name}({target!r})"))
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def adapter_modules() -> list[Path]:
    """Every Python module of the four adapter packages, in path order."""
    return sorted(p for package in ADAPTERS for p in (ROOT / package).rglob("*.py"))


def test_every_adapter_package_is_scanned() -> None:
    """The scan covers all four adapter packages, each with its ``__init__``."""
    modules = adapter_modules()
    for package in ADAPTERS:
        assert ROOT / package / "__init__.py" in modules, package


def test_no_adapter_module_imports_a_private_core_module_or_name() -> None:
    """No adapter module imports ``tokenbox_core.<...>._<private>`` or a ``_private`` name from the core."""
    problems = [
        problem
        for path in adapter_modules()
        for problem in private_imports(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert problems == [], "adapters import private core code:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from tokenbox_core.chat._fixups import place_markers",
            ["m.py:1: from tokenbox_core.chat._fixups import ..."],
        ),
        ("from tokenbox_core.chat import _transcripts", ["m.py:1: from tokenbox_core.chat import _transcripts"]),
        ("import tokenbox_core.session._view as v", ["m.py:1: import tokenbox_core.session._view"]),
        ("def f():\n    from tokenbox_core._arguments import x", ["m.py:2: from tokenbox_core._arguments import ..."]),
        (
            "import importlib\nimportlib.import_module('tokenbox_core.tokens._counters')",
            ["m.py:2: import_module('tokenbox_core.tokens._counters')"],
        ),
        ("from tokenbox_core.chat import MARKER_ID_PREFIX, place_markers", []),
        ("import tokenbox_core.session\nfrom langchain_core._api import deprecated\nfrom . import _fit", []),
    ],
)
def test_the_scan_names_file_and_line_of_each_private_import(source: str, expected: list[str]) -> None:
    """The scan reports module-level and in-function imports, ``from ... import _name`` and ``import_module``;
    public core names, other packages' private modules and relative imports pass."""
    assert private_imports(source, "m.py") == expected
