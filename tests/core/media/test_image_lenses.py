"""Image lenses: downscale to fit, crop, lower detail, OCR substitution (chapter §6.12.3, Algorithm 6.9)."""

from __future__ import annotations

import base64
import io

import pytest

from tokenbox_core import count_message_tokens
from tokenbox_core.errors import MediaError
from tokenbox_core.media import choose_detail, crop_image, downscale_to_fit, image_size, image_tokens
from tokenbox_core.media._image_lenses import choose_ocr, fit_size, substitute_ocr

PIL = pytest.importorskip("PIL.Image")


def _screenshot(size: tuple[int, int] = (2560, 1440), fmt: str = "PNG") -> bytes:
    img = PIL.new("RGB", size, (240, 240, 240))
    for x in range(0, size[0], 40):  # some structure, so resampling has work to do
        img.paste((30, 60, 90), (x, 0, x + 3, size[1]))
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(("model", "target"), [("gpt-4o", 425), ("claude-sonnet-4-5", 600), ("gemini-2.0-flash", 258)])
def test_fit_size_is_the_largest_size_that_fits(model: str, target: int) -> None:
    """fit_size keeps the aspect ratio, fits the target, and one pixel more would not."""
    w, h = fit_size(2560, 1440, target, model=model)
    assert image_tokens(w, h, model=model, detail="high") <= target
    assert abs(w / h - 2560 / 1440) < 0.01
    bigger = (w + 1, max(1, round(1440 * (w + 1) / 2560)))
    assert image_tokens(*bigger, model=model, detail="high") > target


def test_downscale_to_fit_is_deterministic_and_fits() -> None:
    """The downscaled screenshot costs at most the allocation; two runs give the same bytes."""
    shot = _screenshot()
    first = downscale_to_fit(shot, 600, model="claude-sonnet-4-5")
    second = downscale_to_fit(base64.b64encode(shot).decode(), 600, model="claude-sonnet-4-5")
    assert first.data == second.data and first.action == "downscaled"
    assert first.tokens <= 600 < first.original_tokens
    assert image_size(first.data) == (first.width, first.height)
    message = {"role": "user", "content": [first.content_part()]}
    overhead = count_message_tokens([{"role": "user", "content": []}], "claude-sonnet-4-5")
    assert count_message_tokens([message], "claude-sonnet-4-5") == overhead + first.tokens
    jpeg = downscale_to_fit(shot, 600, model="claude-sonnet-4-5", format="JPEG")
    assert jpeg.mime_type == "image/jpeg" and jpeg.data[:2] == b"\xff\xd8"


def test_an_image_that_fits_is_kept_untouched() -> None:
    """No re-encoding when the image already fits."""
    small = _screenshot((300, 200))
    fit = downscale_to_fit(small, 1_000, model="gpt-4o")
    assert fit.action == "kept" and fit.data == small


def test_no_size_fits_a_too_small_allocation() -> None:
    """Below the smallest possible cost (gpt-4o's 85 base tokens) the error names the numbers."""
    with pytest.raises(MediaError, match="no size of this image costs 50 tokens or less for gpt-4o"):
        fit_size(1000, 1000, 50, model="gpt-4o")


def test_crop_to_region_of_interest() -> None:
    """A crop keeps the box and costs by its own size; a box outside the image is an error."""
    shot = _screenshot()
    region = crop_image(shot, (0, 0, 800, 600), model="gpt-4o")
    assert (region.width, region.height, region.action) == (800, 600, "cropped")
    assert region.tokens == image_tokens(800, 600, model="gpt-4o") < region.original_tokens
    with pytest.raises(MediaError, match="not inside the 2560x1440 image"):
        crop_image(shot, (0, 0, 3000, 10))


def test_lower_detail_when_high_does_not_fit() -> None:
    """OpenAI tile models drop to low detail (85 tokens); other providers have no cheaper detail."""
    assert choose_detail(2560, 1440, 2_000, model="gpt-4o") == "high"
    assert choose_detail(2560, 1440, 300, model="gpt-4o") == "low"
    assert choose_detail(2560, 1440, 50, model="gpt-4o") is None
    assert choose_detail(2560, 1440, 300, model="claude-sonnet-4-5") is None


def test_ocr_substitution_follows_algorithm_6_9() -> None:
    """Text replaces the image iff it is cheaper and its utility >= image utility x fidelity."""
    text = "Q4 revenue: $12.3M. Churn: 2.1%."
    cheap = choose_ocr(765, text, "o200k_base", fidelity=0.9)
    assert cheap.use_text and cheap.text_tokens < 765
    low_conf = choose_ocr(765, text, "o200k_base", text_utility=0.5, fidelity=0.9)
    assert not low_conf.use_text and "fidelity" in low_conf.reason
    long_text = choose_ocr(10, text, "o200k_base")
    assert not long_text.use_text and "image 10 tokens" in long_text.reason
    with pytest.raises(MediaError, match="fidelity must be between 0 and 1"):
        choose_ocr(765, text, fidelity=1.5)


def test_substitute_ocr_runs_the_pluggable_callable() -> None:
    """The OCR callable gets the image bytes; a (text, confidence) result sets the text utility."""
    shot = _screenshot((1024, 1024))
    seen: list[int] = []

    def ocr(data: bytes) -> tuple[str, float]:
        seen.append(len(data))
        return "Dashboard: Q4 revenue $12.3M", 0.95

    choice = substitute_ocr(shot, ocr, model="gpt-4o", fidelity=0.9)
    assert seen == [len(shot)]
    assert choice.use_text and choice.image_tokens == 765
    assert not substitute_ocr(shot, lambda _: ("garbled", 0.3), model="gpt-4o").use_text
