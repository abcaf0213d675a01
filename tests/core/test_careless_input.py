"""Careless input through the public API fails where it is typed, with TokenBox's error and a useful message
(issue 36 §7): misspelt or wrongly typed arguments, NaN and infinite budgets, nested content parts, unknown roles,
corrupt image headers — never a raw builtin exception, never silent acceptance."""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

import pytest

from tokenbox_core import (
    CompilerConfig,
    ContextBudget,
    ContextCompiler,
    ContextSession,
    Section,
    TokenBox,
    TokenBoxError,
    count_message_tokens,
    fit_conversation,
    get_counter,
)
from tokenbox_core.errors import TokenBoxWarning
from tokenbox_core.media import audio_tokens, image_size, image_tokens, video_tokens

NAN, INF = float("nan"), float("inf")
USER = {"role": "user", "content": "hi"}
PNG = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 0, 0) + b"\x08\x02\x00\x00\x00"


def _session(**kw: Any) -> ContextSession:
    return ContextSession(None, "s", **{"budget": 400, "counter": "whitespace", **kw})


def _compile_session(**kw: Any) -> None:
    session = _session()
    session.add(USER)
    session.compile(**kw)


def _image_message(url: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]


def _data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# name -> (call, a piece of the message that says what was wrong)
PROBES: dict[str, tuple[Callable[[], object], str]] = {
    # ContextBudget
    "budget-nan": (lambda: ContextBudget(max_tokens=NAN), "max_tokens"),  # type: ignore[arg-type]
    "budget-inf": (lambda: ContextBudget(max_tokens=INF), "max_tokens"),  # type: ignore[arg-type]
    "budget-float": (lambda: ContextBudget(max_tokens=100.5), "max_tokens"),  # type: ignore[arg-type]
    "budget-str": (lambda: ContextBudget(max_tokens="100"), "max_tokens"),  # type: ignore[arg-type]
    "budget-bool": (lambda: ContextBudget(max_tokens=True), "max_tokens"),
    "budget-negative": (lambda: ContextBudget(max_tokens=-1), "max_tokens"),
    "budget-margin-nan": (lambda: ContextBudget(100, estimation_safety_margin_percent=NAN), "margin"),
    "budget-reserve-inf": (lambda: ContextBudget(100, output_reserve=INF), "output_reserve"),  # type: ignore[arg-type]
    "budget-slots-nan": (lambda: ContextBudget(100, reserved_slots={"x": NAN}), "reserved_slots"),  # type: ignore[dict-item]
    "budget-misspelt": (lambda: ContextBudget(max_token=100), "max_tokens"),  # type: ignore[call-arg]
    # TokenBox
    "box-budget-nan": (lambda: TokenBox(NAN), "budget"),  # type: ignore[arg-type]
    "box-budget-inf": (lambda: TokenBox(INF), "budget"),  # type: ignore[arg-type]
    "box-budget-str": (lambda: TokenBox("100"), "budget"),  # type: ignore[arg-type]
    "box-budget-none": (lambda: TokenBox(None), "budget"),  # type: ignore[arg-type]
    "box-misspelt": (lambda: TokenBox(100, countr="whitespace"), "counter"),  # type: ignore[call-arg]
    "box-counter-int": (lambda: TokenBox(100, counter=5), "counter"),
    "box-mode": (lambda: TokenBox(100, mode="txt"), "mode"),  # type: ignore[arg-type]
    "box-separator-int": (lambda: TokenBox(100, separator=3), "separator"),  # type: ignore[arg-type]
    "box-layout-str": (lambda: TokenBox(100, counter="whitespace").layout("text"), "Section"),  # type: ignore[arg-type]
    "box-layout-dict": (lambda: TokenBox(100, counter="whitespace").layout([{"id": "a"}]), "Section"),  # type: ignore[list-item]
    "section-shrink-nan": (lambda: Section("a", "x", shrink=NAN), "shrink"),
    "section-priority-str": (lambda: Section("a", "x", priority="high"), "priority"),  # type: ignore[arg-type]
    "section-misspelt": (lambda: Section("a", "x", shrnk=1), "shrink"),  # type: ignore[call-arg]
    "section-content-int": (lambda: Section("a", 5), "content"),  # type: ignore[arg-type]
    # fit_conversation
    "fit-budget-nan": (lambda: fit_conversation([USER], NAN, counter="whitespace"), "budget"),  # type: ignore[arg-type]
    "fit-budget-inf": (lambda: fit_conversation([USER], INF, counter="whitespace"), "budget"),  # type: ignore[arg-type]
    "fit-misspelt": (lambda: fit_conversation([USER], 100, countr="whitespace"), "counter"),  # type: ignore[call-arg]
    "fit-strategy": (lambda: fit_conversation([USER], 100, counter="whitespace", strategy="newest"), "strategy"),  # type: ignore[arg-type]
    "fit-unknown-role": (
        lambda: fit_conversation([{"role": "human", "content": "hi"}], 100, counter="whitespace"),
        "human",
    ),
    "fit-role-missing": (lambda: fit_conversation([{"content": "hi"}], 100, counter="whitespace"), "role"),
    "fit-message-str": (lambda: fit_conversation(["hi"], 100, counter="whitespace"), "str"),  # type: ignore[list-item]
    "fit-nested-parts": (
        lambda: fit_conversation(
            [{"role": "user", "content": [[{"type": "text", "text": "hi"}]]}], 100, counter="whitespace"
        ),
        "content",
    ),
    "fit-part-without-type": (
        lambda: fit_conversation([{"role": "user", "content": [{"txt": "hi"}]}], 100, counter="whitespace"),
        "type",
    ),
    "fit-content-int": (
        lambda: fit_conversation([{"role": "user", "content": 5}], 100, counter="whitespace"),
        "content",
    ),
    "fit-keep-last-bad": (lambda: fit_conversation([USER], 100, counter="whitespace", keep_last="humans"), "keep_last"),  # type: ignore[arg-type]
    "fit-messages-dict": (lambda: fit_conversation(USER, 100, counter="whitespace"), "a list"),  # type: ignore[arg-type]
    # ContextCompiler and CompilerConfig
    "compiler-budget-nan": (lambda: ContextCompiler(NAN), "budget"),  # type: ignore[arg-type]
    "compiler-misspelt": (lambda: ContextCompiler(100, countr="whitespace"), "counter"),  # type: ignore[call-arg]
    "compiler-config-dict": (lambda: ContextCompiler(100, config={"overflow": "fail_loud"}), "config"),  # type: ignore[arg-type]
    "config-misspelt": (lambda: CompilerConfig(overflw="fail_loud"), "overflow"),  # type: ignore[call-arg]
    "config-overflow": (lambda: CompilerConfig(overflow="explode"), "overflow"),  # type: ignore[arg-type]
    "compile-misspelt": (lambda: ContextCompiler(100, counter="whitespace").compile(usr="hi"), "user"),  # type: ignore[call-arg]
    "compile-user-int": (lambda: ContextCompiler(100, counter="whitespace").compile(user=5), "user"),
    "compile-history-unknown-role": (
        lambda: ContextCompiler(100, counter="whitespace").compile(
            policy="p", history=[{"role": "bot", "content": "x"}], user="q"
        ),
        "bot",
    ),
    # ContextSession
    "session-budget-nan": (lambda: _session(budget=NAN), "budget"),
    "session-budget-inf": (lambda: _session(budget=INF), "budget"),
    "session-misspelt": (lambda: _session(recal=False), "recall"),
    "session-recall-str": (lambda: _session(recall="yes"), "recall"),
    "session-on-invalid": (lambda: _session(on_invalid="fix"), "on_invalid"),
    "session-add-unknown-role": (lambda: _session().add({"role": "human", "content": "hi"}), "human"),
    "session-add-nested-parts": (lambda: _session().add({"role": "user", "content": [["hi"]]}), "content[0]"),
    "session-add-content-int": (lambda: _session().add({"role": "user", "content": 5}), "content"),
    "session-add-str": (lambda: _session().add("hi"), "str"),  # type: ignore[arg-type]
    "session-compile-misspelt": (lambda: _compile_session(polcy="x"), "policy"),
    "session-compile-budget-nan": (lambda: _compile_session(budget=NAN), "budget"),
    "session-rehydrate-unknown": (lambda: _session().rehydrate("t_9"), "t_9"),
    # counters
    "counter-int": (lambda: get_counter(5), "counter"),  # type: ignore[arg-type]
    "count-message-not-dict": (lambda: count_message_tokens(["hi"], counter="whitespace"), "str"),  # type: ignore[list-item]
    # media costing
    "image-nan": (lambda: image_tokens(NAN, 100), "width"),  # type: ignore[arg-type]
    "image-negative": (lambda: image_tokens(-5, 100), "width"),
    "image-str": (lambda: image_tokens("512", 512), "width"),  # type: ignore[arg-type]
    "image-detail": (lambda: image_tokens(512, 512, detail="ultra"), "detail"),
    "image-model-int": (lambda: image_tokens(512, 512, model=5), "model"),
    "audio-nan": (lambda: audio_tokens(NAN), "seconds"),
    "audio-inf": (lambda: audio_tokens(INF), "seconds"),
    "video-fps-zero": (lambda: video_tokens(10, fps=0), "fps"),
    "video-nan": (lambda: video_tokens(NAN), "seconds"),
    "image-size-garbage": (lambda: image_size(b"\x89PNG\r\n\x1a\nbroken"), "PNG"),
    "image-size-zero-png": (lambda: image_size(PNG), "PNG"),
    "image-size-text": (lambda: image_size(b"hello world, not an image"), "image"),
    "image-size-str": (lambda: image_size("not base64 !!"), "image"),
    "image-size-jpeg-truncated": (lambda: image_size(b"\xff\xd8\xff\xe0\x00\x10JFIF"), "JPEG"),
    "image-size-gif-truncated": (lambda: image_size(b"GIF89a\x01"), "GIF"),
    "fit-corrupt-image": (
        lambda: fit_conversation(_image_message(_data_url(b"\x89PNG\r\n\x1a\nbroken")), 2000, counter="gpt-4o"),
        "PNG",
    ),
    "fit-image-url-not-str": (
        lambda: fit_conversation(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 5}}]}], 2000, counter="gpt-4o"
        ),
        "url",
    ),
    "fit-image-bad-base64": (
        lambda: fit_conversation(_image_message("data:image/png;base64,@@@@"), 2000, counter="gpt-4o"),
        "base64",
    ),
}


# name -> (call, a piece of the warning's message): accepted, but never silently
WARNED: dict[str, tuple[Callable[[], object], str]] = {
    "box-unknown-counter": (lambda: TokenBox(100, counter="o200k_bse"), "o200k_bse"),
    "counter-unknown-model": (lambda: get_counter("gtp-4o-careless-probe"), "gtp-4o-careless-probe"),
}


@pytest.mark.parametrize("name", list(PROBES))
def test_careless_input_fails_with_a_tokenbox_error(name: str) -> None:
    """The probe raises a TokenBoxError (never a bare builtin exception) whose message names what was wrong."""
    call, names = PROBES[name]
    with pytest.raises(TokenBoxError) as info:
        call()
    assert names.lower() in str(info.value).lower(), str(info.value)


@pytest.mark.parametrize("name", list(WARNED))
def test_careless_input_is_accepted_with_a_visible_warning(name: str) -> None:
    """An unknown model name is counted with a fallback, and a TokenBoxWarning says so."""
    call, names = WARNED[name]
    with pytest.warns(TokenBoxWarning, match=names):
        call()
