"""The segmentation of one text: paragraphs, pysbd blocks, sentences located with a monotone cursor.

:func:`_segment_text` cuts a text at blank lines (:data:`PARAGRAPH_BREAK`); :func:`_segment_paragraph` feeds a
paragraph to pysbd in blocks of about :data:`_BLOCK_CHARS` characters (at most :data:`_BLOCK_MAX_CHARS`), with
pysbd's placeholder characters (:data:`PYSBD_PLACEHOLDERS`) replaced one for one, and :func:`_align` locates each
sentence after the previous one (the BR-001 fault of pysbd's ``char_span``). pysbd is called through
:func:`latechunk.sentences.pysbd_segmenter._pysbd_segmenter` (patch it there).

Tests: ``tests/sentences/test_sentences.py``, ``tests/test_regex_linear.py`` (patch :func:`_segment_paragraph`,
:func:`_segment_block` and :data:`_BLOCK_MAX_CHARS` here: every caller reads them from this module).
"""

from __future__ import annotations

import array
import re
import warnings

import numpy as np

from latechunk.sentences import pysbd_segmenter
from latechunk.sentences.pysbd_segmenter import _LINE

#: a line break: CRLF, LF, or a lone CR (the three that markdown-it and ``str.splitlines`` agree on)
LINE_BREAK = re.compile(r"\r\n|\n|\r(?!\n)")
#: a blank line: a line break, optional horizontal whitespace, a line break (``\r\n\r\n`` counts, BR-005)
PARAGRAPH_BREAK = re.compile(r"(?:\r\n|\n|\r(?!\n))[^\S\r\n]*(?:\r\n|\n|\r(?!\n))")
_NON_SPACE = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
#: the characters pysbd 0.3.4 substitutes for punctuation while it works and turns back into punctuation (or
#: deletes) at the end (BR-021): ``∯ ∮`` periods, ``♨ ☝ ✂ ⌬`` list markers and parentheses, ``ȸ`` a temporary
#: sentence end, ``ȹ`` a line break, ``☉ ☈ ☇ ☄`` ``?!``/``!?``/``??``/``!!``, ``☏ ƪ ♟ ♝`` ellipses, ``♬ ♭``
#: Arabic comma and colon, ``ᓰ ᓱ ᓳ ᓴ ᓷ ᓸ ⎋`` (inside ``&..&``) quoted or bracketed punctuation and ``'``. Read
#: from its ``lang/common/*.py``, ``processor.py``, ``lists_item_replacer.py``, ``punctuation_replacer.py`` and
#: ``abbreviation_replacer.py``; ``tests/sentences/test_sentences.py`` scans pysbd's source for any it does not list.
PYSBD_PLACEHOLDERS = "∯∮♨☝✂⌬ȸȹ☉☈☇☄☏ƪ♟♝♬♭ᓰᓱᓳᓴᓷᓸ⎋"
#: one character for one character, so every offset stays: the separators \x1c-\x1f become a space, and each
#: placeholder a stand-in pysbd gives no meaning to, of the same regex class (``\w`` or not), so that word
#: boundaries around it stay where they were: a letter (U+A000, YI SYLLABLE IT) for the letters, a private-use
#: character (U+E000) for the symbols
_STAND_INS = {c: " " for c in range(0x1C, 0x20)} | {
    ord(c): ("\ua000" if re.match(r"\w", c) else "\ue000") for c in PYSBD_PLACEHOLDERS
}
#: characters per pysbd call (see _segment_paragraph)
_BLOCK_CHARS = 1000
#: the most characters of one pysbd call: a block with no whitespace after its first ``_BLOCK_CHARS`` is cut here
#: (several of pysbd 0.3.4's patterns are quadratic in one call's length on text without whitespace: ``!?``,
#: ``"\\`` or ``“a.`` repeated; 8,000 characters of ``!?`` took 2.7 s in one call, 80,000 would take minutes)
_BLOCK_MAX_CHARS = 2 * _BLOCK_CHARS


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Char ranges of the blank-line separated blocks of ``text`` that hold a non-whitespace character."""
    out = []
    pos = 0
    for m in PARAGRAPH_BREAK.finditer(text):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return [(a, b) for a, b in out if not text[a:b].isspace() and a < b]


def _align(para: str, sentences: list[str]) -> list[tuple[int, int]] | None:
    """Locate each pysbd sentence in ``para`` with a monotone cursor; None if one is not where it must be.

    Each sentence, stripped, must start at the next non-whitespace character after the previous one's end.
    """
    spans = []
    cursor = 0
    n = len(para)
    for sent in sentences:
        s = sent.strip()
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


def _align_non_space(para: str, sentences: list[str]) -> list[tuple[int, int]] | None:
    """Fallback alignment by counts of non-whitespace characters (when a sentence's whitespace was altered)."""
    if "".join("".join(sent.split()) for sent in sentences) != "".join(para.split()):
        return None
    # char position of the k-th non-whitespace character
    pos = np.fromiter(
        (i for m in _NON_SPACE.finditer(para) for i in range(m.start(), m.end())), dtype=np.int64
    )
    spans = []
    k = 0
    for sent in sentences:
        c = sum(len(w) for w in sent.split())
        if c == 0:
            continue
        spans.append((int(pos[k]), int(pos[k + c - 1]) + 1))
        k += c
    return spans


def _segment_block(block: str, a: int) -> list[tuple[int, int]]:
    """Sentence spans of one block (a substring of the text starting at char ``a``), in text coordinates."""
    # the separators \x1c-\x1f are whitespace to Python but make pysbd's list rule call int("\x1f1"), and pysbd
    # turns its own placeholder characters into punctuation or drops them (BR-021); one stand-in character for
    # each keeps every offset, and the sentences are located in this translated block
    block = block.translate(_STAND_INS)
    try:
        # pysbd's Processor gives the sentences; Segmenter.segment() would then re-find each one in the block
        # with a fresh regex per sentence (a third of its time); _align does that job with a cursor
        sentences = pysbd_segmenter._pysbd_segmenter().processor(block).process()
    except Exception as err:  # noqa: BLE001  (pysbd is rule code: a crash on odd input must not stop a corpus)
        warnings.warn(
            f"pysbd failed on the block at chars [{a}, {a + len(block)}) ({type(err).__name__}: {err}); "
            "its lines are used as sentences",
            RuntimeWarning,
            stacklevel=4,
        )
        sentences = None
    spans = None if sentences is None else _align(block, sentences)
    if spans is None and sentences is not None:
        spans = _align_non_space(block, sentences)
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


def _segment_paragraph(text: str, a: int, b: int) -> np.ndarray:
    """Sentence spans of ``text[a:b]`` ((n, 2) int32, in text coordinates), fed to pysbd in blocks of about
    ``_BLOCK_CHARS`` characters, so a long paragraph costs one block's transient and 8 bytes a sentence.

    pysbd's time grows with (characters x sentences) of one call, so a long paragraph is cut into blocks at
    whitespace; the last (possibly incomplete) sentence of a block is segmented again at the head of the next
    block, so every boundary is decided with the text on both sides of it. A block with no whitespace between
    ``_BLOCK_CHARS`` and ``_BLOCK_MAX_CHARS`` is cut at ``_BLOCK_MAX_CHARS`` (inside a run of non-space
    characters), so that no pysbd call is longer: a sentence is cut there only when it is the block's one sentence.
    """
    out = array.array("i")  # start, end, start, end, ... (4 bytes each, not a tuple of two ints per sentence)
    pos = a
    while pos < b:
        end = b
        if b - pos > _BLOCK_CHARS:
            most = min(b, pos + _BLOCK_MAX_CHARS)
            m = _SPACE.search(text, pos + _BLOCK_CHARS, most)
            end = m.start() if m else most
        spans = _segment_block(text[pos:end], pos)
        if end < b and len(spans) > 1:
            pos = spans[-1][0]
            spans = spans[:-1]
        else:
            pos = end
        for span in spans:
            out.extend(span)
    return np.frombuffer(out, dtype=np.int32).reshape(-1, 2) if out else np.zeros((0, 2), dtype=np.int32)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """(n, 2) int32 spans of several paragraphs, in order, read-only."""
    arr = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int32)
    arr = arr.astype(np.int32, copy=False).reshape(-1, 2)
    arr.setflags(write=False)
    return arr


def _segment_text(text: str) -> np.ndarray:
    """(n, 2) int32 sentence spans of the whole ``text``, uncached (read-only array)."""
    return _joined([_segment_paragraph(text, a, b) for a, b in _paragraphs(text)])
