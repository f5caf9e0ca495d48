r"""Span metrics per query (answer containment, Chroma's span-overlap recall, precision and IoU, precision_Ω,
facts protected) and over many queries (:func:`span_metrics`, :func:`mean_over_queries`).

Inputs and units as in :mod:`latechunk.eval.metrics` (characters of the source document). Part of
:mod:`latechunk.eval.metrics`; tests: ``tests/eval/test_eval_metrics.py``.

Chroma's span-overlap metrics (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma 2024,
https://research.trychroma.com/evaluating-chunking) are replicated from their code,
``brandonstarxel/chunking_evaluation``, ``evaluation_framework/base_evaluation.py``,
``BaseEvaluation._scores_from_dataset_and_retrievals`` and ``BaseEvaluation._full_precision_score``. The
report writes the metrics over sets of *tokens*; the code counts *characters* (``end_index - start_index``
of corpus string offsets), and so does this module. With ``R`` the union of the top-k chunks' characters,
``G`` the reference spans, ``c`` a top-k chunk and ``g`` a reference span, their code computes:

- numerator ``|R ∩ G|``: intersections are merged with ``union_ranges`` before ``sum_of_ranges``
  (``numerator_sets = union_ranges([intersection] + numerator_sets)``), so a character that two overlapping
  retrieved chunks both hold counts **once**;
- ``recall = |R ∩ G| / Σ_g |g|`` (``recall_denominator = sum_of_ranges([(x['start_index'], x['end_index'])
  for x in references])``: a sum over the references, equal to ``|∪G|`` when references are disjoint, which
  holds for all 790 of Chroma's);
- ``precision = |R ∩ G| / Σ_{c in top-k} |c|`` (``precision_denominator = sum_of_ranges([... for metadata in
  metadatas[:highlighted_chunk_count]])``): a **sum** of retrieved chunk lengths, not a union, so characters
  held by two overlapping retrieved chunks count **twice**, and chunks of other documents count too;
- ``IoU = |R ∩ G| / (Σ_{c in top-k} |c| + Σ_g |g \ R|)`` (``iou_denominator = precision_denominator +
  sum_of_ranges(unused_highlights)``): the same summed denominator plus the reference characters no retrieved
  chunk holds;
- ``precision_Ω = |C_h ∩ G| / |C_h ∪ G|`` over *all* chunks of the strategy (not the retrieved ones), where
  ``C_h`` is the union of the chunks that intersect a reference (``denominator_sets =
  union_ranges(denominator_chunks_sets + unused_highlights)``: **unions** on both sides).

One quirk is not copied by default: their ``intersect_two_ranges`` accepts ``start == end``, so a chunk that
only *touches* a reference (chunk end == reference start) counts as intersecting it. That adds nothing to any
numerator, and it cannot change recall, precision or IoU, but it adds the touching chunk to the Ω denominator.
Here an intersection needs at least one shared character; :func:`precision_omega` takes
``count_touching=True`` to reproduce their number exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .duplicates import duplicate_slots
from .intervals import (
    _by_doc,
    _check_k,
    _check_query,
    _chunk_array,
    _intersection_length,
    _length,
    _merge,
    _spans,
)

# ----------------------------------------------------------------------------------------------------------
# Per-query span metrics
# ----------------------------------------------------------------------------------------------------------


def answer_contained_recall(ranking: Sequence[Any], references: Sequence[Any], k: int) -> float:
    """Answer-contained recall@k of one query.

    ``AR@k = |{g in G : exists c in top-k, doc(c) = doc(g), start(c) <= start(g), end(g) <= end(c)}| / |G|``:
    the share of the query's reference spans lying wholly inside at least one of the first ``k`` retrieved
    chunks. Units: characters. Each listed reference span counts once, so a query with two facts and one
    of them contained scores 1/2.

    Args:
        ranking: Retrieved chunks, best first; each starts with ``(doc_id, char_start, char_end)``.
        references: The query's reference spans ``(doc_id, char_start, char_end)``.
        k: Cut-off, ``>= 1``; a shorter ranking is used whole.

    Returns:
        A float in ``[0, 1]``.

    Raises:
        ValueError: if ``references`` is empty, ``k < 1`` or a span is malformed (fewer than three entries,
            or not ``0 <= char_start < char_end``).
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    top, refs = _check_query(ranking, references, k, "answer_contained_recall")
    contained = sum(any(c_doc == doc and cs <= s and e <= ce for c_doc, cs, ce in top) for doc, s, e in refs)
    return contained / len(refs)


