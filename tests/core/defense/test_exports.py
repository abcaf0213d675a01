"""The public API of tokenbox_core.defense is exactly what ``__all__`` says."""

from __future__ import annotations

import subprocess
import sys
import types

import tokenbox_core.defense as defense


def test_all_names_exist_and_design_names_are_public() -> None:
    """Every name in __all__ exists; the names DESIGN.md promises are among them; SecurityError is the core's."""
    for name in defense.__all__:
        assert hasattr(defense, name), name
    assert set(defense.__all__) >= {
        "sanitize", "InjectionDetector", "HeuristicDetector", "DefensePolicy", "check_output",
    }  # fmt: skip
    import tokenbox_core
    from tokenbox_core.errors import SecurityError

    assert "SecurityError" not in defense.__all__  # one home: tokenbox_core.errors (and the root)
    assert tokenbox_core.SecurityError is SecurityError and issubclass(SecurityError, tokenbox_core.TokenBoxError)


def test_public_attributes_are_in_all() -> None:
    """Every public, non-module attribute of the package is listed in __all__."""
    public = {n for n, v in vars(defense).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(defense.__all__)


def test_importing_the_core_does_not_import_the_defence() -> None:
    """`import tokenbox_core` stays light: the defence package loads only when asked for."""
    code = "import sys, tokenbox_core; print('tokenbox_core.defense' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
