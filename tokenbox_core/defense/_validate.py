"""Phase 4 of Algorithm 6.6 and the injection vulnerability surface (chapter §6.9.3-6.9.4).

:func:`finish` runs after the layout: it validates the compiled context
(boundaries intact, system policy byte-identical to its source, no
instruction above threshold left unquarantined in a data section, no
boundary string inside any content) and computes the §6.9.4 metric

    V = Σ_{s ∈ U} |s| · (1 − ι(s))

over the untrusted inputs U that were emitted, with |s| their emitted
tokens and ι(s) the isolation strength of their treatment:

=====================  ======================================================
treatment              ι(s)
=====================  ======================================================
none (defence off)     0.0
delimit                0.5  (HMAC boundaries + the hierarchy statement)
datamark               0.75
encode                 0.9
quarantined            at least 0.7 (labelled inert, whatever the mode)
no deployment secret   −0.25 (boundaries an attacker can predict)
=====================  ======================================================

``surface_ratio`` is V divided by the layout's total tokens.  A violated
check, or V above ``DefensePolicy.max_surface``, raises
:class:`~tokenbox_core.errors.SecurityError` listing every violation.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenbox_core._sections import Item
from tokenbox_core.defense._boundary import find_markers
from tokenbox_core.defense._policy import DefensePolicy, TrustLevel, security_log
from tokenbox_core.defense._spotlight import ISOLATION
from tokenbox_core.defense._trace import DefenseReport, InputEvent
from tokenbox_core.errors import SecurityError
from tokenbox_core.layout import Layout
from tokenbox_core.tokens import TokenCounter

__all__ = ["QUARANTINE_FLOOR", "finish", "isolation_strength", "surface"]

QUARANTINE_FLOOR = 0.7
_PREDICTABLE_PENALTY = 0.25


def isolation_strength(event: InputEvent, *, secret: bool) -> float:
    """ι(s) of one untrusted input's treatment (table in the module docstring)."""
    if not event.wrapped:
        return 0.0
    iso = ISOLATION[event.spotlight]
    if event.action == "quarantined":
        iso = max(iso, QUARANTINE_FLOOR)
    if not secret:
        iso -= _PREDICTABLE_PENALTY
    return max(0.0, iso)


def surface(entries: Iterable[tuple[int, float]]) -> float:
    """V = Σ tokens · (1 − ι) over (tokens, ι) pairs (chapter §6.9.4).

    >>> surface([(100, 0.0), (200, 0.5)])
    200.0
    """
    return float(sum(tokens * (1.0 - iso) for tokens, iso in entries))


def _kept_items(layout: Layout, section_id: str) -> dict[str, Item]:
    try:
        content = layout[section_id].content
    except KeyError:
        return {}
    return {} if isinstance(content, str) else {i.id: i for i in content}


def _kept_text(layout: Layout, section_id: str) -> str | None:
    try:
        laid = layout[section_id]
    except KeyError:
        return None
    return laid.text if laid.status != "dropped" and laid.text else None


def finish(report: DefenseReport, layout: Layout, policy: DefensePolicy, counter: TokenCounter) -> DefenseReport:
    """Phase 4: validate ``layout`` against ``report``, compute the metric, apply the gate."""
    violations: list[str] = []
    entries: list[tuple[int, float]] = []
    by_id = {e.id: e for e in report.events}
    for w in report.wrapped:
        e = w.event
        if w.kind == "text":
            body = _kept_text(layout, w.section_id)
            opening = _kept_text(layout, w.open_id or "")
            closing = _kept_text(layout, w.close_id or "")
            if opening != w.open or closing != w.close:
                violations.append(f"boundary of {e.id!r} is not intact (open/close marker missing or altered)")
            tokens = layout[w.section_id].final_tokens if body is not None else 0
        else:
            item = _kept_items(layout, w.section_id).get(e.id.split("/", 1)[1])
            body = None if item is None else item.content
            if body is not None and not (body.startswith(w.open + "\n") and body.endswith("\n" + w.close)):
                violations.append(f"boundary of {e.id!r} is not intact inside its item")
            if body is not None:
                body = body[len(w.open) + 1 : len(body) - len(w.close) - 1]
            tokens = counter.count(item.content) if item is not None else 0
        if body is not None and find_markers(body):
            violations.append(f"content of {e.id!r} holds a boundary marker: {find_markers(body)[0]!r}")
        if body is not None and e.score >= e.threshold and e.action not in ("quarantined", "allowed"):
            violations.append(f"{e.id!r} scored {e.score:.2f} >= {e.threshold:.2f} but is not quarantined")
        if e.trust == TrustLevel.UNTRUSTED.value and body is not None:
            entries.append((tokens, isolation_strength(e, secret=report.key.secret)))
    for event in report.events:
        if event.trust == TrustLevel.UNTRUSTED.value and not event.wrapped and event.action != "rejected":
            violations.append(f"untrusted input {event.id!r} was emitted without boundaries")
    for sid, source_text in report.trusted.items():
        emitted = _kept_text(layout, sid)
        if emitted is not None and emitted != source_text:
            violations.append(f"trusted section {sid!r} differs from its source (system policy not byte-identical)")
        if by_id.get(sid) is not None and emitted is not None and find_markers(emitted):
            violations.append(f"trusted section {sid!r} holds a boundary marker")
    if report.statement_id is not None and _kept_text(layout, report.statement_id) != report.statement:
        violations.append("the instruction-hierarchy statement is missing or altered")
    report.surface = round(surface(entries), 3)
    report.surface_ratio = round(report.surface / layout.total_tokens, 6) if layout.total_tokens else 0.0
    if policy.max_surface is not None and report.surface > policy.max_surface:
        violations.append(
            f"injection vulnerability surface {report.surface:,.1f} tokens exceeds max_surface "
            f"{policy.max_surface:,.1f}: quarantine or drop untrusted inputs, use spotlight='datamark' or "
            f"'encode', set a deployment secret, or raise the limit"
        )
    report.violations = violations
    if violations:
        security_log.error("defensive compilation failed validation: %s", "; ".join(violations))
        raise SecurityError(
            f"defensive compilation violated {len(violations)} invariant(s): " + "; ".join(violations),
            violations=violations,
        )
    return report