def chroma_span_scores(ranking: Sequence[Any], references: Sequence[Any], k: int) -> dict[str, float]:
    r"""Chroma's recall, precision and IoU at k for one query (Smith & Troynikov 2024; see the module doc).

    With ``R`` the union of the characters of the top-k chunks, ``G`` the reference spans:

    - ``recall = |R ∩ ∪G| / Σ_g |g|``
    - ``precision = |R ∩ ∪G| / Σ_{c in top-k} |c|`` (a sum: overlapping retrieved chunks count twice; ``0`` if
      nothing was retrieved, as in their code)
    - ``iou = |R ∩ ∪G| / (Σ_{c in top-k} |c| + Σ_g |g \ R|)``

    Intersections are per document (a chunk only meets references of its own document). Units: characters.

    Args:
        ranking: Retrieved chunks, best first; each starts with ``(doc_id, char_start, char_end)``.
        references: The query's reference spans.
        k: Cut-off, ``>= 1``; a shorter ranking is used whole.

    Returns:
        ``{"recall": ..., "precision": ..., "iou": ...}``, floats in ``[0, 1]``.

    Raises:
        ValueError: if ``references`` is empty, ``k < 1`` or a span is malformed (fewer than three entries,
            or not ``0 <= char_start < char_end``).
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    top, refs = _check_query(ranking, references, k, "chroma_span_scores")
    retrieved = {doc: _merge(iv) for doc, iv in _by_doc(top).items()}
    refs_by_doc = _by_doc(refs)
    overlap = sum(_intersection_length(retrieved.get(doc, []), _merge(iv)) for doc, iv in refs_by_doc.items())
    ref_chars = sum(e - s for _, s, e in refs)
    retrieved_chars = sum(e - s for _, s, e in top)
    unused = sum((e - s) - _intersection_length(retrieved.get(doc, []), [(s, e)]) for doc, s, e in refs)
    return {
        "recall": overlap / ref_chars,
        "precision": overlap / retrieved_chars if retrieved_chars else 0.0,
        "iou": overlap / (retrieved_chars + unused),
    }


def precision_omega(
    chunk_spans: Mapping[str, Any], references: Sequence[Any], *, count_touching: bool = False
) -> float:
    """Chroma's precision Ω of one query: the best precision any retrieval over these chunks could reach.

    ``Ω = |C_h ∩ ∪G| / |C_h ∪ ∪G|``, where ``C_h`` is the union of the characters of every chunk of the
    strategy that shares at least one character with a reference span of its document (Smith & Troynikov 2024,
    ``_full_precision_score``). Units: characters.

    Args:
        chunk_spans: ``{doc_id: (n_chunks, 2) int array}``, all chunks of the strategy; must hold every
            document named by ``references``.
        references: The query's reference spans.
        count_touching: Also count a chunk that only touches a reference (``chunk end == reference start`` or
            ``chunk start == reference end``) as intersecting it, as Chroma's inclusive
            ``intersect_two_ranges`` does; only needed to reproduce their numbers exactly.

    Returns:
        A float in ``[0, 1]``; ``0`` if no chunk meets any reference.

    Raises:
        ValueError: if ``references`` is empty or a document is missing from ``chunk_spans``.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    refs = _spans(references, "reference span")
    if not refs:
        raise ValueError("precision_omega: the query has no reference spans; the metric is undefined")
    numerator = denominator = 0
    for doc, intervals in _by_doc(refs).items():
        chunks = _chunk_array(chunk_spans, doc)
        hit = np.zeros(chunks.shape[0], dtype=bool)
        for s, e in intervals:
            shared = np.minimum(chunks[:, 1], e) - np.maximum(chunks[:, 0], s)
            hit |= shared >= 0 if count_touching else shared > 0
        highlighted = _merge(map(tuple, chunks[hit].tolist()))
        ref_union = _merge(intervals)
        numerator += _intersection_length(highlighted, ref_union)
        denominator += _length(_merge(highlighted + ref_union))
    return numerator / denominator if numerator else 0.0


