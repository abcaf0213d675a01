"""Ablation testing (chapter §6.11.4): compile without each section, measure the utility drop.

``ablate(compiler, inputs, evaluate)`` compiles the full context and one
variant without each source (and, with ``pairs=True``, without each pair),
calls ``evaluate(compiled) -> float`` on each, and reports

- ``ΔU_i = U(full) − U(without i)``: high means critical, ``≈ 0`` means a
  candidate for removal or a smaller budget;
- for pairs, the interaction ``I_ij = ΔU_ij − ΔU_i − ΔU_j``: ``> 0`` the two
  are synergistic (removing both hurts more than the sum), ``< 0`` partially
  redundant.

A variant that the compiler rejects (say, without the required policy) scores
``on_error`` (default 0.0; ``None`` re-raises the :class:`CompilationError`).
Compiles run in declaration order; an ``async`` evaluation function runs the
evaluations concurrently; results never depend on completion order.

>>> from tokenbox_core import ContextCompiler
>>> compiler = ContextCompiler(1000, counter="whitespace")
>>> inputs = {"policy": "Be brief.", "developer": "Use French.", "user": "Bonjour?"}
>>> report = ablate(compiler, inputs, lambda c: float("French" in c.text))
>>> report.deltas, list(report.errors)  # without the required policy the compile is rejected
({'policy': 1.0, 'developer': 1.0, 'user': 0.0}, ['policy'])
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.compiler.collect import SOURCE_NAMES
from tokenbox_core.compiler.compiler import CompiledContext, ContextCompiler
from tokenbox_core.errors import CompilationError, CompilerInputError

__all__ = ["AblationReport", "ablate"]

Evaluate = Callable[[CompiledContext], Any]


@dataclass(frozen=True)
class AblationReport:
    """Utilities of the full context and of each ablated variant, with ΔU and pairwise interactions."""

    baseline: float
    utilities: dict[str, float]
    deltas: dict[str, float]
    pair_deltas: dict[tuple[str, str], float]
    interactions: dict[tuple[str, str], float]
    errors: dict[str, str]

    def ranking(self) -> list[tuple[str, float]]:
        """Sections by descending ΔU (ties in declaration order): the calibration order of §6.11.4 step 4."""
        return sorted(self.deltas.items(), key=lambda kv: -kv[1])


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 0)


def _compile(
    compiler: ContextCompiler, inputs: Mapping[str, Any], without: tuple[str, ...]
) -> CompiledContext | CompilationError:
    variant = {k: v for k, v in inputs.items() if k not in without}
    try:
        return compiler.compile(**variant)
    except CompilationError as exc:
        return exc


async def _gather(evaluate: Evaluate, contexts: list[CompiledContext]) -> list[Any]:
    import asyncio  # only for async evaluation functions: importing tokenbox_core stays light

    return list(await asyncio.gather(*(evaluate(c) for c in contexts)))


def ablate(
    compiler: ContextCompiler,
    inputs: Mapping[str, Any],
    evaluate: Evaluate,
    *,
    sections: Sequence[str] | None = None,
    pairs: bool = False,
    on_error: float | None = 0.0,
) -> AblationReport:
    """Compile without each section (and each pair) and report ΔU per section (see the module docstring)."""
    for name in inputs:
        if name not in SOURCE_NAMES:
            raise CompilerInputError(f"ablate: unknown input {name!r}; inputs are {list(SOURCE_NAMES)}")
    names = [n for n in SOURCE_NAMES if n in inputs and not _empty(inputs[n])] if sections is None else list(sections)
    for name in names:
        if name not in inputs:
            raise CompilerInputError(f"ablate: section {name!r} is not among the inputs {sorted(inputs)}")
    variants: list[tuple[str, ...]] = [()] + [(n,) for n in names]
    if pairs:
        variants += list(itertools.combinations(names, 2))
    results = [_compile(compiler, inputs, v) for v in variants]
    if isinstance(results[0], CompilationError):
        raise results[0]
    contexts = [r for r in results if isinstance(r, CompiledContext)]
    if inspect.iscoroutinefunction(evaluate):
        import asyncio

        scores = asyncio.run(_gather(evaluate, contexts))
    else:
        scores = [evaluate(c) for c in contexts]
    values = iter(scores)
    utility: dict[tuple[str, ...], float] = {}
    errors: dict[str, str] = {}
    for variant, result in zip(variants, results, strict=True):
        if isinstance(result, CompilationError):
            if on_error is None:
                raise result
            utility[variant] = float(on_error)
            errors["+".join(variant)] = str(result)
        else:
            utility[variant] = float(next(values))
    base = utility[()]
    deltas = {n: base - utility[(n,)] for n in names}
    pair_deltas: dict[tuple[str, str], float] = {}
    interactions: dict[tuple[str, str], float] = {}
    for variant in variants:
        if len(variant) == 2:
            a, b = variant
            pair_deltas[(a, b)] = base - utility[variant]
            interactions[(a, b)] = pair_deltas[(a, b)] - deltas[a] - deltas[b]
    return AblationReport(
        baseline=base,
        utilities={"+".join(v) or "full": u for v, u in utility.items()},
        deltas=deltas,
        pair_deltas=pair_deltas,
        interactions=interactions,
        errors=errors,
    )
