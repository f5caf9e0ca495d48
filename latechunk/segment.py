"""Sentence segmentation: text -> sentence char spans -> sentence token spans.

Sentences come from pysbd (Sadvilkar & Neumann, "PySBD: Pragmatic Sentence Boundary Disambiguation", 2020,
https://github.com/nipunsadvilkar/pySBD), a rule-based segmenter that keeps abbreviations ("Ph.D.", "e.g.",
"U.S.", "Dr."), decimals ("3.14") and list numbering inside their sentence. pysbd's own ``char_span`` option
locates each sentence with a regex search from the start of the text, so repeated sentences get the offset of the
first occurrence (the BR-001 fault); here each sentence is located with a monotone cursor instead: sentence i is
searched for only after the end of sentence i-1, and only whitespace may lie in between.

The text is segmented one paragraph (blank-line separated block) at a time: a sentence never crosses a blank
line, and pysbd's cost grows faster than linearly with the length of its input. pysbd also ends a sentence at a
line break, so headings, list items and table rows are sentences of their own.

Tested in ``tests/test_strategies.py`` and ``tests/test_cases_strategies.py`` (BR-009).
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

import numpy as np

from latechunk.types import Document, Tokenization

__all__ = ["LINE_BREAK", "PARAGRAPH_BREAK", "sentence_char_spans", "sentence_char_spans_in", "sentence_token_spans"]

#: a line break: CRLF, LF, or a lone CR (the three that markdown-it and ``str.splitlines`` agree on)
LINE_BREAK = re.compile(r"\r\n|\n|\r(?!\n)")
#: a blank line: a line break, optional horizontal whitespace, a line break (``\r\n\r\n`` counts, BR-005)
PARAGRAPH_BREAK = re.compile(r"(?:\r\n|\n|\r(?!\n))[^\S\r\n]*(?:\r\n|\n|\r(?!\n))")
_NON_SPACE = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
_SEPARATORS_TO_SPACE = {c: " " for c in range(0x1C, 0x20)}
_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line's text without its outer whitespace
#: characters per pysbd call (see _segment_paragraph)
_BLOCK_CHARS = 1000

_SEGMENTER = None


def _segmenter():
    global _SEGMENTER
    if _SEGMENTER is None:
        import pysbd

        _SEGMENTER = pysbd.Segmenter(language="en", clean=False, char_span=False)
    return _SEGMENTER


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Char ranges of the blank-line separated blocks of ``text`` that hold a non-whitespace character."""
    out = []
    pos = 0
    for m in PARAGRAPH_BREAK.finditer(text):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return [(a, b) for a, b in out if not text[a:b].isspace() and a < b]


def _align(para: str, segments: list[str]) -> list[tuple[int, int]] | None:
    """Locate each segment in ``para`` with a monotone cursor; None if a segment is not where it must be.

    Each segment, stripped, must start at the next non-whitespace character after the previous one's end.
    """
    spans = []
    cursor = 0
    n = len(para)
    for seg in segments:
        s = seg.strip()
        if not s:
            continue
        # skip whitespace after the cursor
        while cursor < n and para[cursor].isspace():
            cursor += 1
        if not para.startswith(s, cursor):
            return None
        spans.append((cursor, cursor + len(s)))
        cursor += len(s)
    if para[cursor:].strip():
        return None
    return spans


def _align_non_space(para: str, segments: list[str]) -> list[tuple[int, int]] | None:
    """Fallback alignment by counts of non-whitespace characters (when a segment's whitespace was altered)."""
    if "".join("".join(seg.split()) for seg in segments) != "".join(para.split()):
        return None
    # char position of the k-th non-whitespace character
    pos = np.fromiter(
        (i for m in _NON_SPACE.finditer(para) for i in range(m.start(), m.end())), dtype=np.int64
    )
    spans = []
    k = 0
    for seg in segments:
        c = sum(len(w) for w in seg.split())
        if c == 0:
            continue
        spans.append((int(pos[k]), int(pos[k + c - 1]) + 1))
        k += c
    return spans


def _segment_block(block: str, a: int) -> list[tuple[int, int]]:
    """Sentence spans of one block (a substring of the text starting at char ``a``), in text coordinates."""
    # the separators \x1c-\x1f are whitespace to Python but make pysbd's list rule call int("\x1f1"); a space in
    # their place keeps every offset
    block = block.translate(_SEPARATORS_TO_SPACE)
    try:
        # pysbd's Processor gives the sentences; Segmenter.segment() would then re-find each one in the block
        # with a fresh regex per sentence (a third of its time); _align does that job with a cursor
        segmenter = _segmenter()
        segments = segmenter.processor(block).process()
    except Exception as err:  # noqa: BLE001  (pysbd is rule code: a crash on odd input must not stop a corpus)
        warnings.warn(
            f"pysbd failed on the block at chars [{a}, {a + len(block)}) ({type(err).__name__}: {err}); "
            "its lines are used as sentences",
            RuntimeWarning,
            stacklevel=4,
        )
        segments = None
    spans = None if segments is None else _align(block, segments)
    if spans is None and segments is not None:
        spans = _align_non_space(block, segments)
        if spans is None:
            warnings.warn(
                f"pysbd changed the text of the block at chars [{a}, {a + len(block)}); its lines are used as "
                "sentences",
                RuntimeWarning,
                stacklevel=4,
            )
    if spans is None:  # one sentence per line (pysbd ends a sentence at every line break anyway)
        spans = [(m.start(), m.end()) for m in _LINE.finditer(block)]
    return [(a + s, a + e) for s, e in spans if e > s]


