"""Model profiles: context windows, counting, media and prompt-cache rules per model family (issue 14 §1).

>>> from tokenbox_core.models import get_model_profile
>>> get_model_profile("o3-mini").context_window
200000
"""

from tokenbox_core.models._calibrated import CalibratedCounter, Calibration, Observation
from tokenbox_core.models._calibration import UsageCalibrator
from tokenbox_core.models._endpoint import EndpointCounter
from tokenbox_core.models._profile import CacheRule, CountingRule, ModelProfile, Pricing, WindowSource
from tokenbox_core.models._registry import (
    DEFAULT_CONTEXT_WINDOW,
    builtin_profiles,
    fallback_message,
    fallback_profile,
    find_model_profile,
    get_model_profile,
    normalise_model_name,
    register_profile,
    registered_names,
)
from tokenbox_core.models._rules import AreaRule, AudioRule, GeminiTileRule, ImageRule, PatchRule, TileRule, VideoRule
from tokenbox_core.models._usage import MISS_REASONS, ReportedUsage, read_usage

__all__ = [
    "AreaRule",
    "AudioRule",
    "CacheRule",
    "CalibratedCounter",
    "Calibration",
    "CountingRule",
    "DEFAULT_CONTEXT_WINDOW",
    "EndpointCounter",
    "GeminiTileRule",
    "ImageRule",
    "MISS_REASONS",
    "ModelProfile",
    "Observation",
    "PatchRule",
    "Pricing",
    "ReportedUsage",
    "TileRule",
    "UsageCalibrator",
    "VideoRule",
    "WindowSource",
    "builtin_profiles",
    "fallback_message",
    "fallback_profile",
    "find_model_profile",
    "get_model_profile",
    "normalise_model_name",
    "read_usage",
    "register_profile",
    "registered_names",
]
