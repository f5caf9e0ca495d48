"""Sentence segmentation: text -> sentence char spans -> sentence token spans, owned by a run.

The package is :mod:`latechunk.sentences.segment` for now (the module ``latechunk/sentences.py`` was, moved whole);
every name is importable from ``latechunk.sentences`` as before. Patch a seam in the module that defines it
(``latechunk.sentences.segment._segment_paragraph``).
"""

from latechunk.sentences.segment import _BLOCK_CHARS as _BLOCK_CHARS
from latechunk.sentences.segment import _BLOCK_MAX_CHARS as _BLOCK_MAX_CHARS
from latechunk.sentences.segment import _CASE_FOLDS_TO_ASCII as _CASE_FOLDS_TO_ASCII
from latechunk.sentences.segment import _GATED_RE as _GATED_RE
from latechunk.sentences.segment import _LINE as _LINE
from latechunk.sentences.segment import _LINEAR_PATTERNS as _LINEAR_PATTERNS
from latechunk.sentences.segment import _NON_SPACE as _NON_SPACE
from latechunk.sentences.segment import _PROBES as _PROBES
from latechunk.sentences.segment import _PYSBD_PATCHED_VERSION as _PYSBD_PATCHED_VERSION
from latechunk.sentences.segment import _PYSBD_QUOTE_END as _PYSBD_QUOTE_END
from latechunk.sentences.segment import _PYSBD_RE_MODULES as _PYSBD_RE_MODULES
from latechunk.sentences.segment import _PYSBD_TRIGGERS as _PYSBD_TRIGGERS
from latechunk.sentences.segment import _SPACE as _SPACE
from latechunk.sentences.segment import _STAND_INS as _STAND_INS
from latechunk.sentences.segment import (
    LINE_BREAK,
    PARAGRAPH_BREAK,
    PYSBD_PLACEHOLDERS,
    SentenceSegmenter,
    default_workers,
)
from latechunk.sentences.segment import _align as _align
from latechunk.sentences.segment import _align_non_space as _align_non_space
from latechunk.sentences.segment import _check_count as _check_count
from latechunk.sentences.segment import _DocumentSentences as _DocumentSentences
from latechunk.sentences.segment import _fast_english as _fast_english
from latechunk.sentences.segment import _FastProcess as _FastProcess
from latechunk.sentences.segment import _FastSegmenter as _FastSegmenter
from latechunk.sentences.segment import _GatedRe as _GatedRe
from latechunk.sentences.segment import _joined as _joined
from latechunk.sentences.segment import _long_line_paragraphs as _long_line_paragraphs
from latechunk.sentences.segment import _paragraphs as _paragraphs
from latechunk.sentences.segment import _pysbd_segmenter as _pysbd_segmenter
from latechunk.sentences.segment import _required_chars as _required_chars
from latechunk.sentences.segment import _segment_block as _segment_block
from latechunk.sentences.segment import _segment_many as _segment_many
from latechunk.sentences.segment import _segment_paragraph as _segment_paragraph
from latechunk.sentences.segment import _segment_text as _segment_text
from latechunk.sentences.segment import _SentenceCache as _SentenceCache
from latechunk.sentences.segment import _worker_main as _worker_main
from latechunk.sentences.segment import _WorkerPool as _WorkerPool

__all__ = ["LINE_BREAK", "PARAGRAPH_BREAK", "PYSBD_PLACEHOLDERS", "SentenceSegmenter", "default_workers"]
# names outside __all__ (``name as name``: a re-export) are imported from here by callers and tests as they were
# from the one module before (latechunk.sentences._segment_text, latechunk.sentences._GATED_RE, ...)
