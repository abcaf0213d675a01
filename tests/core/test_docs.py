"""The docs the code cites exist, the ADR model table is the calculator's, no docstring cites internal notes."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from tokenbox_core._budget import DEFAULT_CONTEXT_WINDOW, MODEL_CONTEXT_WINDOWS, TokenBudgetCalculator
from tokenbox_core.errors import UnknownModelWarning

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tokenbox_core", "tokenbox_langchain", "tokenbox_llamaindex")
ADR = ROOT / "docs" / "adr" / "0039-token-budget-allocation.md"


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("phrase", ["DESIGN.md", "seed rules", "token-box-model.txt", "SELECTION.md"])
def test_no_source_cites_a_file_users_do_not_have(phrase: str) -> None:
    """Docstrings point to docs/, not to the project's internal design notes or seed files."""
    offenders = [str(p.relative_to(ROOT)) for p in _sources() if phrase in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_every_docs_path_cited_in_the_code_exists() -> None:
    """Every ``docs/...`` path named in the packages exists in the repository (anchors ignored)."""
    cited = set()
    for path in _sources():
        cited.update(re.findall(r"docs/[\w./-]+\.md", path.read_text(encoding="utf-8")))
    assert cited, "the code cites no docs at all"
    assert sorted(c for c in cited if not (ROOT / c).is_file()) == []


def test_adr_model_table_matches_the_calculator() -> None:
    """ADR-0039's table (window, response reserve, safety buffer, remainder) is what the calculator computes."""
    rows = re.findall(r"^\| ([\w.-]+|unknown model \(fallback\)) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$",
                      ADR.read_text(encoding="utf-8"), re.MULTILINE)  # fmt: skip
    calculator = TokenBudgetCalculator(counter="whitespace")
    seen = set()
    for model, *figures in rows:
        name = "acme-unknown-model" if model.startswith("unknown") else model
        with warnings.catch_warnings():  # the fallback row's model is unknown on purpose
            warnings.simplefilter("ignore", UnknownModelWarning)
            budget = calculator.calculate(name, [])
        window, reserve, safety, rest = (int(f.replace(",", "")) for f in figures)
        assert (window, reserve, safety) == (budget.context_window, budget.response_reserve, budget.safety_buffer)
        assert rest == window - reserve - safety
        seen.add(model)
    assert seen >= {"gpt-4o", "gpt-4o-mini", "gpt-4-turbo", "gpt-4", "gpt-3.5-turbo", "unknown model (fallback)"}
    assert DEFAULT_CONTEXT_WINDOW == 8_192 and MODEL_CONTEXT_WINDOWS["gpt-4o"] == 128_000


def test_adr_states_the_reserve_rationale() -> None:
    """The ADR records the calculator's fifth acceptance criterion: the reserves and why."""
    text = ADR.read_text(encoding="utf-8")
    for fragment in ("15 %", "500", "4,096", "5 %", "reserved in full", "cl100k_base"):
        assert fragment in text
