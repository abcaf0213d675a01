"""Media cost rules: how many tokens an image, a second of audio or of video costs (chapter §6.12.1).

Each rule is a small frozen value with one ``tokens`` method; a
:class:`~tokenbox_core.models.ModelProfile` names the rule its provider
publishes.  The arithmetic follows the providers' own descriptions, quoted in
each docstring; the numbers live in the provider tables beside this module
(``openai.py``, ``anthropic.py``, ``google.py``), each with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tokenbox_core.errors import MediaError

__all__ = [
    "AreaRule",
    "AudioRule",
    "Detail",
    "GeminiTileRule",
    "ImageRule",
    "PatchRule",
    "TileRule",
    "VideoRule",
    "check_size",
]

Detail = Literal["auto", "low", "high"]
DETAILS: tuple[str, ...] = ("auto", "low", "high")


def check_size(width: object, height: object) -> tuple[int, int]:
    """Validate an image size: two positive integers (pixels)."""
    for label, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise MediaError(f"image {label} must be an integer number of pixels, got {value!r}")
        if value <= 0:
            raise MediaError(f"image {label} must be > 0 pixels, got {value}")
    return int(width), int(height)  # type: ignore[call-overload]


def _check_detail(detail: str) -> str:
    if detail not in DETAILS:
        raise MediaError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    return detail


@dataclass(frozen=True)
class TileRule:
    """OpenAI's tile rule (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1/o3, GPT-4o mini).

    ``detail="low"`` costs ``base_tokens``.  ``high`` (and ``auto``, counted as
    ``high`` so the budget is an upper bound): scale to fit a
    ``max_side``×``max_side`` square, then so that the shortest side is
    ``short_side`` px (images are only ever scaled down), count the
    ``tile_size`` px tiles covering the result; cost is
    ``base_tokens + tiles × tile_tokens``.
    """

    base_tokens: int
    tile_tokens: int
    tile_size: int = 512
    max_side: int = 2048
    short_side: int = 768

    def scaled(self, width: int, height: int) -> tuple[int, int]:
        """The size the provider tiles (after both downscaling steps)."""
        w, h = float(width), float(height)
        if max(w, h) > self.max_side:
            scale = self.max_side / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > self.short_side:
            scale = self.short_side / min(w, h)
            w, h = w * scale, h * scale
        return max(1, math.floor(w)), max(1, math.floor(h))

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        width, height = check_size(width, height)
        if _check_detail(detail) == "low":
            return self.base_tokens
        w, h = self.scaled(width, height)
        tiles = math.ceil(w / self.tile_size) * math.ceil(h / self.tile_size)
        return self.base_tokens + tiles * self.tile_tokens


@dataclass(frozen=True)
class PatchRule:
    """OpenAI's patch rule (GPT-4.1 mini/nano, o4-mini, GPT-5 mini/nano).

    Count the ``patch_size`` px patches covering the image; over
    ``max_patches`` the image is scaled by
    ``sqrt(max_patches × patch_size² / (width × height))`` and then further so
    that its width is a whole number of patches; the patch count (at most
    ``max_patches``) is multiplied by the model's ``multiplier`` (rounded up,
    so the budget never undercounts).  ``detail`` does not change the cost.
    """

    multiplier: float = 1.0
    patch_size: int = 32
    max_patches: int = 1536

    def patches(self, width: int, height: int) -> int:
        p = self.patch_size
        count = math.ceil(width / p) * math.ceil(height / p)
        if count <= self.max_patches:
            return count
        shrink = math.sqrt(self.max_patches * p * p / (width * height))
        w, h = float(math.floor(width * shrink)), float(math.floor(height * shrink))  # whole pixels
        fit = math.floor(w / p) / (w / p)  # then whole patches across the width
        w, h = w * fit, h * fit
        count = math.ceil(w / p - 1e-9) * math.ceil(h / p - 1e-9)
        return min(count, self.max_patches)

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        width, height = check_size(width, height)
        _check_detail(detail)
        return math.ceil(self.patches(width, height) * self.multiplier - 1e-9)


@dataclass(frozen=True)
class AreaRule:
    """Anthropic's rule: ``tokens = width × height / 750`` (rounded up).

    Images whose long edge exceeds ``max_long_edge`` or whose area exceeds
    ``max_pixels`` are first scaled down, preserving the aspect ratio, until
    within both limits; images over ``reject_side`` px on a side are rejected.
    """

    pixels_per_token: int = 750
    max_long_edge: int = 1568
    max_pixels: int = 1568 * 784
    reject_side: int = 8000

    def scaled(self, width: int, height: int) -> tuple[int, int]:
        scale = min(1.0, self.max_long_edge / max(width, height), math.sqrt(self.max_pixels / (width * height)))
        if scale >= 1.0:
            return width, height
        return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        width, height = check_size(width, height)
        _check_detail(detail)
        if max(width, height) > self.reject_side:
            raise MediaError(
                f"a {width}x{height} image is over the provider's {self.reject_side}x{self.reject_side} px limit "
                f"and would be rejected; downscale it first (tokenbox_core.media.downscale_to_fit)"
            )
        w, h = self.scaled(width, height)
        return math.ceil(w * h / self.pixels_per_token)


@dataclass(frozen=True)
class GeminiTileRule:
    """Gemini's rule: both sides ≤ ``small_side`` px cost ``tile_tokens``; larger
    images are cropped and scaled into ``tile_size`` px tiles of ``tile_tokens`` each."""

    tile_tokens: int = 258
    small_side: int = 384
    tile_size: int = 768

    def tokens(self, width: int, height: int, detail: str = "auto") -> int:
        width, height = check_size(width, height)
        _check_detail(detail)
        if width <= self.small_side and height <= self.small_side:
            return self.tile_tokens
        tiles = math.ceil(width / self.tile_size) * math.ceil(height / self.tile_size)
        return tiles * self.tile_tokens


ImageRule = TileRule | PatchRule | AreaRule | GeminiTileRule
"""Any of the published image rules."""


@dataclass(frozen=True)
class AudioRule:
    """Audio billed at a fixed number of tokens per second (rounded up per clip)."""

    tokens_per_second: float
    official: bool = True
    """False when the figure comes from a third-party measurement, not the provider's docs."""

    def tokens(self, seconds: float) -> int:
        return math.ceil(_seconds(seconds) * self.tokens_per_second - 1e-9)


@dataclass(frozen=True)
class VideoRule:
    """Native video input billed per second at the provider's sampling rate.

    ``tokens_per_second`` is the published cost at ``default_fps`` sampled
    frames per second; another sampling rate scales the frame part linearly.
    """

    tokens_per_second: float
    default_fps: float = 1.0

    def tokens(self, seconds: float, fps: float) -> int:
        seconds = _seconds(seconds)
        fps = _fps(fps)
        return math.ceil(seconds * self.tokens_per_second * fps / self.default_fps - 1e-9)


def _seconds(seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise MediaError(f"duration must be a finite number of seconds, got {seconds!r}")
    if seconds < 0:
        raise MediaError(f"duration must be >= 0 seconds, got {seconds}")
    return float(seconds)


def _fps(fps: object) -> float:
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not math.isfinite(fps) or fps <= 0:
        raise MediaError(f"fps must be a positive number of sampled frames per second, got {fps!r}")
    return float(fps)
