"""Recall's room follows the evidence, and what it brings back is what the question needs (issue 33)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import ContextSession, get_counter
from tokenbox_core.session import RecallConfig
from tokenbox_core.session._allocate import recall_room
from tokenbox_core.session._recall import RecallIndex
from tokenbox_core.session._recalled import passage, query_terms

W = "whitespace"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def chatter(session: ContextSession, turns: int) -> None:
    for i in range(turns):
        session.add([user(f"chat {i} about the weather and lunch plans"), reply(f"reply {i} about sunshine today")])


def block(compiled: Any) -> str:
    content = compiled.messages[-1]["content"]
    return str(content[0]["text"]) if isinstance(content, list) else ""


def window_ids(compiled: Any) -> list[str]:
    return [m["id"] for m in compiled.messages if m.get("id")]


def test_a_fact_is_recalled_with_the_reply_that_answers_it() -> None:
    """The question's words match the user's turn; the answer sits in the reply next to it, which recall brings
    along as its neighbour."""
    session = ContextSession(None, "s", budget=300, counter=W)
    session.add([user("Which hotel did Dana book for the Lisbon trip?"), reply("She booked the Palacio Azul.")])
    chatter(session, 40)
    session.add(user("Remind me: which hotel in Lisbon did Dana book?"))
    compiled = session.compile()
    assert compiled.recalled[:2] == ("t_1", "t_2")
    assert "t_2 assistant: She booked the Palacio Azul." in block(compiled)


def test_a_long_hit_is_shown_by_the_passage_that_matches_not_by_its_head() -> None:
    """A hit longer than recall's room is cut around the words the question matched."""
    long = " ".join(["The build log starts here with routine compiler output."] * 40)
    long += " The flaky test is test_payment_refund in module billing. "
    long += " ".join(["More routine linker output follows."] * 40)
    session = ContextSession(None, "s", budget=260, counter=W)
    session.add([user("paste the build log"), reply(long)])
    chatter(session, 30)
    session.add(user("which test was flaky in the billing module?"))
    compiled = session.compile()
    assert "t_2" in compiled.recalled
    text = block(compiled)
    assert "test_payment_refund in module billing" in text and "t_2 assistant: …" in text
    assert compiled.total_tokens <= 260


def test_passage_picks_the_span_with_the_most_query_words() -> None:
    """passage() keeps the line's id and role and centres on the densest run of query words."""
    line = "t_9 tool: " + "filler words here. " * 30 + "The staging database port is 5433. " + "tail text. " * 30
    cut = passage(line, query_terms("which port does the staging database use?"), 120)
    assert cut.startswith("t_9 tool: …") and "staging database port is 5433" in cut and len(cut) <= 130
    assert passage("t_1 user: short", query_terms("anything"), 120) == "t_1 user: short"


def test_a_strong_match_takes_the_room_from_the_window() -> None:
    """Many archived turns matching the question: recall takes far more than the old fixed 15 % of the budget,
    and the window gives way; the same session asked about nothing archived keeps its window."""
    session = ContextSession(None, "s", budget=600, counter=W)
    for i in range(12):
        session.add([user(f"the invoice {1000 + i} for Orbital Freight was paid by wire"), reply(f"logged {i}")])
    chatter(session, 40)
    session.add(user("which Orbital Freight invoice was paid by wire?"))
    strong = session.compile()
    recalled_tokens = get_counter(W).count(block(strong))
    assert len(strong.recalled) >= 12 and recalled_tokens > 0.15 * 600
    session.add([reply("several"), user("xyzzy plugh")])
    nothing = session.compile()
    assert nothing.recalled == () and len(window_ids(nothing)) > len(window_ids(strong))


def test_nothing_is_recalled_when_nothing_matches() -> None:
    """A question sharing no word with the omitted turns recalls nothing: the block is the pointer alone."""
    session = ContextSession(None, "s", budget=300, counter=W)
    session.add([user("The deploy key lives in vault/prod/deploy."), reply("Noted.")])
    chatter(session, 40)
    session.add(user("zebra quokka?"))
    compiled = session.compile()
    assert compiled.recalled == () and "RECALLED" not in block(compiled)
    assert block(compiled).startswith("[OMITTED:")


