"""The prefill compiler (chapter §6.2–§6.7, §6.11): typed sources in, a validated, traced context out.

Stages, one module each: :mod:`._collect`, :mod:`._filter`, :mod:`._rank`,
:mod:`._compress` (with :mod:`._allocate`, :mod:`._overflow`), :mod:`._assemble`,
:mod:`._validate`; around them :mod:`._inputs` (the typed tiers),
:mod:`._config`, :mod:`._refs` (reference compression), :mod:`._trace`,
:mod:`._metrics` and :mod:`._ablation`.
"""

from tokenbox_core.compiler._ablation import ablate
from tokenbox_core.compiler._compiler import CompiledContext, ContextCompiler
from tokenbox_core.compiler._config import CompilerConfig, RankingWeights
from tokenbox_core.compiler._inputs import Developer, Evidence, Memory, Policy, TaskState, Tool
from tokenbox_core.compiler._metrics import DEFINITIONS
from tokenbox_core.compiler._pii import PIIDetector
from tokenbox_core.compiler._trace import CompilationTrace
from tokenbox_core.compiler._utility import UtilityFunction

__all__ = [
    "CompilationTrace",
    "CompiledContext",
    "CompilerConfig",
    "ContextCompiler",
    "DEFINITIONS",
    "Developer",
    "Evidence",
    "Memory",
    "PIIDetector",
    "Policy",
    "RankingWeights",
    "TaskState",
    "Tool",
    "UtilityFunction",
    "ablate",
]
