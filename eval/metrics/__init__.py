"""Retrieval metrics of the late-vs-naive evaluator.

Inputs are plain Python/numpy values; nothing here knows about models, indexes or strategies.

- A *retrieved chunk* is any sequence whose first three entries are ``(doc_id, char_start, char_end)``
  (half-open character offsets into the source document). Extra entries (score, chunk_index, ...) are carried
  along untouched. A *ranking* is a best-first sequence of them.
- A *reference span* is ``(doc_id, char_start, char_end)`` (:data:`latechunk.eval.datasets.SpanRef`).
- *Chunk spans of a strategy* are ``{doc_id: (n_chunks, 2) int array of [char_start, char_end)}``, e.g.
  ``{b.doc_id: b.char_spans for b in boundaries}``.

Every unit is a character (a Python ``str`` index) of the source document. Per-query values are returned in
``{query_id: value}`` dicts and averaged with :func:`mean_over_queries`. Nothing is rounded and no input is
mutated.

The package, one module per concern: :mod:`~latechunk.eval.metrics.spans` (the span metrics per query and over
queries, with the formulas of Chroma's metrics and where they come from), :mod:`~latechunk.eval.metrics.duplicates`
(``Dup@k``, ``NearDup@k``, ``--dedup-threshold``), :mod:`~latechunk.eval.metrics.documents` (qrels measures
through ir_measures), :mod:`~latechunk.eval.metrics.costs` (overlap multipliers) and
:mod:`~latechunk.eval.metrics.intervals` (input checks, interval arithmetic). Every name is importable from
``latechunk.eval.metrics`` as it was from the one module before.

Tests: ``tests/eval/test_eval_metrics.py``.
"""

from .costs import observed_overlap_multiplier, theoretical_overlap_multiplier
from .documents import DEFAULT_DOC_MEASURES, doc_metrics, doc_run_from_chunk_run
from .duplicates import DEDUP_PREFIX, dedup_scores, drop_overlapping, duplicate_slots, near_duplicate_share
from .duplicates import _overlap as _overlap
from .intervals import _as_span as _as_span
from .intervals import _by_doc as _by_doc
from .intervals import _check_k as _check_k
from .intervals import _check_query as _check_query
from .intervals import _chunk_array as _chunk_array
from .intervals import _intersection_length as _intersection_length
from .intervals import _Interval as _Interval
from .intervals import _length as _length
from .intervals import _merge as _merge
from .intervals import _spans as _spans
from .spans import (
    answer_contained_recall,
    chroma_span_scores,
    facts_protected,
    mean_over_queries,
    precision_omega,
    span_metrics,
    spans_protected,
)

__all__ = [
    "DEDUP_PREFIX",
    "DEFAULT_DOC_MEASURES",
    "answer_contained_recall",
    "chroma_span_scores",
    "doc_metrics",
    "dedup_scores",
    "doc_run_from_chunk_run",
    "drop_overlapping",
    "duplicate_slots",
    "facts_protected",
    "mean_over_queries",
    "near_duplicate_share",
    "observed_overlap_multiplier",
    "precision_omega",
    "span_metrics",
    "spans_protected",
    "theoretical_overlap_multiplier",
]
