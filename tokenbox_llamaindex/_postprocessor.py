"""``TokenBoxNodePostprocessor``: keep the best retrieved nodes that fit a token budget.

Every node is an Item counted as the LLM sees it
(``get_content(metadata_mode=MetadataMode.LLM)``), in one list section evicted
lowest score first (nodes without a score go before scored ones; ties lose the
later node).  Kept nodes come back in their input order, or in the order a
selection ``policy`` (``tokenbox_core.select``) places them.  With
``truncation="tokens"`` the boundary node is cut to fill the budget instead of
being dropped; ``"sentences"`` also cuts it, keeping only whole leading
sentences of its text.

The budget is ``budget`` (``token_budget`` is accepted as an alias), or the LLM's context window minus
``prompt_reserve`` and ``output_reserve`` (default: the LLM's ``num_output``).

>>> from llama_index.core.schema import NodeWithScore, TextNode
>>> nodes = [NodeWithScore(node=TextNode(text="alpha " * 30), score=s) for s in (0.9, 0.5, 0.7)]
>>> post = TokenBoxNodePostprocessor(budget=70, counter="whitespace")
>>> [n.score for n in post.postprocess_nodes(nodes)]
[0.9, 0.7]
>>> post.last_layout.removed[0].score
0.5
"""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.constants import DEFAULT_NUM_OUTPUTS
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.settings import Settings
from pydantic import AliasChoices

from tokenbox_core import BudgetError, ContextBudget, Item, Layout, Section, TokenBox, TokenCounter
from tokenbox_core.arguments import StrictArguments, no_bool
from tokenbox_core.lenses import get_lens
from tokenbox_llamaindex._counting import counter_name, resolve_counter
from tokenbox_llamaindex._events import emit_layout

__all__ = ["TokenBoxNodePostprocessor"]

Truncation = Literal["none", "tokens", "sentences"]


