"""Image lenses (chapter §6.12.3, Algorithm 6.9): downscale to fit, crop, lower detail, OCR substitution.

Sizes are planned with the provider's rule (:func:`fit_size` needs no
pixels); pixels are changed with Pillow (optional extra
``tokenbox-context[images]``) using fixed settings — Lanczos resampling, PNG
at compression level 6, JPEG at quality 85 with 4:2:0 subsampling, no
metadata — so the same input and Pillow version give the same bytes.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.errors import MediaError
from tokenbox_core.media._costs import image_tokens, resolve_profile
from tokenbox_core.media._sizes import decode_data
from tokenbox_core.models._rules import TileRule, check_size
from tokenbox_core.tokens import TokenCounter, get_counter

__all__ = [
    "ImageFit",
    "OcrChoice",
    "choose_detail",
    "choose_ocr",
    "crop_image",
    "downscale_to_fit",
    "fit_size",
    "substitute_ocr",
]

Action = Literal["kept", "downscaled", "cropped"]


@dataclass(frozen=True)
class ImageFit:
    """An image after a lens: its bytes, size, cost, and what was done."""

    data: bytes
    mime_type: str
    width: int
    height: int
    tokens: int
    detail: str
    original_size: tuple[int, int]
    original_tokens: int
    action: Action

    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def content_part(self) -> dict[str, Any]:
        """An OpenAI-shaped image part (which the core's message counting costs by the model's rule)."""
        return {"type": "image_url", "image_url": {"url": self.data_url(), "detail": self.detail}}


def fit_size(width: int, height: int, target: int, *, model: Any = "gpt-4o", detail: str = "high") -> tuple[int, int]:
    """The largest size with the same aspect ratio whose cost is at most ``target`` tokens.

    >>> fit_size(3840, 2160, 500, model="claude-sonnet-4-5")
    (816, 459)
    >>> fit_size(3840, 2160, 255, model="gpt-4o")  # one 512 px tile + 85
    (512, 288)
    """
    width, height = check_size(width, height)
    profile = resolve_profile(model)

    def cost(w: int, h: int) -> int:
        return image_tokens(w, h, model=profile, detail=detail)

    if cost(width, height) <= target:
        return width, height
    longer = max(width, height)

    def size_at(side: int) -> tuple[int, int]:
        if width >= height:
            return side, max(1, round(height * side / width))
        return max(1, round(width * side / height)), side

    lo, hi = 0, longer - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(*size_at(mid)) <= target:
            lo = mid
        else:
            hi = mid - 1
    if lo < 1:
        raise MediaError(
            f"no size of this image costs {target:,} tokens or less for {profile.name} "
            f"(a 1 px image costs {cost(1, 1):,}); raise the allocation or drop the image"
        )
    return size_at(lo)


def choose_detail(width: int, height: int, target: int, *, model: Any = "gpt-4o") -> str | None:
    """``"high"`` when the image fits ``target`` at high detail, else ``"low"`` if that fits, else ``None``.

    Only OpenAI's tile models have a cheaper low detail; for the others this
    is ``"high"`` or ``None``.
    """
    profile = resolve_profile(model)
    if image_tokens(width, height, model=profile, detail="high") <= target:
        return "high"
    if isinstance(profile.image, TileRule) and image_tokens(width, height, model=profile, detail="low") <= target:
        return "low"
    return None


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError as exc:
        raise MediaError(
            'changing image pixels needs the images extra: pip install "tokenbox-context[images]"'
        ) from exc
    return Image


def _open(image: bytes | str) -> tuple[Any, str]:
    data, _ = decode_data(image)
    try:
        opened = _pillow().open(io.BytesIO(data))
        opened.load()
    except Exception as exc:  # Pillow's UnidentifiedImageError and decoder errors
        raise MediaError(f"cannot decode this image ({exc})") from exc
    fmt = (opened.format or "PNG").upper()
    return opened, fmt


def _encode(img: Any, fmt: str) -> tuple[bytes, str]:
    buf = io.BytesIO()
    if fmt in ("JPEG", "JPG"):
        if img.mode not in ("RGB", "L"):
            img = img.convert("RGB")
        img.save(buf, "JPEG", quality=85, subsampling=2, optimize=False, progressive=False)
        return buf.getvalue(), "image/jpeg"
    if fmt == "WEBP":
        img.save(buf, "WEBP", quality=80, method=4)
        return buf.getvalue(), "image/webp"
    if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        img = img.convert("RGBA")
    img.save(buf, "PNG", optimize=False, compress_level=6)
    return buf.getvalue(), "image/png"


def downscale_to_fit(
    image: bytes | str, target: int, *, model: Any = "gpt-4o", detail: str = "high", format: str | None = None
) -> ImageFit:
    """The image at the largest size whose cost fits ``target`` (chapter §6.12.3 "Resolution reduction").

    An image that already fits is returned as it is (``action="kept"``, bytes
    unchanged).  ``format`` (``PNG``/``JPEG``/``WEBP``) overrides the output
    format, which is otherwise the input's (GIF becomes PNG).
    """
    profile = resolve_profile(model)
    img, fmt = _open(image)
    original = (img.width, img.height)
    original_tokens = image_tokens(*original, model=profile, detail=detail)
    if original_tokens <= target:
        data, mime = decode_data(image)
        return ImageFit(
            data, mime or f"image/{fmt.lower()}", *original, original_tokens, detail, original, original_tokens, "kept"
        )
    w, h = fit_size(*original, target, model=profile, detail=detail)
    resized = img.resize((w, h), resample=_pillow().Resampling.LANCZOS)
    data, mime = _encode(resized, (format or fmt).upper())
    tokens = image_tokens(w, h, model=profile, detail=detail)
    return ImageFit(data, mime, w, h, tokens, detail, original, original_tokens, "downscaled")


def crop_image(
    image: bytes | str,
    box: tuple[int, int, int, int],
    *,
    model: Any = "gpt-4o",
    detail: str = "high",
    format: str | None = None,
) -> ImageFit:
    """The region ``box = (left, top, right, bottom)`` in pixels (chapter §6.12.3 "Crop to region of interest")."""
    profile = resolve_profile(model)
    img, fmt = _open(image)
    left, top, right, bottom = box
    if not (0 <= left < right <= img.width and 0 <= top < bottom <= img.height):
        raise MediaError(
            f"crop box {box} is not inside the {img.width}x{img.height} image; use 0 <= left < right <= "
            f"{img.width} and 0 <= top < bottom <= {img.height}"
        )
    region = img.crop(box)
    data, mime = _encode(region, (format or fmt).upper())
    original = (img.width, img.height)
    return ImageFit(
        data,
        mime,
        region.width,
        region.height,
        image_tokens(region.width, region.height, model=profile, detail=detail),
        detail,
        original,
        image_tokens(*original, model=profile, detail=detail),
        "cropped",
    )


@dataclass(frozen=True)
class OcrChoice:
    """Algorithm 6.9's substitution decision for one image."""

    use_text: bool
    text: str
    text_tokens: int
    image_tokens: int
    reason: str


