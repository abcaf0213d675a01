"""The README's Python snippets run as written (each in a fresh interpreter, offline)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_readme_has_snippets() -> None:
    """The README shows the five-line example and one snippet per framework."""
    assert len(SNIPPETS) >= 4
    assert len(SNIPPETS[0].strip().splitlines()) <= 6


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(snippet: str) -> None:
    """Each snippet runs when pasted into a fresh Python, with no network."""
    env = dict(os.environ, TOKENBOX_OFFLINE="1")
    # Every warning is an error, except the deprecation warnings LlamaIndex workflows raise from the inspect module
    # at every FunctionAgent(...) (inspect.getmembers reads the agent's deprecated pydantic attributes); Python's
    # default filters never show those to a user.
    flags = ["-W", "error", "-W", "ignore::DeprecationWarning:inspect"]
    result = subprocess.run([sys.executable, *flags, "-c", snippet], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