class TokenBoxNodePostprocessor(StrictArguments, BaseNodePostprocessor):
    """Fit retrieved nodes into a token budget, best score first, deterministically.

    Use it in ``index.as_query_engine(node_postprocessors=[...])``, in
    retriever query engines and in chat engines that take
    ``node_postprocessors`` (``ContextChatEngine``,
    ``CondensePlusContextChatEngine``).  :attr:`last_layout` is the core's
    report of the last call (kept and removed nodes, sizes, fingerprint); node
    metadata is never touched.
    """

    budget: int | None = Field(
        default=None,
        ge=0,
        validation_alias=AliasChoices("budget", "token_budget"),
        description="Most tokens the kept nodes may cost (alias: token_budget); None derives it from llm.",
    )
    llm: LLM | None = Field(
        default=None,
        exclude=True,
        description="LLM whose context window sets the budget when budget is None (else Settings.llm).",
    )
    prompt_reserve: int = Field(
        default=0, ge=0, description="Tokens kept free for the prompt around the nodes (with an llm budget)."
    )
    output_reserve: int | None = Field(
        default=None,
        ge=0,
        description="Tokens kept free for the answer (with an llm budget); None uses the LLM's num_output.",
    )
    counter: Any = Field(
        default=None,
        exclude=True,
        description=(
            "How to count: a TokenBox counter name, a TokenCounter or a LlamaIndex tokenizer callable. "
            "None: Settings.tokenizer if set, else the LLM's encoding, else cl100k_base."
        ),
    )
    truncation: Truncation = Field(
        default="none",
        description=(
            "What happens to the node at the budget boundary: 'none' drops it, 'tokens' cuts it to fill the "
            "budget, 'sentences' cuts it to whole leading sentences."
        ),
    )
    separator: str = Field(default="\n\n", description="Text between nodes in the prompt (counted in the budget).")
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.LLM, description="How nodes are rendered for counting (as the LLM will see them)."
    )
    policy: Any = Field(
        default=None,
        exclude=True,
        description="An item-selection policy (tokenbox_core.select), passed to the section as Section.policy.",
    )

    _last_layout: Layout | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxNodePostprocessor"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings as a dict; a named counter is kept, an unnamed one raises ``ValueError`` (the LLM and the
        policy are objects and are left out: pass them again to :meth:`from_dict`)."""
        data = super().to_dict(**kwargs)
        name = counter_name("TokenBoxNodePostprocessor", self.counter)
        if name is not None:
            data["counter"] = name
        return data

    @property
    def last_layout(self) -> Layout | None:
        """The layout of the last call (``None`` before the first, or after a call with no nodes).

        A convenience for single-threaded use: concurrent requests overwrite it.
        Each call also sends its layout to LlamaIndex's instrumentation
        dispatcher (:class:`~tokenbox_llamaindex._events.TokenBoxLayoutEvent`)."""
        return self._last_layout

    def _llm(self) -> LLM | None:
        return self.llm if self.llm is not None else Settings._llm

    def resolve_counter(self) -> TokenCounter:
        """The counter used now: ``counter``, else ``Settings.tokenizer``, else the LLM's encoding."""
        llm = self._llm()
        return resolve_counter(self.counter, model_name=llm.metadata.model_name if llm is not None else None)

    @field_validator("budget", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        return no_bool("budget", value)

    def resolved_budget(self) -> int | ContextBudget:
        """``budget``, or the LLM's window minus the prompt and output reserves."""
        if self.budget is not None:
            return self.budget
        llm = self._llm()
        if llm is None:
            raise BudgetError(
                "TokenBoxNodePostprocessor has no budget: pass budget=<tokens>, or llm=<LLM> to derive it "
                "from the LLM's context window (or set Settings.llm)"
            )
        metadata = llm.metadata
        output = self.output_reserve
        if output is None:
            output = metadata.num_output if metadata.num_output > 0 else DEFAULT_NUM_OUTPUTS
        if output + self.prompt_reserve >= metadata.context_window:
            raise BudgetError(
                f"the LLM's context window ({metadata.context_window:,} tokens) leaves no room for nodes after "
                f"output_reserve={output:,} and prompt_reserve={self.prompt_reserve:,}: lower the reserves or "
                f"pass budget"
            )
        return ContextBudget(
            max_tokens=metadata.context_window, output_reserve=output, reserved_slots={"prompt": self.prompt_reserve}
        )

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if not nodes:
            self._last_layout = None
            return []
        counter = self.resolve_counter()
        by_id: dict[str, NodeWithScore] = {}
        items = []
        for position, node in enumerate(nodes):
            key = node.node.node_id
            if key in by_id:  # the same node retrieved twice (e.g. by two retrievers): keep both apart
                key = f"{key}#{position}"
            by_id[key] = node
            items.append(
                Item(
                    id=key,
                    content=node.node.get_content(metadata_mode=self.metadata_mode),
                    score=node.score,
                    kind="Document",
                    metadata={"position": position},
                )
            )
        section = Section(
            "nodes",
            items,
            shrink=1.0,
            eviction="lowest_score",
            partial=self.truncation != "none",
            item_separator=self.separator,
            policy=self.policy,
        )
        layout = TokenBox(self.resolved_budget(), counter=counter, separator=self.separator).layout([section])
        self._last_layout = layout
        emit_layout("TokenBoxNodePostprocessor", "postprocess", layout)
        kept = []
        for item in layout["nodes"].content:
            assert isinstance(item, Item)
            node = by_id[item.id]
            full = items[item.metadata["position"]]
            if item.content != full.content:
                cut = self._cut_node(node, full.content, item.content, counter)
                if cut is None:
                    continue
                node = cut
            kept.append(node)
        return kept

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        # The layout is CPU-bound and takes milliseconds: no worker thread needed.
        return self._postprocess_nodes(nodes, query_bundle)

    def _cut_node(self, node: NodeWithScore, full: str, cut: str, counter: TokenCounter) -> NodeWithScore | None:
        """A copy of ``node`` whose rendered content fits in ``cut``'s tokens, or None if no text fits.

        The rendered content is the node's metadata header followed by its
        text; the core cut its head, so the text is what follows the header.
        """
        body = node.node.get_content(metadata_mode=MetadataMode.NONE)
        tail = body.rstrip()
        if not tail or not full.endswith(tail):
            return None  # a template that does not end with the text: the cut cannot be mapped back
        header = full[: len(full) - len(tail)]
        if not cut.startswith(header) or len(cut) <= len(header):
            return None
        text = cut[len(header) :]
        if self.truncation == "sentences":
            text = get_lens("sentences")(body, counter.count(text), counter)
        if not text.strip():
            return None
        copy = node.node.model_copy()
        copy.set_content(text)
        if counter.count(copy.get_content(metadata_mode=self.metadata_mode)) > counter.count(cut):
            return None
        return NodeWithScore(node=copy, score=node.score)
