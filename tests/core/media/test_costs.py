"""Media token costs reproduce the providers' worked examples (issue 14 §2, chapter §6.12.1)."""

from __future__ import annotations

import pytest

from tokenbox_core.errors import MediaError
from tokenbox_core.media import audio_tokens, image_tokens, max_image_tokens, video_tokens
from tokenbox_core.models._rules import AreaRule, PatchRule, TileRule


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        # OpenAI images guide, "Calculating costs" (platform.openai.com/docs/guides/images-vision):
        ((1024, 1024), "high", 765),  # scaled to 768x768: 4 tiles x 170 + 85
        ((2048, 4096), "high", 1105),  # 1024x2048 -> 768x1536: 6 tiles x 170 + 85
        ((4096, 8192), "low", 85),  # low detail: 85 whatever the size
    ],
)
def test_openai_tile_rule_worked_examples(size: tuple[int, int], detail: str, tokens: int) -> None:
    """GPT-4o's tile rule gives the guide's 765, 1105 and 85."""
    assert image_tokens(*size, model="gpt-4o", detail=detail) == tokens
    assert image_tokens(*size, model="gpt-4o-2024-08-06", detail=detail) == tokens
    assert image_tokens(*size, model="gpt-4.1", detail=detail) == tokens


def test_openai_patch_rule_worked_examples() -> None:
    """The guide's patch examples: 1024x1024 is 1024 patches; 1800x2400 is scaled to 1452 patches."""
    rule = PatchRule(multiplier=1.0)
    assert rule.patches(1024, 1024) == 1024
    assert rule.patches(1800, 2400) == 1452
    # gpt-4.1-mini multiplies by 1.62, gpt-4.1-nano by 2.46, o4-mini by 1.72 (rounded up)
    assert image_tokens(1024, 1024, model="gpt-4.1-mini") == 1659
    assert image_tokens(1800, 2400, model="gpt-4.1-nano") == 3572
    assert image_tokens(1024, 1024, model="o4-mini-2025-04-16") == 1762
    assert image_tokens(1024, 1024, model="gpt-4.1-mini", detail="low") == 1659  # detail has no effect


def test_openai_family_base_and_tile_tokens() -> None:
    """Per-family tile figures: 4o-mini 2833/5667, o-series 75/150, GPT-5 70/140 (measured in billing)."""
    # community.openai.com thread 1262691: a 128x64 image billed 2845 (low) and 8512 (high) on gpt-4o-mini
    # and 86/236 on o3, each including ~11-12 text tokens.
    assert image_tokens(128, 64, model="gpt-4o-mini", detail="low") == 2833
    assert image_tokens(128, 64, model="gpt-4o-mini", detail="high") == 8500
    assert image_tokens(128, 64, model="o3", detail="high") == 225
    assert image_tokens(1024, 1024, model="gpt-5", detail="high") == 70 + 4 * 140


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        # Anthropic vision docs, "Calculate image costs": tokens = width x height / 750
        ((200, 200), 54),
        ((1000, 1000), 1334),
        ((1092, 1092), 1590),
    ],
)
def test_anthropic_area_rule_worked_examples(size: tuple[int, int], tokens: int) -> None:
    """Claude's (w*h)/750 reproduces the docs' ~54, ~1334 and ~1590."""
    assert image_tokens(*size, model="claude-sonnet-4-5") == tokens


def test_anthropic_resize_limits() -> None:
    """The docs' largest unresized sizes stay as they are; larger images are scaled down first."""
    rule = AreaRule()
    for w, h in [(1092, 1092), (951, 1268), (896, 1344), (819, 1456), (784, 1568)]:
        assert rule.scaled(w, h) == (w, h)
    w, h = rule.scaled(4000, 2000)
    assert max(w, h) <= 1568 and w * h <= 1568 * 784
    assert image_tokens(4000, 4000, model="claude-opus-4-1") <= max_image_tokens(model="claude-opus-4-1")
    with pytest.raises(MediaError, match="8000x8000 px limit"):
        image_tokens(9000, 100, model="claude-haiku-4-5")


def test_gemini_tiles_audio_and_video() -> None:
    """Gemini: 258 per image up to 384 px, 258 per 768 px tile beyond; 32 tokens/s audio; 263 tokens/s video."""
    assert image_tokens(384, 384, model="gemini-2.0-flash") == 258
    assert image_tokens(600, 400, model="gemini-2.0-flash") == 258  # geminibyexample.com/027 example
    assert image_tokens(1000, 1000, model="gemini-2.5-flash") == 4 * 258
    assert audio_tokens(30, model="gemini-2.0-flash") == 960
    assert video_tokens(10, model="gemini-2.0-flash") == 2630
    assert video_tokens(10, 2, model="gemini-2.0-flash") == 5260
    assert video_tokens(10, model="gemini-2.0-flash", with_audio=True) == 2630 + 320


def test_video_as_frames_for_models_without_native_video() -> None:
    """OpenAI/Anthropic video is its sampled frames costed as images (chapter: frames x image + audio)."""
    assert video_tokens(10, 1, model="gpt-4o", frame_size=(1280, 720), detail="low") == 10 * 85
    assert video_tokens(3, 1, model="claude-sonnet-4-5", frame_size=(750, 100)) == 3 * 100
    with pytest.raises(MediaError, match="frame_size"):
        video_tokens(10, 1, model="gpt-4o")


def test_max_image_tokens_per_rule() -> None:
    """The most one image can cost: the remote-image 'max' policy."""
    assert max_image_tokens(model="gpt-4o", detail="high") == 85 + 8 * 170
    assert max_image_tokens(model="gpt-4o", detail="low") == 85
    assert max_image_tokens(model="gpt-4.1-mini") == 2489
    assert max_image_tokens(model="claude-sonnet-4-5") == 1640
    with pytest.raises(MediaError, match="no published maximum"):
        max_image_tokens(model="gemini-2.0-flash")


def test_media_errors_name_the_numbers_and_the_fix() -> None:
    """Bad sizes, details, durations and unsupported modalities are clear MediaErrors (ValueErrors)."""
    with pytest.raises(MediaError, match="width must be > 0"):
        image_tokens(0, 10)
    with pytest.raises(MediaError, match="integer number of pixels"):
        image_tokens(10.5, 10)  # type: ignore[arg-type]
    with pytest.raises(MediaError, match="detail must be one of"):
        image_tokens(10, 10, detail="ultra")
    with pytest.raises(MediaError, match="takes no image input"):
        image_tokens(10, 10, model="o3-mini")
    with pytest.raises(MediaError, match="takes no audio input"):
        audio_tokens(10, model="gpt-4o")
    with pytest.raises(MediaError, match=">= 0 seconds"):
        audio_tokens(-1, model="gemini-2.0-flash")
    with pytest.raises(MediaError, match="fps must be"):
        video_tokens(1, 0, model="gemini-2.0-flash")
    assert issubclass(MediaError, ValueError)


def test_tile_rule_only_scales_down() -> None:
    """Small images are not scaled up: 128x64 is one tile."""
    assert TileRule(85, 170).scaled(128, 64) == (128, 64)
    assert TileRule(85, 170).scaled(4096, 8192) == (768, 1536)
