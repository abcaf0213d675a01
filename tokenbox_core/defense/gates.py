"""The literal gates and anchors of the detector's rules (chapter §6.9.2 Layer 1, made cheap).

A rule's *gate* is a tuple of groups of literals: a match of the rule's pattern
contains a member of every group (a hypothesis property and the corpus pin
that each group is necessary), so a text missing a group is skipped without
running the pattern.  Groups of several kinds of words make a conjunction
("an addressee and a verb") that benign text rarely meets.

A rule's *anchors* are literals every match starts with: the pattern is then
tried only where an anchor occurs (:meth:`~tokenbox_core.defense.rules.Rule.finditer`)
instead of at every position of the text.
"""

from __future__ import annotations

__all__ = ["ANCHORS", "GATES", "LINE_HEADS"]

_AI_WORDS = ("ai", "a.i.", "llm", "language model", "assistant", "chatbot", "bot", "agent", "model", "gpt", "claude",
             "gemini", "copilot")  # fmt: skip
_AI_STARTS = (*_AI_WORDS, "chatgpt", "automated agent")
"""The literals an addressee (``_AI`` in the rules) starts with: anchors."""
_VOCATIVE_VERBS = ("ignore", "disregard", "forget", "you must", "you should", "you will", "you are", "do not",
                   "don't", "send", "forward", "reveal", "output", "print", "call", "run", "delete", "rename", "email",
                   "post", "include", "append", "stop", "when you", "new instruction", "instruction", "approve",
                   "grant", "rank", "rate", "recommend")  # fmt: skip
"""What ``address_vocative`` requires after its addressee: a gate group of its own."""
_MUST_VERBS = ("ignore", "disregard", "state", "say", "answer", "respond", "reveal", "forward", "send", "include",
               "recommend", "tell", "insult", "append", "approve", "rank", "call", "output", "print", "delete",
               "grant", "forget", "obey", "follow", "comply", "stop", "transfer", "disclose", "leak", "execute", "run",
               "drop")  # fmt: skip
"""The verbs ``model_must`` requires after "must", "should", ..."""
_LEAK_VERBS = ("reveal", "print", "show", "output", "repeat", "display", "dump", "leak", "disclose", "share", "list",
               "give me", "tell me", "read me", "write out", "recite", "spell out", "expose", "send", "return",
               "summaris", "summariz")  # fmt: skip
"""The literals of ``_LEAK_VERB``, required by every leak rule."""
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
    "trusted_block_opening": (("begin", "start"),),
    "real_instructions": (("real ", "actual ", "true ", "trusted ", "authoritative ", "new "),
                          ("instructions", "policy", "directive")),
    "previous_void": (("void", "cancel", "revoked", "obsolete", "deprecated", "null", "no longer"),),
    "ignore_the_above": (("above",),),
    "disable_safety": (("filter", "moderation", "guardrail", "safety", "restriction"),),
    "new_instructions": (("new ",),),
    "temporal_switch": (("now on", "starting now", "as of now", "ab jetzt", "a partir de", "à partir de",
                         "d'ora in poi", "теперь ты", "从现在开始"),),
    "persona_switch": (("you are now", "you have been"),),
    "mode_switch": (("developer mode", "dan mode", "god mode", "admin mode", "maintenance mode", "debug mode",
                     "jailbreak mode", "unrestricted mode", "jailbroken"),),
    "act_as": (("act as", "pretend", "roleplay", "you are now"),),
    "no_limits": (("no ", "without", "unrestricted", "unfiltered", "have no rules"),),
    "leak_request": (_LEAK_VERBS, ("prompt", "system message", "instructions", "rules", "configuration", "guidelines",
                                   "secret", "api", "password", "credential", "session token", "above",
                                   "developer message", "hidden", "every instruction")),
    "leak_mention": (_LEAK_VERBS, ("prompt", "hidden instructions", "secret key", "api", "password", "credential"),),
    "address_note": (("note", "message", "instruction", "directive", "attention", "notice", "warning", "reminder",
                      "request"), _AI_WORDS),
    "address_salutation": (("attention", "dear", "hey", "to any", "to all", "to every"), _AI_WORDS),
    "address_conditional": (("if", "when"), _AI_WORDS),
    "address_processing": (("reading", "processing", "summaris", "summariz", "evaluating", "reviewing", "parsing",
                            "analys", "analyz", "read"), _AI_WORDS),
    "address_vocative": (_AI_WORDS, _VOCATIVE_VERBS),
    "address_as_the": (("as the ", "as an ", "as a "), _AI_WORDS, ("you are", "you must", "you should", "you need",
                                                                  "you will")),
    "model_must": (_AI_WORDS, ("must", "shall", "should", "will", "needs to", "required to"), _MUST_VERBS),
    "secrecy": (("do not", "don't", "never", "without"),),
    "exfil_action": (("send", "forward", "email", "post", "upload", "transmit", "leak", "exfiltrate", "share"),),
    "send_external": (("send", "forward", "email", "post", "upload", "transmit", "mail"), ("@", "http")),
    "permission_grant": (("is now ", "are now ", "you are ", "authorised you", "authorized you", "grant "),),
    "dangerous_tool": (("call", "invoke", "use", "run", "execute"), ("tool", "function")),
    "dangerous_command": (("curl", "-rf", "transfer_funds", "delete_repository", "download"),),
    "authority_claim": (("from the", "from openai", "from anthropic", "from admin", "from system", "i am your",
                         "i am the", "staff", "comes from"),
                        ("developer", "operator", "openai", "anthropic", "admin", "system", "creator", "owner",
                         "google")),
    "instructions_invalidated": (("void", "invalid", "outdated", "obsolete", "cancel", "revoked", "superseded",
                                  "overridden", "suspended", "lifted", "irrelevant", "null", "no longer"),),
    "instructions_outdated": (("void", "invalid", "outdated", "obsolete", "cancel", "revoked", "superseded",
                               "overridden", "suspended", "lifted", "irrelevant", "null", "no longer"),),
    "overrides_all": (("override", "supersede", "replace", "precedence over"),),
    "exclusive_obedience": (("obey", "follow", "listen to", "take orders", "take instructions"),),
    "instructs_you": (("instruct", "order", "command", "direct", "require"), ("i ",)),
    "stop_being": (("stop being",),),
    "leak_preamble": (("before", "above", "prior to", "told", "instructed", "asked", "programmed", "configured"),
                      (*_LEAK_VERBS, "what")),
    "money_transfer": (("transfer", "wire", "send", "pay"), ("account", "iban", "wallet")),
    "end_line": (("end",),),
    "bracket_instructions": (("instruction]", "instructions]"),),
    "shouted_override": (("OVERRIDE", "DIRECTIVE", "COMMAND", "INSTRUCTION"),),
    "dan_persona": (("DAN", "Do Anything"),),
    "shouted_directive": (("IMPORTANT", "URGENT", "ATTENTION", "NOTICE"),),
}  # fmt: skip
"""Per rule, the literal gate groups (see :class:`Rule`)."""

