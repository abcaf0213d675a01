"""Build ``benchmarks/data/injection/public.jsonl`` (git-ignored) from public repositories, for bench_injection_heldout.

Run on purpose: ``python benchmarks/prep_injection_data.py SOURCES`` where ``SOURCES`` is a directory holding one git
repository (a clone, or a bare ``git clone --mirror``) per source, named ``owner+name`` (``owner+name/repo`` is read
too).  Every file is read with ``git show COMMIT:path`` at the commit pinned below, so the same sources give the same
bytes; nothing here touches the network.  The data is not committed: it is third parties' text under their licences.

Sources (attacks are label 1, benign text label 0):

- ``microsoft+BIPIA`` (MIT): indirect injections; BIPIA's text and code attack instructions inserted as BIPIA inserts
  them (on a line of their own at the start, at a sentence start in the middle, or at the end of a context) into
  its emails and tables, or its Stack Overflow code answers; and those contexts clean.
- ``yunwei37+satml-llmail-injection`` (MIT): attacker emails for the LLMail-Inject challenge, several languages.
- ``meta-llama+PurpleLlama`` (``CybersecurityBenchmarks``, MIT): CyberSecEval's prompt-injection test inputs, English
  and machine-translated into 17 languages; ``cse-indirect`` are documents with an injection inside (code, web pages,
  tables, reviews), ``cse-direct`` are messages written to the model.  An item's key is its English original, so a
  translation is in the same split as its source.
- ``OWASP+www-project-top-10-for-large-language-model-applications`` (CC BY-SA 4.0): prose that discusses injection,
  English and nine translations, 1.5 KB chunks.
- ``python+python-docs-<lang>`` (PSF / CC0 translations of CPython's documentation): the tutorial and the library
  reference translated, 1.5 KB chunks of translated paragraphs: benign documentation per language (second person,
  imperatives, "ignore" and "instructions" in their ordinary senses).
- ``reactjs+<lang>.react.dev`` (CC BY 4.0): React's "Learn" pages translated into Arabic, Bengali, Italian and
  Vietnamese (languages the Python translations lack), prose without its code blocks, chunks that are mostly in the
  language (untranslated pages are skipped): a tutorial speaking to its reader in the second person.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "injection" / "public.jsonl"
PINS = {
    "microsoft+BIPIA": "1a2a91da6bb12838e05d1b2e54d98e2f37b835f3",
    "yunwei37+satml-llmail-injection": "360613b492c5a4e8f9297b32adc819f0aa27210a",
    "OWASP+www-project-top-10-for-large-language-model-applications": "020595761a4b7b0c3f9cf01a0457b78f9f1e7f9c",
    "meta-llama+PurpleLlama": "4be64c3a24442b51c76175e6ec67722cc3f5fe38",
    "python+python-docs-fr": "b279d876e2a3381605d38ea62b863f60abadc92c",
    "python+python-docs-es": "91f4ccc0baa8c7cbeb739e696c641388264caa30",
    "python+python-docs-tr": "be1c5a492f430197f4f23bd679d5f65dab68866a",
    "python+python-docs-ja": "7eb90aaa6d3395bcfe01801ceb5e620eedf2356a",
    "python+python-docs-zh-cn": "693cf6be2bc17f3d50ee21fe207c6964f3fab130",
    "python+python-docs-pt-br": "a30c8afdb1c680f97abe22485d4e599c6bf68480",
    "python+python-docs-ko": "d0c58403de225366b23d0cafd8b86508186c8c8a",
    "python+python-docs-id": "425c128cb515ab3eb7567c5cb1060e316a49ce5d",
    "reactjs+ar.react.dev": "5a263fdf83412db827ed8ef8d816613aba49df85",
    "reactjs+bn.react.dev": "083991875f6dcf7114358e7f791bbb7a2be8da57",
    "reactjs+it.react.dev": "8bd188a0e13e4d834874770af0616037365347dc",
    "reactjs+vi.react.dev": "b149357cfb8ae87f02ef108132114e5641d5c16f",
}
CHUNK = 1_500
DOC_CHUNKS = 60
"""Chunks of translated documentation kept per language (chosen by hash)."""
LLMAIL_LANGS = {"arabic": "ar", "hindi": "hi", "japanese": "ja", "russian": "ru", "turkish": "tr", "vietnamese": "vi",
                "amharic": "am", "khmer": "km", "lao": "lo", "nepali": "ne", "swahili": "sw", "thai": "th",
                "urdu": "ur"}  # fmt: skip
CSE_LANGS = {"English": "en", "Hindi": "hi", "Bengali": "bn", "Turkish": "tr", "Arabic": "ar", "Italian": "it",
             "Spanish": "es", "Vietnamese": "vi", "French": "fr", "Russian": "ru", "Filipino/Tagalog": "tl",
             "Portuguese": "pt", "Japanese": "ja", "Korean": "ko", "German": "de", "Chinese": "zh", "Indonesian": "id",
             "Thai": "th"}  # fmt: skip
OWASP_LANGS = {"": "en", "de-DE": "de", "es-ES": "es", "hi-IN": "hi", "ja-JP": "ja", "ko-KR": "ko", "pt-BR": "pt",
               "ru-RU": "ru", "zh-CN": "zh", "zh-TW": "zh", "el-GR": "el"}  # fmt: skip


class Sources:
    """The pinned repositories under one directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _git_dir(self, name: str) -> Path:
        for path in (self.root / name / "repo", self.root / name):
            if path.is_dir():
                return path
        raise SystemExit(f"{name} is missing under {self.root}: clone github.com/{name.replace('+', '/')} there")

    def show(self, name: str, path: str) -> str:
        done = subprocess.run(["git", "-C", str(self._git_dir(name)), "show", f"{PINS[name]}:{path}"],
                              capture_output=True, check=False)  # fmt: skip
        if done.returncode:
            raise SystemExit(f"{name}: {done.stderr.decode().strip()} (needs commit {PINS[name]})")
        return done.stdout.decode("utf-8")

    def ls(self, name: str, prefix: str) -> list[str]:
        command = ["git", "-C", str(self._git_dir(name)), "ls-tree", "-r", "--name-only", PINS[name]]
        out = subprocess.run(command + ([prefix] if prefix else []), capture_output=True, check=True).stdout.decode()
        return sorted(out.split())

    def jsonl(self, name: str, path: str) -> list[Any]:
        return [json.loads(line) for line in self.show(name, path).splitlines() if line.strip()]


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _insert(context: str, attack: str, where: str, seed: int) -> str:
    """BIPIA's insertion: the attack on a line of its own at the start, the end, or a sentence start in between."""
    if where == "end":
        return "\n".join([context, attack])
    if where == "start":
        return "\n".join([attack, context])
    starts = [0] + [m.end() for m in re.finditer(r"[.!?]\s+(?=[A-Z])", context)]
    k = starts[seed % len(starts)]
    return "\n".join([context[:k], attack, context[k:]])


