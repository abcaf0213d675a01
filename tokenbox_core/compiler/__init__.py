"""The prefill compiler (chapter §6.2–§6.7, §6.11): typed sources in, a validated, traced context out.

Stages, one module each: :mod:`.collect`, :mod:`.filter`, :mod:`.rank`,
:mod:`.compress` (with :mod:`.allocate`, :mod:`.overflow`), :mod:`.assemble`,
:mod:`.validate`; around them :mod:`.inputs` (the typed tiers),
:mod:`.config`, :mod:`.refs` (reference compression), :mod:`.trace`,
:mod:`.metrics` and :mod:`.ablation`.
"""

from tokenbox_core.compiler.ablation import AblationReport, ablate
from tokenbox_core.compiler.allocate import Allocation, Demand, water_fill
from tokenbox_core.compiler.collect import Candidates
from tokenbox_core.compiler.compiler import CompiledContext, ContextCompiler
from tokenbox_core.compiler.config import CompilerConfig, RankingWeights
from tokenbox_core.compiler.filter import Exclusion
from tokenbox_core.compiler.inputs import Developer, Evidence, Memory, Policy, TaskState, Tier, Tool, Trust
from tokenbox_core.compiler.metrics import DEFINITIONS, Metrics
from tokenbox_core.compiler.pii import PIIDetector, PIIMatch, RegexPIIDetector
from tokenbox_core.compiler.refs import Reference
from tokenbox_core.compiler.trace import CompilationTrace
from tokenbox_core.compiler.utility import BoundedLogUtility, UtilityFunction
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
