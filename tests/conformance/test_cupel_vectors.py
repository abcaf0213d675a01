"""Cupel conformance: every required vector passes, and the kit reads the format's optional forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenbox_core.testing.cupel import VectorResult, load_vector, run_vector, run_vectors, toml11_to_toml10

HERE = Path(__file__).parent / "cupel"
REQUIRED = sorted((HERE / "required").rglob("*.toml"))


def test_the_58_required_vectors_are_present_with_their_licence() -> None:
    """The copied vector set is complete and the MIT licence sits beside it."""
    assert len(REQUIRED) == 58
    assert (HERE / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.parametrize("path", REQUIRED, ids=lambda p: str(p.relative_to(HERE / "required")))
def test_required_vector_passes(path: Path) -> None:
    """tokenbox_core.select conforms to this required Cupel vector."""
    result = run_vector(path)
    assert result.passed, str(result)


def test_run_vectors_runs_a_directory_in_path_order() -> None:
    """run_vectors returns one result per file, sorted by path, all passing here."""
    results = run_vectors(HERE)
    assert [r.path for r in results] == [str(p) for p in REQUIRED]
    assert all(r.passed for r in results)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


PIPELINE_HEAD = """
[test]
name = "{name}"
stage = "pipeline"

[budget]
max_tokens = 1000
target_tokens = {target}
output_reserve = 0

[config]
slicer = "greedy"
placer = "chronological"
deduplication = true
{extra}

[[config.scorers]]
type = "recency"
weight = 1.0
"""


def test_optional_forms_seconds_less_times_and_duplicates(tmp_path: Path) -> None:
    """TOML 1.1 date-times without seconds parse; duplicate content keeps the newer copy."""
    text = (
        PIPELINE_HEAD.format(name="dedup", target=300, extra="")
        + """
[[items]]
content = "shared"
tokens = 100
timestamp = 2024-01-01T00:00Z

[[items]]
content = "shared"
tokens = 100
timestamp = 2024-12-01T09:30Z

[[items]]
content = "unique"
tokens = 100
timestamp = 2024-06-01T00:00+02:00

[[expected_output]]
content = "unique"

[[expected_output]]
content = "shared"
"""
    )
    result = run_vector(write(tmp_path, "dedup.toml", text))
    assert result.passed, str(result)
    assert load_vector(tmp_path / "dedup.toml")["items"][1]["timestamp"].minute == 30


def test_optional_forms_empty_input_all_pinned_and_truncation(tmp_path: Path) -> None:
    """Empty input gives empty output; all-pinned items are only placed; truncate keeps pins."""
    empty = PIPELINE_HEAD.format(name="empty", target=500, extra="")
    pinned = (
        PIPELINE_HEAD.format(name="pinned", target=500, extra="")
        + """
[[items]]
content = "sys"
tokens = 100
pinned = true

[[items]]
content = "old"
tokens = 150
timestamp = 2024-01-01T00:00:00Z
pinned = true

[[expected_output]]
content = "old"

[[expected_output]]
content = "sys"
"""
    )
    truncate = (
        PIPELINE_HEAD.format(name="truncate", target=250, extra='overflow_strategy = "truncate"')
        + """
[[items]]
content = "pinned-sys"
tokens = 150
pinned = true

[[items]]
content = "msg-a"
tokens = 100
timestamp = 2024-12-01T00:00Z

[[items]]
content = "msg-b"
tokens = 100
timestamp = 2024-06-01T00:00Z

[[expected_output]]
content = "msg-a"

[[expected_output]]
content = "pinned-sys"
"""
    )
    for name, text in (("empty", empty), ("pinned", pinned), ("truncate", truncate)):
        result = run_vector(write(tmp_path, f"{name}.toml", text))
        assert result.passed, str(result)


def test_optional_forms_nested_composite_degenerate_scaled_and_empty_slice(tmp_path: Path) -> None:
    """Nested composites via children, all-equal scaled scores (0.5), and slicing nothing."""
    nested = """
[test]
name = "nested"
stage = "scoring"
scorer = "composite"

[[config.scorers]]
type = "composite"
weight = 1.0

[[config.scorers.children]]
type = "recency"
weight = 1.0

[[config.scorers.children]]
type = "priority"
weight = 1.0

[[config.scorers]]
type = "reflexive"
weight = 1.0

[[items]]
content = "a"
tokens = 100
timestamp = 2024-01-01T00:00
priority = 1
futureRelevanceHint = 0.8

[[items]]
content = "b"
tokens = 100
timestamp = 2024-12-01T00:00
priority = 5
futureRelevanceHint = 0.2

[[expected]]
content = "a"
score_approx = 0.4

[[expected]]
content = "b"
score_approx = 0.6
"""
    scaled = """
[test]
name = "scaled"
stage = "scoring"
scorer = "scaled"

[config]
inner_scorer = "reflexive"

[[items]]
content = "a"
tokens = 1
futureRelevanceHint = 0.4

