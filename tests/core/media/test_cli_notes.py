"""The command states fallbacks and estimates (issue 10 item 18, issue 14 §1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenbox_core.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_count_with_a_typo_states_the_fallback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox count --model gpt4o` counts with cl100k_base and says so, suggesting gpt-4o."""
    path = tmp_path / "a.txt"
    path.write_text("hello world", encoding="utf-8")
    code, out, err = _run(capsys, "count", "--model", "gpt4o", str(path))
    assert code == 0 and out.split() == ["2", str(path)]  # stdout stays data
    assert "warning: unknown model 'gpt4o'" in err and "Did you mean 'gpt-4o'" in err and "register_model" in err


def test_count_for_claude_says_it_is_approximate_and_by_how_much(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`tokenbox count --model claude-…` states the estimate and its 30% margin, in text and JSON."""
    path = tmp_path / "a.txt"
    path.write_text("x" * 400, encoding="utf-8")
    code, out, err = _run(capsys, "count", "--model", "claude-3-7-sonnet-20250219", str(path))
    assert code == 0
    assert out.splitlines() == [f"130  {path}"]  # stdout stays data
    assert "estimates" in err and "30% safety margin" in err
    assert (out + err).count("30% safety margin") == 1  # stated once, not by the command and the logger both
    code, out, _ = _run(capsys, "count", "--model", "claude-3-7-sonnet-20250219", "--json", str(path))
    data = json.loads(out)
    assert data["counter"] == "approximate+30%" and "30% safety margin" in data["note"]


def test_count_for_an_exact_model_adds_no_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """OpenAI models count exactly with their encoding and print no note."""
    path = tmp_path / "a.txt"
    path.write_text("hello world", encoding="utf-8")
    code, out, _ = _run(capsys, "count", "--model", "gpt-4o-2024-08-06", str(path))
    assert code == 0 and "note" not in out


def test_budget_for_a_dated_snapshot_uses_its_family_window(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox budget --model gpt-4o-2024-08-06` uses 128,000, not 8,192, and JSON names the source."""
    path = tmp_path / "m.json"
    path.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    code, out, _ = _run(capsys, "budget", "--model", "gpt-4o-2024-08-06", "--messages", str(path))
    assert code == 0 and "128,000" in out and "note" not in out
    code, out, _ = _run(capsys, "budget", "--model", "gpt-4o-2024-08-06", "--messages", str(path), "--json")
    data = json.loads(out)
    assert data["context_window"] == 128_000 and data["window_source"] == "registry"
    code, out, _ = _run(capsys, "budget", "--model", "claude-opus-4-1", "--messages", str(path))
    assert "note: counts are estimates (approximate+30%" in out
