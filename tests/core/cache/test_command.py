from __future__ import annotations

import argparse
import json

import pytest

from tokenbox_core.cache import simulate_cache
from tokenbox_core.cache._command import add_command, run
from tokenbox_core.errors import TokenBoxError
from tokenbox_core.testing._transcripts import agent_session


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["cache-sim", *argv])


@pytest.fixture
def transcript(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in agent_session(40, words_per_turn=150)), encoding="utf-8")
    return path


def test_table_and_html(transcript, tmp_path):
    html = tmp_path / "cache.html"
    text, sims = run(parse(str(transcript), "--budget", "4000", "--html", str(html)))
    assert "TokenBox cache-aware:" in text and "TokenBox plain:" in text
    aware, plain = sims
    assert aware.cached_share > plain.cached_share
    page = html.read_text(encoding="utf-8")
    assert page.count("<svg") == 2 and "<script" not in page and "served from cache" in page


def test_json_and_provider(transcript):
    text, _ = run(parse(str(transcript), "--budget", "4000", "--provider", "anthropic", "--json"))
    data = json.loads(text)
    assert [d["provider"] for d in data] == ["anthropic", "anthropic"]
    assert data[0]["turns"][0]["turn"] == 0


def test_a_json_list_is_accepted(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(agent_session(3)), encoding="utf-8")
    text, _ = run(parse(str(path)))
    assert "turn" in text


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, (), "cannot read"),
        (b"\xff\xfe", (), "not UTF-8 at byte 0"),
        (b'{"role": "user"}\n{nope', (), "line 2: not JSON"),
        (b"[1, 2]", (), "expected chat messages"),
        (b'[{"role": "user", "content": "x"}]', ("--budget", "0"), "--budget must be a positive"),
    ],
)
def test_errors(tmp_path, content, extra, message):
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TokenBoxError, match=message):
        run(parse(str(path), *extra))


def test_through_the_tokenbox_command(transcript, tmp_path, capsys):
    from tokenbox_core.cli import main

    assert main(["cache-sim", str(transcript), "--budget", "4000", "--every", "20"]) == 0
    out = capsys.readouterr().out
    assert "TokenBox cache-aware:" in out and "TokenBox plain:" in out
    assert main(["cache-sim", str(tmp_path / "missing.jsonl")]) == 2
    assert "tokenbox: error: cannot read" in capsys.readouterr().err
    assert main(["cache-sim", "--help"]) == 0


def test_several_rule_sets(transcript):
    """--rules reports each rule set in turn, both trimmers under each."""
    text, sims = run(parse(str(transcript), "--budget", "4000", "--rules", "openai,openai-24h,anthropic,anthropic-1h"))
    assert [s.rules.name for s in sims] == ["openai", "openai", "openai-24h", "openai-24h"] + ["anthropic"] * 2 + [
        "anthropic-1h"
    ] * 2
    assert "TokenBox cache-aware [anthropic-1h]:" in text
    one_hour = next(s for s in sims if s.rules.name == "anthropic-1h")
    five = next(s for s in sims if s.rules.name == "anthropic")
    assert one_hour.cost > five.cost  # same hits at 30 s a turn, dearer writes


def test_usage_checks_a_live_session(transcript, tmp_path):
    """--usage pairs the provider's usage with the requests as sent and lists the turns that differ."""
    messages = [json.loads(line) for line in transcript.read_text().splitlines()]
    as_sent = simulate_cache(messages, lambda ms: ms, rules="anthropic", counter="gpt-4o")
    usage = [{"prompt_tokens": t.prompt_tokens, "cached_tokens": t.cached_tokens} for t in as_sent.turns]
    usage[5]["cached_tokens"] = 0
    path = tmp_path / "usage.jsonl"
    path.write_text("\n".join(json.dumps(u) for u in usage), encoding="utf-8")
    text, sims = run(parse(str(transcript), "--rules", "anthropic", "--usage", str(path), "--every", "1"))
    checked = sims[-1]
    assert checked.label == "as sent, checked" and [c.turn for c in checked.differences()] == [5]
    assert "checked against reported usage: 1 of 40 turns differ" in text and "turn 5: provider cached 0 of" in text


def test_rule_set_errors(transcript):
    """A misspelt rule set is answered with the closest name; OpenAI's key is only routed under OpenAI rules."""
    with pytest.raises(TokenBoxError, match="did you mean 'anthropic-1h'"):
        run(parse(str(transcript), "--rules", "anthropic-1hr"))
    with pytest.raises(TokenBoxError, match="--rules is empty"):
        run(parse(str(transcript), "--rules", ","))
    _, sims = run(parse(str(transcript), "--rules", "openai,anthropic", "--prompt-cache-key", "tenant-1"))
    assert len(sims) == 4
