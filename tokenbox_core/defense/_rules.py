"""The pattern rules of the heuristic detector (chapter §6.9.1 threat classes).

A :class:`Rule` is a regular expression over the case-folded detection view
with a *family* and a *weight*.  Within a family only the strongest finding
counts; families combine as independent evidence (noisy-OR) in
:class:`~tokenbox_core.defense._detector.HeuristicDetector`.  *Linguistic*
rules read natural-language phrasing and are discounted when the phrase is
quoted or the text discusses attacks (a security advisory quoting "ignore
previous instructions"); *structural* rules (chat-template tokens, forged
boundaries, exfiltration URLs, smuggling) are never discounted.

Weights are calibrated so that one strong structural signal or a strong
override phrase crosses the default threshold (0.5) alone, while weak
signals (a role label, "from now on", "your new task") need company.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tokenbox_core.defense._gates import GATES, Literal

__all__ = ["CASED_RULES", "EXAMPLE", "META", "RULES", "Rule", "discusses_attacks", "introduces_example"]

_S = r"[^.!?;\n]"  # one character of the same sentence
_AI = (
    r"(?:ai|a\.i\.|llm|llms|language models?|assistants?|chatbots?|bots?|agents?|models?|gpt|chatgpt|claude|"
    r"gemini|copilot|automated agents?|ai[- ](?:assistants?|agents?|models?|systems?|reviewers?|bots?|tools?|"
    r"readers?|crawlers?|screeners?))"
)
_AI_BARE = (
    r"(?:ai|a\.i\.|llms?|language models|assistants|chatbots?|bots|agents|models|gpt|chatgpt|claude|gemini|copilot|"
    r"automated agents|ai[- ](?:assistants?|agents?|models?|systems?|reviewers?|bots?|tools?|readers?|crawlers?|"
    r"screeners?))"
)
"""Addressees that need no article: acronyms, names and plurals ("note to assistants", not "request for model")."""
_NOT_MODEL = (
    r"(?![ -](?:team|teams|department|group|lab|labs|community|researchers?|engineers?|staff|committee|unit|"
    r"division|company|companies|act|policy|policies|ethics|safety|research|industry|sector|market|strategy|"
    r"news|newsletter|conference|council|office|board|project|program|programme|course|class|club)\b)"
)
"""After an addressee: a word that makes it a group of people or a topic ("note to the AI team")."""
_SECRET_STRONG = (
    r"(?:(?:your|the|my)\s+(?:\w+\s+)?(?:system prompt|system message|initial (?:prompt|instructions)|"
    r"hidden (?:instructions|prompt|rules|message|configuration)|developer message|confidential instructions|"
    r"secret key|secrets|api[ _-]?keys?|passwords?|credentials)|(?:all (?:of )?)?your (?:\w+\s+)?(?:instructions|"
    r"rules|prompt|configuration|guidelines)|everything above|the text above|every instruction you|"
    r"instructions you (?:received|were given))"
)
_SECRET_WEAK = r"(?:system prompt|initial prompt|hidden instructions|secret key|api[ _-]?keys?|passwords?|credentials)"
_LEAK_VERB = (
    r"\b(?:reveal|print|show|output|repeat|display|dump|leak|disclose|share|list|give me|tell me|read me|"
    r"write out|recite|spell out|expose|send|return|summari[sz]e)\b"
)
_EXTERNAL = r"(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://\S+)"


@dataclass(frozen=True)
class Rule:
    """One detection pattern: name, family, weight in 0..1, and whether it is linguistic.

    ``gate`` makes the rule cheap on text it cannot match: groups of literal
    substrings, each group needing one member present, checked (for every
    rule at once, by the :class:`~tokenbox_core.defense._prefilter.Prefilter`)
    before the pattern runs.  A gate is a necessary condition of a match; a
    hypothesis property pins that.  ``lead``, when set, must match the few
    characters just before a match (a look-behind of varying width, which
    Python's ``re`` cannot express).  ``context``, when set, is a test of the
    match against the whole text, ``context(text, start, end)`` (the topic test
    of :mod:`~tokenbox_core.defense._detached`).
    """

    name: str
    family: str
    weight: float
    pattern: re.Pattern[str]
    linguistic: bool = True
    gate: tuple[tuple[str, ...], ...] = ()
    lead: re.Pattern[str] | None = None
    context: Callable[[str, int, int], bool] | None = None

    def opens(self, text: str) -> bool:
        """True when every gate group has a member in ``text``."""
        return all(any(Literal.parse(k).occurs(text) for k in group) for group in self.gate)


def _r(
    name: str, family: str, weight: float, pattern: str, *, linguistic: bool = True, lead: re.Pattern[str] | None = None
) -> Rule:
    return Rule(name, family, weight, re.compile(pattern, re.MULTILINE), linguistic, GATES[name], lead)


_VOCATIVE_LEAD = re.compile(r"(?:^|\n|[.!?:;,(\[]\s*|\b(?:hi|hey|hello|please),?\s+|@)$")
"""What comes just before an addressee spoken to ("AI, ignore ..."): a start, a punctuation mark, a greeting."""


RULES: tuple[Rule, ...] = (
    # Fake roles and chat-template tokens (role forgery).
    _r("chat_template_token", "template", 0.65,
       r"<\|(?:im_start|im_end|im_sep|system|user|assistant|developer|endoftext|begin_of_text|end_of_text|"
       r"start_header_id|end_header_id|eot_id|eom_id|fim_\w+|tool|ipython)\|>|\[/?inst\]|<</?sys>>|"
       r"<(?:start|end)_of_turn>", linguistic=False),
    _r("markdown_role_header", "role", 0.5,
       r"^\s*#{2,}\s*(?:system|instruction|instructions|response|developer)\s*:?\s*$", linguistic=False),
    _r("bare_role_line", "role", 0.45,
       r"^[\s*=#\[\-]*(?:system|system message|developer|admin)[\s*=#\]\-]*$", linguistic=False),
    _r("bracket_role", "role", 0.45,
       r"\[(?:system|system message|system notice|admin|developer)(?: message| note| notice)?\]", linguistic=False),
    _r("xml_role_tag", "role", 0.45,
       r"</?(?:system|system_policy|system_prompt|instructions|admin|developer)>", linguistic=False),
    _r("role_label_prose", "role", 0.4,
       r"^\s*(?:system|developer|system message|system notice)\s*:[ \t]*[a-z][^\n]{12,}", linguistic=False),
    _r("transcript_turns", "transcript", 0.3,
       r"^(?:human|user|assistant|system)\s*:[^\n]*\n(?:[^\n]*\n)?\s*(?:assistant|system|human)\s*:",
       linguistic=False),
    _r("json_role_system", "role", 0.3, r"[\"']role[\"']\s*:\s*[\"']system[\"']", linguistic=False),
    # Forged delimiters and boundaries.
    _r("boundary_marker", "delimiter", 0.65,
       r"<<<\s*/?\s*(?:end[_ -]*)?(?:section|untrusted|quarantine|boundary)", linguistic=False),
    _r("boundary_token", "delimiter", 0.4, r"boundary_[0-9a-f]{1,}\b", linguistic=False),
    _r("end_of_data", "delimiter", 0.45,
       r"\bend of (?:the )?(?:retrieved |tool |untrusted |search |user )?(?:documents?|context|data|results?|"
       r"tool (?:result|output)|input|content)\b|\bend (?:untrusted|tool) (?:data|input|output|result)",
       linguistic=False),
    _r("closing_data_tag", "delimiter", 0.45,
       r"</(?:document|documents|context|tool_output|tool_result|search_results|untrusted_input|data|retrieved|"
       r"evidence|user_input|untrusted)>", linguistic=False),
    _r("trusted_block_opening", "delimiter", 0.55,
       r"\b(?:begin|start)(?: of)? (?:the )?(?:system|trusted|developer|admin)(?: prompt| instructions| message| "
       r"section| policy)?\b", linguistic=False),
    _r("real_instructions", "authority", 0.4,
       r"\b(?:real|actual|true|trusted|authoritative|new) (?:system )?(?:instructions|policy|directives?)\b"
       r"(?:\s*\(authoritative\))?\s*(?:resume|follow|from|:|are|here)"),
    # Overrides that are not verb + object.
    _r("previous_void", "override", 0.5,
       r"\b(?:previous|prior|earlier|above|old|original) (?:instructions|directives|rules|system message|"
       r"prompt|guidelines)\s+(?:are|is|were|have been)\s+(?:now\s+)?(?:void|cancel+ed|revoked|obsolete|deprecated|"
       r"null|no longer (?:valid|apply|in effect))"),
    _r("ignore_the_above", "override", 0.55, r"\b(?:ignore|disregard|forget) (?:all of )?(?:the )?above\b"),
    _r("disable_safety", "override", 0.5,
       r"\b(?:disable|turn off|deactivate|remove|bypass)\s+(?:your |the |all )?(?:content |safety |moderation )?"
       r"(?:filters?|moderation(?: layer)?|guardrails|safety (?:rules|policy|guidelines|checks)|restrictions)"),
    _r("new_instructions", "new_task", 0.3,
       r"\b(?:your |the )?new (?:instructions|task|rules|directive|objective|goal|role|policy|system prompt)"
       r"(?: (?:is|are)|:| from|\s+[-–—]\s)"),
    _r("temporal_switch", "new_task", 0.25,
       r"\b(?:from now on|starting now|as of now|ab jetzt|a partir de ahora|à partir de maintenant|"
       r"d'ora in poi|a partir de agora|теперь ты|从现在开始)"),
    # Persona switches and jailbreak framing.
    _r("persona_switch", "persona", 0.45,
       r"\byou are now (?:in |an? |the )?(?:dan|developer mode|unrestricted|unfiltered|jailbroken|free|evil|"
       r"admin|maintenance mode|a pirate|different|updated|new)\b|\byou have been (?:updated|freed|unlocked)\b"),
    _r("mode_switch", "persona", 0.45,
       r"\b(?:developer|dan|god|admin|maintenance|debug|jailbreak|unrestricted|override) mode\b|\bjailbroken\b"),
    _r("act_as", "persona", 0.2, r"\b(?:act as|pretend (?:to be|you are)|roleplay as|you are now)\b"),
    _r("no_limits", "no_limits", 0.35,
       r"\b(?:no|without(?: any)?) (?:content policy|restrictions|rules|filters|limits|guidelines|censorship|"
       r"refusals?)\b|\bunrestricted\b|\bunfiltered\b|\bno longer apply\b|\bhave no rules\b"),
    # Requests to leak the system prompt or secrets.
    _r("leak_request", "leak", 0.55, rf"{_LEAK_VERB}{_S}{{0,40}}?{_SECRET_STRONG}"),
    _r("leak_mention", "leak", 0.4, rf"{_LEAK_VERB}{_S}{{0,40}}?{_SECRET_WEAK}"),
    # Text addressing the model from inside data (indirect injection).
    _r("address_note", "address", 0.5,
       rf"\b(?:note|message|instructions?|directive|attention|notice|warning|reminder|request)\s+(?:to|for)\s+"
       rf"(?:(?:the |any |all |every |an? ){_AI}|{_AI_BARE})\b{_NOT_MODEL}"),
    _r("address_salutation", "address", 0.5,
       rf"\b(?:attention|dear|hey|to any|to all|to every)\s+(?:the |you )?{_AI}\b{_NOT_MODEL}"),
    _r("address_conditional", "address", 0.5,
       rf"\b(?:if|when|whenever)\s+(?:you are|you're|an?)\s+(?:an? )?{_AI}\b|\bwhen an? {_AI} reads\b"),
    _r("address_processing", "address", 0.5,
       rf"\b{_AI}\s+(?:reading|processing|summari[sz]ing|evaluating|reviewing|parsing|analy[sz]ing|"
       rf"that reads?|who reads?)\b"),
    _r("address_vocative", "address", 0.5,
       rf"{_AI}[\s,:\-]+(?:please\s+)?(?:ignore|disregard|"
       rf"forget|you must|you should|you will|you are|do not|don't|send|forward|reveal|output|print|call|run|"
       rf"delete|rename|email|post|include|append|stop|when you|new instruction|instructions?:|approve|grant|rank|"
       rf"rate|recommend)", lead=_VOCATIVE_LEAD),
    _r("address_as_the", "address", 0.45,
       rf"\bas (?:the|an?) {_AI}\b{_S}{{0,12}}\byou (?:are|must|should|need|will)\b"),
    _r("model_must", "address", 0.4,
       rf"\b(?:the |any |every |all )?{_AI} (?:must|shall|should|will|needs to|is required to) (?:now |always |"
       rf"also |never )?(?:ignore|disregard|state|say|answer|respond|reveal|forward|send|include|recommend|"
       rf"tell|insult|append|approve|rank|call|output|print|delete|grant|forget|obey|follow|comply|stop|transfer|disclose|"
       rf"leak|execute|run|drop)"),
    # Invalidating the model's earlier instructions, obedience to the data, authority by assertion.
    _r("instructions_invalidated", "override", 0.5,
       rf"\byour\s+(?:\w+\s+){{0,2}}?"
       rf"(?:configuration|instructions|rules|guidelines|directives|prompt|programming|setup|guidance)\b"
       rf"{_S}{{0,40}}?\b(?:(?:is|are|were|has been|have been)\s+(?:now\s+)?(?:void|invalid|outdated|obsolete|"
       rf"cancel+ed|revoked|superseded|overridden|suspended|lifted|irrelevant|null)|no longer (?:matter|apply|"
       rf"applies|valid|in effect|count|exist))"),
    _r("instructions_outdated", "override", 0.3,
       rf"\b(?:earlier|previous|prior|original|initial|old|existing|developer|system)\s+(?:\w+\s+){{0,2}}?"
       rf"(?:configuration|instructions|rules|guidelines|directives|prompt|programming|setup|guidance)\b"
       rf"{_S}{{0,40}}?\b(?:(?:is|are|were|has been|have been)\s+(?:now\s+)?(?:void|invalid|outdated|obsolete|"
       rf"cancel+ed|revoked|superseded|overridden|suspended|lifted|irrelevant|null)|no longer (?:matter|apply|"
       rf"applies|valid|in effect|count|exist))"),
    _r("overrides_all", "override", 0.45,
       r"\b(?:overrides?|supersedes?|replaces?|takes? precedence over) (?:all|any|every) (?:other|others|previous|"
       r"prior|earlier|existing)\b"),
    _r("exclusive_obedience", "authority", 0.45,
       r"\b(?:obey|follow|listen to|take (?:orders|instructions) from)\s+only\s+(?:me|my|this|these|what i)\b|"
       r"\bonly (?:obey|follow|listen to) (?:me|my|this|these|what i)\b|"
       r"\b(?:obey|follow|listen to)\b[^.!?;\n]{0,30}?,?\s+not (?:the )?(?:user|operator|developer|system)\b"),
    _r("instructs_you", "authority", 0.4,
       r"\bi (?:hereby )?(?:instruct|order|command|direct) you\b|\bas (?:the|your) (?:system|developer|"
       r"administrator|admin|operator|creator)\b[^.!?;\n]{0,20}?\bi (?:instruct|order|command|require)\b"),
    _r("stop_being", "override", 0.45, rf"\bstop being (?:a |an |the |your )?(?:\w+ )?{_AI}\b"),
    _r("leak_preamble", "leak", 0.55,
       rf"{_LEAK_VERB}{_S}{{0,40}}?\b(?:text|message|messages|words|content|everything|instructions)\b{_S}{{0,30}}?"
       rf"\b(?:before|above|prior to) (?:my|this|the|our) (?:first |opening )?(?:message|question|turn|input|"
       rf"conversation|chat)|\bwhat (?:were|are|have) you (?:been )?(?:told|instructed|asked|programmed|configured) "
       rf"(?:to (?:keep secret|keep (?:it )?hidden|hide|never (?:reveal|say|tell|share))|not to (?:say|reveal|tell|"
       rf"share))"),
    _r("money_transfer", "tool_action", 0.35,
       r"\b(?:transfer|wire|send|pay)\s+(?:[$€£]\s?)?\d[\d,.]*\s*(?:\w+\s+)?(?:to|into)\s+(?:the\s+)?"
       r"(?:account|iban|wallet|bank account)"),
    # Forged delimiters on their own line ("-----END DOCUMENT-----", "[INSTRUCTIONS]").
    _r("end_line", "delimiter", 0.45,
       r"^[\s=\-*#_<>\[\]|]*end(?: of)?(?: the)? (?:document|data|context|input|content|article|file|text|"
       r"results?|email|page|tool output)s?[\s=\-*#_<>\[\]|]*$", linguistic=False),
    _r("bracket_instructions", "role", 0.45, r"\[/?(?:new |system |hidden |real )?instructions?\]",
       linguistic=False),
    # Side effects and secrecy the user should not see.
    _r("secrecy", "secrecy", 0.3,
       r"\b(?:do not|don't|never) (?:tell|inform|notify|alert|mention (?:this|it) to) (?:the )?(?:user|anyone|"
       r"them)\b|\bwithout (?:telling|asking|informing|notifying) (?:the )?user\b|\b(?:do not|don't|never) "
       r"mention (?:it|this)(?: comment)?\b|\bwithout (?:asking|(?:user )?confirmation)\b"),
    _r("exfil_action", "exfil_action", 0.35,
       r"\b(?:send|forward|email|post|upload|transmit|leak|exfiltrate|share)\b[^.!?;\n]{0,40}?\b(?:the )?"
       r"(?:user's|users'|conversation|chat (?:history|log)|history|messages|emails|password|credentials|"
       r"api key|session token|private|customer data|confidential)"),
    _r("send_external", "exfil_action", 0.35,
       rf"\b(?:send|forward|email|post|upload|transmit|mail)\b[^.!?;\n]{{0,60}}?\bto\s+{_EXTERNAL}"),
    _r("permission_grant", "authority", 0.4,
       rf"\b(?:the )?{_AI} (?:is|are) now (?:authori[sz]ed|allowed|permitted|free|required|in \w+ mode)\b|"
       rf"\byou are (?:now )?(?:authori[sz]ed|allowed|permitted) to\b|\b(?:has|have) authori[sz]ed you\b|"
       rf"\bgrant (?:\w+ )?(?:admin|root|full|elevated) (?:access|rights|privileges)\b"),
    _r("dangerous_tool", "tool_action", 0.35,
       r"\b(?:call|invoke|use|run|execute)\s+(?:the\s+)?[`']?\w+[`']?\s+(?:tool|function)\b"),
    _r("dangerous_command", "tool_action", 0.35,
       r"curl[^|\n]{0,80}\|\s*(?:ba)?sh\b|rm\s+-rf\b|(?:transfer_funds|delete_repository)\b|"
       r"download\b[^.\n]{0,40}\.(?:exe|msi|apk|dmg|scr|bat|ps1)\b"),
    _r("authority_claim", "authority", 0.25,
       r"\b(?:instructions?|message|note|update|notice|override) from (?:the )?(?:developer|operator|openai|"
       r"anthropic|administrator|admin|system)\b|\bi am (?:your|the) (?:developer|creator|admin|operator|owner)\b|"
       r"\b(?:openai|anthropic|google) staff\b|\bcomes from the (?:developer|operator|system)\b"),
)  # fmt: skip
"""Rules over the case-folded view."""

CASED_RULES: tuple[Rule, ...] = (
    _r("dan_persona", "persona", 0.4, r"\bDAN\b|\bDo Anything Now\b"),
    _r("shouted_directive", "new_task", 0.3,
       r"\b(?:IMPORTANT|URGENT|ATTENTION|NOTICE)\b[^\n]{0,20}\b(?:INSTRUCTION|NOTE|SYSTEM)"),
    _r("shouted_override", "authority", 0.4,
       r"\b(?:SYSTEM|ADMIN|ADMINISTRATOR|DEVELOPER|SECURITY|EMERGENCY|ROOT)\s+(?:OVERRIDE|DIRECTIVE|COMMAND|"
       r"INSTRUCTION)S?\b"),
)  # fmt: skip
"""Rules that need the original case (an acronym, shouting)."""

META = re.compile(
    r"\bprompt injections?\b|\bjailbreaks\b|\ba (?:classic )?jailbreak\b|\bjailbreak (?:prompts?|attempts?)\b|"
    r"\bred[- ]team|\bpen-?test|\bpayloads?\b|\bcve-\d|\bowasp\b|\bresearchers\b|\bthreat model|"
    r"\b(?:security )?advisory\b|\bmitigations?\b|\bincident report|\bdetector\b|\bleakage\b|\bguardrails?\b|"
    # The same signs in the detector's other languages: "prompt injection".
    r"inyección de (?:prompts?|instrucciones)|injection de (?:prompts?|commandes)|prompt-injektion|injeção de prompts?|"
    r"iniezione di prompt|инъекци\w* промпт\w*|промпт-инъекци|提示(?:词)?注入|"
    r"プロンプトインジェクション|프롬프트 인젝션|प्रॉम्प्ट इंजेक्शन"
)
"""Signs that a whole text is about attacks (an advisory, a paper, a detector's docs) rather than performing one."""
EXAMPLE = re.compile(
    r"\bsuch as\b|\bfor example\b|\bfor instance\b|\be\.g\.|\bphrases? like\b|\bthe paper\b|\blike this\b|"
    r"por ejemplo|par exemple|zum beispiel|por exemplo|ad esempio|например|例如|例えば|예를 들어|उदाहरण"
)
"""Signs that what follows is an example given, not an instruction: they count only just before a finding."""
EXAMPLE_REACH = 150
"""Characters before a finding where :data:`EXAMPLE` introduces it ("phrases such as 'ignore previous ...'")."""


def discusses_attacks(low: str) -> bool:
    """True when the case-folded ``low`` discusses attacks rather than performing one (:data:`META`)."""
    return META.search(low) is not None


def introduces_example(low: str, offset: int) -> bool:
    """True when an :data:`EXAMPLE` sign stands within :data:`EXAMPLE_REACH` characters before ``offset``.

    "For example" somewhere in a document says nothing about an instruction three paragraphs later: an attack
    could append it to launder itself.  Only an example sign just before a finding discounts it.

    >>> low = "filters catch phrases such as 'ignore previous instructions'."
    >>> introduces_example(low, low.index("ignore")), introduces_example("x" * 200 + " such as " + "y" * 200, 400)
    (True, False)
    """
    return EXAMPLE.search(low, max(0, offset - EXAMPLE_REACH), offset) is not None