def choose_ocr(
    image_cost: int,
    text: str,
    counter: TokenCounter | str = "o200k_base",
    *,
    image_utility: float = 1.0,
    text_utility: float = 1.0,
    fidelity: float = 0.9,
    modality: str = "image",
) -> OcrChoice:
    """Replace the image (or the ``modality`` named) with its text iff the text is cheaper and keeps enough
    utility (Algorithm 6.9).

    ``substitute.token_cost < input.token_cost AND substitute.utility >=
    input.utility × substitution_fidelity``.  Utilities are the caller's
    (e.g. OCR confidence for the text, task relevance for the image); text is
    ``text_utility`` 1.0 by default, i.e. the image's layout is not needed.
    """
    if not 0.0 <= fidelity <= 1.0:
        raise MediaError(f"substitution fidelity must be between 0 and 1, got {fidelity}")
    tokens = get_counter(counter).count(text)
    if tokens >= image_cost:
        return OcrChoice(False, text, tokens, image_cost, f"text costs {tokens:,} >= {modality} {image_cost:,} tokens")
    if text_utility < image_utility * fidelity:
        return OcrChoice(
            False,
            text,
            tokens,
            image_cost,
            f"text utility {text_utility:g} < {image_utility:g} x fidelity {fidelity:g}",
        )
    return OcrChoice(True, text, tokens, image_cost, f"text costs {tokens:,} < {modality} {image_cost:,} tokens")


def substitute_ocr(
    image: bytes | str,
    ocr: Callable[[bytes], str | tuple[str, float]],
    *,
    model: Any = "gpt-4o",
    detail: str = "high",
    counter: TokenCounter | str | None = None,
    image_utility: float = 1.0,
    fidelity: float = 0.9,
) -> OcrChoice:
    """Run the pluggable ``ocr(image_bytes)`` and decide with :func:`choose_ocr`.

    ``ocr`` returns the text, or ``(text, utility)`` with a utility such as
    its confidence.  The image's cost comes from its header (no pixels are
    decoded); the text is counted with ``counter`` (default: the model's).
    """
    from tokenbox_core.media._sizes import image_size

    profile = resolve_profile(model)
    w, h = image_size(image)
    cost = image_tokens(w, h, model=profile, detail=detail)
    data, _ = decode_data(image)
    result = ocr(data)
    text, utility = (result, 1.0) if isinstance(result, str) else (result[0], float(result[1]))
    resolved = get_counter(counter) if counter is not None else get_counter(profile.name)
    return choose_ocr(cost, text, resolved, image_utility=image_utility, text_utility=utility, fidelity=fidelity)
