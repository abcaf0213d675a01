"""tokenbox_openai_agents exports exactly its __all__; the core stays free of the Agents SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("agents")

import tokenbox_openai_agents

EXPECTED_ALL = ["TokenBoxInputFilter", "TokenBoxSession", "rehydrate_tool"]


def test_all() -> None:
    """__all__ is the expected, sorted list and every name in it resolves."""
    assert tokenbox_openai_agents.__all__ == EXPECTED_ALL
    assert all(getattr(tokenbox_openai_agents, n) is not None for n in EXPECTED_ALL)


def test_public_names_are_all() -> None:
    """The package's public names are exactly __all__."""
    public = {n for n in vars(tokenbox_openai_agents) if not n.startswith("_")}
    assert public == set(EXPECTED_ALL)


def test_core_import_does_not_load_the_agents_sdk() -> None:
    """Importing tokenbox_core loads no Agents SDK module; importing tokenbox_openai_agents does."""
    code = (
        "import sys, tokenbox_core, tokenbox_core.request, tokenbox_core.session; "
        "assert not any(m == 'agents' or m.startswith('agents.') for m in sys.modules); "
        "import tokenbox_openai_agents; assert 'agents' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
