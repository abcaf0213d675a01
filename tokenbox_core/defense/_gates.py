"""The literal gates of the detector's rules (chapter §6.9.2 Layer 1, made cheap).

A rule's *gate* is a tuple of groups of literals: a match of the rule's pattern
contains a member of every group (a hypothesis property pins that each group is
necessary), so a text missing a group is skipped without running the pattern.
Groups of several kinds of words make a conjunction ("an addressee and a verb")
that benign text rarely meets.  A literal written ``\\bword`` must start a word
there (the character before it is not a word character), ``word\\b`` must end
one, ``\\bword\\b`` must be a whole word: "ai" then counts in "hey ai," but not
in "said".  The :class:`~tokenbox_core.defense._prefilter.Prefilter`
finds every gate literal of a text in one pass.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["GATES", "Literal"]

_BOUNDARY = "\\b"


class Literal(NamedTuple):
    """A gate literal: the text to find and whether it must start and/or end a word."""

    text: str
    starts_word: bool
    ends_word: bool

    @classmethod
    def parse(cls, spec: str) -> Literal:
        """``"\\\\bai\\\\b"`` -> ``Literal("ai", True, True)``; a spec without ``\\\\b`` is a plain substring."""
        starts, ends = spec.startswith(_BOUNDARY), spec.endswith(_BOUNDARY) and len(spec) > len(_BOUNDARY)
        text = spec[len(_BOUNDARY) if starts else 0 : len(spec) - len(_BOUNDARY) if ends else len(spec)]
        return cls(text, starts, ends)

    def at(self, text: str, start: int) -> bool:
        """True when this literal, found at ``start`` in ``text``, has the word boundaries it asks for."""
        if self.starts_word and start > 0 and _word_char(text[start - 1]):
            return False
        end = start + len(self.text)
        return not (self.ends_word and end < len(text) and _word_char(text[end]))

    def occurs(self, text: str) -> bool:
        """True when this literal occurs in ``text`` with its boundaries."""
        k = text.find(self.text)
        while k >= 0:
            if self.at(text, k):
                return True
            k = text.find(self.text, k + 1)
        return False


def _word_char(ch: str) -> bool:
    """What ``\\w`` matches in a ``str`` pattern: a Unicode letter or digit, or ``_``."""
    return ch.isalnum() or ch == "_"


def _words(*words: str) -> tuple[str, ...]:
    """Each of ``words`` as a whole word (``\\bword\\b``)."""
    return tuple(rf"\b{w}\b" for w in words)


def _starts(*words: str) -> tuple[str, ...]:
    """Each of ``words`` at the start of a word (``\\bword``): "stat" in "state" but not in "estate"."""
    return tuple(rf"\b{w}" for w in words)


_AI_WORDS = (
    *_words(
        "ai",
        "llm",
        "llms",
        "model",
        "models",
        "assistant",
        "assistants",
        "chatbot",
        "chatbots",
        "bot",
        "bots",
        "agent",
        "agents",
        "gpt",
        "chatgpt",
        "claude",
        "gemini",
        "copilot",
    ),
    r"\ba.i.",
)
"""An addressee (``_AI`` of the rules): every form of it ends with one of these words."""
_VOCATIVE_VERBS = _starts("ignore", "disregard", "forget", "you must", "you should", "you will", "you are", "do not",
                          "don't", "send", "forward", "reveal", "output", "print", "call", "run", "delete", "rename",
                          "email", "post", "include", "append", "stop", "when you", "instruction", "approve", "grant",
                          "rank", "rate", "recommend")  # fmt: skip
"""What ``address_vocative`` requires after its addressee: a gate group of its own."""
_MUST_VERBS = _starts("ignore", "disregard", "state", "say", "answer", "respond", "reveal", "forward", "send",
                      "include", "recommend", "tell", "insult", "append", "approve", "rank", "call", "output", "print",
                      "delete", "grant", "forget", "obey", "follow", "comply", "stop", "transfer", "disclose", "leak",
                      "execute", "run", "drop")  # fmt: skip
"""The verbs ``model_must`` requires after "must", "should", ..."""
_LEAK_VERBS = _words("reveal", "print", "show", "output", "repeat", "display", "dump", "leak", "disclose", "share",
                     "list", "give me", "tell me", "read me", "write out", "recite", "spell out", "expose", "send",
                     "return", "summarise", "summarize")  # fmt: skip
"""The words of ``_LEAK_VERB``, required by every leak rule."""
_INVALID = _starts("void", "invalid", "outdated", "obsolete", "cancel", "revoked", "superseded", "overridden",
                   "suspended", "lifted", "irrelevant", "null", "no longer ")  # fmt: skip
"""How a rule says instructions are void ("... are now obsolete", "... no longer apply")."""
_GUIDANCE = _starts("configuration", "instructions", "rules", "guidelines", "directives", "prompt", "programming",
                    "setup", "guidance")  # fmt: skip
"""What the instructions are called in a claim that they are void."""
GATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "chat_template_token": (("<|", "[inst", "[/inst", "<<sys", "<</sys", "_of_turn>"),),
    "markdown_role_header": (("##",),),
    "bare_role_line": (("system", "developer", "admin"),),
    "bracket_role": (("[system", "[admin", "[developer"),),
    "xml_role_tag": (("<system", "</system", "<instructions", "</instructions", "<admin", "</admin", "<developer",
                      "</developer"),),
    "role_label_prose": (("system", "developer"),),
    "transcript_turns": (("assistant", "system", "human"),),
    "json_role_system": (('"role', "'role"), ("system",)),
    "boundary_marker": (("<<<",),),
    "boundary_token": (("boundary_",),),
    "end_of_data": (("end of", "end untrusted", "end tool"),),
    "closing_data_tag": (("</",),),
    "trusted_block_opening": (_words("begin", "start"), _words("system", "trusted", "developer", "admin")),
    "real_instructions": (("real ", "actual ", "true ", "trusted ", "authoritative ", "new "),
                          ("instructions", "policy", "directive")),
    "previous_void": (_starts("previous ", "prior ", "earlier ", "above ", "old ", "original "),
                      _starts("void", "cancel", "revoked", "obsolete", "deprecated", "null", "no longer ")),
    "ignore_the_above": (_words("above"), _starts("ignore ", "disregard ", "forget ")),
    "disable_safety": (("filter", "moderation", "guardrail", "safety", "restriction"),),
    "new_instructions": (_starts("new instructions", "new task", "new rules", "new directive", "new objective",
                                 "new goal", "new role", "new policy", "new system prompt"),),
    "temporal_switch": (("now on", "starting now", "as of now", "ab jetzt", "a partir de", "à partir de",
                         "d'ora in poi", "теперь ты", "从现在开始"),),
    "persona_switch": (("you are now", "you have been"),),
    "mode_switch": (("developer mode", "dan mode", "god mode", "admin mode", "maintenance mode", "debug mode",
                     "jailbreak mode", "unrestricted mode", "override mode", "jailbroken"),),
    "act_as": (("act as", "pretend", "roleplay", "you are now"),),
    "no_limits": ((*_starts("no ", "without "), *_words("unrestricted", "unfiltered")),
                  ("content policy", "restrictions", "rules", "filters", "limits", "guidelines", "censorship",
                   "refusal", "unrestricted", "unfiltered", "longer apply")),
    "leak_request": (_LEAK_VERBS, (*_starts("system prompt", "system message", "initial prompt", "initial instructions",
                                            "hidden ", "developer message", "confidential instructions", "secret key",
                                            "secrets", "api", "password", "credentials"),
                                   "your ", "everything above", "the text above", "every instruction you",
                                   "instructions you ")),
    "leak_mention": (_LEAK_VERBS, ("prompt", "hidden instructions", "secret key", "api", "password", "credential"),),
    "address_note": ((*_words("note", "message", "directive", "attention", "notice", "warning", "reminder",
                              "request"), r"\binstruction"), _AI_WORDS),
    "address_salutation": (_words("attention", "dear", "hey", "to any", "to all", "to every"), _AI_WORDS),
    "address_conditional": ((r"\bif\b", r"\bwhen"), _AI_WORDS),
    "address_processing": ((*_words("reading", "processing", "summarising", "summarizing", "evaluating", "reviewing",
                                    "parsing", "analysing", "analyzing"), *_starts("that read", "who read")),
                           _AI_WORDS),
    "address_vocative": (_AI_WORDS, _VOCATIVE_VERBS),
    "address_as_the": (_starts("as the ", "as an ", "as a "), _AI_WORDS,
                       _words("you are", "you must", "you should", "you need", "you will")),
    "model_must": (_AI_WORDS, (" must ", " shall ", " should ", " will ", " needs to ", " is required to "),
                   _MUST_VERBS),
    "secrecy": (_starts("do not ", "don't ", "never ", "without "),
                _starts("tell", "inform", "notif", "alert", "mention", "asking", "confirmation")),
    "exfil_action": (_words("send", "forward", "email", "post", "upload", "transmit", "leak", "exfiltrate", "share"),
                     _starts("user's", "users'", "conversation", "chat history", "chat log", "history", "messages",
                             "emails", "password", "credentials", "api key", "session token", "private",
                             "customer data", "confidential")),
    "send_external": (_words("send", "forward", "email", "post", "upload", "transmit", "mail"), ("@", "http")),
    "permission_grant": (("is now ", "are now ", "you are ", "authorised you", "authorized you", "grant "),),
    "dangerous_tool": (_words("call", "invoke", "use", "run", "execute"), _words("tool", "function")),
    "dangerous_command": (("curl", "-rf", "transfer_funds", "delete_repository", "download"),),
    "authority_claim": (("from the", "from openai", "from anthropic", "from admin", "from system", "i am your",
                         "i am the", "staff", "comes from"),
                        ("developer", "operator", "openai", "anthropic", "admin", "system", "creator", "owner",
                         "google")),
    "instructions_invalidated": (_INVALID, _GUIDANCE, (r"\byour",)),
    "instructions_outdated": (_INVALID, _GUIDANCE, _words("earlier", "previous", "prior", "original", "initial", "old",
                                                          "existing", "developer", "system")),
    "overrides_all": (_starts("override", "supersede", "replace", "precedence over "), (" all ", " any ", " every ")),
    "exclusive_obedience": (_words("obey", "follow", "listen to", "take orders", "take instructions"),
                            _words("only", "not")),
    "instructs_you": (_starts("instruct", "order", "command", "direct", "require"), (r"\bi ",)),
    "stop_being": (("stop being",),),
    "leak_preamble": ((*_starts(*(f"{w} {o} " for w in ("before", "above", "prior to") for o in ("my", "this", "the",
                                                                                               "our"))),
                       *_starts("what were you ", "what are you ", "what have you ")), (*_LEAK_VERBS, r"\bwhat ")),
    "money_transfer": (("transfer", "wire", "send", "pay"), ("account", "iban", "wallet")),
    "end_line": (("end ",),),
    "bracket_instructions": (("instruction]", "instructions]"),),
    "shouted_override": (("OVERRIDE", "DIRECTIVE", "COMMAND", "INSTRUCTION"),),
    "dan_persona": (("DAN", "Do Anything"),),
    "shouted_directive": (("IMPORTANT", "URGENT", "ATTENTION", "NOTICE"),),
}  # fmt: skip
"""Per rule, the literal gate groups (see :class:`Rule`)."""
