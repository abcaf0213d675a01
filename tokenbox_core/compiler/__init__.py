"""The prefill compiler (chapter §6.2–§6.7, §6.11): typed sources in, a validated, traced context out.

Stages, one module each: :mod:`._collect`, :mod:`._filter`, :mod:`._rank`,
:mod:`._compress` (with :mod:`._allocate`, :mod:`._overflow`), :mod:`._assemble`,
:mod:`._validate`; around them :mod:`._inputs` (the typed tiers),
:mod:`._config`, :mod:`._refs` (reference compression), :mod:`._trace`,
:mod:`._metrics` and :mod:`._ablation`.
"""

from tokenbox_core.compiler._ablation import AblationReport, ablate
from tokenbox_core.compiler._allocate import Allocation, Demand, water_fill
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._compiler import CompiledContext, ContextCompiler
from tokenbox_core.compiler._config import CompilerConfig, RankingWeights
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.compiler._inputs import Developer, Evidence, Memory, Policy, TaskState, Tier, Tool, Trust
from tokenbox_core.compiler._metrics import DEFINITIONS, Metrics
from tokenbox_core.compiler._pii import PIIDetector, PIIMatch, RegexPIIDetector
from tokenbox_core.compiler._refs import Reference
from tokenbox_core.compiler._trace import CompilationTrace
from tokenbox_core.compiler._utility import BoundedLogUtility, UtilityFunction
from tokenbox_core.errors import CompilationError, CompilerInputError, Violation

__all__ = [
    "AblationReport",
    "Allocation",
    "BoundedLogUtility",
    "Candidates",
    "CompilationError",
    "CompilationTrace",
    "CompiledContext",
    "CompilerConfig",
    "CompilerInputError",
    "ContextCompiler",
    "DEFINITIONS",
    "Demand",
    "Developer",
    "Evidence",
    "Exclusion",
    "Memory",
    "Metrics",
    "PIIDetector",
    "PIIMatch",
    "Policy",
    "RankingWeights",
    "Reference",
    "RegexPIIDetector",
    "TaskState",
    "Tier",
    "Tool",
    "Trust",
    "UtilityFunction",
    "Violation",
    "ablate",
    "water_fill",
]
