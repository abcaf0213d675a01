"""Packaging: the MIT LICENSE, project metadata, and adapters that name their extra when it is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport (a dependency there)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def test_license_file_is_the_declared_mit_license() -> None:
    """A LICENSE file holds the MIT text the metadata declares, and is shipped with the distribution."""
    project = _project()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_project_metadata_has_urls_and_classifiers() -> None:
    """Project URLs and trove classifiers are declared (no License classifier beside the SPDX expression)."""
    project = _project()
    assert all(url.startswith("https://") for url in project["urls"].values()) and project["urls"]
    classifiers = project["classifiers"]
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)
    assert "tqdm>=4.62" in project["dependencies"]


@pytest.mark.parametrize(
    ("package", "blocked", "extra"),
    [("tokenbox_langchain", "langchain_core", "langchain"), ("tokenbox_llamaindex", "llama_index", "llamaindex")],
)
def test_adapter_without_its_extra_names_the_extra(package: str, blocked: str, extra: str) -> None:
    """Importing an adapter without its framework says which extra to install (issue 10 item 21)."""
    code = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {blocked!r} or name.startswith({blocked!r} + '.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        f"    import {package}\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert f"pip install 'tokenbox-context[{extra}]'" in out.stdout
    assert out.stdout.startswith(f"{package} needs ")


def test_import_tokenbox_core_loads_neither_pydantic_nor_tqdm() -> None:
    """pydantic (spec files) and tqdm (batch progress) load only when a spec is parsed or a batch runs."""
    code = (
        "import sys, tokenbox_core, tokenbox_core.spec\n"
        "print(sorted(m for m in ('pydantic', 'tqdm') if m in sys.modules))\n"
        "tokenbox_core.spec.parse_spec({'budget': 5, 'counter': 'whitespace', 'sections': [{'id': 'a'}]})\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]
