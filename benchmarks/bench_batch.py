"""Batch compilation benchmark (issue 16 §2): serial, local worker processes and Ray, side by side in one run.

Run on purpose: ``.venv/bin/python benchmarks/bench_batch.py [N]`` (default N = 2,000).  Prints a table; asserts
nothing.  Every spec is the demo's agent context (7 sections, ~31k characters, ~8k tokens into an 8k gpt-4o
window) with its texts made unique per spec, so nothing is served from the count cache across specs.

For each engine: wall time, records per second, and peak RSS per worker process (from ``ru_maxrss`` of this
process and its reaped children, or of the Ray actors' processes).  The three outputs are compared byte for byte.
N = 100,000 (the issue's size) takes about an hour per engine on this shared 2-core machine, so the default is
smaller; records/s does not depend on N once start-up is paid (it is reported separately as the 1-spec time).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tokenbox_core.batch import compile_batch
from tokenbox_core.demo import demo_budget, demo_sections
from tokenbox_core.sections import Item, Section


def _item(item: Item, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {"id": item.id, "content": f"{item.content} [{tag}]"}
    for key in ("role", "score", "priority", "group"):
        value = getattr(item, key)
        if value is not None:
            out[key] = value
    if item.pinned:
        out["pinned"] = True
    return out


def _section(section: Section, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {"id": section.id}
    if isinstance(section.content, str):
        out["content"] = f"{section.content} [{tag}]"
    else:
        out["items"] = [_item(it, tag) for it in section.content]
    for key in ("priority", "shrink", "grow", "min_tokens", "max_tokens", "basis", "role", "eviction", "keep"):
        value = getattr(section, key)
        if value is not None:
            out[key] = value
    if section.strategy:
        out["strategy"] = [s for s in section.strategy if isinstance(s, str)]
    if section.omission_marker:
        out["omission_marker"] = section.omission_marker
    return out


def write_specs(path: Path, n: int) -> None:
    sections = demo_sections()
    budget = demo_budget().to_dict()
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            tag = f"case {i}"
            spec = {"name": f"demo-{i}", "budget": budget, "counter": "gpt-4o"}
            spec["sections"] = [_section(s, tag) for s in sections]
            fh.write(json.dumps(spec, ensure_ascii=False) + "\n")


def peak_rss_mb() -> tuple[float, float]:
    """Peak RSS of this process and of its largest reaped child, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def run(label: str, src: Path, out: Path, **kwargs: Any) -> tuple[str, float, Any]:
    start = time.perf_counter()
    summary = compile_batch(src, out, **kwargs)
    return label, time.perf_counter() - start, summary


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    folder = Path(tempfile.mkdtemp(prefix="tokenbox-bench-batch-"))
    src = folder / "specs.jsonl"
    write_specs(src, n)
    one = folder / "one.jsonl"
    write_specs(one, 1)
    print(f"{n:,} demo-sized specs ({src.stat().st_size / 1e6:.1f} MB of JSON) on {os.cpu_count()} CPUs")
    rows = []
    start = time.perf_counter()
    compile_batch(one, folder / "one-out.jsonl")
    print(f"  start-up + 1 spec, serial in-process: {time.perf_counter() - start:.2f} s")
    rows.append(run("serial", src, folder / "serial.jsonl"))
    own, _ = peak_rss_mb()
    rows.append(run("--jobs 2 (local processes)", src, folder / "jobs2.jsonl", jobs=2))
    _, child = peak_rss_mb()
    ray_rss = None
    try:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        rows.append(run("Ray local, 2 actors", src, folder / "ray.jsonl", engine="ray", jobs=2))
        ray_rss = max((w.get("rss", 0) for w in _ray_worker_memory()), default=0) / 1e6 or None
        ray.shutdown()
    except ImportError:
        print("  (ray is not installed: pip install 'tokenbox-context[ray]')")
    serial = (folder / "serial.jsonl").read_bytes()
    for label, seconds, summary in rows:
        name = {"serial": "serial.jsonl", "--jobs 2 (local processes)": "jobs2.jsonl"}.get(label, "ray.jsonl")
        same = (folder / name).read_bytes() == serial
        print(
            f"  {label:<28} {seconds:8.1f} s  {summary.records / seconds:8.1f} records/s  "
            f"{'identical to serial' if same else 'DIFFERS from serial'}  ({summary.failed} failed)"
        )
    print(f"  peak RSS: serial process {own:.0f} MB; largest --jobs worker {child:.0f} MB", end="")
    print(f"; largest Ray actor {ray_rss:.0f} MB" if ray_rss else "")


def _ray_worker_memory() -> list[dict[str, Any]]:
    """RSS of this machine's Ray worker processes (best effort, via /proc)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "ray::" not in cmd and "default_worker.py" not in cmd:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                out.append({"pid": int(pid), "rss": int(line.split()[1]) * 1024})
    return out


if __name__ == "__main__":
    main()
