"""Batch compilation: many specs in, one record each out, serially, on local processes or on Ray (issue 16 §2).

Teams building evaluation sets, fine-tuning data or offline batch inference
lay out many contexts.  :func:`compile_batch` reads a JSONL or Parquet file
of specs, compiles each with a per-worker :class:`SpecCompiler` (one counter
and box per worker) and writes one record per spec — the messages, the
fingerprint, the headline numbers, or the error with its input line — to
JSONL or Parquet, in input order.  Every engine writes the same bytes:

- ``engine="local"``: serial, or ``jobs`` worker processes taking chunks
  (a batch too small to repay their start-up stays serial);
- ``engine="ray"``: Ray Data actors (optional extra ``ray``), on a local
  instance by default or on the cluster at ``address``.

``tokenbox layout SPECS.jsonl --engine ray [--address ray://…]`` runs the
command's batch path on Ray the same way (:func:`run_tasks`).
"""

from tokenbox_core.batch._ray_engine import RayUnavailable
from tokenbox_core.batch._run import BatchError, BatchSummary, Engine, compile_batch, run_tasks

__all__ = ["BatchError", "BatchSummary", "Engine", "RayUnavailable", "compile_batch", "run_tasks"]
