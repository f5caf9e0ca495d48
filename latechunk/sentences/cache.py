"""One document's sentences, segmented lazily paragraph by paragraph, and a run's cache of them.

:class:`_DocumentSentences` memoises each paragraph's sentences (one pysbd pass per paragraph for every
strategy of a run); :class:`_SentenceCache` holds them by text, least recently used out first, bounded in
characters; :func:`_long_line_paragraphs` says which paragraphs hold a line longer than a token budget.

Tests: ``tests/sentences/test_sentences.py``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from latechunk.sentences import segment
from latechunk.sentences.segment import LINE_BREAK, _joined, _paragraphs


class _DocumentSentences:
    """One document's sentences, segmented lazily paragraph by paragraph and memoised, so every strategy of a
    run (recursive's sentence level, sentence_window, semantic, heading's long sections) shares one pysbd pass
    per paragraph instead of segmenting the same text again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.paragraphs = _paragraphs(text)
        self.starts = np.asarray([a for a, _ in self.paragraphs], dtype=np.int64)
        self.ends = np.asarray([b for _, b in self.paragraphs], dtype=np.int64)
        self.memo: dict[int, np.ndarray] = {}  # paragraph -> its (n, 2) int32 sentence spans

    def spans(self, c0: int = 0, c1: int | None = None) -> np.ndarray:
        """(n, 2) int32 sentence spans of the paragraphs that overlap chars ``[c0, c1)``."""
        c1 = len(self.text) if c1 is None else c1
        i0 = int(np.searchsorted(self.ends, c0, side="right"))
        i1 = int(np.searchsorted(self.starts, c1, side="left"))
        out: list[np.ndarray] = []
        for i in range(i0, i1):
            if i not in self.memo:
                self.memo[i] = segment._segment_paragraph(self.text, *self.paragraphs[i])
            out.append(self.memo[i])
        return _joined(out)


class _SentenceCache:
    """Text -> :class:`_DocumentSentences`, least recently used first out, bounded by the characters it holds.

    The bound is in characters, not documents, so a whole group of short documents stays cached between the
    prefetch thread (which segments a group ahead) and the main thread (where ``semantic`` splits after the
    forward pass). The texts are the documents' own strings, already held by the pipeline.
    """

    def __init__(self, max_chars: int = 1 << 26) -> None:
        self.max_chars = max_chars
        self._items: OrderedDict[str, _DocumentSentences] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> _DocumentSentences:
        with self._lock:
            ds = self._items.get(text)
            if ds is not None:
                self._items.move_to_end(text)
                return ds
            ds = self._items[text] = _DocumentSentences(text)
            self._chars += len(text)
            while self._chars > self.max_chars and len(self._items) > 1:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
            return ds

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


def _long_line_paragraphs(ds: _DocumentSentences, token_starts: np.ndarray, min_tokens: int) -> np.ndarray:
    """(n_paragraphs,) bool: the paragraph holds a line of more than ``min_tokens`` tokens (a token belongs to
    the line its first character is in)."""
    text = ds.text
    line_starts = np.fromiter((m.end() for m in LINE_BREAK.finditer(text)), dtype=np.int64)
    line_starts = np.concatenate([[0], line_starts])
    counts = np.diff(np.searchsorted(np.asarray(token_starts, dtype=np.int64), np.append(line_starts, len(text)),
                                     side="left"))
    long_lines = line_starts[counts > min_tokens]
    hit = np.zeros(len(ds.paragraphs), dtype=bool)
    if long_lines.size and len(ds.paragraphs):
        # a long line is in the paragraph whose range holds its first character (blank lines are in none)
        i = np.searchsorted(ds.starts, long_lines, side="right") - 1
        ok = (i >= 0) & (long_lines < ds.ends[np.maximum(i, 0)])
        hit[i[ok]] = True
    return hit
