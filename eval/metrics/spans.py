r"""Retrieval metrics of the late-vs-naive evaluator, all in one place.

Inputs are plain Python/numpy values; nothing here knows about models, indexes or strategies.

- A *retrieved chunk* is any sequence whose first three entries are ``(doc_id, char_start, char_end)``
  (half-open character offsets into the source document). Extra entries (score, chunk_index, ...) are carried
  along untouched. A *ranking* is a best-first sequence of them.
- A *reference span* is ``(doc_id, char_start, char_end)`` (:data:`latechunk.eval.datasets.SpanRef`).
- *Chunk spans of a strategy* are ``{doc_id: (n_chunks, 2) int array of [char_start, char_end)}``, e.g.
  ``{b.doc_id: b.char_spans for b in boundaries}``.

Every unit is a character (a Python ``str`` index) of the source document. Per-query values are returned in
``{query_id: value}`` dicts and averaged with :func:`mean_over_queries`. Nothing is rounded and no input is
mutated. Tests: ``tests/eval/test_eval_metrics.py``.

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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

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

DEFAULT_DOC_MEASURES = ("nDCG@10", "R@100", "RR@10")
"""Document-level measures in ir_measures syntax; ``RR@10`` is MRR@10 once averaged."""

_Interval = tuple[int, int]


# ----------------------------------------------------------------------------------------------------------
# Validation and interval helpers
# ----------------------------------------------------------------------------------------------------------


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _as_span(item: Any, what: str) -> tuple[str, int, int]:
    """First three entries of ``item`` as ``(doc_id, char_start, char_end)``, checked."""
    try:
        doc_id, start, end = item[0], item[1], item[2]
    except (TypeError, IndexError, KeyError) as err:
        raise ValueError(f"{what} must start with (doc_id, char_start, char_end), got {item!r}") from err
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end))
    if not isinstance(doc_id, str) or not ints:
        raise TypeError(f"{what} must be (str, int, int, ...), got {item!r}")
    start, end = int(start), int(end)
    if not 0 <= start < end:
        raise ValueError(f"{what}: needs 0 <= char_start < char_end, got [{start}, {end}) in {item!r}")
    return doc_id, start, end


def _spans(items: Iterable[Any], what: str) -> list[tuple[str, int, int]]:
    return [_as_span(item, what) for item in items]


def _check_query(
    ranking: Sequence[Any], references: Sequence[Any], k: int, metric: str
) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
    """``(top-k chunks, reference spans)`` of one query, checked; ``metric`` names the caller in errors."""
    k = _check_k(k)
    refs = _spans(references, "reference span")
    if not refs:
        raise ValueError(f"{metric}: the query has no reference spans; the metric is undefined")
    return _spans(ranking[:k], "retrieved chunk"), refs


def _merge(intervals: Iterable[_Interval]) -> list[_Interval]:
    """Union of half-open intervals as sorted, disjoint, non-touching intervals."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def _length(merged: Iterable[_Interval]) -> int:
    return sum(e - s for s, e in merged)


def _intersection_length(a: list[_Interval], b: list[_Interval]) -> int:
    """``|A ∩ B|`` for two merged (sorted, disjoint) interval lists; a two-pointer sweep."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _by_doc(spans: Iterable[tuple[str, int, int]]) -> dict[str, list[_Interval]]:
    out: dict[str, list[_Interval]] = {}
    for doc_id, start, end in spans:
        out.setdefault(doc_id, []).append((start, end))
    return out


def _chunk_array(chunk_spans: Mapping[str, Any], doc_id: str) -> np.ndarray:
    if doc_id not in chunk_spans:
        raise ValueError(
            f"chunk_spans has no entry for document {doc_id!r}, which holds a reference span; pass the char "
            "spans of every chunk of every document (an empty (0, 2) array for a document with no chunks)"
        )
    arr = np.asarray(chunk_spans[doc_id])
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"chunk_spans[{doc_id!r}] must be an integer (n_chunks, 2) array, got {arr.dtype} {arr.shape}"
        )
    if (arr[:, 0] < 0).any() or (arr[:, 1] <= arr[:, 0]).any():
        raise ValueError(f"chunk_spans[{doc_id!r}]: every span needs 0 <= char_start < char_end")
    return arr.astype(np.int64, copy=False)


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
# Duplicates (overlapping retrieved chunks)
# ----------------------------------------------------------------------------------------------------------


def _overlap(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    return a[0] == b[0] and min(a[2], b[2]) > max(a[1], b[1])


def duplicate_slots(ranking: Sequence[Any], k: int) -> int:
    """Number of top-k slots spent on a chunk that overlaps an earlier top-k chunk of the same document.

    ``dup@k = |{i < k : exists j < i, doc_j = doc_i, min(end_i, end_j) > max(start_i, start_j)}|``: overlap
    means at least one shared character; "earlier" counts every earlier top-k chunk, itself a duplicate or not
    (its characters were already shown). Units: slots (chunks).

    Args:
        ranking: Retrieved chunks, best first, each ``(doc_id, char_start, char_end, ...)`` in characters.
        k: The cut-off (>= 1); a shorter ranking is taken whole.

    Returns:
        The number of duplicate slots, in ``[0, min(k, len(ranking)) - 1]`` (0 for an empty ranking).

    Raises:
        ValueError: if ``k < 1`` or a chunk is malformed.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    k = _check_k(k)
    top = _spans(ranking[:k], "retrieved chunk")
    return sum(any(_overlap(top[i], top[j]) for j in range(i)) for i in range(len(top)))


