"""Spec batches shared by the batch tests: varied budgets, counters, lists, and bad lines."""

from __future__ import annotations

import json
from pathlib import Path


def spec_lines(n: int = 40) -> list[str]:
    lines = []
    for i in range(n):
        items = [
            {"id": f"m{j}", "content": f"message {j} of spec {i} " * (1 + j % 3), "role": "user"} for j in range(6)
        ]
        lines.append(
            json.dumps(
                {
                    "name": f"spec-{i}",
                    "budget": 60 + 7 * (i % 9),
                    "counter": ["o200k_base", "cl100k_base", "whitespace", "bytes"][i % 4],
                    "sections": [
                        {"id": "policy", "content": "Answer briefly. 日本語 ok 🙂"},
                        {"id": "history", "items": items, "shrink": 1, "omission_marker": True},
                        {"id": "docs", "content": "evidence text " * (5 + i % 11), "shrink": 2, "priority": 1},
                    ],
                },
                ensure_ascii=False,
            )
        )
    lines.insert(3, "this is not json")
    lines.insert(7, json.dumps({"budget": -5, "sections": []}))
    lines.insert(11, json.dumps({"budget": 5, "sections": [{"id": "big", "content": "too long for five " * 9}]}))
    lines.insert(12, "")
    return lines


def write_specs(folder: Path, n: int = 40) -> Path:
    path = folder / "specs.jsonl"
    path.write_text("\n".join(spec_lines(n)) + "\n", encoding="utf-8")
    return path
