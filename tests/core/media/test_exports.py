"""``tokenbox_core.models`` exports exactly its ``__all__``."""

from __future__ import annotations

import subprocess
import sys
import types

import tokenbox_core.models as models


def test_all_is_sorted_and_complete() -> None:
    """__all__ is sorted, every name exists, and every public attribute is listed."""
    names = list(models.__all__)
    assert names == sorted(names) and len(names) == len(set(names))
    public = {n for n, v in vars(models).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(names)
    assert set(names) >= {"UsageCalibrator", "CalibratedCounter", "EndpointCounter", "read_usage", "ReportedUsage"}


def test_importing_models_loads_no_provider_sdk() -> None:
    """``import tokenbox_core.models`` loads no provider SDK or framework (the endpoint counter takes your client)."""
    code = (
        "import sys, tokenbox_core.models; "
        "print([m for m in ('anthropic', 'google.genai', 'openai', 'langchain_core', 'llama_index') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
