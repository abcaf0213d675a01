"""Usage anchoring: calibrated counts for approximately counted models, from the input tokens providers reported."""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import fit_conversation, get_counter
from tokenbox_core.errors import CounterError, UsageReportError
from tokenbox_core.models import CalibratedCounter, UsageCalibrator
from tokenbox_core.models._counting import MarginApproximateCounter, counting_note
from tokenbox_core.tokens import count_message_tokens

MODEL = "claude-sonnet-4-5"
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=400)
observations = st.lists(st.tuples(texts, st.integers(min_value=0, max_value=2000)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(observations)
def test_never_below_an_observed_text(pairs: list[tuple[str, int]]) -> None:
    """For every text it was fed, the calibrated count is at least the count the provider reported."""
    cal = UsageCalibrator()
    for text, reported in pairs:
        cal.observe(MODEL, text, reported)
    counter = cal.counter(MODEL)
    for text, reported in pairs:
        assert counter.count(text) >= reported


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(texts, texts, st.integers(min_value=0, max_value=3000)), min_size=1, max_size=8))
def test_never_below_an_observed_request(requests: list[tuple[str, str, int]]) -> None:
    """For every request of chat messages it was fed, the calibrated message count is at least the reported one."""
    cal = UsageCalibrator()
    sent = []
    for system, user, reported in requests:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        cal.observe(MODEL, messages, {"input_tokens": reported})
        sent.append((messages, reported))
    counter = cal.counter(MODEL)
    for messages, reported in sent:
        assert counter.count_request(messages) >= reported
        assert counter.count_request(messages) >= count_message_tokens(messages, counter)


def test_outliers_widen_only_their_own_count() -> None:
    """A text that needed far more than the rest is remembered at its reported count, but the factor for other
    texts follows the bulk (the coverage quantile), not the outlier."""
    cal = UsageCalibrator(base="approximate")
    texts = [f"plain english sentence number {i} about budgets and caches. " * 6 for i in range(30)]
    for text in texts:
        cal.observe(MODEL, text, -(-len(text) // 4))  # exactly chars/4
    outlier = "漢字" * 200  # 400 characters, 100 units, billed far higher
    cal.observe(MODEL, outlier, 900)
    counter = cal.counter(MODEL)
    assert counter.count(outlier) == 900
    assert float(cal.calibration(MODEL).factor) < 1.5  # the outlier needed 9.0: it moves the mean, not the factor
    assert counter.count("漢字" * 201) < 900  # an unseen text is estimated, not remembered


@settings(max_examples=40, deadline=None)
@given(observations, st.randoms(use_true_random=False))
def test_deterministic_and_order_independent(pairs: list[tuple[str, int]], rnd: random.Random) -> None:
    """The same observations in any order, fed once or twice, give the same calibration and the same file."""
    first, second = UsageCalibrator(), UsageCalibrator()
    for text, reported in pairs:
        first.observe(MODEL, text, reported)
    shuffled = pairs * 2
    rnd.shuffle(shuffled)
    for text, reported in shuffled:
        second.observe(MODEL, text, reported)
    assert first.to_dict() == second.to_dict()
    assert first.calibration(MODEL) == second.calibration(MODEL)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=40),
    st.lists(st.integers(min_value=1, max_value=30), min_size=2, max_size=30),
)
def test_margin_shrinks_as_consistent_observations_accumulate(p: int, q: int, sizes: list[int]) -> None:
    """Observations that all agree (reported = units × p/q exactly) shrink the factor and margin, or keep them."""
    cal = UsageCalibrator(base="approximate")
    factors, margins = [], []
    for n, k in enumerate(sizes):
        text = "".join(chr(0x61 + (n + i) % 26) for i in range(4 * q * k))  # q*k units of chars/4
        cal.observe(MODEL, text, p * k)
        got = cal.calibration(MODEL)
        assert got.ratio == pytest.approx(p / q)
        factors.append(got.factor)
        margins.append(got.margin)
    assert factors == sorted(factors, reverse=True)
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(margins))


