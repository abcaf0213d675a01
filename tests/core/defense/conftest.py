"""The defence corpus: attacks and risky-looking benign texts, one JSON object a line.

Each row has ``id``, ``class``, ``source`` and ``text``; obfuscated attacks
store a readable ``payload`` and a ``transform`` name, applied here with
:func:`tokenbox_core.defense._obfuscate` into the ``{payload}`` slot of ``text``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core.defense._obfuscate import obfuscate

CORPUS = Path(__file__).parent / "corpus"


def load_corpus(name: str) -> list[dict[str, Any]]:
    """Rows of ``corpus/<name>.jsonl`` with obfuscations applied."""
    rows = []
    for line in (CORPUS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "transform" in row:
            row["text"] = row["text"].replace("{payload}", obfuscate(row["payload"], row["transform"]))
            row["text"] = row["text"].replace("{{", "{").replace("}}", "}")
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def attacks() -> list[dict[str, Any]]:
    """The 175 attacks of the main corpus."""
    return load_corpus("attacks")


@pytest.fixture(scope="session")
def benign() -> list[dict[str, Any]]:
    """The 160 benign texts of the main corpus."""
    return load_corpus("benign")


@pytest.fixture(scope="session")
def holdout() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The held-out attacks and benign texts, written after the detector was tuned."""
    return load_corpus("holdout_attacks"), load_corpus("holdout_benign")


@pytest.fixture(scope="session")
def heldout2() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Held-out set 2: attacks and benign texts written without reading the detector's rules."""
    return load_corpus("heldout2_attacks"), load_corpus("heldout2_benign")