_ANCHORED_BY_GATE = ("bracket_role", "xml_role_tag", "json_role_system", "boundary_marker", "boundary_token",
                     "closing_data_tag", "trusted_block_opening", "real_instructions", "mode_switch", "no_limits",
                     "leak_request", "leak_mention", "address_note", "address_salutation", "address_conditional",
                     "stop_being", "money_transfer", "exfil_action", "send_external", "dangerous_tool")  # fmt: skip
"""Rules every match of which starts with a member of their first gate group: it is their anchors too."""

ANCHORS: dict[str, tuple[str, ...]] = {name: GATES[name][0] for name in _ANCHORED_BY_GATE} | {
    "chat_template_token": ("<|", "[inst", "[/inst", "<<sys", "<</sys", "<start_of", "<end_of"),
    "end_of_data": ("end ",),
    "previous_void": ("previous ", "prior ", "earlier ", "above ", "old ", "original "),
    "ignore_the_above": ("ignore ", "disregard ", "forget "),
    "disable_safety": ("disable", "turn off", "deactivate", "remove", "bypass"),
    "new_instructions": ("your new ", "the new ", "new "),
    "temporal_switch": ("from now on", "starting now", "as of now", "ab jetzt", "a partir de ahora",
                        "à partir de maintenant", "d'ora in poi", "a partir de agora", "теперь ты", "从现在开始"),
    "persona_switch": ("you are now ", "you have been "),
    "act_as": ("act as", "pretend ", "roleplay as", "you are now"),
    "leak_preamble": (*_LEAK_VERBS, "what "),
    "address_as_the": ("as the ", "as a"),
    "address_processing": _AI_STARTS,
    "address_vocative": _AI_STARTS,
    "model_must": ("the ", "any ", "every ", "all ", *_AI_STARTS),
    "permission_grant": ("the ", "you are ", "has ", "have ", "grant ", *_AI_STARTS),
    "instructions_invalidated": ("your",),
    "instructions_outdated": ("earlier", "previous", "prior", "original", "initial", "old", "existing", "developer",
                              "system"),
    "overrides_all": ("override", "supersede", "replace", "take precedence", "takes precedence"),
    "exclusive_obedience": ("obey", "follow", "listen to", "take orders", "take instructions", "only "),
    "instructs_you": ("i ", "as the ", "as your "),
    "bracket_instructions": ("[",),
    "secrecy": ("do not ", "don't ", "never ", "without "),
    "dangerous_command": ("curl", "rm", "transfer_funds", "delete_repository", "download"),
    "authority_claim": ("instruction", "message", "note", "update", "notice", "override", "i am ", "openai",
                        "anthropic", "google", "comes from"),
}  # fmt: skip
"""Per rule, the literals every match starts with (see :meth:`Rule.finditer`), where that is faster than a scan.

The rules of :data:`_ANCHORED_BY_GATE` have their first gate group as anchors; not the rules that start at a
line start (``^``), which no literal marks."""

LINE_HEADS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "markdown_role_header": ("", ("##",)),
    "bare_role_line": ("*=#[-", ("system", "developer", "admin")),
    "role_label_prose": ("", ("system", "developer")),
    "transcript_turns": (None, ("human", "user", "assistant", "system")),
    "end_line": ("=-*#_<>[]|", ("end",)),
}
"""Per rule that starts at a line start (``^``), its *heads* and the *lead* before them.

Every match consists of a lead (characters of the lead class: whitespace or one of the given characters;
``None``: no lead at all), then one of the heads.  So a match starts at a line start from which only lead
characters run up to a head occurrence: those few line starts are tried instead of every line
(:func:`~tokenbox_core.defense.rules.line_starts_before`); a test pins each entry against its pattern."""
