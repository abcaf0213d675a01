"""Structured data: cheapest lossless rendering, filtering, aggregation, sampling (chapter §6.12.1, §6.12.3)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Section, TokenBox, get_counter
from tokenbox_core.errors import LensError
from tokenbox_core.structured import (
    aggregate,
    cheapest,
    fit_table,
    parse,
    render,
    sample_rows,
    select_columns,
    select_rows,
)
from tokenbox_core.structured._render import applicable_formats

ORDERS = [
    {
        "order_id": 1000 + i,
        "customer": f"Customer {i % 17}",
        "status": ["paid", "refunded", "pending"][i % 3],
        "amount": round(12.5 * i, 2),
        "country": ["NO", "IT", "DE", "FR"][i % 4],
    }
    for i in range(50)
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
    st.sampled_from(["1", "true", "null", " x", "a,b", 'q"q', "a | b", "x\ny", "", "-3", "NaN", "Infinity"]),
)
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


@given(
    st.lists(keys, min_size=1, max_size=4, unique=True).flatmap(
        lambda ks: st.lists(st.fixed_dictionaries({k: scalars for k in ks}), min_size=1, max_size=6)
    )
)
def test_every_table_rendering_round_trips(rows: list[dict]) -> None:
    """CSV, Markdown and JSON renderings of uniform records parse back to the same records."""
    for fmt in applicable_formats(rows):
        assert parse(render(rows, fmt), fmt) == rows, fmt


@given(st.dictionaries(keys, scalars, min_size=1, max_size=6))
def test_key_value_rendering_round_trips(record: dict) -> None:
    """The compact key: value form of a flat record parses back to the record."""
    assert "kv" in applicable_formats(record)
    assert parse(render(record, "kv"), "kv") == record


def test_cheapest_format_is_measured_with_the_section_counter() -> None:
    """The cheapest lossless format wins by measured cost; the chapter's table order holds for records."""
    best = cheapest(ORDERS, "o200k_base")
    costs = best.costs
    assert best.format == "csv" and best.tokens == min(costs.values())
    assert costs["json_min"] < costs["json_pretty"] and costs["csv"] < costs["markdown"] < costs["json_min"]
    assert best.ratio() < 0.5
    claude = cheapest(ORDERS, get_counter("claude-sonnet-4-5"))
    assert claude.costs["csv"] == get_counter("claude-sonnet-4-5").count(render(ORDERS, "csv"))


def test_shapes_limit_the_formats() -> None:
    """Nested values only render as JSON; a flat record also as key: value; tables need uniform records."""
    assert applicable_formats({"a": {"b": 1}}) == ("json_pretty", "json_min")
    assert applicable_formats({"a": 1}) == ("json_pretty", "json_min", "kv")
    assert applicable_formats([{"a": 1}, {"b": 2}]) == ("json_pretty", "json_min")
    assert cheapest({"name": "Ada", "born": 1815}).format == "kv"
    with pytest.raises(LensError, match="cannot render this value losslessly"):
        render([{"a": 1}, {"b": 2}], "csv")
    with pytest.raises(LensError, match="unknown structured format"):
        render({"a": 1}, "yaml")  # type: ignore[arg-type]
    with pytest.raises(LensError, match="not JSON-like"):
        cheapest({"a": {1, 2}})


def test_structured_lens_in_a_layout() -> None:
    """strategy='structured' re-renders JSON evidence in its cheapest lossless form under pressure."""
    text = json.dumps(ORDERS, indent=2)
    layout = TokenBox(900, counter="o200k_base").layout(
        [Section("task", "Summarise the refunds."), Section("orders", text, shrink=1, strategy="structured")]
    )
    out = layout["orders"].text
    assert layout.total_tokens <= 900
    assert out.startswith("order_id,customer,status,amount,country")
    assert parse(out, "csv") == ORDERS


def test_filtering_sampling_and_aggregation() -> None:
    """Column and row filters, even sampling and aggregates are deterministic and validated."""
    assert select_columns(ORDERS[:2], ["status", "amount"]) == [
        {"status": "paid", "amount": 0.0},
        {"status": "refunded", "amount": 12.5},
    ]
    with pytest.raises(LensError, match="unknown columns \\['price'\\]"):
        select_columns(ORDERS, ["price"])
    refunds = select_rows(ORDERS, lambda r: r["status"] == "refunded")
    assert len(refunds) == 17
    assert [r["order_id"] for r in sample_rows(ORDERS, 3)] == [1000, 1024, 1049]
    with pytest.raises(LensError, match="non-negative integer"):
        sample_rows(ORDERS, -1)
    summary = aggregate(ORDERS, by="status")
    assert summary["groups"]["paid"]["rows"] == 17
    assert summary["groups"]["paid"]["columns"]["amount"]["count"] == 17
    assert aggregate(ORDERS)["columns"]["country"]["top"] == {"NO": 13, "IT": 13, "DE": 12, "FR": 12}
    with pytest.raises(LensError, match="list of records"):
        aggregate({"a": 1})  # type: ignore[arg-type]


def test_fit_table_samples_with_a_note_of_the_full_size() -> None:
    """Over its target, a table keeps an evenly spaced sample and says how many rows exist and where."""
    fit = fit_table(ORDERS, 200, "o200k_base", columns=["order_id", "status", "amount"], source="orders.db")
    assert fit.tokens <= 200 and not fit.complete
    assert fit.note == f"showing {fit.rows_kept} of 50 rows (evenly spaced); full data: orders.db"
    assert fit.text.endswith(fit.note) and fit.columns == ("order_id", "status", "amount")
    whole = fit_table(ORDERS, 10_000, "o200k_base")
    assert whole.complete and whole.note == "" and whole.format == "csv"
    with pytest.raises(LensError, match="not even one of 50 rows fits in 5 tokens"):
        fit_table(ORDERS, 5, "o200k_base")