def _segment_paragraph(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[a:b]``, fed to pysbd in blocks of about ``_BLOCK_CHARS`` characters.

    pysbd's time grows with (characters x sentences) of one call, so a long paragraph is cut into blocks at
    whitespace; the last (possibly incomplete) sentence of a block is segmented again at the head of the next
    block, so every boundary is decided with the text on both sides of it.
    """
    out: list[tuple[int, int]] = []
    pos = a
    while pos < b:
        end = b
        if b - pos > _BLOCK_CHARS:
            m = _SPACE.search(text, pos + _BLOCK_CHARS, b)
            end = m.start() if m else b
        spans = _segment_block(text[pos:end], pos)
        if end < b and len(spans) > 1:
            out.extend(spans[:-1])
            pos = spans[-1][0]
        else:
            out.extend(spans)
            pos = end
    return out


def _segment_text(text: str) -> np.ndarray:
    out: list[tuple[int, int]] = []
    for a, b in _paragraphs(text):
        out.extend(_segment_paragraph(text, a, b))
    arr = np.asarray(out, dtype=np.int32).reshape(-1, 2)
    arr.setflags(write=False)
    return arr


class _DocumentSentences:
    """One document's sentences, segmented lazily paragraph by paragraph and memoised, so every strategy of a
    run (recursive's sentence level, sentence_window, semantic, heading's long sections) shares one pysbd pass
    per paragraph instead of segmenting the same text again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.paragraphs = _paragraphs(text)
        self.starts = np.asarray([a for a, _ in self.paragraphs], dtype=np.int64)
        self.ends = np.asarray([b for _, b in self.paragraphs], dtype=np.int64)
        self.memo: dict[int, list[tuple[int, int]]] = {}

    def spans(self, c0: int = 0, c1: int | None = None) -> np.ndarray:
        """(n, 2) int32 sentence spans of the paragraphs that overlap chars ``[c0, c1)``."""
        c1 = len(self.text) if c1 is None else c1
        i0 = int(np.searchsorted(self.ends, c0, side="right"))
        i1 = int(np.searchsorted(self.starts, c1, side="left"))
        out: list[tuple[int, int]] = []
        for i in range(i0, i1):
            if i not in self.memo:
                self.memo[i] = _segment_paragraph(self.text, *self.paragraphs[i])
            out.extend(self.memo[i])
        arr = np.asarray(out, dtype=np.int32).reshape(-1, 2)
        arr.setflags(write=False)
        return arr


@lru_cache(maxsize=8)
def _document_sentences(text: str) -> _DocumentSentences:
    return _DocumentSentences(text)


def sentence_char_spans(text: str, cache: bool = True) -> np.ndarray:
    """Sentence char spans of ``text``.

    Args:
        text: Any string.
        cache: Share the segmentation with later calls on the same text (the last 8 texts are kept); pass
            False for one-off strings.

    Returns:
        (n_sentences, 2), int32. Half-open ``[start, end)`` char offsets, increasing and disjoint; each span
        starts and ends on a non-whitespace character; together they hold every non-whitespace character.
        ``(0, 2)`` for an empty or whitespace-only text.

    Raises:
        TypeError: if ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"sentence_char_spans expects str, got {type(text).__name__}")
    return _document_sentences(text).spans() if cache else _segment_text(text)


def sentence_char_spans_in(text: str, c0: int, c1: int) -> np.ndarray:
    """Sentence char spans of the paragraphs of ``text`` that overlap chars ``[c0, c1)``, from the segmentation
    shared by all strategies (only those paragraphs are segmented, once per document).

    Returns:
        (n, 2), int32, as :func:`sentence_char_spans`; spans may reach outside ``[c0, c1)``.
    """
    return _document_sentences(text).spans(c0, c1)


def sentence_token_spans(doc: Document | str, tok: Tokenization) -> np.ndarray:
    """Sentence token spans: each content token goes to the sentence its first character lies in.

    Args:
        doc: The document (or its text).
        tok: Its whole-document tokenization.

    Returns:
        (n_sentences, 2), int32. Half-open positions into ``tok`` (frame tokens excluded): non-empty, increasing,
        tiling the content tokens ``[tok.content_start, tok.content_end)`` exactly. A sentence with no token of
        its own (e.g. only characters the tokenizer drops) is absorbed by its neighbour. Tokens that share a
        start offset (one character split into several wordpieces) always stay together.
    """
    text = doc.text if isinstance(doc, Document) else doc
    cs, ce = tok.content_start, tok.content_end
    if ce <= cs:
        return np.zeros((0, 2), dtype=np.int32)
    starts = tok.offsets[cs:ce, 0].astype(np.int64)
    sent = sentence_char_spans(text)
    if sent.shape[0] <= 1:
        return np.asarray([[cs, ce]], dtype=np.int32)
    # a cut before the first token whose start is at or after each sentence start (after the first)
    cuts = np.searchsorted(starts, sent[1:, 0], side="left")
    cuts = np.unique(cuts[(cuts > 0) & (cuts < starts.shape[0])])
    bounds = np.concatenate([[0], cuts, [starts.shape[0]]]) + cs
    return np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int32)