@settings(max_examples=60, deadline=None)
@given(texts)
def test_without_observations_it_is_the_stated_margin(text: str) -> None:
    """Before any usage is observed, counts are the base count plus the model's 30 % margin: over chars/4, exactly
    today's estimate."""
    assert UsageCalibrator(base="approximate").counter(MODEL).count(text) == MarginApproximateCounter(0.30).count(text)
    o200k = get_counter("o200k_base").count(text)
    assert UsageCalibrator().counter(MODEL).count(text) == -(-o200k * 13 // 10)


def test_consistent_usage_tightens_the_estimate() -> None:
    """Text whose real count is 1.1× chars/4 goes from +30 % to about +5 % over the truth after 40 requests."""
    cal = UsageCalibrator(base="approximate")
    rng = random.Random(7)
    words = ["context", "budget", "token", "layout", "cache", "prefix", "model", "usage", "report", "calibrate"]
    for _ in range(40):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(50, 300)))
        cal.observe(MODEL, text, math.ceil(-(-len(text) // 4) * 1.1))
    got = cal.calibration(MODEL)
    assert got.observations == 40 and got.ratio == pytest.approx(1.1, abs=0.01)
    assert 1.1 < float(got.factor) < 1.1 * 1.06
    assert got.margin < 0.051


def test_a_calibrated_counter_works_wherever_a_counter_does() -> None:
    """get_counter accepts it, layouts use it, and the counting note states the calibration."""
    cal = UsageCalibrator()
    cal.observe(MODEL, "alpha beta gamma " * 40, 200)
    counter = cal.counter(MODEL)
    assert isinstance(counter, CalibratedCounter) and get_counter(counter) is counter
    assert counter.profile is not None and counter.profile.name == MODEL
    assert "calibrated on 1 reported request" in counting_note(counter)
    messages = [{"role": "user", "content": f"turn {i} " + "words " * 50} for i in range(10)]
    fit = fit_conversation(messages, 200, counter=counter)
    assert count_message_tokens(fit.messages, counter) <= 200
    cut = counter.truncate("word " * 500, 40)
    assert counter.count(cut) <= 40 < counter.count(cut + "word ")


def test_framework_usage_shapes_are_accepted() -> None:
    """LangChain usage_metadata, a LlamaIndex response's raw usage and plain numbers all feed the calibrator."""
    cal = UsageCalibrator()
    cal.observe(MODEL, "one two three " * 30, {"input_tokens": 120, "output_tokens": 3, "total_tokens": 123})
    cal.observe(MODEL, "four five six " * 30, {"raw": {"usage": {"input_tokens": 100, "cache_read_input_tokens": 20}}})
    cal.observe("gemini-2.5-flash", "seven eight " * 30, {"prompt_token_count": 95})
    assert sorted(o.reported for o in cal.observations) == [95, 120, 120]
    assert cal.models() == ["claude-sonnet-4-5", "gemini-2.5-flash"]


def test_persisted_and_read_back(tmp_path) -> None:
    """save/load round-trips the documented JSON format; counts are identical after loading."""
    cal = UsageCalibrator(prior_weight=4, min_margin=0.05)
    cal.observe(MODEL, "persist me " * 20, 70)
    cal.observe("claude-haiku-4-5-20251001", [{"role": "user", "content": "hello there " * 10}], 40)
    path = tmp_path / "calibration.json"
    cal.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "tokenbox-usage-calibration" and data["version"] == 1
    assert {o["model"] for o in data["observations"]} == {"claude-sonnet-4-5", "claude-haiku-4-5"}
    assert all("persist" not in json.dumps(o) for o in data["observations"])  # texts are never stored
    back = UsageCalibrator.load(path)
    assert back.to_dict() == cal.to_dict()
    assert back.counter(MODEL).count("persist me " * 20) == cal.counter(MODEL).count("persist me " * 20)
    assert back.calibration(MODEL).factor == cal.calibration(MODEL).factor == Fraction(cal.calibration(MODEL).factor)


def test_another_base_counter() -> None:
    """The factor can scale chars/4 instead of an encoding's counts."""
    cal = UsageCalibrator(base="approximate")
    cal.observe(MODEL, "The quick brown fox jumps over the lazy dog. " * 10, 110)
    assert cal.counter(MODEL).count("The quick brown fox jumps over the lazy dog. " * 10) >= 110
    assert cal.counter(MODEL).name.startswith("calibrated:claude-sonnet-4-5×")
    assert "approximate counts ×" in cal.counter(MODEL).counting_note


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda c: c.observe("gpt-4o", "x", 1), CounterError, "counts for gpt-4o are exact"),
        (lambda c: c.observe(MODEL, "x", {"cache_miss_reason": {"type": "unavailable"}}), UsageReportError, "no input"),
        (lambda c: c.observe(MODEL, "", 5), UsageReportError, "no text to scale"),
        (lambda c: c.observe(MODEL, [], 5), UsageReportError, "empty list of messages"),
        (lambda c: c.observe(MODEL, b"bytes", 5), UsageReportError, "sent must be the text or the chat messages"),
        (lambda c: c.observe("", "x", 5), CounterError, "model must be a model name"),
        (lambda c: c.observe(MODEL, "x", -1), UsageReportError, "whole number of tokens >= 0, got -1"),
    ],
)
def test_observation_errors(call, error, message) -> None:
    """Observations that cannot be used are refused with the numbers and the fix."""
    with pytest.raises(error, match=message):
        call(UsageCalibrator())


