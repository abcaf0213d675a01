"""Alternating fresh-process runs of a benchmark on an old tree and on this one (the ``--ab`` modes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def alternate(script: str, old_tree: str, trials: int) -> dict[str, list[dict[str, Any]]]:
    """``script --json`` run ``trials`` times in fresh processes, alternately with ``old_tree`` and with this tree
    first on ``PYTHONPATH``; each run's parsed JSON under ``"old"`` and ``"new"``."""
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for _ in range(trials):
        for name, tree in (("old", old_tree), ("new", HERE)):
            env = {**os.environ, "PYTHONPATH": tree, "TOKENBOX_OFFLINE": "1"}
            done = subprocess.run(
                [sys.executable, os.path.abspath(script), "--json"], env=env, capture_output=True, text=True, check=True
            )
            runs[name].append(json.loads(done.stdout))
    return runs