[[items]]
content = "b"
tokens = 1
futureRelevanceHint = 0.4

[[expected]]
content = "a"
score_approx = 0.5

[[expected]]
content = "b"
score_approx = 0.5
"""
    empty_slice = """
[test]
name = "empty slice"
stage = "slicing"
slicer = "greedy"

[budget]
target_tokens = 500

[expected]
selected_contents = []
"""
    for name, text in (("nested", nested), ("scaled", scaled), ("slice", empty_slice)):
        result = run_vector(write(tmp_path, f"{name}.toml", text))
        assert result.passed, str(result)


def test_failures_are_reported_with_a_readable_detail(tmp_path: Path) -> None:
    """A wrong expectation fails with the actual and expected values in the detail."""
    text = """
[test]
name = "wrong"
stage = "scoring"
scorer = "reflexive"

[[items]]
content = "x"
tokens = 1
futureRelevanceHint = 0.3

[[expected]]
content = "x"
score_approx = 0.9
"""
    result = run_vector(write(tmp_path, "wrong.toml", text))
    assert isinstance(result, VectorResult)
    assert not result.passed
    assert "'x': score 0.3, expected 0.9" in result.detail
    assert str(result).startswith("FAIL [scoring] wrong:")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("[test\nname=", "cannot read the vector"),
        ('[test]\nname = "n"\nstage = "sorting"\n', "unknown stage 'sorting'"),
        (
            '[test]\nname = "n"\nstage = "scoring"\nscorer = "vibes"\n',
            "unsupported vector: unknown scorer type 'vibes'",
        ),
        (
            '[test]\nname = "n"\nstage = "scoring"\nscorer = "recency"\nexpect_construction_error = true\n',
            "expected a construction error, but RecencyScorer() was built",
        ),
        (
            '[test]\nname = "n"\nstage = "placing"\nplacer = "spiral"\n',
            "unsupported vector: unknown placer 'spiral'",
        ),
    ],
)
def test_broken_or_unknown_vectors_fail_with_the_reason(tmp_path: Path, text: str, detail: str) -> None:
    """Unreadable files, unknown stages or components, and unmet construction errors fail, saying why."""
    result = run_vector(write(tmp_path, "v.toml", text))
    assert not result.passed
    assert detail in result.detail


def test_toml11_times_are_completed_only_outside_strings_and_comments() -> None:
    """Seconds are added to bare times; strings, comments, offsets and full times are left alone."""
    source = (
        "a = 2024-01-01T12:00Z\n"
        "b = 2024-01-01 12:00\n"
        "c = 07:32\n"
        "d = 1979-05-27T07:32:00-07:00\n"
        "e = 2024-01-01T12:00+05:30\n"
        'f = "12:00"  # 12:00\n'
        "g = '''\n12:00'''\n"
        'h = """x "" 12:00"""\n'
        'i = "a \\" 12:00"\n'
    )
    expected = (
        "a = 2024-01-01T12:00:00Z\n"
        "b = 2024-01-01 12:00:00\n"
        "c = 07:32:00\n"
        "d = 1979-05-27T07:32:00-07:00\n"
        "e = 2024-01-01T12:00:00+05:30\n"
        'f = "12:00"  # 12:00\n'
        "g = '''\n12:00'''\n"
        'h = """x "" 12:00"""\n'
        'i = "a \\" 12:00"\n'
    )
    assert toml11_to_toml10(source) == expected


SCORING = '[test]\nname = "n"\nstage = "scoring"\nscorer = "{scorer}"\n{config}\n[[items]]\ncontent = "a"\ntokens = 1\n'


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (SCORING.format(scorer="composite", config=""), "a composite scorer needs 'scorers' (or 'children')"),
        (SCORING.format(scorer="scaled", config=""), "a scaled scorer needs 'inner_scorer'"),
        (SCORING.format(scorer="decay", config=""), "a decay scorer needs 'reference_time'"),
        (
            SCORING.format(scorer="decay", config='[config]\nreference_time = 2025-01-01T00:00Z\ncurve = {type="x"}'),
            "unknown decay curve 'x'",
        ),
        (
            SCORING.format(scorer="recency", config="").replace("tokens = 1", "tokens = 1\ntimestamp = 12:00"),
            "timestamp datetime.time(12, 0) is not a date-time",
        ),
        ('[test]\nname = "n"\nstage = "slicing"\nslicer = "magic"\n', "unknown slicer 'magic'"),
        ('[test]\nname = "n"\nstage = "pipeline"\n[budget]\nmax_tokens = 1\n', "needs [[config.scorers]]"),
    ],
)
def test_incomplete_vectors_fail_as_unsupported(tmp_path: Path, text: str, detail: str) -> None:
    """A vector missing what its component needs fails with a detail naming the missing piece."""
    result = run_vector(write(tmp_path, "v.toml", text))
    assert not result.passed
    assert detail in result.detail, result.detail
