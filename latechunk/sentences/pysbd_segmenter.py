"""The pysbd segmenter latechunk runs: stock or fast pysbd, built once per process (:func:`_pysbd_segmenter`).

The fast one (pysbd 0.3.4 only) is stock pysbd with the faster abbreviation pass
(:mod:`~latechunk.sentences.fast_english`), its regex calls through the gate
(:mod:`~latechunk.sentences.gate`) and no pysbd call at all for a block without the characters pysbd acts on (:class:`_FastProcess`).

Tests: ``tests/sentences/test_sentences.py`` (both paths against stock pysbd).
"""

from __future__ import annotations

import functools
import re

from latechunk.sentences.fast_english import _PYSBD_PATCHED_VERSION, _fast_english
from latechunk.sentences.gate import _GATED_RE

#: characters without which pysbd 0.3.4 (English, placeholders replaced) leaves a block's lines as they are: its
#: sentence ends ``.!?`` and their full-width forms, and ``)`` (list items ``1)``/``a)``, ``"(...)"`` splits); see
#: :class:`_FastProcess`
_PYSBD_TRIGGERS = re.compile(r"[.!?。．！？)]")
#: pysbd's ``QUOTATION_AT_END_OF_SENTENCE_REGEX`` (``-" A`` ends a sentence even without a period)
_PYSBD_QUOTE_END = re.compile(r"[!?\.-][\"\'“”]\s{1}[A-Z]")


_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line's text without its outer whitespace


#: the pysbd modules whose ``re`` calls go through :data:`_GATED_RE`
_PYSBD_RE_MODULES = ("pysbd.processor", "pysbd.utils", "pysbd.abbreviation_replacer", "pysbd.lists_item_replacer",
                     "pysbd.between_punctuation", "pysbd.exclamation_words", "pysbd.punctuation_replacer")


class _FastProcess:
    """The ``Processor(text).process()`` of pysbd with :data:`_GATED_RE` on, and with no pysbd call at all for a text
    that holds none of :data:`_PYSBD_TRIGGERS` and no match of :data:`_PYSBD_QUOTE_END`: pysbd 0.3.4 then gives
    its lines, stripped, empty ones left out. Why: every rule pysbd applies before it splits at line breaks needs
    one of those characters (lists: ``.`` or ``)``; abbreviations, numbers, ellipses, e-mail and file names: ``.``;
    ``!!!``: ``!``/``?``; ``"(...)"``: ``)``; the placeholders are replaced before pysbd sees the text); a line is
    then processed further only if it holds a sentence end (``check_for_punctuation``); and what is left is
    ``post_process_segments``: ``strip()`` unless the line ends a quotation (:data:`_PYSBD_QUOTE_END`).
    ``tests/sentences/test_sentences.py`` checks both paths against stock pysbd on real corpora and on generated
    text."""

    def __init__(self, processor) -> None:
        self.processor = processor

    def process(self):
        text = self.processor.text
        if text and _PYSBD_TRIGGERS.search(text) is None and _PYSBD_QUOTE_END.search(text) is None:
            return [m.group() for m in _LINE.finditer(text)]
        local = _GATED_RE.local
        was, memo = getattr(local, "on", False), getattr(local, "findall_memo", None)
        local.on, local.findall_memo = True, {}
        try:
            return self.processor.process()
        finally:
            local.on, local.findall_memo = was, memo


class _FastSegmenter:
    """A pysbd ``Segmenter`` whose ``processor(text).process()`` is :class:`_FastProcess` (pysbd 0.3.4)."""

    def __init__(self, segmenter) -> None:
        self.segmenter = segmenter
        self.language_module = segmenter.language_module

    def processor(self, text: str) -> _FastProcess:
        return _FastProcess(self.segmenter.processor(text))


@functools.cache
def _pysbd_segmenter(fast: bool = True):
    """The pysbd segmenter (English, no cleaning), built once per process; ``fast=False`` gives stock pysbd
    (for tests). It holds no per-text state: each call of its ``processor`` is independent.

    ``fast`` (pysbd 0.3.4 only; any other version gets stock pysbd): the faster abbreviation pass
    (:func:`_fast_english`), pysbd's regex calls through :data:`_GATED_RE` (installed as the ``re`` of pysbd's
    modules, passing every call straight to ``re`` outside :class:`_FastProcess`), and the plain-lines path of
    :class:`_FastProcess`."""
    import importlib

    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False, char_span=False)
    if not fast or getattr(pysbd, "__version__", None) != _PYSBD_PATCHED_VERSION:
        return seg
    seg.language_module = _fast_english()
    for name in _PYSBD_RE_MODULES:
        module = importlib.import_module(name)
        if module.re is re:
            module.re = _GATED_RE
    text_class = importlib.import_module("pysbd.utils").Text
    if not getattr(text_class.apply, "_latechunk_gated", False):
        stock_apply = text_class.apply

        def apply(self, *rules):
            return _GATED_RE.apply(stock_apply, self, rules)

        apply._latechunk_gated = True
        text_class.apply = apply
    return _FastSegmenter(seg)
