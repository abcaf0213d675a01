"""Injection structures in the detector's other languages (issue 27; English ones: :mod:`._structure`).

Per language, the same four structures the English rules read, written from
each language's grammar rather than from attack samples: the reader spoken to
as the AI ("Asistente, ...", "このレビューを読んでいるAIへ"), a new identity
("ya no eres", "ab jetzt bist du"), a new sole task ("tu única tarea ahora
es"), and a request for the system prompt ("muestra tu prompt del sistema").
Overrides ("olvida todo lo anterior") are the lexicon's
(:mod:`~tokenbox_core.defense._lexicon`).  Patterns read the case-folded view.
"""

# ruff: noqa: E501 - the patterns' CJK, Hangul and kana characters count double against the line length.
from __future__ import annotations

import re
from typing import Any

from tokenbox_core.defense._rules import Rule

__all__ = ["MULTILINGUAL_RULES"]

_TABLE: dict[str, dict[str, tuple[Any, ...]]] = {
    # language: structure -> (pattern, gate groups: a member of each is in every match)
    "es": {
        "address": (r"(?:^|[.!?:] )(?:atención,? )?(?:asistente|ia|modelo|agente|chatbot)\s*[,:]\s*(?:a partir de ahora|"
                    r"ahora|ignora|olvida|tu |eres |debes |no )|\b(?:la ia|el asistente|el modelo) que (?:lea|lee|está "
                    r"leyendo|procese|resuma) est", (r"\basistente\b", r"\bia\b", r"\bmodelo\b", r"\bagente\b", r"\bchatbot\b"),
                   ("ahora", "ignora", "olvida", r"\btu ", "eres ", "debes ", r"\bno ", " que ")),
        "role": (r"\bya no eres\b|\ba partir de ahora (?:eres|serás|actúas como|vas a ser)\b|\bahora eres (?:un|una)\b",
                 ("ya no eres", "a partir de ahora", "ahora eres")),
        "task": (r"\btu (?:única|nueva|verdadera|real) (?:tarea|misión|función|instrucción)(?: ahora)? (?:es|será|:)",
                 ("tu única", "tu nueva", "tu verdadera", "tu real")),
        "leak": (r"\b(?:muestra|revela|imprime|repite|dime|escribe|traduce|copia)\b[^.!?\n]{0,30}\b(?:tu|tus|el|las) "
                 r"(?:prompt|mensaje|instrucciones) (?:del|de) sistema", ("sistema",)),
    },
    "pt": {
        "address": (r"(?:^|[.!?:] )(?:atenção,? )?(?:assistente|ia|modelo|agente|chatbot)\s*[,:]\s*(?:a partir de agora|"
                    r"agora|ignore|esqueça|você |seu |sua |não )|\b(?:a ia|o assistente|o modelo) que (?:ler|lê|está "
                    r"lendo|processar|resumir) est", (r"\bassistente\b", r"\bia\b", r"\bmodelo\b", r"\bagente\b", r"\bchatbot\b"),
                   ("agora", "ignore", "esqueça", "você ", r"\bseu ", r"\bsua ", "não ", " que ")),
        "role": (r"\b(?:você|tu) não é mais\b|\ba partir de agora (?:você é|és|você será|você vai ser)\b",
                 ("não é mais", "a partir de agora")),
        "task": (r"\bsua (?:única|nova|verdadeira) (?:tarefa|missão|função|instrução)(?: agora)? (?:é|será|:)",
                 ("sua única", "sua nova", "sua verdadeira")),
        "leak": (r"\b(?:mostre|revele|imprima|repita|diga|escreva|traduza|copie)\b[^.!?\n]{0,30}\b(?:seu|suas|o|as) "
                 r"(?:prompt|mensagem|instruções) (?:do|de) sistema", ("sistema",)),
    },
    "fr": {
        "address": (r"(?:^|[.!?:] )(?:attention,? )?(?:assistant|ia|modèle|agent|chatbot)\s*[,:]\s*(?:à partir de "
                    r"maintenant|désormais|maintenant|ignore|oublie|tu |ta |ton |vous |envoie |ne )|\b(?:l'ia|l'assistant|"
                    r"le modèle) qui (?:lit|lira|traite|résume) ce", (r"\bassistant\b", r"\bia\b", r"\bmodèle\b", r"\bagent\b", r"\bchatbot\b"),
                   ("maintenant", "désormais", "ignore", "oublie", r"\btu ", r"\bta ", r"\bton ", "vous ", "envoie ",
                    r"\bne ", " qui ")),
        "role": (r"\btu n'es plus\b|\bvous n'êtes plus\b|\b(?:à partir de maintenant|désormais),? (?:tu es|vous êtes|tu "
                 r"seras|tu ne réponds plus)\b", ("n'es plus", "n'êtes plus", "à partir de maintenant", "désormais")),
        "task": (r"\b(?:ta|votre) (?:seule|unique|nouvelle|vraie|véritable) (?:tâche|mission|instruction)(?: maintenant)? "
                 r"(?:est|sera|:)", ("seule", "unique", "nouvelle", "vraie", "véritable")),
        "leak": (r"\b(?:affiche|révèle|montre|imprime|répète|dis-moi|écris|traduis|copie)\b[^.!?\n]{0,30}\b(?:ton|tes|votre|"
                 r"vos|le|les) (?:prompt|message|instructions|consignes) (?:du )?système", ("système",)),
    },
    "de": {
        "address": (r"(?:^|[.!?:] )(?:achtung,? )?(?:assistent|ki|modell|agent|chatbot)\s*[,:]\s*(?:ab jetzt|ab sofort|"
                    r"ignoriere|vergiss|du |deine |gib |sende |nicht )|\b(?:die ki|der assistent|das modell),? (?:die|der|"
                    r"das) (?:dies|diesen|diese) (?:liest|verarbeitet|zusammenfasst)", (r"\bassistent\b", r"\bki\b",
                    r"\bmodell\b", r"\bagent\b", r"\bchatbot\b"), ("ab jetzt", "ab sofort", "ignoriere", "vergiss", r"\bdu ",
                                                                "deine ", r"\bgib ", "sende ", "nicht ", r"\bdie", r"\bder", r"\bdas")),
        "role": (r"\bdu bist (?:ab jetzt |ab sofort |nun |jetzt )?(?:kein|keine)\b[^.!?\n]{0,40}\bmehr\b|\b(?:ab jetzt|ab "
                 r"sofort|von nun an) bist du\b", ("du bist", "bist du")),
        "task": (r"\bdeine (?:einzige|neue|eigentliche|wahre) aufgabe(?: ist)?(?: jetzt| ab jetzt| nun)? (?:ist|:|lautet)",
                 ("deine einzige", "deine neue", "deine eigentliche", "deine wahre")),
        "leak": (r"\b(?:gib|zeig|zeige|nenne|wiederhole|drucke|übersetze|schreibe|kopiere)\b[^.!?\n]{0,40}\b"
                 r"(?:system(?:anweisungen|prompt|nachricht)|anfangsanweisungen|deinen prompt|deine anweisungen)",
                 ("systemanweisung", "systemprompt", "systemnachricht", "anfangsanweisung", "deinen prompt",
                  "deine anweisungen")),
    },
    "it": {
        "role": (r"\bnon sei più\b|\bda (?:ora|adesso) in (?:poi|avanti) (?:sei|sarai)\b", ("non sei più", "da ora",
                                                                                             "da adesso")),
        "task": (r"\bil tuo (?:unico|nuovo|vero) (?:compito|obiettivo)(?: ora)? (?:è|sarà|:)", ("il tuo unico",
                                                                                          "il tuo nuovo", "il tuo vero")),
        "leak": (r"\b(?:mostra|rivela|stampa|ripeti|dimmi|scrivi|traduci)\b[^.!?\n]{0,30}\b(?:il tuo|le tue|il|le) "
                 r"(?:prompt|messaggio|istruzioni) (?:di|del) sistema", ("sistema",)),
    },
    "nl": {
        "role": (r"\bje bent (?:nu )?geen\b[^.!?\n]{0,40}\bmeer\b|\bvanaf nu ben je\b", ("je bent", "vanaf nu")),
        "task": (r"\bje (?:enige|nieuwe|echte) (?:taak|opdracht)(?: nu)? is\b", ("je enige", "je nieuwe", "je echte")),
    },
    "ru": {
        "address": (r"(?:^|[.!?:] )(?:внимание,? )?(?:ассистент|ии|модель|бот|агент|нейросеть)\s*[,:]\s*(?:теперь|"
                    r"отныне|игнорируй|забудь|твоя|ты |покажи|отправь|не )|\b(?:ии|ассистент|модель),? (?:который|"
                    r"которая) (?:читает|обрабатывает) (?:это|этот|эту)", ("ассистент", "ии", "модель", "бот", "агент",
                                                                          "нейросеть")),
        "role": (r"\bты больше не\b|\b(?:теперь|отныне|с этого момента) ты\b", ("ты больше не", "теперь ты", "отныне ты",
                                                                               "момента ты")),
        "task": (r"\b(?:теперь )?твоя (?:единственная|новая|настоящая|главная) (?:задача|цель|инструкция)\b",
                 ("твоя единственная", "твоя новая", "твоя настоящая", "твоя главная")),
        "leak": (r"\b(?:покажи|раскрой|выведи|напечатай|повтори|скажи|напиши|переведи)\b[^.!?\n]{0,30}"
                 r"(?:системн\w+ (?:промпт|сообщени\w+|инструкци\w+)|свой промпт|свои инструкции)",
                 ("системн", "свой промпт", "свои инструкции")),
    },
    "zh": {
        "address": (r"(?:ai|人工智能|助手|模型|机器人)(?:助手)?(?:请)?注意|(?:致|给)(?:正在)?(?:阅读|处理)(?:本|这)\S{0,6}(?:的)?"
                    r"(?:ai|人工智能|助手|模型)|(?:正在)?(?:阅读|处理|总结)(?:本|这)\S{0,6}的(?:ai|人工智能|助手|模型)",
                    ("ai", "人工智能", "助手", "模型", "机器人"), ("注意", "阅读", "处理", "总结")),
        "role": (r"你(?:不再|已经不)是|(?:从现在(?:开始|起)|从此)(?:，|,)?你(?:是|将是|就是|扮演)", ("不再是", "已经不是",
                                                                                    "从现在", "从此")),
        "task": (r"你(?:现在)?(?:唯一|真正|新)的(?:任务|工作|目标|指令)(?:是|：|:)", ("唯一的", "真正的", "新的")),
        "leak": (r"(?:输出|显示|打印|泄露|告诉我|重复|翻译|给出)(?:你的)?(?:系统提示|系统提示词|系统消息|系统指令|初始指令|提示词)",
                 ("系统提示", "系统消息", "系统指令", "初始指令", "提示词")),
    },
    "ja": {
        "address": (r"(?:読んでいる|処理している|要約している)(?:ai|人工知能|アシスタント|モデル|エージェント)(?:へ|に|は|さん)|"
                    r"(?:ai|アシスタント|モデル)(?:へ|さん)(?:：|:|、)", ("読んでいる", "処理している", "要約している", "へ：",
                                                                  "へ:", "へ、", "さん")),
        "role": (r"(?:あなたは)?もう\S{0,12}ではありません|(?:今から|これから|今後)(?:、)?あなたは", ("ではありません", "今から",
                                                                                   "これから", "今後")),
        "task": (r"あなたの(?:唯一の|本当の|新しい)?(?:任務|タスク|仕事|目的)は", ("あなたの",)),
        "void": (r"(?:これまでの|以前の|上記の|前の)(?:指示|命令|ルール|プロンプト)は(?:すべて|全て)?(?:無効|取り消|廃止)",
                 ("無効", "取り消", "廃止")),
        "leak": (r"(?:システムプロンプト|システムメッセージ|初期指示|隠された指示)を(?:表示|出力|教えて|見せて|繰り返|翻訳)",
                 ("システムプロンプト", "システムメッセージ", "初期指示", "隠された指示")),
    },
    "ko": {
        "role": (r"(?:당신은|너는) 더 이상\S*\s?\S*(?:아니|아닙니다)|(?:지금부터|이제부터|앞으로) (?:당신은|너는)",
                 ("더 이상", "지금부터", "이제부터", "앞으로")),
        "task": (r"(?:당신|너)의 (?:유일한|진짜|새로운) (?:임무|작업|목표|지시)는", ("유일한", "진짜", "새로운")),
        "leak": (r"시스템 ?(?:프롬프트|메시지|지시)를? ?(?:보여|출력|알려|반복|번역)", ("시스템",)),
    },
    # Turkish: "artık bir asistan değilsin" (no longer), "tek görevin" (your only task), "sistem istemini göster".
    "tr": {
        "role": (r"\bartık\b[^.!?\n]{0,30}\bdeğilsin(?:iz)?\b|\b(?:bundan sonra|şu andan itibaren),? sen\b",
                 ("değilsin", "bundan sonra", "şu andan itibaren")),
        "task": (r"\b(?:tek|yeni|asıl|gerçek) görevin(?:iz)?\b", ("görevin",)),
        "leak": (r"\bsistem (?:istem|prompt|komut|talimat|mesaj)\w*[^.!?\n]{0,20}?\b(?:göster|tekrarla|paylaş|açıkla|"
                 r"çevir|ver|söyle|yazdır)", ("sistem",)),
    },
    "ar": {
        "role": (r"أنت لم تعد|لست بعد الآن|من الآن فصاعدا،? ?أنت|أنت الآن (?:مساعد|نموذج|بوت|روبوت|وكيل)",
                 ("لم تعد", "لست بعد", "فصاعدا", "أنت الآن")),
        "task": (r"مهمتك (?:الوحيدة|الجديدة|الحقيقية)", ("مهمتك",)),
        "leak": (r"(?:اكشف|أظهر|اعرض|اطبع|كرر|ترجم|أخبرني)[^.!?\n]{0,30}?(?:موجه النظام|رسالة النظام|تعليمات النظام|"
                 r"تعليماتك الأولية)", ("النظام", "الأولية")),
    },
    "hi": {
        "role": (r"अब (?:तुम|आप) (?:एक )?\S+ नहीं (?:हो|हैं)|(?:अब से|आज से) (?:तुम|आप)", ("नहीं", "अब से", "आज से")),
        "task": (r"(?:आपका|तुम्हारा) (?:एकमात्र|एक मात्र|नया|असली) (?:काम|कार्य|लक्ष्य)", ("आपका", "तुम्हारा")),
        "leak": (r"(?:सिस्टम प्रॉम्प्ट|सिस्टम संदेश|सिस्टम निर्देश|प्रारंभिक निर्देश)[^।.!?\n]{0,30}?(?:दिखा|बता|प्रिंट|"
                 r"दोहरा|अनुवाद)", ("सिस्टम", "प्रारंभिक")),
    },
}  # fmt: skip
"""Per language and structure, the pattern and its gate."""

_FAMILY = {"address": ("address", 0.5), "role": ("persona", 0.45), "task": ("new_task", 0.45),
           "leak": ("leak", 0.55), "void": ("override", 0.5)}  # fmt: skip

MULTILINGUAL_RULES: tuple[Rule, ...] = tuple(
    Rule(f"{kind}_{lang}", _FAMILY[kind][0], _FAMILY[kind][1], re.compile(entry[0], re.MULTILINE), True, entry[1:])
    for lang, kinds in _TABLE.items()
    for kind, entry in kinds.items()
)
"""One rule per language and structure (``role_es``, ``leak_ja``, ...)."""