def test_embeddings_are_computed_at_add_and_never_for_archived_text_at_compile() -> None:
    """With an embedder, each distinct archived text is embedded once as it is added; a compile embeds only the
    question."""
    seen: list[str] = []

    def embedder(text: str) -> list[float]:
        seen.append(text)
        return [float(len(text) % 7 + 1), float(text.count("e") + 1), 1.0]

    session = ContextSession(None, "s", budget=200, counter=W, recall=RecallConfig(embedder=embedder))
    session.add([user("the same words"), reply("the same words"), user("the deploy key lives in the vault")])
    chatter(session, 20)
    archived = len(seen)
    assert archived == len({m["content"] for m in session.messages()})  # one vector per distinct text
    session.add(user("where is the deploy key?"))
    session.compile()
    session.compile()
    assert seen[archived + 1 :] == ["where is the deploy key?"] * (len(seen) - archived - 1)


contents = st.lists(st.sampled_from(["alpha beta", "gamma", "delta alpha", "omega", "beta beta gamma"]), max_size=12)


@given(texts=contents, room=st.integers(0, 400), share=st.floats(0.0, 1.0), omit=st.integers(0, 12))
def test_recall_room_never_exceeds_its_share_and_is_zero_without_candidates(
    texts: list[str], room: int, share: float, omit: int
) -> None:
    """recall_room() stays within share × room, and is 0 when nothing may be recalled or nothing matches."""
    index = RecallIndex()
    ids = [f"t_{i + 1}" for i in range(len(texts))]
    index.extend(list(zip(ids, texts, strict=True)))
    omitted = list(range(min(omit, len(texts))))
    config = RecallConfig(share=share, min_terms=0)
    messages = [user(t) for t in texts]
    counter = get_counter(W)
    got = recall_room(
        index, "alpha gamma?", config=config, room=room, ids=ids, messages=messages, omitted=omitted, counter=counter
    )
    assert 0 <= got <= int(share * room)
    if not omitted or not any(w in texts[p] for p in omitted for w in ("alpha", "gamma")):
        assert got == 0


@given(turns=st.integers(5, 40), budget=st.integers(120, 600), facts=st.integers(0, 6))
def test_the_newest_message_is_always_sent_and_the_budget_kept(turns: int, budget: int, facts: int) -> None:
    """Whatever recall takes, the compile fits the budget, the current user message is sent, and no recalled
    message repeats one of the window."""
    session = ContextSession(None, "s", budget=budget, counter=W)
    for i in range(facts):
        session.add([user(f"the quartz ledger {i} sits in drawer {i}"), reply(f"ok {i}")])
    chatter(session, turns)
    newest = session.add(user("where does the quartz ledger sit?"))[0]
    compiled = session.compile()
    assert compiled.total_tokens <= budget
    assert compiled.messages[-1].get("id") == newest
    assert not set(compiled.recalled) & set(window_ids(compiled))


def test_a_compile_embeds_its_query_once_and_no_archived_message() -> None:
    """With an embedder, add embeds each new archived text (once per distinct text); a compile — which plans the
    recall room and then fills it, over two indexes — embeds only its query, once, and a second compile of the same
    query embeds nothing."""
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        return [float("key" in text), float("lunch" in text), 1.0]

    session = ContextSession(None, "s", budget=120, counter="whitespace", recall=RecallConfig(embedder=embed))
    session.add([{"role": "user", "content": "the deploy key lives in vault"}, {"role": "assistant", "content": "ok"}])
    for i in range(20):
        session.add([{"role": "user", "content": f"lunch {i} at noon"}, {"role": "assistant", "content": "ok"}])
    assert len(seen) == 22  # 21 distinct user texts and "ok"
    seen.clear()
    compiled = session.compile(user="where is the deploy key?")
    assert seen == ["where is the deploy key?"] and "t_1" in compiled.recalled
    session.compile(user="where is the deploy key?")
    assert seen == ["where is the deploy key?"]


def test_a_hit_next_to_the_turn_the_question_names_outranks_a_lone_one() -> None:
    """Two turns hold the question's word "paint"; the one whose neighbour holds its other words ("Melanie",
    "sunrise") is ranked first, and a turn holding no query word is never a hit, whatever its neighbours."""
    index = RecallIndex()
    index.extend(
        [
            ("t_1", "Melanie: look at the sunrise over the lake this morning"),
            ("t_2", "Caroline: did you paint it?"),
            *[(f"t_{i}", f"filler {i} about the weather") for i in range(3, 20)],
            ("t_20", "Caroline: I want to paint the kitchen"),
        ]
    )
    ranked = [h.id for h in index.search("when did Melanie paint a sunrise?")]
    assert ranked[:2] == ["t_1", "t_2"] and ranked.index("t_2") < ranked.index("t_20")
    assert "t_3" not in ranked