DEDUP_PREFIX = "dedup:"
"""Prefix of a metric scored on the deduplicated index (``compare --dedup-threshold``): ``dedup:AR@5``."""


def near_duplicate_share(ids: Sequence[int], vectors: np.ndarray, k: int, threshold: float) -> float:
    """Share of the top-k hits that are near-duplicates of a higher-ranked hit (``NearDup@k``).

    ``NearDup@k = |{i < k : exists j < i, cos(v_i, v_j) >= t}| / min(k, hits)``, cosines of L2-normalised
    float32 copies, with :data:`latechunk.dedup.COSINE_SLACK` as in ``embed --dedup`` (so an index that
    ``embed --dedup t`` wrote scores 0). Unlike :func:`duplicate_slots` (same document, shared characters), it
    counts any two hits whose vectors nearly coincide: copies of one text in two documents, boilerplate.

    Args:
        ids: Retrieved rows of ``vectors``, best first (``-1``: no hit, ignored).
        vectors: (n_rows, dim) float chunk vectors, row = index row.
        k: The cut-off (>= 1).
        threshold: Cosine threshold ``t`` in (0, 1].

    Returns:
        The share in [0, 1]; 0.0 for no hit.

    Raises:
        ValueError: if ``k < 1``.
    """
    from latechunk.dedup import COSINE_SLACK

    k = _check_k(k)
    top = [int(i) for i in list(ids)[:k] if int(i) >= 0]
    if not top:
        return 0.0
    x = np.asarray(vectors, dtype=np.float32)[top]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    sim = x @ x.T
    dup = sum(bool((sim[i, :i] >= threshold - COSINE_SLACK).any()) for i in range(1, len(top)))
    return dup / len(top)


def dedup_scores(vectors: np.ndarray, I: np.ndarray, qids: Sequence[str], search, score, threshold: float,
                 ks: Sequence[int]) -> tuple[dict[str, dict[str, float]], int]:
    """``compare --dedup-threshold``: one system scored as ``embed --dedup`` would index it, beside the run without.

    The chunks are deduplicated in row order (document, then chunk order: the order ``embed`` decides them) with
    :class:`latechunk.dedup.NearDuplicateFilter`; the kept rows are searched again (``search``) and the ranking,
    mapped back to the original rows, is scored by the same ``score`` as the full index.

    Args:
        vectors: (n_rows, dim) float32 chunk vectors of the system, row = index row.
        I: (n_queries, depth) int64 rows of the full index's ranking (``-1``: none), queries in ``qids`` order.
        qids: Query ids, row order of ``I``.
        search: ``search(kept_vectors) -> (D, I)``: the system's index over the kept vectors, searched with its
            queries to its depth (rows of ``kept_vectors``).
        score: ``score(D, I) -> {metric: {query_id: value}}`` over rows of ``vectors``.
        threshold: Cosine threshold in (0, 1].
        ks: Cut-offs for ``NearDup@k``.

    Returns:
        ``(per_query, dropped)``: ``NearDup@k`` of the full ranking, every metric of the deduplicated one under
        :data:`DEDUP_PREFIX` (``dedup:AR@5``, ``dedup:NearDup@5``, ...), and the number of chunks dropped.

    Raises:
        ValueError: on a bad threshold or k.
    """
    from latechunk.dedup import NearDuplicateFilter

    v = np.asarray(vectors, dtype=np.float32)
    keep = NearDuplicateFilter(v.shape[1], threshold).filter(v).keep if len(v) else np.zeros(0, dtype=bool)
    rows = np.flatnonzero(keep)
    D2, I2 = search(np.ascontiguousarray(v[rows]))
    I2 = np.where(I2 >= 0, rows[np.clip(I2, 0, max(len(rows) - 1, 0))] if len(rows) else -1, -1)
    out: dict[str, dict[str, float]] = {}
    for k in ks:
        out[f"NearDup@{k}"] = {q: near_duplicate_share(I[i], v, k, threshold) for i, q in enumerate(qids)}
        out[f"{DEDUP_PREFIX}NearDup@{k}"] = {q: near_duplicate_share(I2[i], v, k, threshold)
                                              for i, q in enumerate(qids)}
    for name, values in score(D2, I2).items():
        out[f"{DEDUP_PREFIX}{name}"] = values
    return out, int(len(v) - len(rows))


