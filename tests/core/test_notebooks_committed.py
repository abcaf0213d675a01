"""The notebooks are committed executed: every code cell run, outputs shown, nothing machine-specific in them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
MACHINE = re.compile(r"/work/|/tmp/|/root/|/home/|0x7f[0-9a-f]{4,}|[A-Z]:\\\\Users|trace_id='|timestamp='")
"""Absolute paths of the machine that executed a notebook, and memory addresses (CPython's ``0x7f...``)."""


def _outputs_text(output: dict[str, Any]) -> str:
    parts = [output.get("text", "")]
    for kind, value in output.get("data", {}).items():
        if not kind.startswith("image/"):
            parts.append(value)
    parts += output.get("traceback", [])
    return "".join("".join(p) if isinstance(p, list) else str(p) for p in parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_code_cell_was_executed_and_its_outputs_are_committed(path: Path) -> None:
    """Each code cell carries an execution count in order, the notebook shows outputs, and none is an error."""
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{path.name}: re-execute it (execution counts {counts})"
    assert any(c["outputs"] for c in cells)
    assert [o for c in cells for o in c["outputs"] if o["output_type"] == "error"] == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_outputs_hold_no_machine_specific_path_or_address(path: Path) -> None:
    """No output names a path of the machine that ran it, a memory address or a run's trace id and clock, and no
    cell keeps the execution timings of the run that produced it."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = [m.group() for c in cells for o in c.get("outputs", []) for m in MACHINE.finditer(_outputs_text(o))]
    assert found == []
    assert [c["id"] for c in cells if "execution" in c.get("metadata", {})] == []


def test_the_langchain_notebook_shows_its_plot_inline() -> None:
    """Notebook 02's request-size plot is an inline PNG of modest size, not saved to /dev/null."""
    path = next(p for p in NOTEBOOKS if p.name.startswith("02_"))
    text = path.read_text(encoding="utf-8")
    assert "/dev/null" not in text
    images = [o["data"]["image/png"] for c in json.loads(text)["cells"] for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]  # fmt: skip
    assert len(images) == 1 and len(images[0]) < 150_000
