"""Media token costs and compression (chapter §6.12, issue 14 §2-3).

``image_tokens``/``audio_tokens``/``video_tokens`` apply each provider's
published rule; ``image_size`` reads sizes from headers; ``remote_images``
sets the explicit policy for images TokenBox never fetches.

>>> from tokenbox_core.media import image_tokens
>>> image_tokens(2048, 4096, model="gpt-4o", detail="high")
1105
"""

from tokenbox_core.media._assembly import AssembledInput, ModalityInput, MultiModalContext, assemble_multimodal
from tokenbox_core.media._costs import audio_tokens, image_tokens, max_image_tokens, video_tokens
from tokenbox_core.media._image_lenses import (
    ImageFit,
    OcrChoice,
    choose_detail,
    choose_ocr,
    crop_image,
    downscale_to_fit,
    fit_size,
    substitute_ocr,
)
from tokenbox_core.media._parts import RemotePolicy, media_part_tokens, remote_images, split_media
from tokenbox_core.media._references import CrossModalReference, evidence_label, validate_references
from tokenbox_core.media._sizes import image_size, wav_seconds
from tokenbox_core.models import ModelProfile, get_model_profile

__all__ = [
    "AssembledInput",
    "CrossModalReference",
    "ImageFit",
    "ModalityInput",
    "ModelProfile",
    "MultiModalContext",
    "OcrChoice",
    "RemotePolicy",
    "assemble_multimodal",
    "audio_tokens",
    "choose_detail",
    "choose_ocr",
    "crop_image",
    "downscale_to_fit",
    "evidence_label",
    "fit_size",
    "get_model_profile",
    "image_size",
    "image_tokens",
    "max_image_tokens",
    "media_part_tokens",
    "remote_images",
    "split_media",
    "substitute_ocr",
    "validate_references",
    "video_tokens",
    "wav_seconds",
]
