"""``TokenBoxPromptHelper``: a ``PromptHelper`` whose ``truncate`` and ``repack`` use the Token Box.

LlamaIndex's ``PromptHelper.truncate`` gives every chunk the same share,
``available // n - padding`` tokens, and cuts each to it: with many chunks
every chunk shrinks to a few tokens, and past ``available / (padding + 1)``
chunks it raises ``ValueError: Chunk size -1 is not positive``.  Here the
chunks are one list section laid out into what the prompt leaves free:

- chunks arrive best first (retrieval order) and are kept whole in that order;
- the chunk at the boundary is cut to fill the budget, the rest are dropped and
  listed in :attr:`TokenBoxPromptHelper.last_layout`; a cut below
  ``min_fragment_tokens`` (default 16) is left out too and listed in
  :attr:`TokenBoxPromptHelper.last_fragments`;
- a short chunk takes only what it needs, leaving the rest to the others.

``repack`` fills each pack with whole chunks in order, cutting only the chunk
at a pack boundary and carrying its remainder into the next pack; nothing is
dropped and no text is repeated (``chunk_overlap_ratio`` is not used).
``chunk_size_limit`` caps the size of each pack.

A cut ends at a ``separator``, as LlamaIndex's splitter does, so no word is
split.  With the default separator, a space, any whitespace is a word boundary:
a cut that ends in whitespace, or just before it, keeps its last word.  A cut
with no boundary in it (one long word) stays a token-boundary cut.  The
boundary rule is part of the counter the core cuts with, so the core chooses
the longest cut that ends on a boundary and :attr:`~TokenBoxPromptHelper.last_layout`
reports exactly the text returned.

The window must hold ``num_output`` and ``padding`` with room to spare, else
``BudgetError`` (a ``ValueError``, as ``PromptHelper`` raises) names the
numbers; a prompt that does not fit beside them raises :class:`PromptOverflow`,
which is both a ``ContextCriticalOverflow`` and a ``BudgetError``.

Plug it in where LlamaIndex takes a ``prompt_helper``::

    helper = TokenBoxPromptHelper.from_llm_metadata(llm.metadata)
    synth = get_response_synthesizer(llm=llm, response_mode="compact", prompt_helper=helper)
    engine = index.as_query_engine(llm=llm, response_synthesizer=synth)
    # or for every component at once:
    Settings.prompt_helper = helper

>>> from llama_index.core.prompts import PromptTemplate
>>> helper = TokenBoxPromptHelper(context_window=63, num_output=10, counter="whitespace", min_fragment_tokens=0)
>>> prompt = PromptTemplate("Answer from the context.\\n{context_str}\\nQ: {query_str}")
>>> chunks = [f"chunk {i} " + "word " * 8 for i in range(10)]
>>> kept = helper.truncate(prompt, chunks)
>>> [c.split()[1] for c in kept], len(kept[-1].split())
(['0', '1', '2', '3', '4'], 3)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.constants import DEFAULT_CONTEXT_WINDOW, DEFAULT_NUM_OUTPUTS
from llama_index.core.indices.prompt_helper import DEFAULT_CHUNK_OVERLAP_RATIO, DEFAULT_PADDING, PromptHelper
from llama_index.core.llms.llm import LLM
from llama_index.core.llms.structured_llm import StructuredLLM
from llama_index.core.prompts import BasePromptTemplate, ChatPromptTemplate, SelectorPromptTemplate
from llama_index.core.prompts.prompt_utils import get_empty_prompt_messages, get_empty_prompt_txt

from tokenbox_core import (
    BudgetError,
    ContextBudget,
    ContextCriticalOverflow,
    Item,
    Layout,
    Section,
    TokenBox,
    TokenCounter,
)
from tokenbox_core.arguments import check_arguments
from tokenbox_core.layout import RemovedItem
from tokenbox_core.tokens import Keep, canonical_json, count_message_tokens
from tokenbox_llamaindex._counting import resolve_counter
from tokenbox_llamaindex._events import emit_layout
from tokenbox_llamaindex._messages import message_role

if TYPE_CHECKING:
    from llama_index.core.tools import BaseTool

__all__ = ["PromptOverflow", "TokenBoxPromptHelper"]

DEFAULT_MIN_FRAGMENT_TOKENS = 16
"""The smallest cut of a boundary chunk ``truncate`` sends (issue 10 item 24): a few tokens of a chunk are noise."""

TRUNCATE_SEPARATOR = "\n"
"""How callers join truncated chunks (``SimpleSummarize``, tree indices)."""
REPACK_SEPARATOR = "\n\n"
"""How ``PromptHelper.repack`` joins chunks into a pack."""


class TokenBoxPromptHelper(PromptHelper):
    """``PromptHelper`` with Token Box ``truncate`` and ``repack`` (see the module docstring).

    The prompt template (with the LLM's system prompt and tool schemas) is a
    critical section.  ``padding`` is reserved once, not once per chunk.  When
    ``num_output + padding`` fills the window, ``BudgetError`` names them; when
    the prompt does not fit beside them, :class:`PromptOverflow` (a
    ``ContextCriticalOverflow`` and a ``BudgetError``) does.  Both are
    ``ValueError``, as ``PromptHelper``'s errors are.
    """

    counter: Any = Field(
        default=None,
        exclude=True,
        description=(
            "How to count: a TokenBox counter name, a TokenCounter or a LlamaIndex tokenizer callable. "
            "None: the tokenizer argument, else Settings.tokenizer if set, else the model's encoding."
        ),
    )
    model_name: str | None = Field(
        default=None, description="Model whose encoding counts when nothing else names a tokenizer."
    )
    min_fragment_tokens: int = Field(
        default=DEFAULT_MIN_FRAGMENT_TOKENS,
        ge=0,
        description=(
            "truncate: a boundary chunk cut below this many tokens is left out (and listed in last_fragments) "
            "rather than sent as a useless fragment; 0 keeps any cut."
        ),
    )

    _last_layouts: tuple[Layout, ...] = PrivateAttr(default=())
    _last_fragments: tuple[RemovedItem, ...] = PrivateAttr(default=())

    def __init__(
        self,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        num_output: int = DEFAULT_NUM_OUTPUTS,
        chunk_overlap_ratio: float = DEFAULT_CHUNK_OVERLAP_RATIO,
        chunk_size_limit: int | None = None,
        tokenizer: Callable[[str], list[Any]] | None = None,
        separator: str = " ",
        *,
        counter: Any = None,
        model_name: str | None = None,
        min_fragment_tokens: int = DEFAULT_MIN_FRAGMENT_TOKENS,
        **unknown: Any,
    ) -> None:
        if unknown:
            names = [
                p for p in inspect.signature(TokenBoxPromptHelper.__init__).parameters if p not in ("self", "unknown")
            ]
            check_arguments("TokenBoxPromptHelper", sorted(unknown), names, budget="context_window")
        super().__init__(
            context_window=context_window,
            num_output=num_output,
            chunk_overlap_ratio=chunk_overlap_ratio,
            chunk_size_limit=chunk_size_limit,
            tokenizer=tokenizer,
            separator=separator,
        )
        self.counter = counter if counter is not None else tokenizer
        self.model_name = model_name
        if isinstance(min_fragment_tokens, bool) or not isinstance(min_fragment_tokens, int) or min_fragment_tokens < 0:
            raise BudgetError(f"min_fragment_tokens must be an int >= 0, got {min_fragment_tokens!r}")
        self.min_fragment_tokens = min_fragment_tokens

    @classmethod
    def from_llm_metadata(
        cls,
        llm_metadata: LLMMetadata,
        chunk_overlap_ratio: float = DEFAULT_CHUNK_OVERLAP_RATIO,
        chunk_size_limit: int | None = None,
        tokenizer: Callable[[str], list[Any]] | None = None,
        separator: str = " ",
        *,
        counter: Any = None,
    ) -> TokenBoxPromptHelper:
        """Window, output size and model name from an LLM's metadata."""
        num_output = DEFAULT_NUM_OUTPUTS if llm_metadata.num_output == -1 else llm_metadata.num_output
        return cls(
            context_window=llm_metadata.context_window,
            num_output=num_output,
            chunk_overlap_ratio=chunk_overlap_ratio,
            chunk_size_limit=chunk_size_limit,
            tokenizer=tokenizer,
            separator=separator,
            counter=counter,
            model_name=llm_metadata.model_name,
        )

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxPromptHelper"

    @property
    def last_layout(self) -> Layout | None:
        """The layout of the last ``truncate`` (or of the last pack of the last ``repack``).

        A convenience for single-threaded use: concurrent calls overwrite it.
        Each layout is also sent to LlamaIndex's instrumentation dispatcher
        (:class:`~tokenbox_llamaindex._events.TokenBoxLayoutEvent`)."""
        return self._last_layouts[-1] if self._last_layouts else None

    @property
    def last_fragments(self) -> tuple[RemovedItem, ...]:
        """Boundary chunks the last ``truncate`` left out because their cut was below ``min_fragment_tokens``
        (``reason="fragment"``, with the tokens the cut would have had); the layout reports them as truncated."""
        return self._last_fragments

    @property
    def last_layouts(self) -> tuple[Layout, ...]:
        """Every layout of the last call: one for ``truncate``, one per pack for ``repack``."""
        return self._last_layouts

    def resolve_counter(self, llm: LLM | None = None) -> TokenCounter:
        """The counter used now (``counter``/``tokenizer``, else ``Settings.tokenizer``, else the model's encoding)."""
        model_name = self.model_name
        if model_name is None and llm is not None:
            model_name = llm.metadata.model_name
        return resolve_counter(self.counter, model_name=model_name)

    # ------------------------------------------------------------------ prompt

    def _prompt_section(
        self,
        prompt: BasePromptTemplate,
        counter: TokenCounter,
        llm: LLM | None,
        tools: list[BaseTool] | None,
    ) -> tuple[Section, int]:
        """The prompt as a critical section, and the chat-format tokens its text does not show."""
        tools = self._get_tools_from_llm(llm=llm, tools=list(tools or []))
        if isinstance(prompt, SelectorPromptTemplate):
            prompt = prompt.select(llm=llm)
        parts: list[str] = []
        chat_overhead = 0
        if isinstance(prompt, ChatPromptTemplate):
            messages = [
                {"role": message_role(m), "content": m.content or ""} for m in get_empty_prompt_messages(prompt)
            ]
            parts.extend(m["content"] for m in messages)
            chat_overhead = count_message_tokens(messages, counter) - sum(counter.count(p) for p in parts)
        else:
            parts.append(get_empty_prompt_txt(prompt))
        system_llm = llm.llm if isinstance(llm, StructuredLLM) else llm
        if system_llm is not None and system_llm.system_prompt:
            parts.append(system_llm.system_prompt)
        parts.extend(canonical_json(tool.metadata.to_openai_tool()) for tool in tools)
        text = "\n".join(p for p in parts if p)
        return Section("prompt", text), max(0, chat_overhead)

    def _box(self, counter: TokenCounter, padding: int, chat_overhead: int) -> TokenBox:
        reserved = {"padding": padding, "chat_format": chat_overhead}
        budget = ContextBudget(
            max_tokens=self.context_window,
            output_reserve=self.num_output,
            reserved_slots={k: v for k, v in reserved.items() if v},
        )
        return TokenBox(budget, counter=_SeparatorCuts(counter, self.separator), separator="\n")

    def _check_reserves(self, prompt: Section, chat_overhead: int, counter: TokenCounter, padding: int) -> None:
        """Fail early, with the cause, when ``num_output`` and ``padding`` leave the window no room at all."""
        reserved = self.num_output + padding
        if reserved < self.context_window:
            return
        assert isinstance(prompt.content, str)
        prompt_tokens = counter.count(prompt.content) + chat_overhead
        raise BudgetError(
            f"context_window ({self.context_window:,}) leaves no room for the prompt ({prompt_tokens:,} tokens) or "
            f"any chunk: num_output ({self.num_output:,}) + padding ({padding:,}) = {reserved:,} tokens. Raise "
            f"context_window or lower num_output; the padding comes from the caller (the refine and compact "
            f"synthesizers pad by their response_padding_size, 500 by default)"
        )

    def _layout(self, box: TokenBox, prompt: Section, chunks: Section, padding: int, chat_overhead: int) -> Layout:
        """One core layout; a prompt that does not fit becomes :class:`PromptOverflow` with the helper's numbers."""
        try:
            return box.layout([prompt, chunks])
        except ContextCriticalOverflow as exc:  # the prompt is the only critical section
            room = self.context_window - self.num_output - padding
            needed = exc.required + chat_overhead
            raise PromptOverflow(
                exc.budget,
                exc.required,
                exc.section_ids,
                f"the prompt needs {needed:,} tokens but context_window ({self.context_window:,}) - num_output "
                f"({self.num_output:,}) - padding ({padding:,}) leaves {room:,} (over by {needed - room:,}); critical "
                f"sections: 'prompt' (the template with the LLM's system prompt, tool schemas and chat format). "
                f"Raise context_window, lower num_output or shorten the prompt",
            ) from exc

    # ------------------------------------------------------------------ truncate / repack

    def truncate(
        self,
        prompt: BasePromptTemplate,
        text_chunks: Sequence[str],
        padding: int = DEFAULT_PADDING,
        llm: LLM | None = None,
        tools: list[BaseTool] | None = None,
    ) -> list[str]:
        """The chunks that fit beside the prompt: best first kept whole, the boundary one cut, the rest dropped."""
        self._last_fragments = ()
        if not text_chunks:
            self._last_layouts = ()
            return []
        counter = self.resolve_counter(llm)
        prompt_section, chat_overhead = self._prompt_section(prompt, counter, llm, tools)
        self._check_reserves(prompt_section, chat_overhead, counter, padding)
        items = [Item(id=f"chunk-{i}", content=chunk, kind="Document") for i, chunk in enumerate(text_chunks)]
        chunks = Section(
            "chunks",
            items,
            shrink=1.0,
            eviction="lowest_score",
            partial=True,
            item_separator=TRUNCATE_SEPARATOR,
        )
        layout = self._layout(
            self._box(counter, padding, chat_overhead), prompt_section, chunks, padding, chat_overhead
        )
        self._last_layouts = (layout,)
        emit_layout("TokenBoxPromptHelper", "truncate", layout)
        # the boundary chunk's cut already ends on a separator (_SeparatorCuts): what the layout counted is returned
        kept = [item for item in layout["chunks"].content if isinstance(item, Item)]
        if kept and self.min_fragment_tokens:
            last = kept[-1]
            original = text_chunks[int(last.id.split("-")[1])]
            size = counter.count(last.content)
            if last.content != original and size < self.min_fragment_tokens:  # a cut too short to be of use
                self._last_fragments = (RemovedItem(id=last.id, section="chunks", reason="fragment", tokens=size),)
                kept.pop()
        return [item.content for item in kept]

    def repack(
        self,
        prompt: BasePromptTemplate,
        text_chunks: Sequence[str],
        padding: int = DEFAULT_PADDING,
        llm: LLM | None = None,
        tools: list[BaseTool] | None = None,
    ) -> list[str]:
        """Pack the chunks, in order, into as few prompts as fit; only chunks at a pack boundary are split."""
        remaining = [chunk.strip() for chunk in text_chunks if chunk.strip()]
        if not remaining:
            self._last_layouts = ()
            return []
        counter = self.resolve_counter(llm)
        prompt_section, chat_overhead = self._prompt_section(prompt, counter, llm, tools)
        self._check_reserves(prompt_section, chat_overhead, counter, padding)
        box = self._box(counter, padding, chat_overhead)
        packs: list[str] = []
        layouts: list[Layout] = []
        serial = 0
        while remaining:
            items = [
                Item(id=f"chunk-{serial + i}", content=chunk, kind="Document") for i, chunk in enumerate(remaining)
            ]
            serial += len(items)
            chunks = Section(
                "chunks",
                items,
                shrink=1.0,
                eviction="lowest_score",
                partial=True,
                max_tokens=self.chunk_size_limit,
                item_separator=REPACK_SEPARATOR,
            )
            layout = self._layout(box, prompt_section, chunks, padding, chat_overhead)
            layouts.append(layout)
            emit_layout("TokenBoxPromptHelper", "repack", layout)
            texts = [item.content for item in layout["chunks"].content if isinstance(item, Item)]
            rest = remaining[len(texts) :]
            if texts and texts[-1] != remaining[len(texts) - 1]:  # the boundary chunk was cut (on a separator)
                carried = _remainder(remaining[len(texts) - 1], texts[-1], counter)
                if carried:
                    rest = [carried, *rest]
            if not texts:
                raise BudgetError(
                    f"the prompt leaves {layout.max_tokens - layout.fixed_tokens:,} tokens for context, too few "
                    f"for the next chunk's first word: raise context_window, lower num_output or shorten the prompt"
                )
            packs.append(REPACK_SEPARATOR.join(texts))
            remaining = rest
        self._last_layouts = tuple(layouts)
        return packs


class PromptOverflow(ContextCriticalOverflow, BudgetError):
    """The prompt alone does not fit beside ``num_output`` and ``padding``.

    A :class:`~tokenbox_core.ContextCriticalOverflow` (``budget``, ``required``
    and ``section_ids`` as the core measured them) that is also a
    :class:`~tokenbox_core.BudgetError`, hence a ``ValueError``: code written
    for ``PromptHelper``, which raises ``ValueError``, catches it unchanged.
    """

    def __init__(self, budget: int, required: int, section_ids: Sequence[str], message: str | None = None) -> None:
        super().__init__(budget, required, section_ids)
        if message is not None:
            self.args = (message,)

    def __reduce__(self) -> tuple[Any, ...]:  # one more argument than the base's
        return (type(self), (self.budget, self.required, self.section_ids, str(self)))


class _SeparatorCuts:
    """The call's counter, with head cuts that end on a separator (see the module docstring).

    The core cuts the boundary chunk with ``truncate``: it searches for the
    longest cut that fits and re-counts it, so a cut shortened here to a word
    boundary is what the layout counts, reports and the helper returns.  Counting
    is the wrapped counter's own (same name, same cache).
    """

    def __init__(self, counter: TokenCounter, separator: str) -> None:
        self.counter = counter
        self.separator = separator
        self.name = counter.name

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        cut = self.counter.truncate(text, limit, keep=keep)
        return _snap(text, cut, self.separator) if keep == "head" else cut


def _snap(text: str, head: str, separator: str) -> str:
    r"""Shorten a cut ``head`` of ``text`` to end on a ``separator`` boundary, as LlamaIndex's splitter does.

    A head that is all of ``text``, or that ends on a boundary (in or just before
    a separator), loses nothing but trailing whitespace.  With the default
    separator, a space, every whitespace character is a word boundary.  A head
    with no boundary in it (one long word) stays a token-boundary cut, without
    trailing whitespace.

    >>> _snap("service: checkout\n\nINC-1004 (checkout)", "service: checkout\n\n", " ")
    'service: checkout'
    >>> _snap("service: checkout\n\nINC-1004 (checkout)", "service: checkout\n\nINC-10", " ")
    'service: checkout'
    >>> _snap("one. two. three.", "one. two. th", ". ")
    'one. two.'
    >>> _snap("supercalifragilistic", "supercali", " ")
    'supercali'
    """
    if not separator or not head or head == text or not text.startswith(head):
        return head
    if separator == " ":
        # the last whitespace at or right after the end of the head
        end = next((i for i in range(len(head), -1, -1) if text[i].isspace()), -1)
        kept = text[:end].rstrip() if end > 0 else ""
    else:
        # the last separator that starts at or before the end of the head (it may straddle the cut)
        end = text.rfind(separator, 0, len(head) + len(separator))
        kept = text[: min(end + len(separator), len(head))].rstrip() if end > 0 else ""
    return kept or head.rstrip() or head


def _remainder(text: str, head: str, counter: TokenCounter) -> str:
    """What is left of ``text`` after its ``head`` was placed."""
    if not head:
        return text
    if text.startswith(head):
        return text[len(head) :].strip()
    # a counter whose cut is not a prefix (it normalised whitespace): keep the tokens the head did not take
    left = counter.count(text) - counter.count(head)
    return counter.truncate(text, left, keep="tail").strip() if left > 0 else ""