def drop_overlapping(ranking: Sequence[Any], k: int) -> list[Any]:
    """The first ``k`` chunks of ``ranking`` that overlap no already kept chunk of the same document.

    Walks the ranking best first; a chunk sharing at least one character with a kept chunk of its document is
    skipped, and further chunks fill the freed slots. Rank order is kept; the items are returned as given
    (extra entries included), in a new list. Returns fewer than ``k`` when the ranking runs out. Retrieve
    deeper than ``k`` (e.g. ``2k``) before calling it so there is something to fill with.

    Args:
        ranking: Retrieved chunks, best first, each ``(doc_id, char_start, char_end, ...)`` in characters.
        k: How many chunks to keep (>= 1).

    Returns:
        At most ``k`` items of ``ranking``, in rank order, no two of one document sharing a character.

    Raises:
        ValueError: if ``k < 1`` or a chunk is malformed.
        TypeError: if a span is not ``(str, int, int, ...)``.
    """
    k = _check_k(k)
    kept: list[Any] = []
    kept_spans: list[tuple[str, int, int]] = []
    for item in ranking:
        span = _as_span(item, "retrieved chunk")
        if any(_overlap(span, other) for other in kept_spans):
            continue
        kept.append(item)
        kept_spans.append(span)
        if len(kept) == k:
            break
    return kept


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


# ----------------------------------------------------------------------------------------------------------
# Document-level metrics (BEIR-style qrels)
# ----------------------------------------------------------------------------------------------------------


def doc_run_from_chunk_run(
    chunk_run: Mapping[str, Mapping[tuple[str, int], float]],
) -> dict[str, dict[str, float]]:
    """Document run from a chunk run: a document scores as its best chunk (MaxP; Dai & Callan, SIGIR 2019).

    ``score(q, d) = max_{c in chunks(d) retrieved for q} score(q, c)``.

    Args:
        chunk_run: ``{query_id: {(doc_id, chunk_index): score}}``, chunk identity as in DESIGN.md.

    Returns:
        ``{query_id: {doc_id: best score}}`` (ir_measures/ranx dict-of-dict); a query with no chunks maps to
        ``{}``.

    Raises:
        ValueError: if a key is not a ``(doc_id, chunk_index)`` pair or a score is not finite.
    """
    out: dict[str, dict[str, float]] = {}
    for qid, chunks in chunk_run.items():
        best: dict[str, float] = {}
        for key, score in chunks.items():
            if not isinstance(key, tuple) or len(key) != 2 or not isinstance(key[0], str):
                raise ValueError(
                    f"doc_run_from_chunk_run: query {qid!r}: keys must be (doc_id, chunk_index), got {key!r}"
                )
            value = float(score)
            if not math.isfinite(value):
                raise ValueError(f"doc_run_from_chunk_run: query {qid!r}: score of {key!r} is {value}")
            if key[0] not in best or value > best[key[0]]:
                best[key[0]] = value
        out[qid] = best
    return out


