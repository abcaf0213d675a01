"""Batch compilation on this machine (issue 16 §2): records, errors as rows, Parquet, chunked --jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenbox_core.batch import BatchError, compile_batch, run_tasks
from tokenbox_core.batch import _local as batch_local
from tokenbox_core.batch._files import read_specs
from tokenbox_core.batch._local import plan_workers
from tokenbox_core.batch._records import SpecCompiler
from tokenbox_core.spec import SpecError

from .batch_specs import spec_lines, write_specs


def test_every_spec_gives_one_record_in_input_order(tmp_path: Path) -> None:
    """One record per non-blank line, in order; failures are error rows with their line and input."""
    src = write_specs(tmp_path)
    out = tmp_path / "out.jsonl"
    summary = compile_batch(src, out)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    lines = [n for n, text in enumerate(spec_lines(), start=1) if text.strip()]
    assert [r["line"] for r in records] == lines
    failed = [r for r in records if not r["ok"]]
    assert [r["line"] for r in failed] == [4, 8, 12]
    assert failed[0]["input"] == "this is not json" and "line 4" in failed[0]["error"]
    assert "budget" in failed[1]["error"] and "ContextCriticalOverflow" not in failed[1]["error"]
    assert summary.records == len(lines) and summary.failed == 3 and summary.ok == len(lines) - 3
    good = records[0]
    assert good["name"] == "spec-0" and len(good["fingerprint"]) == 64
    assert good["total_tokens"] <= good["max_tokens"] and good["text"].startswith("Answer")
    assert summary.total_tokens == sum(r["total_tokens"] for r in records if r["ok"])


def test_records_match_a_direct_layout() -> None:
    """A record's fingerprint and numbers are those of laying out the spec directly."""
    from tokenbox_core.spec import loads_spec

    text = spec_lines(1)[0]
    record = SpecCompiler()((1, text, "x"))
    layout = loads_spec(text).layout()
    assert record["fingerprint"] == layout.fingerprint and record["total_tokens"] == layout.total_tokens
    assert record["text"] == layout.text and record["removed"] == len(layout.removed)


def test_one_box_per_configuration() -> None:
    """The per-worker compiler re-uses one box for specs sharing budget, counter, separator and mode."""
    compiler = SpecCompiler()
    for n, text in enumerate(spec_lines(8), start=1):
        if text.strip():
            compiler((n, text, "x"))
    assert len(compiler._boxes) == 9  # 8 distinct (budget, counter) pairs + the overflowing spec's default
    compiler((1, spec_lines(1)[0], "x"))
    assert len(compiler._boxes) == 9


def test_parquet_round_trip(tmp_path: Path) -> None:
    """Parquet in (a 'spec' column) and out: the same records as JSONL."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    texts = [t for t in spec_lines(10) if t.strip()]
    pq.write_table(pa.table({"spec": texts}), tmp_path / "specs.parquet")
    (tmp_path / "specs.jsonl").write_text("\n".join(texts) + "\n", encoding="utf-8")
    compile_batch(tmp_path / "specs.parquet", tmp_path / "out.parquet")
    compile_batch(tmp_path / "specs.jsonl", tmp_path / "out.jsonl")
    table = pq.read_table(tmp_path / "out.parquet").to_pylist()
    jsonl = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in table] == [r["line"] for r in jsonl]
    assert [r["fingerprint"] for r in table] == [r.get("fingerprint") for r in jsonl]
    assert [json.loads(r["messages"]) if r["messages"] else None for r in table] == [r.get("messages") for r in jsonl]


def test_small_batches_stay_serial_and_big_ones_spread() -> None:
    """--jobs is a ceiling: a batch too small to repay worker start-up runs serially."""
    small = [(1, "{}", "x")] * 1000
    assert plan_workers(small, 8) == 1
    big = [(i, "x" * 100_000, "x") for i in range(400)]
    assert plan_workers(big, 2) == 2 and plan_workers(big, 1) == 1
    assert plan_workers(big[:1], 4) == 1


def test_worker_processes_write_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two worker processes taking chunks produce exactly the serial output."""
    src = write_specs(tmp_path, n=24)
    compile_batch(src, tmp_path / "serial.jsonl")
    monkeypatch.setattr(batch_local, "MIN_PARALLEL_CHARS", 1)
    assert plan_workers(read_specs(src), 2) == 2
    compile_batch(src, tmp_path / "jobs.jsonl", jobs=2)
    assert (tmp_path / "jobs.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()


def test_bad_requests_are_clear_errors(tmp_path: Path) -> None:
    """An empty file, an unknown engine and an address without Ray are errors naming the fix."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(SpecError, match="no specs"):
        read_specs(empty)
    with pytest.raises(BatchError, match="unknown engine 'spark'"):
        run_tasks([(1, "{}", "x")], SpecCompiler, engine="spark")  # type: ignore[arg-type]
    with pytest.raises(BatchError, match="--engine ray"):
        run_tasks([(1, "{}", "x")], SpecCompiler, address="ray://head:10001")


def test_core_and_batch_import_no_optional_extra() -> None:
    """Importing tokenbox_core and tokenbox_core.batch loads neither Ray, pyarrow nor the fast counter."""
    import subprocess
    import sys

    code = (
        "import sys, tokenbox_core, tokenbox_core.batch; "
        "loaded = [m for m in ('ray', 'pyarrow', 'rs_bpe') if m in sys.modules]; assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_ray_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Ray, --engine ray is an error naming the 'ray' extra."""
    import sys

    from tokenbox_core.batch import RayUnavailable

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayUnavailable, match=r"tokenbox-context\[ray\]"):
        list(run_tasks([(1, "{}", "x")], SpecCompiler, engine="ray"))


def test_cli_address_without_ray_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox layout specs.jsonl --address ...` without --engine ray exits 2 with one clear line."""
    from tokenbox_core.cli import main

    assert main(["layout", str(write_specs(tmp_path, n=3)), "--address", "ray://head:10001"]) == 2
    err = capsys.readouterr().err
    assert "tokenbox: error: address 'ray://head:10001' names a Ray cluster" in err and "--engine ray" in err
