"""Shared test configuration: hypothesis profiles and offline guarantees."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Tests never touch the network: tiktoken encodings come from local copies.
os.environ.setdefault("TOKENBOX_OFFLINE", "1")

# The same examples on every run and machine: derandomized, and no example database replaying
# failures found earlier on this machine.  HYPOTHESIS_PROFILE=explore searches more widely.
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.register_profile("explore", max_examples=2_000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