def doc_metrics(
    qrels: Mapping[str, Mapping[str, int]],
    doc_run: Mapping[str, Mapping[str, float]],
    measures: Sequence[str] = DEFAULT_DOC_MEASURES,
) -> dict[str, dict[str, float]]:
    """Document-level measures per query, computed by ir_measures (MacAvaney et al., ECIR 2022).

    Default measures: ``nDCG@10`` (Järvelin & Kekäläinen 2002, trec_eval's linear gain
    ``DCG = Σ_i rel_i / log2(i + 1)``), ``R@100`` (recall, share of relevant documents in the top 100) and
    ``RR@10`` (reciprocal rank of the first relevant document in the top 10; its mean is MRR@10). Ties are
    broken as trec_eval does.

    Every query of ``qrels`` gets a value; a query absent from ``doc_run`` (nothing retrieved) scores 0, the
    ``trec_eval -c`` convention. Run queries absent from ``qrels`` are ignored, as in trec_eval.

    Args:
        qrels: ``{query_id: {doc_id: relevance}}``.
        doc_run: ``{query_id: {doc_id: score}}`` (e.g. from :func:`doc_run_from_chunk_run`).
        measures: Measure names in ir_measures syntax.

    Returns:
        ``{measure name as given: {query_id: value}}``.

    Raises:
        ValueError: if a measure name does not parse.
    """
    import ir_measures

    parsed = {}
    for name in measures:
        try:
            parsed[ir_measures.parse_measure(name)] = name
        except (ValueError, NameError, SyntaxError, AttributeError, TypeError) as err:
            raise ValueError(f"doc_metrics: {name!r} is not an ir_measures measure (e.g. 'nDCG@10')") from err
    qrels_in = {str(q): {str(d): int(r) for d, r in rels.items()} for q, rels in qrels.items()}
    run_in = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in doc_run.items() if docs}
    out: dict[str, dict[str, float]] = {name: {qid: 0.0 for qid in qrels_in} for name in measures}
    if run_in and qrels_in:
        for metric in ir_measures.iter_calc(list(parsed), qrels_in, run_in):
            if metric.query_id in qrels_in:
                out[parsed[metric.measure]][metric.query_id] = float(metric.value)
    return out


# ----------------------------------------------------------------------------------------------------------
# Costs
# ----------------------------------------------------------------------------------------------------------


def observed_overlap_multiplier(token_spans: Mapping[str, Any], n_content_tokens: Mapping[str, int]) -> float:
    """How many times each content token is encoded or stored, on average, over a corpus.

    ``m = Σ_d Σ_{c in chunks(d)} (token_end_c - token_start_c) / Σ_d n_content_d``. Units: tokens. A tiling
    without overlap gives 1; ``fixed`` with size ``s`` and overlap ``v`` tends to
    :func:`theoretical_overlap_multiplier` on long documents (the last chunk of a document makes it smaller).

    Args:
        token_spans: ``{doc_id: (n_chunks, 2) int array}``, token spans (``Boundaries.token_spans``).
        n_content_tokens: ``{doc_id: content tokens}`` (``Tokenization.n_content``), same keys.

    Returns:
        The multiplier ``m`` (tokens per content token, >= 0).

    Raises:
        ValueError: if the keys differ, a document's spans are not (n, 2), or the corpus has no content
            tokens.
    """
    if set(token_spans) != set(n_content_tokens):
        raise ValueError(
            "observed_overlap_multiplier: token_spans and n_content_tokens must have the same doc_ids"
        )
    chunk_tokens = 0
    for doc_id, spans in token_spans.items():
        arr = np.asarray(spans)
        if arr.size:
            if arr.ndim != 2 or arr.shape[1] != 2:
                raise ValueError(
                    f"observed_overlap_multiplier: token_spans[{doc_id!r}] must be (n, 2), got {arr.shape}"
                )
            chunk_tokens += int((arr[:, 1].astype(np.int64) - arr[:, 0]).sum())
    content = sum(int(n) for n in n_content_tokens.values())
    if content <= 0:
        raise ValueError("observed_overlap_multiplier: the corpus has no content tokens")
    return chunk_tokens / content


def theoretical_overlap_multiplier(size: int, overlap: int) -> float:
    """``s / (s - v)``: tokens encoded per content token by fixed-size chunks of ``size`` s tokens with
    ``overlap`` v, in the limit of long documents.

    Args:
        size: Tokens per chunk.
        overlap: Tokens shared by consecutive chunks.

    Returns:
        The multiplier (>= 1).

    Raises:
        ValueError: unless ``0 <= overlap < size``.
    """
    if not 0 <= overlap < size:
        raise ValueError(
            f"theoretical_overlap_multiplier: needs 0 <= overlap < size, got size={size}, overlap={overlap}"
        )
    return size / (size - overlap)
