"""Model profiles: context windows, counting, media and prompt-cache rules per model family (issue 14 §1).

>>> from tokenbox_core.models import get_model_profile
>>> get_model_profile("o3-mini").context_window
200000

:func:`suggest_model` is the did-you-mean for a model name (the nearest built-in, registered or tiktoken
model), for a caller that validates a model name of its own.
"""

from tokenbox_core.models._calibrated import CalibratedCounter
from tokenbox_core.models._calibration import UsageCalibrator
from tokenbox_core.models._endpoint import EndpointCounter
from tokenbox_core.models._profile import ModelProfile
from tokenbox_core.models._registry import (
    DEFAULT_CONTEXT_WINDOW,
    find_model_profile,
    get_model_profile,
    register_profile,
    registered_names,
    suggest_model,
)
from tokenbox_core.models._usage import ReportedUsage, read_usage

__all__ = [
    "CalibratedCounter",
    "DEFAULT_CONTEXT_WINDOW",
    "EndpointCounter",
    "ModelProfile",
    "ReportedUsage",
    "UsageCalibrator",
    "find_model_profile",
    "get_model_profile",
    "read_usage",
    "register_profile",
    "registered_names",
    "suggest_model",
]