def spans_protected(chunk_spans: Mapping[str, Any], spans: Sequence[Any]) -> np.ndarray:
    """Whether each span lies wholly inside some chunk of its document.

    ``protected[i] = exists c in chunks(doc_i), start(c) <= start_i and end_i <= end(c)``. Units: characters.

    Args:
        chunk_spans: ``{doc_id: (n_chunks, 2) int array}``, all chunks of a strategy.
        spans: Reference spans ``(doc_id, char_start, char_end)``.

    Returns:
        (n_spans,), bool.

    Raises:
        ValueError: if a span's document is missing from ``chunk_spans``.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    checked = _spans(spans, "reference span")
    out = np.zeros(len(checked), dtype=bool)
    for i, (doc, s, e) in enumerate(checked):
        chunks = _chunk_array(chunk_spans, doc)
        out[i] = bool(((chunks[:, 0] <= s) & (chunks[:, 1] >= e)).any())
    return out


def facts_protected(chunk_spans: Mapping[str, Any], spans: Sequence[Any]) -> float:
    """Share of reference spans ("facts") that some chunk of the strategy holds whole, retrieval aside.

    ``FP = |{g : exists c in chunks(doc(g)), start(c) <= start(g), end(g) <= end(c)}| / |G|``, over all the
    given spans (pass every query's spans for a dataset figure). It bounds answer-contained recall at any k.

    Args:
        chunk_spans: ``{doc_id: (n_chunks, 2) int array}``, ``[char_start, char_end)`` of all chunks of a
            strategy; must hold every document the spans name.
        spans: Reference spans ``(doc_id, char_start, char_end)`` in characters.

    Returns:
        The share in [0, 1].

    Raises:
        ValueError: if ``spans`` is empty or a document is missing from ``chunk_spans``.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    mask = spans_protected(chunk_spans, spans)
    if mask.size == 0:
        raise ValueError("facts_protected: no spans given; the share is undefined")
    return int(mask.sum()) / int(mask.size)


# ----------------------------------------------------------------------------------------------------------
# Many queries
# ----------------------------------------------------------------------------------------------------------


def span_metrics(
    run: Mapping[str, Sequence[Any]], references: Mapping[str, Sequence[Any]], k: int
) -> dict[str, dict[str, float]]:
    """Every ranking metric of the span-annotated queries, per query.

    Args:
        run: ``{query_id: ranking}``; each ranking best first, each item starting with
            ``(doc_id, char_start, char_end)``. Apply :func:`drop_overlapping` first to score deduplicated
            lists.
        references: ``{query_id: reference spans}`` (e.g. ``EvalDataset.spans_by_query()``). Queries without
            spans are left out (they have document-level relevance only).
        k: Cut-off, ``>= 1``.

    Returns:
        ``{metric: {query_id: value}}`` with metrics ``AR@k`` (:func:`answer_contained_recall`),
        ``SpanRecall@k``, ``SpanPrecision@k``, ``SpanIoU@k`` (:func:`chroma_span_scores`) and ``Dup@k``
        (:func:`duplicate_slots`, as a float).

    Raises:
        ValueError: if a query with spans has no ranking in ``run`` (pass ``[]`` for an empty one) or ``run``
            holds a query that ``references`` lacks, or as :func:`chroma_span_scores`.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    k = _check_k(k)
    scored = [qid for qid, refs in references.items() if len(refs)]
    missing = [qid for qid in scored if qid not in run]
    extra = [qid for qid in run if qid not in references]
    if missing or extra:
        raise ValueError(
            f"span_metrics: run and references disagree: {len(missing)} queries with spans lack a ranking "
            f"(e.g. {missing[:3]}), {len(extra)} ranked queries have no references entry (e.g. {extra[:3]})"
        )
    names = (f"AR@{k}", f"SpanRecall@{k}", f"SpanPrecision@{k}", f"SpanIoU@{k}", f"Dup@{k}")
    out: dict[str, dict[str, float]] = {name: {} for name in names}
    for qid in scored:
        ranking, refs = run[qid], references[qid]
        chroma = chroma_span_scores(ranking, refs, k)
        out[names[0]][qid] = answer_contained_recall(ranking, refs, k)
        out[names[1]][qid] = chroma["recall"]
        out[names[2]][qid] = chroma["precision"]
        out[names[3]][qid] = chroma["iou"]
        out[names[4]][qid] = float(duplicate_slots(ranking, k))
    return out


def mean_over_queries(per_query: Mapping[str, float]) -> float:
    """Arithmetic mean over queries, ``(1/|Q|) Σ_q v_q``, with ``math.fsum`` (no rounding).

    Args:
        per_query: ``{query_id: value}``.

    Returns:
        The mean, a float.

    Raises:
        ValueError: if ``per_query`` is empty.
    """
    if not per_query:
        raise ValueError("mean_over_queries: no queries; the mean is undefined")
    return math.fsum(float(v) for v in per_query.values()) / len(per_query)
