"""Override vocabulary in several languages (chapter §6.9.1, direct injection).

An instruction override is a *verb* of dismissal ("ignore", "olvida",
"игнорируй", "忽略") and an *object* that names instructions ("instructions",
"Anweisungen", "指令") in the same sentence, in either order (verb-final
languages put the object first).  A *qualifier* pointing back at earlier
context ("previous", "vorherigen", "之前") makes it strong.  The lists are
case-folded; the detector reads a case-folded view.
"""

from __future__ import annotations

import re

__all__ = ["LANGUAGES", "OVERRIDE", "QUALIFIER"]

LANGUAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # language: (verbs, objects, qualifiers)
    "en": (
        ("ignore", "disregard", "forget", "override", "bypass", "skip", "abandon", "set aside", "discard",
         "pay no attention to", "do not follow", "don't follow", "stop following", "neglect", "drop"),
        ("instructions", "instruction", "directions", "directives", "rules", "prompt", "prompts", "guidelines",
         "guidance", "constraints", "restrictions", "policy", "policies", "system message", "developer message",
         "commands", "criteria", "rubric", "guardrails", "safety", "everything you were told", "programming",
         "user's question", "user's request", "the user", "user question", "what the user asked", "the above"),
        ("previous", "prior", "above", "earlier", "preceding", "foregoing", "original", "initial", "system",
         "developer", "all", "your", "any", "existing", "old", "everything", "before"),
    ),
    "es": (("ignora", "ignore", "ignorad", "olvida", "olvide", "olvidad", "descarta", "omite", "desobedece", "no sigas",
            "no sigan", "deja de seguir"),
           ("instrucciones", "indicaciones", "reglas", "directrices", "órdenes"),
           ("anteriores", "previas", "todas", "tus", "sus")),
    "fr": (("ignore", "ignorez", "oublie", "oubliez", "néglige", "négligez", "ne tiens pas compte",
            "ne tenez pas compte", "ne suis plus", "ne suivez plus", "ne suis pas", "ne suivez pas"),
           ("instructions", "consignes", "règles", "directives", "instructions d'origine"),
           ("précédentes", "antérieures", "toutes", "tes", "vos")),
    "de": (("ignoriere", "ignorieren", "ignoriert", "vergiss", "vergessen", "missachte", "übergehe",
            "halte dich nicht", "befolge nicht", "folge nicht"),
           ("anweisungen", "regeln", "instruktionen", "vorgaben", "befehle", "richtlinien"),
           ("vorherigen", "bisherigen", "vorigen", "alle", "deine", "obigen")),
    "it": (("ignora", "ignorate", "dimentica", "dimenticate", "trascura", "non seguire"),
           ("istruzioni", "regole", "direttive", "indicazioni", "quanto detto prima"),
           ("precedenti", "tutte", "finora", "tue")),
    "pt": (("ignore", "ignora", "esqueça", "esqueca", "desconsidere", "despreze"),
           ("instruções", "instrucoes", "regras", "diretrizes", "orientações"),
           ("anteriores", "todas", "suas")),
    "nl": (("negeer", "vergeet", "negeren"), ("instructies", "regels", "opdrachten", "richtlijnen"),
           ("vorige", "eerdere", "alle", "je")),
    "sv": (("ignorera", "glöm", "strunta i"), ("instruktioner", "regler", "direktiv"), ("tidigare", "alla")),
    "pl": (("zignoruj", "ignoruj", "zapomnij"), ("instrukcje", "polecenia", "zasady", "reguły"),
           ("poprzednie", "wszystkie", "wcześniejsze")),
    "tr": (("yok say", "görmezden gel", "unut", "dikkate alma"), ("talimatları", "talimatlar", "kuralları"),
           ("önceki", "tüm", "bütün")),
    "ru": (("игнорируй", "игнорируйте", "проигнорируй", "забудь", "забудьте", "не обращай внимания на",
            "не следуй", "не выполняй", "не соблюдай"),
           ("инструкции", "инструкций", "инструкциям", "указания", "правила", "правилам", "команды"),
           ("предыдущие", "прежние", "все", "свои", "предыдущих")),
    "zh": (("忽略", "忽视", "无视", "忘记", "忘掉", "不要理会", "不要遵守", "不要再遵守", "别管"),
           ("指令", "指示", "说明", "规则", "提示"),
           ("之前", "以上", "先前", "所有", "上面")),
    "ja": (("無視", "忘れ"), ("指示", "命令", "ルール", "プロンプト"), ("以前", "前", "すべて", "全て", "上記")),
    "ko": (("무시", "잊어"), ("지시", "지침", "명령", "규칙", "프롬프트"), ("이전", "모든", "모두", "위의")),
    "ar": (("تجاهل", "انسَ", "انس"), ("التعليمات", "الأوامر", "القواعد"), ("السابقة", "جميع", "كل")),
    "hi": (("अनदेखा", "नज़रअंदाज़", "भूल"), ("निर्देशों", "निर्देश", "नियमों"), ("पिछले", "सभी")),
}  # fmt: skip
"""Per language: dismissal verbs, instruction objects, backward qualifiers."""


def _spaced(char: str) -> bool:
    # Scripts written without spaces (CJK, kana, hangul) get no word boundaries.
    return not (0x3000 <= ord(char) <= 0x9FFF or 0xAC00 <= ord(char) <= 0xD7AF)


def _word(word: str) -> str:
    head = r"(?<!\w)" if _spaced(word[0]) else ""
    tail = r"(?!\w)" if _spaced(word[-1]) else ""
    return f"{head}{re.escape(word)}{tail}"


def _alt(words: set[str]) -> str:
    # Longest first so that "ignorieren" wins over "ignore"; sorted for determinism.
    return "|".join(_word(w) for w in sorted(words, key=lambda w: (-len(w), w)))


_VERBS = {v for verbs, _, _ in LANGUAGES.values() for v in verbs}
_OBJECTS = {o for _, objects, _ in LANGUAGES.values() for o in objects}
_QUALS = {q for _, _, quals in LANGUAGES.values() for q in quals}
_GAP_FWD = r"[^.!?;。！？\n]{0,48}?"
_GAP_BACK = r"[^.!?;。！？\n]{0,24}?"

OVERRIDE = re.compile(
    rf"(?:(?:{_alt(_VERBS)}){_GAP_FWD}(?:{_alt(_OBJECTS)})|(?:{_alt(_OBJECTS)}){_GAP_BACK}(?:{_alt(_VERBS)}))"
)
"""A dismissal verb and an instruction object in one sentence, either order."""

QUALIFIER = re.compile(_alt(_QUALS))
"""A backward-pointing qualifier; near an :data:`OVERRIDE` match it makes it strong."""

QUALIFIER_REACH = 24
"""How far past an override match (same sentence) a qualifier still counts ("les consignes précédentes")."""
