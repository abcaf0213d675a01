"""Multi-modal context assembly (chapter §6.12.4, Algorithm 6.9) on the core Token Box.

1. Cost each input by its modality (images by the model's rule from their
   header, audio per second, structured data in its cheapest rendering).
2. Substitute where it saves tokens without losing utility (OCR text for an
   image, a transcript for audio): ``substitute.tokens < input.tokens and
   substitute.utility >= input.utility × fidelity``; the substitute links back
   with a typed :class:`CrossModalReference`.
3. Compress per modality to its allocation (images downscaled to fit,
   tables sampled with a note of the full size).
4. Lay out: every input is an item of its modality's section, costing what
   it will cost when sent (vouched size); the sections compete for one budget
   in a single Token Box layout, lowest utility lost first.
5. Validate: the messages sent, counted the way providers count them, fit
   the budget; references point at evidence that is present.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Item, Section
from tokenbox_core.errors import MediaError
from tokenbox_core.media._costs import audio_tokens, image_tokens, resolve_profile
from tokenbox_core.media._image_lenses import choose_ocr, downscale_to_fit
from tokenbox_core.media._references import CrossModalReference, Modality, evidence_label, validate_references
from tokenbox_core.media._sizes import image_size, wav_seconds
from tokenbox_core.tokens import count_message_tokens, get_counter

__all__ = ["AssembledInput", "ModalityInput", "MultiModalContext", "assemble_multimodal"]

Substitute = str | Callable[[Any], "str | tuple[str, float]"]
Action = Literal["kept", "substituted", "downscaled", "rendered", "sampled", "dropped"]


@dataclass(frozen=True)
class ModalityInput:
    """One non-text (or text) input of a multi-modal turn (chapter §6.12.2).

    ``content``: image bytes / base64 / data URL, WAV audio (or give
    ``seconds``), a JSON-like value for ``structured``, or a string.
    ``utility``: the caller's estimate for this task (§6.12.2).
    ``substitute``: OCR text / transcript, or a callable returning it (or
    ``(text, utility)``); used when cheaper at the configured fidelity.
    """

    id: str
    modality: Modality
    content: Any
    caption: str = ""
    utility: float = 1.0
    substitute: Substitute | None = None
    seconds: float | None = None
    detail: str = "high"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise MediaError(f"a modality input needs a non-empty id, got {self.id!r}")
        if self.modality not in ("image", "audio", "structured", "text"):
            raise MediaError(f"modality must be image, audio, structured or text, got {self.modality!r}")
        if not 0.0 <= float(self.utility) <= 1.0:
            raise MediaError(f"utility of {self.id!r} must be in [0, 1], got {self.utility}")


@dataclass(frozen=True)
class AssembledInput:
    """What Algorithm 6.9 did with one input, and what it costs now."""

    input: ModalityInput
    action: Action
    tokens: int
    text: str
    part: Mapping[str, Any] | None
    reference: CrossModalReference | None
    reason: str


@dataclass(frozen=True)
class MultiModalContext:
    """The assembled turn: kept inputs in order, references, the layout, and the messages to send."""

    task: str
    inputs: tuple[AssembledInput, ...]
    references: tuple[CrossModalReference, ...]
    messages: tuple[Mapping[str, Any], ...]
    total_tokens: int
    budget: int
    layout: Any = field(repr=False, default=None)

    @property
    def kept(self) -> tuple[AssembledInput, ...]:
        return tuple(i for i in self.inputs if i.action != "dropped")


def _substitute_text(item: ModalityInput) -> tuple[str, float] | None:
    if item.substitute is None:
        return None
    value = item.substitute(item.content) if callable(item.substitute) else item.substitute
    if isinstance(value, tuple):
        return str(value[0]), float(value[1])
    return str(value), 1.0


def _media_cost(item: ModalityInput, profile: Any) -> tuple[int, Mapping[str, Any] | None]:
    if item.modality == "image":
        w, h = image_size(item.content)
        content = item.content if isinstance(item.content, str) else None
        if content is None or not content.startswith("data:"):
            raw = item.content if isinstance(item.content, bytes) else base64.b64decode(item.content)
            content = "data:image/png;base64," + base64.b64encode(raw).decode("ascii")
        part = {"type": "image_url", "image_url": {"url": content, "detail": item.detail}}
        return image_tokens(w, h, model=profile, detail=item.detail), part
    if item.modality == "audio":
        seconds = item.seconds if item.seconds is not None else wav_seconds(item.content)
        if seconds is None:
            raise MediaError(f"audio input {item.id!r}: give seconds= (only WAV headers are read)")
        data = item.content if isinstance(item.content, str) else base64.b64encode(item.content).decode("ascii")
        part = {"type": "input_audio", "input_audio": {"data": data, "format": "wav", "seconds": seconds}}
        return audio_tokens(seconds, model=profile), part
    return 0, None


def _substituted(item: ModalityInput, text: str, utility: float, counter: Any, reason: str) -> AssembledInput:
    """The input replaced by its text (OCR for an image, a transcript for audio), with the typed reference."""
    method = "ocr" if item.modality == "image" else "transcript"
    ref = CrossModalReference(item.id, f"{item.id}_text", item.modality, "text", method, utility)  # type: ignore[arg-type]
    marker = ref.marker(text)
    return AssembledInput(item, "substituted", counter.count(marker), marker, None, ref, reason)


def _plan(
    item: ModalityInput,
    profile: Any,
    counter: Any,
    fidelity: float,
    allocation: int | None,
) -> AssembledInput:
    """Substitute, compress and render one input (steps 1-3)."""
    label = evidence_label(item.modality, item.id)
    if item.modality == "text":
        text = f"[{label}: {item.content}]"
        return AssembledInput(item, "kept", counter.count(text), text, None, None, "text")
    if item.modality == "structured":
        return _plan_structured(item, counter, allocation)
    pointer = f"[{label}: {item.caption}]" if item.caption else f"[{label}]"
    substitute = _substitute_text(item)
    try:
        cost, part = _media_cost(item, profile)
    except MediaError:  # the model takes no input of this kind: its text stands in, when there is one
        if substitute is None:
            raise
        reason = f"{profile.name} takes no {item.modality} input: sent its text instead"
        return _substituted(item, *substitute, counter, reason)
    if substitute is not None:
        text, utility = substitute
        choice = choose_ocr(
            cost,
            text,
            counter,
            image_utility=item.utility,
            text_utility=utility,
            fidelity=fidelity,
            modality=item.modality,
        )
        if choice.use_text:
            return _substituted(item, text, utility, counter, choice.reason)
    if item.modality == "image" and allocation is not None and cost > allocation:
        image = downscale_to_fit(item.content, allocation, model=profile, detail=item.detail)
        reason = f"downscaled {image.original_size} -> {(image.width, image.height)} to fit {allocation:,}"
        return AssembledInput(
            item, "downscaled", image.tokens + counter.count(pointer), pointer, image.content_part(), None, reason
        )
    reason = f"{cost:,} tokens by {profile.name}'s rule"
    return AssembledInput(item, "kept", cost + counter.count(pointer), pointer, part, None, reason)


def _plan_structured(item: ModalityInput, counter: Any, allocation: int | None) -> AssembledInput:
    """Structured data in its cheapest lossless rendering, sampled with a note when over its allocation."""
    from tokenbox_core.structured import cheapest, fit_table

    label = evidence_label(item.modality, item.id)
    head = f"[{label}: {item.caption}]" if item.caption else f"[{label}]"
    best = cheapest(item.content, counter)
    if allocation is not None and best.tokens > allocation and isinstance(item.content, list):
        table = fit_table(item.content, max(1, allocation - 20), counter, source=item.caption or item.id)
        text = f"{head}\n{table.text}"
        return AssembledInput(item, "sampled", counter.count(text), text, None, None, table.note)
    text = f"{head}\n{best.text}"
    reason = f"rendered as {best.format} ({best.ratio():.2f}x pretty JSON)"
    return AssembledInput(item, "rendered", counter.count(text), text, None, None, reason)


def assemble_multimodal(
    task: str,
    inputs: Sequence[ModalityInput],
    budget: int | ContextBudget,
    *,
    model: Any = "gpt-4o",
    fidelity: float = 0.9,
    allocations: Mapping[str, int] | None = None,
) -> MultiModalContext:
    """Algorithm 6.9: cost, substitute, compress, lay out and validate a multi-modal turn.

    ``allocations`` caps each modality's per-input cost (``{"image": 600}``);
    the budget's ``output_reserve`` is the generation reserve.  The task is
    critical; inputs are evicted lowest utility first when they do not fit.
    """
    from tokenbox_core.box import TokenBox

    profile = resolve_profile(model)
    counter = get_counter(profile.name) if not profile.is_fallback else get_counter(model)
    budget = ContextBudget.coerce(budget)
    ids = [i.id for i in inputs]
    if len(set(ids)) != len(ids):
        raise MediaError(f"modality input ids must be unique, got {ids}")
    planned = [_plan(i, profile, counter, fidelity, (allocations or {}).get(i.modality)) for i in inputs]
    empty_turn = [{"role": "user", "content": [{"type": "text", "text": task}]}]
    overhead = count_message_tokens(empty_turn, counter)
    limit = budget.capacity
    if overhead > limit:
        raise MediaError(f"the task alone costs {overhead:,} tokens but the budget leaves {limit:,}")
    sections = [
        Section(
            "inputs",
            [
                Item(p.input.id, p.text, score=p.input.utility, tokens=p.tokens + 1, kind=p.input.modality)
                for p in planned
            ],
            shrink=1,
            strategy=("drop_lowest_score",),
        )
    ]
    layout = TokenBox(limit - overhead, counter=counter).layout(sections)
    removed = {r.id for r in layout.removed}
    final = tuple(
        p if p.input.id not in removed else AssembledInput(p.input, "dropped", 0, "", None, None, "did not fit")
        for p in planned
    )
    content: list[dict[str, Any]] = [{"type": "text", "text": task}]
    for p in final:
        if p.action == "dropped":
            continue
        content.append({"type": "text", "text": p.text})
        if p.part is not None:
            content.append(dict(p.part))
    messages = ({"role": "user", "content": content},)
    total = count_message_tokens(list(messages), counter)
    references = tuple(p.reference for p in final if p.reference is not None)
    present = {p.input.id: p.input.modality for p in final if p.action != "dropped" and p.reference is None}
    present.update({r.source: r.source_modality for r in references})  # the source of a substitute is cited
    present.update({r.target: "text" for r in references})
    validate_references(references, present)
    if total > limit:
        raise MediaError(f"assembled turn costs {total:,} tokens, over the {limit:,} available (a TokenBox bug)")
    return MultiModalContext(task, final, references, messages, total, limit, layout)