def test_construction_and_file_errors(tmp_path) -> None:
    """Bad settings fail at construction; unreadable or foreign files fail at load, naming the problem."""
    with pytest.raises(CounterError, match="prior_weight must be an integer >= 0, got -1"):
        UsageCalibrator(prior_weight=-1)
    with pytest.raises(CounterError, match="min_margin must be a finite number >= 0"):
        UsageCalibrator(min_margin=float("nan"))
    with pytest.raises(CounterError, match="base must be 'approximate', 'bytes', 'whitespace' or a tiktoken"):
        UsageCalibrator(base="claude-sonnet-4-5")
    with pytest.raises(CounterError, match=r"coverage must be a fraction in \(0, 1\]"):
        UsageCalibrator(coverage=0)
    with pytest.raises(UsageReportError, match="cannot read calibration"):
        UsageCalibrator.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(UsageReportError, match="is not JSON"):
        UsageCalibrator.load(bad)
    with pytest.raises(UsageReportError, match="not a calibration"):
        UsageCalibrator.from_dict({"format": "other"})
    with pytest.raises(UsageReportError, match="version 2 is not supported"):
        UsageCalibrator.from_dict({"format": "tokenbox-usage-calibration", "version": 2})
    row = {"model": MODEL, "id": "x", "units": 3, "fixed": 0}
    with pytest.raises(UsageReportError, match="observation 0 is malformed"):
        UsageCalibrator.from_dict({"format": "tokenbox-usage-calibration", "version": 1, "observations": [row]})
    row["reported"] = -4
    with pytest.raises(UsageReportError, match="reported must be an integer >= 0, got -4"):
        UsageCalibrator.from_dict({"format": "tokenbox-usage-calibration", "version": 1, "observations": [row]})


@pytest.fixture(params=["sqlite", "memory"])
def usage_store(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    """Both stores that keep usage observations; the SQLite one reopened from its file by ``reopen``."""
    from tokenbox_core.session import MemorySessionStore, SQLiteSessionStore

    if request.param == "memory":
        store = MemorySessionStore()
        yield store, lambda: store
    else:
        opened = [SQLiteSessionStore(tmp_path / "s.db")]
        yield opened[0], lambda: opened.append(SQLiteSessionStore(tmp_path / "s.db")) or opened[-1]
        for s in opened:
            s.close()


def test_kept_with_the_session(usage_store) -> None:  # type: ignore[no-untyped-def]
    """Observations made with a store are written as they are observed, and a calibrator opened later on the same
    session (a restarted process: a new store on the same file) calibrates exactly as the first one did."""
    store, reopen = usage_store
    first = UsageCalibrator(store=store, session_id="s1")
    first.observe(MODEL, "a request that was sent. " * 30, 200)
    first.observe(MODEL, [{"role": "user", "content": "hello there " * 40}], {"input_tokens": 130})
    first.observe(MODEL, "a request that was sent. " * 30, 200)  # the same one again: kept once
    again = UsageCalibrator(store=reopen(), session_id="s1")
    assert len(again) == 2
    assert again.to_dict() == first.to_dict()
    assert again.counter(MODEL).count("unseen text " * 50) == first.counter(MODEL).count("unseen text " * 50)
    assert len(UsageCalibrator(store=reopen(), session_id="other")) == 0  # per session
    assert all("sent" not in str(row) for row in store.usage("s1"))  # hashes, never the texts


def test_cleared_with_the_session(usage_store) -> None:  # type: ignore[no-untyped-def]
    """Clearing a session deletes its usage observations too."""
    store, _ = usage_store
    UsageCalibrator(store=store, session_id="s1").observe(MODEL, "some text " * 20, 60)
    store.clear("s1")
    assert store.usage("s1") == []


def test_another_base_is_not_mixed_in(usage_store) -> None:  # type: ignore[no-untyped-def]
    """Observations measured with another base are not used, and the calibrator says so and how to use them."""
    from tokenbox_core.errors import TokenBoxWarning

    store, _ = usage_store
    UsageCalibrator(store=store, session_id="s1", base="approximate").observe(MODEL, "some text " * 20, 60)
    with pytest.warns(TokenBoxWarning, match="base approximate.*pass base='approximate'"):
        cal = UsageCalibrator(store=store, session_id="s1")
    assert len(cal) == 0
    assert len(UsageCalibrator(store=store, session_id="s1", base="approximate")) == 1


def test_binding_errors() -> None:
    """A store that cannot keep usage, a session id without a store, or a store without a session id is refused."""
    from tokenbox_core.session import MemorySessionStore

    with pytest.raises(UsageReportError, match="object does not keep usage observations.*save\\(\\)"):
        UsageCalibrator(store=object(), session_id="s1")  # type: ignore[arg-type]
    with pytest.raises(UsageReportError, match="session_id needs a store"):
        UsageCalibrator(session_id="s1")
    with pytest.raises(UsageReportError, match="session_id must name the session"):
        UsageCalibrator(store=MemorySessionStore())
