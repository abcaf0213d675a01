"""Trust levels and the defence policy (chapter §6.9.3 Algorithm 6.6, §6.5.2).

:class:`TrustLevel` is phase 2 of Algorithm 6.6: system and developer text
is TRUSTED, user text SEMI_TRUSTED, tool and retrieval text UNTRUSTED.
:class:`DefensePolicy` holds everything the defensive stages read: per-source
actions and thresholds (:class:`SourcePolicy`), the detector, the
spotlighting mode, the deployment secret, the emission normalisation, the
canary, and the injection-surface gate.  It validates at construction.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tokenbox_core.defense._chars import REMOVABLE
from tokenbox_core.defense._detector import HeuristicDetector, InjectionDetector
from tokenbox_core.defense._sanitize import Emission
from tokenbox_core.errors import ConfigError
from tokenbox_core.tokens import TokenCounter

if TYPE_CHECKING:
    from tokenbox_core.defense._session import DefenseSession

__all__ = ["DEFAULT_TRUST", "SECRET_ENV", "DefensePolicy", "SourcePolicy", "Spotlight", "TrustLevel", "security_log"]

security_log = logging.getLogger("tokenbox.security")
"""Every security event (detection, rejection, quarantine, sanitisation, validation) is logged here."""

SECRET_ENV = "TOKENBOX_DEFENSE_SECRET"
"""Environment variable holding the deployment secret when the policy has none."""

Action = Literal["reject", "quarantine", "allow"]
Spotlight = Literal["delimit", "datamark", "encode"]
"""Spotlighting (Hines et al., 2024) of untrusted blocks: boundaries only, a marker
character between words, or base64 with an instruction to decode."""

_ACTIONS = ("reject", "quarantine", "allow")
_SPOTLIGHTS = ("delimit", "datamark", "encode")


class TrustLevel(str, enum.Enum):
    """Phase 2 of Algorithm 6.6: who may give instructions (chapter §6.5.2)."""

    TRUSTED = "trusted"
    SEMI_TRUSTED = "semi_trusted"
    UNTRUSTED = "untrusted"


DEFAULT_TRUST: Mapping[str, TrustLevel] = {
    "system": TrustLevel.TRUSTED,
    "policy": TrustLevel.TRUSTED,
    "developer": TrustLevel.TRUSTED,
    "task": TrustLevel.TRUSTED,
    "tools": TrustLevel.UNTRUSTED,
    "user": TrustLevel.SEMI_TRUSTED,
    "history": TrustLevel.SEMI_TRUSTED,
    "tool": TrustLevel.UNTRUSTED,
    "retrieval": TrustLevel.UNTRUSTED,
    "evidence": TrustLevel.UNTRUSTED,
    "memory": TrustLevel.UNTRUSTED,
}
"""Source type -> trust.  Tool schemas (``tools``) come from tool servers (MCP) and,
like tool results (``tool``), are untrusted.  Memories are summaries of earlier tool
and user text and are untrusted.  An unknown source type is untrusted."""


@dataclass(frozen=True)
class SourcePolicy:
    """What to do with one source type (chapter §6.9.3, phase 1).

    Attributes:
        action: ``"reject"`` (raise :class:`~tokenbox_core.errors.SecurityError`),
            ``"quarantine"`` (wrap in an ``UNTRUSTED_INPUT`` block the system
            tier declares inert) or ``"allow"`` (log and keep) when the score
            reaches ``threshold``.
        threshold: detection score at or above which ``action`` applies, 0..1.
        max_tokens: length limit for one input of this type (context dilution);
            longer inputs are cut to it, the cut recorded in the trace.
    """

    action: Action = "quarantine"
    threshold: float = 0.5
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ConfigError(f"SourcePolicy action must be one of {', '.join(_ACTIONS)}, got {self.action!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | float):
            raise ConfigError(f"SourcePolicy threshold must be a number in 0..1, got {self.threshold!r}")
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(
                f"SourcePolicy threshold must be in (0, 1], got {self.threshold!r}: 0 would flag every input"
            )
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ConfigError(f"SourcePolicy max_tokens must be a positive integer or None, got {self.max_tokens!r}")


def _default_sources() -> dict[str, SourcePolicy]:
    return {
        "user": SourcePolicy("quarantine"),
        "tool": SourcePolicy("quarantine"),
        "retrieval": SourcePolicy("quarantine"),
        "evidence": SourcePolicy("quarantine"),
        "memory": SourcePolicy("quarantine"),
        "history": SourcePolicy("quarantine"),
    }


@dataclass(frozen=True)
class DefensePolicy:
    """Defensive compilation settings (chapter §6.9; turn on with ``CompilerConfig(defense=...)``).

    Attributes:
        sources: per source type, a :class:`SourcePolicy`; types not listed use ``default``.
        default: the policy for source types not in ``sources``.
        detector: the :class:`~tokenbox_core.defense.InjectionDetector` (default heuristic).
        spotlight: ``"delimit"``, ``"datamark"`` or ``"encode"`` for untrusted blocks.
        datamark: the marker character interleaved between words by ``"datamark"``.
        secret: the deployment secret boundaries and canaries are derived from
            (HMAC-SHA256); when None, the ``TOKENBOX_DEFENSE_SECRET`` environment
            variable; when neither is set, a public key is used and the trace says
            the boundaries are predictable (or a random key, if ``deterministic``
            is False).
        deterministic: when False and no secret is configured, each compile
            draws a random key: unpredictable, but not reproducible.
        emission: Unicode normalisation of emitted untrusted text (NFC, NFKC, none).
        hierarchy: emit the §6.5.5 instruction-hierarchy statement in the system tier.
        canary: place a canary token in the system tier for :func:`check_output`.
        max_surface: reject a compile whose injection vulnerability surface
            (§6.9.4, in tokens) exceeds this; None disables the gate.
        trust: source type -> :class:`TrustLevel` overrides of :data:`DEFAULT_TRUST`.
        leak_ngram: word n-gram size :func:`check_output` uses for system-prompt leaks.
        leak_threshold: share of the system prompt's n-grams in an output that counts as a leak.
    """

    sources: Mapping[str, SourcePolicy] = field(default_factory=_default_sources)
    default: SourcePolicy = field(default_factory=SourcePolicy)
    detector: InjectionDetector = field(default_factory=HeuristicDetector)
    spotlight: Spotlight = "delimit"
    datamark: str = "ˆ"
    secret: str | bytes | None = field(default=None, repr=False)
    deterministic: bool = True
    emission: Emission = "NFC"
    hierarchy: bool = True
    canary: bool = True
    max_surface: float | None = None
    trust: Mapping[str, TrustLevel] = field(default_factory=dict)
    leak_ngram: int = 6
    leak_threshold: float = 0.2

    def __post_init__(self) -> None:
        for name, sp in self.sources.items():
            if not isinstance(sp, SourcePolicy):
                raise ConfigError(f"DefensePolicy sources[{name!r}] must be a SourcePolicy, got {sp!r}")
        if not isinstance(self.detector, InjectionDetector):
            raise ConfigError(f"DefensePolicy detector {self.detector!r} has no detect(text, source) method")
        if self.spotlight not in _SPOTLIGHTS:
            raise ConfigError(
                f"DefensePolicy spotlight must be one of {', '.join(_SPOTLIGHTS)}, got {self.spotlight!r}"
            )
        if (
            not isinstance(self.datamark, str)
            or len(self.datamark) != 1
            or self.datamark.isspace()
            or self.datamark.isdigit()
            or REMOVABLE.match(self.datamark)
        ):
            raise ConfigError(
                f"DefensePolicy datamark must be one visible character that is not a digit, got {self.datamark!r}"
            )
        if self.secret is not None and (not isinstance(self.secret, str | bytes) or len(self.secret) < 16):
            raise ConfigError("DefensePolicy secret must be a str or bytes of at least 16 characters")
        if self.emission not in ("NFC", "NFKC", "none"):
            raise ConfigError(f"DefensePolicy emission must be 'NFC', 'NFKC' or 'none', got {self.emission!r}")
        if self.max_surface is not None and (isinstance(self.max_surface, bool) or self.max_surface < 0):
            raise ConfigError(f"DefensePolicy max_surface must be >= 0 tokens or None, got {self.max_surface!r}")
        for name, level in self.trust.items():
            if not isinstance(level, TrustLevel):
                raise ConfigError(f"DefensePolicy trust[{name!r}] must be a TrustLevel, got {level!r}")
        if isinstance(self.leak_ngram, bool) or not isinstance(self.leak_ngram, int) or self.leak_ngram < 2:
            raise ConfigError(f"DefensePolicy leak_ngram must be an integer >= 2, got {self.leak_ngram!r}")
        if not 0.0 < self.leak_threshold <= 1.0:
            raise ConfigError(f"DefensePolicy leak_threshold must be in (0, 1], got {self.leak_threshold!r}")

    def source_policy(self, source: str) -> SourcePolicy:
        """The :class:`SourcePolicy` for ``source`` (``default`` when not listed)."""
        return self.sources.get(source, self.default)

    def begin(self, input_hash: str, counter: TokenCounter) -> DefenseSession:
        """A per-compile session of the defensive stages (called by ``ContextCompiler``)."""
        from tokenbox_core.defense._session import DefenseSession

        return DefenseSession(self, input_hash, counter)

    def trust_of(self, source: str) -> TrustLevel:
        """Phase 2: the trust level of a source type (unknown types are untrusted)."""
        return self.trust.get(source, DEFAULT_TRUST.get(source, TrustLevel.UNTRUSTED))