def _chunks(paragraphs: list[str]) -> list[str]:
    out, chunk = [], ""
    for para in paragraphs:
        if len(chunk) + len(para) > CHUNK and chunk:
            out.append(chunk)
            chunk = ""
        chunk += para + "\n\n"
    if chunk.strip():
        out.append(chunk)
    return out


_PO_STR = re.compile(r'^msgstr ((?:"(?:[^"\\]|\\.)*"\n?)+)', re.MULTILINE)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`!?~?([^`<]*?)(?: <[^>]*>)?`")


def _unescape(text: str) -> str:
    """A gettext string's C escapes undone."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _po_paragraphs(po: str) -> list[str]:
    """The translated paragraphs of a gettext catalogue, reST roles reduced to their text."""
    out = []
    for block in _PO_STR.findall(po):
        text = "".join(_unescape(part[1:-1]) for part in re.findall(r'"(?:[^"\\]|\\.)*"', block))
        text = _ROLE.sub(r"\1", text).replace("``", "").strip()
        if len(text) >= 40 and not text.startswith("Project-Id-Version"):
            out.append(text)
    return out


def _section(path: str) -> str:
    """A catalogue's documentation section: ``tutorial/x.po``, Transifex's ``python-newest.tutorial--x/id.po``."""
    return path.removeprefix("python-newest.").split("/")[0].split("--")[0]


def build(src: Sources) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(corpus: str, lang: str, label: int, kind: str, text: str, key: str) -> None:
        rows.append({"corpus": corpus, "lang": lang, "label": label, "kind": kind, "text": text, "key": key})

    bipia = "microsoft+BIPIA"
    emails = [r["context"] for p in ("email/train", "email/test") for r in src.jsonl(bipia, f"benchmark/{p}.jsonl")]
    tables = [r["context"] for p in ("table/train", "table/test") for r in src.jsonl(bipia, f"benchmark/{p}.jsonl")]
    tables = sorted(set(tables), key=_h)[:200]
    codes = [
        "\n".join(r["context"]) for p in ("code/train", "code/test") for r in src.jsonl(bipia, f"benchmark/{p}.jsonl")
    ]
    for c in sorted(set(emails)):
        add("bipia-email", "en", 0, "email", c, c)
    for c in tables:
        add("bipia-table", "en", 0, "table", c, c)
    for c in sorted(set(codes)):
        add("bipia-code", "en", 0, "code", c, c)
    contexts = sorted(set(emails)) + tables
    codes_sorted = sorted(set(codes))
    for corpus, stem, pool in (("bipia-text-attack", "text", contexts), ("bipia-code-attack", "code", codes_sorted)):
        for part in ("train", "test"):
            for cat, attacks in json.loads(src.show(bipia, f"benchmark/{stem}_attack_{part}.json")).items():
                for a in attacks:
                    for k, where in enumerate(("start", "middle", "end")):
                        ctx = pool[(_h(a) + 7 * k) % len(pool)]
                        add(corpus, "en", 1, cat, _insert(ctx, a, where, _h(a) + k), a)

    satml = "yunwei37+satml-llmail-injection"
    for path in src.ls(satml, "examples/satml"):
        if "/prompts/" not in path or not path.endswith(".json"):
            continue
        d = json.loads(src.show(satml, path))
        name = d["id"]
        lang = next((code for word, code in LLMAIL_LANGS.items() if name.endswith(word) or f"_{word}" in name), "en")
        if name.replace("combined_", "") in ("multi_language_attack", "multi_language_attack_system_override"):
            lang = "mixed"
        text = f"Subject: {d.get('subject', '')}\n\n{d['body']}"
        add("llmail-satml", lang, 1, name, text, text)

    cse = "meta-llama+PurpleLlama"
    base = "CybersecurityBenchmarks/datasets/prompt_injection/"
    english = json.loads(src.show(cse, base + "prompt_injection.json"))
    translated = json.loads(src.show(cse, base + "prompt_injection_multilingual_machine_translated.json"))
    for case in english + translated:
        source = english[case["prompt_id"] % len(english)]
        add(f"cse-{case['injection_type']}", CSE_LANGS[case["speaking_language"]], 1, case["injection_variant"],
            case["user_input"], source["user_input"])  # fmt: skip

    owasp = "OWASP+www-project-top-10-for-large-language-model-applications"
    for path in src.ls(owasp, "2_0_vulns"):
        parts = path.split("/")
        tag = parts[2] if len(parts) > 3 and parts[1] == "translations" else ""
        if path.endswith(".md") and tag in OWASP_LANGS:
            for chunk in _chunks(re.split(r"\n\s*\n", src.show(owasp, path))):
                add("owasp-llm-top10", OWASP_LANGS[tag], 0, "discussion", chunk, chunk)

    for name in sorted(n for n in PINS if n.startswith("python+python-docs-")):
        lang = name.removeprefix("python+python-docs-")[:2]
        paths = [p for p in src.ls(name, "") if p.endswith(".po") and _section(p) in ("tutorial", "library", "howto")]
        chunks = [c for p in paths for c in _chunks(_po_paragraphs(src.show(name, p)))]
        for chunk in sorted(chunks, key=_h)[:DOC_CHUNKS]:
            add("docs-python-i18n", lang, 0, "documentation", chunk, chunk)
    for name in sorted(n for n in PINS if n.startswith("reactjs+")):
        lang = name.removeprefix("reactjs+")[:2]
        pages = [p for p in src.ls(name, "src/content/learn") if p.endswith(".md")]
        prose = [re.sub(r"```.*?```", "", src.show(name, p), flags=re.DOTALL) for p in pages]
        paragraphs = [q.strip() for page in prose for q in re.split(r"\n\s*\n", page) if len(q.strip()) >= 40]
        chunks = [c for c in _chunks(paragraphs) if _in_language(c, lang)]
        for chunk in sorted(chunks, key=_h)[:DOC_CHUNKS]:
            add("docs-react-i18n", lang, 0, "documentation", chunk, chunk)
    return rows


_SCRIPTS = {"ar": ("\u0600", "\u06ff"), "bn": ("\u0980", "\u09ff")}
_MARKERS = {"it": re.compile(r"\b(?:il|che|di|per|una|sono|della|questo)\b"),
            "vi": re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]")}  # fmt: skip
_ENGLISH = re.compile(r"\b(?:the|and|that|this|with|you)\b")


def _in_language(chunk: str, lang: str) -> bool:
    """True when ``chunk`` is mostly written in ``lang`` (translated repositories keep some pages in English)."""
    if lang in _SCRIPTS:
        low, high = _SCRIPTS[lang]
        letters = [c for c in chunk if c.isalpha()]
        return sum(low <= c <= high for c in letters) >= 0.5 * max(1, len(letters))
    words = len(chunk.split())
    return len(_ENGLISH.findall(chunk.lower())) < 0.02 * words < len(_MARKERS[lang].findall(chunk.lower()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", type=Path, help="directory of owner+name git repositories")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = build(Sources(args.sources))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            f.write(json.dumps({**row, "id": f"{row['corpus']}-{i:05d}"}, ensure_ascii=False) + "\n")
    counts = Counter((r["corpus"], r["lang"], r["label"]) for r in rows)
    for (corpus, lang, label), n in sorted(counts.items()):
        print(f"{corpus:<20}{lang:<7}{'attack' if label else 'benign':<8}{n:>5}", file=sys.stderr)


if __name__ == "__main__":
    main()
