"""Shared test configuration: hypothesis profiles and offline guarantees."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Tests never touch the network: tiktoken encodings come from local copies.
os.environ.setdefault("TOKENBOX_OFFLINE", "1")

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
