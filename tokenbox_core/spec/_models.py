"""The spec-file format as pydantic models: the structure, the types and the JSON Schema.

These models check shape and types only (strictly: ``1`` is not ``true``,
``"5"`` is not ``5``); what a value *means* — lens names, weights against
sizes, duplicate ids, the budget rules — is checked by
:class:`~tokenbox_core._sections.Section`, :class:`~tokenbox_core._sections.Item`
and :class:`~tokenbox_core._budget.ContextBudget` when the spec is built, so a
spec and a direct ``TokenBox`` call obey one set of rules.

Importing this module imports pydantic; :mod:`tokenbox_core.spec` does so only
when a spec is parsed or the schema is asked for, so ``import tokenbox_core``
stays light.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["BudgetSpec", "ItemSpec", "SectionSpec", "SpecModel", "spec_json_schema"]


def _integral(value: Any) -> Any:
    """``5.0`` is the count 5 (JSON and TOML writers emit integral floats); anything else is left to the type."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _timestamp(value: Any) -> Any:
    """ISO 8601 text (a trailing ``Z`` included) or TOML's native datetime."""
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise PydanticCustomError(
                "spec", "timestamp must be ISO 8601 (2024-05-01T12:00:00Z), got {value!r}", {"value": value}
            ) from None
    raise PydanticCustomError("spec", "timestamp must be an ISO 8601 string, got {value!r}", {"value": value})


Count = Annotated[int, Field(ge=0), BeforeValidator(_integral)]
"""A non-negative whole number of counter units."""
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]


class ItemSpec(BaseModel):
    """One element of a list section (see ``tokenbox_core._sections.Item``)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="Item")

    id: str = Field(min_length=1, description="Unique within its section.")
    content: str = Field("", description="The item's text.")
    role: str | None = Field(None, description="Chat role when the item is a message.")
    kind: str | None = Field(None, description="What it is: Message, Document, Memory, ToolOutput, or your own.")
    score: float | None = Field(None, allow_inf_nan=False, description="Relevance; evidence loses lowest first.")
    priority: int | None = Field(None, description="Within the section, a lower priority is evicted first.")
    group: str | None = Field(None, description="Items sharing a group (a tool call and its results) are atomic.")
    pinned: bool = Field(False, description="Evicted only after every unpinned item of the section.")
    tokens: Count | None = Field(None, description="A size the caller vouches for, used instead of counting.")
    tags: list[str] = Field(default_factory=list, description="Labels for scorers.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free data for scorers and the report.")
    source: str | None = Field(None, description="Where the item came from (a URI), for scorers and provenance.")
    timestamp: Timestamp = Field(None, description="ISO 8601, e.g. 2024-05-01T12:00:00Z; used by recency scorers.")


class SectionSpec(BaseModel):
    """A typed block with layout constraints (see ``tokenbox_core._sections.Section``)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="Section")

    id: str = Field(min_length=1, description="Unique within the spec.")
    content: str | None = Field(None, description="The section's text (or give 'items').")
    items: list[ItemSpec] | None = Field(None, description="A list section's items (or give 'content').")
    priority: int = Field(0, description="Removal order: lower is lost first; ties: higher shrink, then order.")
    shrink: Weight = Field(0.0, description="Compression weight; 0 (default) makes the section critical.")
    grow: Weight = Field(0.0, description="Expansion weight: free space is shared in proportion to grow.")
    min_tokens: Count = Field(0, description="Guaranteed size once kept.")
    max_tokens: Count | None = Field(None, description="A cap: content beyond it is cut even when there is room.")
    basis: Count | None = Field(None, description="The size claimed before expansion; default the whole content.")
    strategy: str | list[str] | None = Field(None, description="Lens name(s) applied before truncation, in order.")
    keep: Literal["head", "tail", "middle"] = Field("head", description="Which part of text survives a cut.")
    role: str | None = Field(None, description="Chat role of a text section (messages mode).")
    eviction: Literal["oldest", "newest", "lowest_score"] = Field(
        "oldest", description="The order in which a list section loses whole items."
    )
    partial: bool = Field(False, description="Allow cutting the boundary item of a list instead of removing it.")
    omission_marker: bool | str = Field(
        False, description="Leave a marker for removed items: true, or a template using {count} and {ids}."
    )
    item_separator: str = Field("\n", description="Joins the items of a list section.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free data carried into the report.")

    @model_validator(mode="after")
    def _content_or_items(self) -> SectionSpec:
        if self.content is not None and self.items is not None:
            raise PydanticCustomError("spec", "give either 'content' (text) or 'items' (a list), not both")
        return self


class BudgetSpec(BaseModel):
    """The object form of the budget (see ``tokenbox_core._budget.ContextBudget``)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="Budget")

    max_tokens: Count = Field(description="The model's window (or the share of it this layout may use).")
    target_tokens: Count | None = Field(None, description="A soft target below max_tokens; default max_tokens.")
    output_reserve: Count = Field(0, description="Tokens kept free for the model's answer.")
    reserved_slots: dict[str, Count] = Field(
        default_factory=dict, description="Per item kind: tokens set aside and the items of that kind guaranteed."
    )
    estimation_safety_margin_percent: float = Field(
        0.0, ge=0, le=100, allow_inf_nan=False, description="Shrinks the effective budget by this percentage."
    )


def _budget_form(value: Any) -> str:
    return "object" if isinstance(value, dict) else "tokens"


class SpecModel(BaseModel):
    """A layout spec: sections, a budget and a counter (``tokenbox layout SPEC``)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        title="TokenBox layout spec",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    schema_uri: str | None = Field(
        None, alias="$schema", description="The JSON Schema this file follows (for editors; ignored)."
    )
    name: str = Field("", description="A label (batch reports use it).")
    description: str = Field("", description="Free text for people reading the spec.")
    budget: Annotated[
        Annotated[Count, Tag("tokens")] | Annotated[BudgetSpec, Tag("object")],
        Discriminator(_budget_form),
    ] = Field(description="max_tokens as an integer, or an object with the ContextBudget fields.")
    counter: str = Field(
        "o200k_base",
        min_length=1,
        description="Encoding, model, 'bytes', 'approximate' or 'whitespace'; unknown models count with cl100k_base.",
    )
    separator: str = Field("\n\n", description="Joins sections in text mode.")
    mode: Literal["text", "messages"] = Field("text", description="'messages' lays out chat messages with overhead.")
    sections: list[SectionSpec] = Field(min_length=1, description="At least one section, in output order.")


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema of the spec format (``tokenbox schema`` prints it), for editors and validators."""
    return SpecModel.model_json_schema(by_alias=True)
