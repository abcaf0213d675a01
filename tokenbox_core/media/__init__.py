"""Media token costs and compression (chapter §6.12, issue 14 §2-3).

``image_tokens``/``audio_tokens``/``video_tokens`` apply each provider's
published rule; ``image_size`` reads sizes from headers; ``remote_images``
sets the explicit policy for images TokenBox never fetches.

>>> from tokenbox_core.media import image_tokens
>>> image_tokens(2048, 4096, model="gpt-4o", detail="high")
1105
"""

from tokenbox_core.media._assembly import ModalityInput, MultiModalContext, assemble_multimodal
from tokenbox_core.media._costs import audio_tokens, image_tokens, max_image_tokens, video_tokens
from tokenbox_core.media._image_lenses import choose_detail, crop_image, downscale_to_fit
from tokenbox_core.media._parts import media_part_tokens, remote_images
from tokenbox_core.media._sizes import image_size, wav_seconds
from tokenbox_core.models import ModelProfile, get_model_profile

__all__ = [
    "ModalityInput",
    "ModelProfile",
    "MultiModalContext",
    "assemble_multimodal",
    "audio_tokens",
    "choose_detail",
    "crop_image",
    "downscale_to_fit",
    "get_model_profile",
    "image_size",
    "image_tokens",
    "max_image_tokens",
    "media_part_tokens",
    "remote_images",
    "video_tokens",
    "wav_seconds",
]
