"""Retrieval metrics of the late-vs-naive evaluator (see :mod:`latechunk.eval.metrics.spans`).

Every name is importable from ``latechunk.eval.metrics`` as it was from the one module before.

Tests: ``tests/eval/test_eval_metrics.py``.
"""

from .spans import (
    DEDUP_PREFIX,
    DEFAULT_DOC_MEASURES,
    answer_contained_recall,
    chroma_span_scores,
    dedup_scores,
    doc_metrics,
    doc_run_from_chunk_run,
    drop_overlapping,
    duplicate_slots,
    facts_protected,
    mean_over_queries,
    near_duplicate_share,
    observed_overlap_multiplier,
    precision_omega,
    span_metrics,
    spans_protected,
    theoretical_overlap_multiplier,
)
from .spans import _as_span as _as_span
from .spans import _by_doc as _by_doc
from .spans import _check_k as _check_k
from .spans import _check_query as _check_query
from .spans import _chunk_array as _chunk_array
from .spans import _intersection_length as _intersection_length
from .spans import _Interval as _Interval
from .spans import _length as _length
from .spans import _merge as _merge
from .spans import _overlap as _overlap
from .spans import _spans as _spans

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
