"""Sentence segmentation: text -> sentence char spans -> sentence token spans, owned by a run.

Sentences come from pysbd (Sadvilkar & Neumann, "PySBD: Pragmatic Sentence Boundary Disambiguation", 2020,
https://github.com/nipunsadvilkar/pySBD), a rule-based segmenter that keeps abbreviations ("Ph.D.", "e.g.",
"U.S.", "Dr."), decimals ("3.14") and list numbering inside their sentence. pysbd's own ``char_span`` option
locates each sentence with a regex search from the start of the text, so repeated sentences get the offset of the
first occurrence (the BR-001 fault); here each sentence is located with a monotone cursor instead: sentence i is
searched for only after the end of sentence i-1, and only whitespace may lie in between.

The text is segmented one paragraph (blank-line separated block) at a time: a sentence never crosses a blank
line, and pysbd's cost grows faster than linearly with the length of its input. pysbd also ends a sentence at a
line break, so headings, list items and table rows are sentences of their own.

State lives in a :class:`SentenceSegmenter`, one per run: its cache (each document's sentences, segmented once
for every strategy of the run) and its worker processes (:meth:`SentenceSegmenter.presegment` segments a group's
paragraphs ahead in ``python -m latechunk._sentence_worker`` subprocesses). The package holds no per-run state:
only the pysbd segmenter, built once on first use, made faster with its output unchanged (pysbd 0.3.4; measured in
``scripts/bench_segment.py``, results/segment.md): a faster abbreviation pass (:func:`_fast_english`); a gate
in front of pysbd's regular expressions that skips each one whose required characters the text lacks
(:func:`_required_chars`, :class:`_GatedRe`, with a cache of compiled patterns); and no pysbd call at all for a
block that holds none of the characters pysbd acts on (:class:`_FastProcess`). Stock pysbd stays available
(``_pysbd_segmenter(fast=False)``) and is what the tests compare against.

The package, one module per concern:

- :mod:`~latechunk.sentences.segmenter`: :class:`SentenceSegmenter` (char spans, token spans, presegmenting).
- :mod:`~latechunk.sentences.cache`: one document's sentences, memoised per paragraph, and the run's cache.
- :mod:`~latechunk.sentences.segment`: the segmentation of one text (paragraphs, pysbd blocks, alignment;
  :data:`LINE_BREAK`, :data:`PARAGRAPH_BREAK`, :data:`PYSBD_PLACEHOLDERS`).
- :mod:`~latechunk.sentences.workers`: the worker processes and :func:`default_workers`.
- :mod:`~latechunk.sentences.pysbd_segmenter`: stock or fast pysbd, built once per process.
- :mod:`~latechunk.sentences.fast_english`: the faster abbreviation pass.
- :mod:`~latechunk.sentences.gate`: the gate in front of pysbd's regular expressions.

Every name is importable from ``latechunk.sentences`` as it was from the one module before. Patch a seam in the
module that defines it: every caller reads it from there (``latechunk.sentences.segment._segment_paragraph``,
``latechunk.sentences.pysbd_segmenter._pysbd_segmenter``).

Tested in ``tests/sentences/test_sentences.py`` (against stock pysbd on real corpora and generated text; the
gate's premise on pysbd's own patterns; workers against one process),
``tests/strategies/`` and ``tests/test_cases_strategies.py`` (BR-009).
"""

from latechunk.sentences.cache import _DocumentSentences as _DocumentSentences
from latechunk.sentences.cache import _long_line_paragraphs as _long_line_paragraphs
from latechunk.sentences.cache import _SentenceCache as _SentenceCache
from latechunk.sentences.fast_english import _CASE_FOLDS_TO_ASCII as _CASE_FOLDS_TO_ASCII
from latechunk.sentences.fast_english import _PYSBD_PATCHED_VERSION as _PYSBD_PATCHED_VERSION
from latechunk.sentences.fast_english import _fast_english as _fast_english
from latechunk.sentences.gate import _GATED_RE as _GATED_RE
from latechunk.sentences.gate import _LINEAR_PATTERNS as _LINEAR_PATTERNS
from latechunk.sentences.gate import _PROBES as _PROBES
from latechunk.sentences.gate import _GatedRe as _GatedRe
from latechunk.sentences.gate import _required_chars as _required_chars
from latechunk.sentences.pysbd_segmenter import _LINE as _LINE
from latechunk.sentences.pysbd_segmenter import _PYSBD_QUOTE_END as _PYSBD_QUOTE_END
from latechunk.sentences.pysbd_segmenter import _PYSBD_RE_MODULES as _PYSBD_RE_MODULES
from latechunk.sentences.pysbd_segmenter import _PYSBD_TRIGGERS as _PYSBD_TRIGGERS
from latechunk.sentences.pysbd_segmenter import _FastProcess as _FastProcess
from latechunk.sentences.pysbd_segmenter import _FastSegmenter as _FastSegmenter
from latechunk.sentences.pysbd_segmenter import _pysbd_segmenter as _pysbd_segmenter
from latechunk.sentences.segment import _BLOCK_CHARS as _BLOCK_CHARS
from latechunk.sentences.segment import _BLOCK_MAX_CHARS as _BLOCK_MAX_CHARS
from latechunk.sentences.segment import _NON_SPACE as _NON_SPACE
from latechunk.sentences.segment import _SPACE as _SPACE
from latechunk.sentences.segment import _STAND_INS as _STAND_INS
from latechunk.sentences.segment import LINE_BREAK, PARAGRAPH_BREAK, PYSBD_PLACEHOLDERS
from latechunk.sentences.segment import _align as _align
from latechunk.sentences.segment import _align_non_space as _align_non_space
from latechunk.sentences.segment import _joined as _joined
from latechunk.sentences.segment import _paragraphs as _paragraphs
from latechunk.sentences.segment import _segment_block as _segment_block
from latechunk.sentences.segment import _segment_paragraph as _segment_paragraph
from latechunk.sentences.segment import _segment_text as _segment_text
from latechunk.sentences.segmenter import SentenceSegmenter
from latechunk.sentences.segmenter import _check_count as _check_count
from latechunk.sentences.workers import _segment_many as _segment_many
from latechunk.sentences.workers import _worker_main as _worker_main
from latechunk.sentences.workers import _WorkerPool as _WorkerPool
from latechunk.sentences.workers import default_workers

__all__ = ["LINE_BREAK", "PARAGRAPH_BREAK", "PYSBD_PLACEHOLDERS", "SentenceSegmenter", "default_workers"]
# names outside __all__ (``name as name``: a re-export) are imported from here by callers and tests as they were
# from the one module before (latechunk.sentences._segment_text, latechunk.sentences._GATED_RE, ...); reading
# them here is fine, but patch them in the module that defines them
