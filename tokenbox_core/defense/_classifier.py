"""A local injection classifier as an :class:`~tokenbox_core.defense.InjectionDetector`: NanoGuard, loaded offline.

The ``classifier`` extra (``pip install "tokenbox-context[classifier]"``) installs
``metatronnanoguard`` (MIT): a 16.8M-parameter bidirectional transformer trained
to tell prompt injections from safe prompts, whose weights (``assets/model.pt``,
59 MB) and tokenizer ship inside the wheel, on a CPU build of PyTorch.  Nothing
is downloaded when it loads.

The model reads at most 512 tokens; a longer text is scored in windows of 511
tokens (with the model's leading marker) that overlap by a quarter, and the
text's score is the highest window's, so an instruction at the end of a long
document is read too.  Every window is padded to 512 tokens as the model was
trained.  Scores are rounded to four places (CPU inference is deterministic
for the same text to far better than that).

>>> from tokenbox_core.defense import CompositeDetector, HeuristicDetector
>>> both = CompositeDetector([HeuristicDetector(), NanoGuardDetector()])  # doctest: +SKIP

It is a prompt classifier, trained on prompts rather than retrieved documents:
on issue 27's held-out set (``benchmarks/injection_heldout_set.jsonl``, default
retrieval policy) it keeps out 18 of 30 attacks and flags 9 of 20 risky-looking
benign texts, where the heuristic keeps out 27 and flags 2; the max of both
(:class:`~tokenbox_core.defense.CompositeDetector`) keeps out 29 and flags 10.
On the public corpora of ``benchmarks/bench_injection_heldout.py --detector``
(held-out split) it keeps out 84 % of English indirect injections but flags 72 %
of benign English retrieval text and most benign text in other languages:
documentation reads to it like instructions.  Use it on short prompts, not as a
filter of retrieved documents.  It is the extra because it is the best of what
installs from the package index with its weights and loads offline: of 77
packages checked for issue 27, two others do (TF-IDF models, worse), and every
stronger model on PyPI (Prompt Guard, DeBERTa and ModernBERT classifiers) is
fetched from the Hugging Face hub at first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from tokenbox_core.defense._detector import Detection, Finding
from tokenbox_core.defense._sanitize import detection_view
from tokenbox_core.errors import ConfigError, SecurityError

__all__ = ["NanoGuardDetector"]

_EXTRA = 'pip install "tokenbox-context[classifier]"'


def _load(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SecurityError(f"NanoGuardDetector needs the classifier extra ({module} is missing): {_EXTRA}") from exc


class NanoGuardDetector:
    """The NanoGuard classifier from the installed ``metatronnanoguard`` package, on the CPU.

    ``detect(text, source)`` returns the model's probability of "injection" over
    the text's windows (the highest), with one finding naming the window.  The
    same text gets the same score whatever the source.

    Args:
        batch: windows run through the model at once (memory, not results).
    """

    name = "nanoguard"

    def __init__(self, *, batch: int = 8) -> None:
        if not isinstance(batch, int) or batch < 1:
            raise ConfigError(f"NanoGuardDetector batch must be a positive int, got {batch!r}")
        self._torch = _load("torch")
        scanner = _load("nanoguard.scanner")
        guard = scanner.NanoGuard(device="cpu")
        self._model = guard.model
        self._tokenizer = guard.tokenizer
        self.window = int(guard.config.sequence_len)
        self.batch = batch

    def __repr__(self) -> str:
        return f"NanoGuardDetector(window={self.window}, batch={self.batch})"

    def tokens(self, text: str) -> list[int]:
        """The model's tokens for ``text`` (its detection view), before windowing."""
        return list(self._tokenizer.enc.encode_ordinary(detection_view(text)))

    def windows(self, text: str) -> list[list[int]]:
        """The token windows the model reads for ``text`` (each with the leading marker, at most ``window`` long)."""
        ids = self.tokens(text)
        width = self.window - 1
        step = width - width // 4
        starts = range(0, max(1, len(ids) - width + step), step) if len(ids) > width else range(1)
        return [[self._tokenizer.bos_token_id, *ids[s : s + width]] for s in starts]

    def detect(self, text: str, source: str = "tool") -> Detection:
        """Score ``text``: the highest window's probability of injection."""
        torch = self._torch
        windows = self.windows(text)
        scores: list[float] = []
        pad = self._tokenizer.pad_token_id
        for first in range(0, len(windows), self.batch):
            chunk = windows[first : first + self.batch]
            ids = torch.full((len(chunk), self.window), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), self.window), dtype=torch.bool)
            for row, window in enumerate(chunk):
                ids[row, : len(window)] = torch.tensor(window, dtype=torch.long)
                mask[row, : len(window)] = True
            with torch.no_grad():
                probs = torch.softmax(self._model(ids, mask).float(), dim=-1)[:, 1]
            scores += [round(float(p), 4) for p in probs]
        best = max(range(len(scores)), key=lambda k: (scores[k], -k))
        score = scores[best]
        finding = Finding("classifier", "classifier", score, f"window {best + 1} of {len(windows)}", 0)
        return Detection(score, (finding,) if score > 0 else (), self.name)
