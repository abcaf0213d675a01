"""Token costs of images, audio and video per model (chapter §6.12.1, issue 14 §2).

Each function takes the model as a name (snapshots resolve to their family),
a :class:`~tokenbox_core.models.ModelProfile`, or a LangChain / LlamaIndex
model object, and applies the rule its provider publishes (see
:mod:`tokenbox_core.models._rules` and the provider tables).
"""

from __future__ import annotations

import math
from typing import Any

from tokenbox_core.errors import MediaError
from tokenbox_core.models._frameworks import profile_from_object
from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._rules import AreaRule, GeminiTileRule, PatchRule, TileRule, _check_detail

__all__ = ["audio_tokens", "image_tokens", "max_image_tokens", "resolve_profile", "video_tokens"]


def resolve_profile(model: Any) -> ModelProfile:
    """A profile for a model name, a profile, or a framework model object."""
    if isinstance(model, ModelProfile):
        return model
    if model is None or isinstance(model, int | float | bytes | list | tuple | dict):
        raise MediaError(
            f"model must be a model name such as 'gpt-4o', a ModelProfile or a framework model object, "
            f"got {type(model).__name__} {model!r}"
        )
    return profile_from_object(model)


def image_tokens(width: int, height: int, *, model: Any = "gpt-4o", detail: str = "auto") -> int:
    """Tokens one ``width``×``height`` image costs for ``model`` at ``detail`` (chapter §6.12.1).

    ``detail`` is OpenAI's ``low``/``high``/``auto`` (``auto`` is costed as
    ``high``, an upper bound); other providers ignore it.  Worked examples
    from the providers' docs:

    >>> image_tokens(1024, 1024, model="gpt-4o", detail="high")
    765
    >>> image_tokens(4096, 8192, model="gpt-4o", detail="low")
    85
    >>> image_tokens(1000, 1000, model="claude-sonnet-4-5")
    1334
    >>> image_tokens(600, 400, model="gemini-2.0-flash")
    258
    """
    profile = resolve_profile(model)
    if profile.image is None:
        raise MediaError(
            f"{profile.name} takes no image input (or no image token rule is published for it); use a vision "
            f"model or register one with a rule: register_model(ModelProfile(..., image=TileRule(...)))"
        )
    return profile.image.tokens(width, height, detail)


def max_image_tokens(*, model: Any = "gpt-4o", detail: str = "auto") -> int:
    """The most any one image can cost for ``model`` at ``detail`` (the cost of an image of unknown size).

    >>> max_image_tokens(model="gpt-4o", detail="high"), max_image_tokens(model="gpt-4o", detail="low")
    (1445, 85)
    """
    profile = resolve_profile(model)
    rule = profile.image
    _check_detail(detail)
    if isinstance(rule, TileRule):
        if detail == "low":
            return rule.base_tokens
        tiles = math.ceil(rule.max_side / rule.tile_size) * math.ceil(rule.short_side / rule.tile_size)
        return rule.base_tokens + tiles * rule.tile_tokens
    if isinstance(rule, PatchRule):
        return math.ceil(rule.max_patches * rule.multiplier - 1e-9)
    if isinstance(rule, AreaRule):
        return math.ceil(rule.max_pixels / rule.pixels_per_token)
    if isinstance(rule, GeminiTileRule):
        raise MediaError(
            f"{profile.name} has no published maximum image cost (larger images cost more tiles); "
            f"give the image's size: remote_images((width, height)) or width/height in the content part"
        )
    raise MediaError(f"{profile.name} takes no image input (or no image token rule is published for it)")


def audio_tokens(seconds: float, *, model: Any = "gemini-2.0-flash") -> int:
    """Tokens ``seconds`` of audio cost for ``model`` (chapter §6.12.1).

    >>> audio_tokens(30, model="gemini-2.0-flash")
    960
    """
    profile = resolve_profile(model)
    if profile.audio is None:
        raise MediaError(
            f"{profile.name} takes no audio input (or no per-second audio rule is published for it); "
            f"transcribe the audio and send the text, or use an audio model (gpt-4o-audio-preview, gemini-*)"
        )
    return profile.audio.tokens(seconds)


def video_tokens(
    seconds: float,
    fps: float = 1.0,
    *,
    model: Any = "gemini-2.0-flash",
    frame_size: tuple[int, int] | None = None,
    detail: str = "auto",
    with_audio: bool = False,
) -> int:
    """Tokens a video of ``seconds`` sampled at ``fps`` frames per second costs (chapter §6.12.1).

    Models with native video input (Gemini: 263 tokens per second at 1 fps)
    use the published rate; for the others a video is its sampled frames sent
    as images, ``frames × image_tokens(frame_size)`` — the chapter's
    ``video = frames × image + audio`` — plus the audio track when
    ``with_audio`` and the model takes audio.

    >>> video_tokens(10, model="gemini-2.0-flash")
    2630
    >>> video_tokens(10, 0.5, model="gpt-4o", frame_size=(1280, 720), detail="low")
    425
    """
    profile = resolve_profile(model)
    if profile.video is not None:
        total = profile.video.tokens(seconds, fps)
    else:
        if frame_size is None:
            raise MediaError(
                f"{profile.name} has no native video input: a video is sent as sampled frames, so pass "
                f"frame_size=(width, height) to cost each frame as an image"
            )
        from tokenbox_core.models._rules import _fps, _seconds

        frames = math.ceil(_seconds(seconds) * _fps(fps) - 1e-9)
        total = frames * image_tokens(frame_size[0], frame_size[1], model=profile, detail=detail)
    if with_audio:
        total += audio_tokens(seconds, model=profile)
    return total
