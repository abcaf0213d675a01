"""Costing media content parts inside chat messages (issue 14 §2).

Recognised parts (everything else is text or counted as its JSON):

- OpenAI chat ``{"type": "image_url", "image_url": {"url", "detail"}}`` and responses
  ``{"type": "input_image", "image_url", "detail"}``; ``{"type": "input_audio", "input_audio": {"data",
  "format"}}``;
- Anthropic ``{"type": "image", "source": {"type": "base64"|"url", ...}}``;
- LangChain standard blocks ``{"type": "image"|"audio"|"file", "base64"|"url"|"file_id", "mime_type"}``
  (v1) and ``{"type": "image", "source_type": ..., "data"|"url"}`` (v0).

Image sizes come from the bytes' headers (:func:`~tokenbox_core.media._sizes.image_size`).  A remote URL
or file id is never fetched: its cost follows the explicit policy set with :func:`remote_images` — the
detail level's maximum (default), a caller-given size, or an error.  A part may also give its size itself
(``"width"``/``"height"`` or ``"size": [w, h]``) or its cost (``"tokens"``), which wins.  An image part with no
data at all (a placeholder such as ``{"type": "image"}``) is costed like a remote one.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from tokenbox_core.errors import MediaError
from tokenbox_core.media._costs import audio_tokens, image_tokens, max_image_tokens
from tokenbox_core.media._sizes import decode_data, image_size, is_remote, wav_seconds
from tokenbox_core.models._counting import profile_of
from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._registry import get_model_profile

__all__ = ["RemotePolicy", "media_part_tokens", "remote_images", "split_media"]

logger = logging.getLogger("tokenbox")

RemotePolicy = Literal["max", "error"] | tuple[int, int]
"""How to cost an image TokenBox may not read: ``"max"`` (the most the detail level can cost),
``"error"`` (raise :class:`MediaError`), or ``(width, height)`` (the size to assume)."""

_REMOTE: contextvars.ContextVar[RemotePolicy] = contextvars.ContextVar("tokenbox_remote_images", default="max")
_DEFAULT_MODEL = "gpt-4o"


@contextlib.contextmanager
def remote_images(policy: RemotePolicy) -> Iterator[None]:
    """Set how remote images are costed inside the block (thread- and task-local).

    >>> from tokenbox_core import count_message_tokens
    >>> msg = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}
    >>> with remote_images((1024, 1024)):
    ...     count_message_tokens([msg], "gpt-4o")
    773
    """
    if policy not in ("max", "error") and not (
        isinstance(policy, tuple) and len(policy) == 2 and all(isinstance(v, int) and v > 0 for v in policy)
    ):
        raise MediaError(f"remote image policy must be 'max', 'error' or (width, height), got {policy!r}")
    token = _REMOTE.set(policy)
    try:
        yield
    finally:
        _REMOTE.reset(token)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _given_size(*holders: Any) -> tuple[int, int] | None:
    for holder in holders:
        size = _get(holder, "size")
        if isinstance(size, Sequence) and not isinstance(size, str) and len(size) == 2:
            return int(size[0]), int(size[1])
        w, h = _get(holder, "width"), _get(holder, "height")
        if isinstance(w, int) and isinstance(h, int):
            return w, h
    return None


def _image_ref(part: Mapping[str, Any]) -> tuple[str | bytes | None, str, Any]:
    """(reference or data, detail, dict that may carry a size) for an image part."""
    kind = part.get("type")
    if kind in ("image_url", "input_image"):
        ref = part.get("image_url")
        detail = part.get("detail", "auto")
        if isinstance(ref, Mapping):
            return ref.get("url"), ref.get("detail", detail) or "auto", ref
        return ref or part.get("file_id"), detail or "auto", part
    source = part.get("source")
    if isinstance(source, Mapping):  # Anthropic
        if source.get("type") == "base64":
            return source.get("data"), "auto", source
        return source.get("url") or source.get("file_id"), "auto", source
    for key in ("base64", "data"):  # LangChain v1 / v0
        if part.get(key):
            return part[key], "auto", part
    return part.get("url") or part.get("file_id") or part.get("id"), "auto", part


def _image_cost(part: Mapping[str, Any], profile: ModelProfile) -> int:
    ref, detail, holder = _image_ref(part)
    size = _given_size(part, holder)
    if size is None:
        if not ref or (isinstance(ref, str) and is_remote(ref)):  # a URL, a file id, or a bare placeholder
            ref = ref or "(an image part without data)"
            policy = _REMOTE.get()
            if policy == "error":
                raise MediaError(
                    f"image {ref[:60]!r} is remote and TokenBox never fetches it; give its size (width/height "
                    f"in the part, or remote_images((w, h))) or use remote_images('max')"
                )
            if policy == "max":
                cost = max_image_tokens(model=profile, detail=detail)
                logger.debug("remote image %.60s costed at its detail maximum: %d tokens", ref, cost)
                return cost
            size = policy
        else:
            size = image_size(ref)
    return image_tokens(size[0], size[1], model=profile, detail=detail)


def _audio_cost(part: Mapping[str, Any], profile: ModelProfile) -> int:
    inner = part.get("input_audio") if isinstance(part.get("input_audio"), Mapping) else part
    seconds = _get(inner, "seconds") or _get(inner, "duration") or _get(part, "seconds") or _get(part, "duration")
    if seconds is None:
        data = _get(inner, "data") or _get(inner, "base64")
        if isinstance(data, str | bytes):
            if isinstance(data, str) and is_remote(data):
                data = None
            else:
                seconds = wav_seconds(data)
    if seconds is None:
        raise MediaError(
            "cannot tell this audio clip's length (only WAV headers are read); add 'seconds' to the part, "
            "or transcribe it and send the text"
        )
    return audio_tokens(float(seconds), model=profile)


def _mime(part: Mapping[str, Any]) -> str:
    mime = part.get("mime_type") or _get(part.get("source"), "media_type") or ""
    if not mime:
        data = part.get("base64") or part.get("data") or part.get("url") or ""
        if isinstance(data, str) and data.startswith("data:"):
            mime = decode_data(data, 0)[1] or ""
    return str(mime).lower()


def media_part_tokens(part: Any, model: Any = None) -> int | None:
    """Tokens one content part costs when it is an image or audio part; ``None`` for other parts."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind not in ("image_url", "input_image", "image", "input_audio", "audio", "file"):
        return None
    if isinstance(part.get("tokens"), int) and not isinstance(part.get("tokens"), bool):
        return int(part["tokens"])
    profile = model if isinstance(model, ModelProfile) else get_model_profile(model or _DEFAULT_MODEL)
    if kind in ("image_url", "input_image", "image"):
        return _image_cost(part, profile)
    if kind in ("input_audio", "audio"):
        return _audio_cost(part, profile)
    mime = _mime(part)
    if mime.startswith("image/"):
        return _image_cost(part, profile)
    if mime.startswith("audio/"):
        return _audio_cost(part, profile)
    raise MediaError(
        f"no published token rule for {mime or 'this'} file input; extract its text and send that, or give "
        f"the part a 'tokens' count"
    )


def split_media(content: Sequence[Any], counter: Any) -> tuple[list[Any], int]:
    """The content without its media parts, and what those parts cost for the counter's model.

    The model is the counter's profile (``get_counter("claude-…")`` carries
    one); a counter made from an encoding or a callable costs media by
    GPT-4o's rules.
    """
    profile = profile_of(counter) or get_model_profile(_DEFAULT_MODEL)
    kept: list[Any] = []
    total = 0
    for part in content:
        cost = media_part_tokens(part, profile)
        if cost is None:
            kept.append(part)
        else:
            total += cost
    return kept, total
