"""Batch compilation on a local Ray instance with 2 CPUs (issue 16 §2): the serial run's bytes, record for record.

Ray starts once for the module (about 10–20 s here); the module is skipped when the ``ray`` extra is missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")

from tokenbox_core.batch import compile_batch  # noqa: E402
from tokenbox_core.cli import main  # noqa: E402

from .batch_specs import write_specs  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    # Ray's own deprecation notices about its internal settings (not raised by this project's code).
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),
]


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    import logging

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_records_equal_serial_records_byte_for_byte(tmp_path: Path) -> None:
    """JSONL and Parquet written from Ray equal the serial run's, errors and all."""
    src = write_specs(tmp_path, n=200)
    serial = compile_batch(src, tmp_path / "serial.jsonl")
    on_ray = compile_batch(src, tmp_path / "ray.jsonl", engine="ray", jobs=2)
    assert on_ray == serial and serial.failed == 3
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()
    compile_batch(src, tmp_path / "serial.parquet")
    compile_batch(src, tmp_path / "ray.parquet", engine="ray", jobs=2)
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "ray.parquet").equals(pq.read_table(tmp_path / "serial.parquet"))


def test_cli_engine_ray_prints_the_serial_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox layout specs.jsonl --json --engine ray` prints exactly what the serial command prints."""
    src = str(write_specs(tmp_path, n=30))
    assert main(["layout", src, "--json"]) == 2  # the batch has bad lines
    serial = capsys.readouterr().out
    assert main(["layout", src, "--json", "--engine", "ray", "--jobs", "2"]) == 2
    on_ray = capsys.readouterr().out
    assert on_ray == serial
    assert [json.loads(x)["line"] for x in on_ray.splitlines()][:5] == [1, 2, 3, 4, 5]
