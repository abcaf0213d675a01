"""From validated spec data to a :class:`LayoutSpec`: the budget, the Sections and their Items."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Item, Section
from tokenbox_core.box import TokenBox
from tokenbox_core.errors import SpecError, TokenBoxError
from tokenbox_core.layout import Layout
from tokenbox_core.spec._problems import place, type_word

if TYPE_CHECKING:
    from tokenbox_core.spec._models import SectionSpec, SpecModel

__all__ = ["DEFAULT_COUNTER", "LayoutSpec", "parse_spec"]

DEFAULT_COUNTER = "o200k_base"


@dataclass(frozen=True)
class LayoutSpec:
    """A parsed spec: everything a :class:`~tokenbox_core.box.TokenBox` layout needs."""

    sections: tuple[Section, ...]
    budget: ContextBudget
    counter: str = DEFAULT_COUNTER
    separator: str = "\n\n"
    mode: str = "text"
    name: str = ""

    def box(self) -> TokenBox:
        return TokenBox(self.budget, counter=self.counter, separator=self.separator, mode=self.mode)  # type: ignore[arg-type]

    def layout(self) -> Layout:
        """Lay the sections out (may raise ``ContextCriticalOverflow``)."""
        return self.box().layout(self.sections)


def _validated(data: Mapping[str, Any], source: str) -> SpecModel:
    from pydantic import ValidationError

    from tokenbox_core.spec._models import SpecModel
    from tokenbox_core.spec._problems import describe_error

    try:
        return SpecModel.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise SpecError(describe_error(first, data, source)) from None


def _budget(model: SpecModel, source: str) -> ContextBudget:
    budget = model.budget
    try:
        if isinstance(budget, int):
            return ContextBudget(max_tokens=budget)
        return ContextBudget(**budget.model_dump(exclude_unset=True))
    except TokenBoxError as exc:
        raise SpecError(f"{source}: budget: {exc}") from None


def _section(spec: SectionSpec, where: str) -> Section:
    kwargs = spec.model_dump(exclude_unset=True, exclude={"items"})
    if spec.items is not None:
        items = []
        for j, item in enumerate(spec.items):
            fields = item.model_dump(exclude_unset=True)
            if "tags" in fields:
                fields["tags"] = tuple(fields["tags"])
            try:
                items.append(Item(**fields))
            except TokenBoxError as exc:
                raise SpecError(f"{where}.items[{j}]: {exc}") from None
        kwargs["content"] = items
    if isinstance(kwargs.get("strategy"), str):
        kwargs["strategy"] = (kwargs["strategy"],)
    elif kwargs.get("strategy") is not None:
        kwargs["strategy"] = tuple(kwargs["strategy"])
    try:
        return Section(**kwargs)
    except TokenBoxError as exc:
        raise SpecError(f"{where}: {str(exc).removeprefix(f'section {spec.id!r}: ')}") from None


def parse_spec(data: Any, *, source: str = "<spec>") -> LayoutSpec:
    """Validate parsed JSON/TOML data and build the spec; every problem is a :class:`SpecError`."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: a spec must be an object with 'budget' and 'sections', got {type_word(data)}")
    if not data:
        raise SpecError(f"{source}: the spec is empty; it needs 'budget' and 'sections'")
    model = _validated(data, source)
    budget = _budget(model, source)
    built = [_section(s, place(("sections", i), data, source)) for i, s in enumerate(model.sections)]
    seen: set[str] = set()
    for i, section in enumerate(built):
        if section.id in seen:
            raise SpecError(f"{source}: sections[{i}]: duplicate section id {section.id!r}")
        seen.add(section.id)
    return LayoutSpec(
        sections=tuple(built),
        budget=budget,
        counter=model.counter,
        separator=model.separator,
        mode=model.mode,
        name=model.name,
    )
