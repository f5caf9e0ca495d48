"""Duplicates among the retrieved chunks: top-k slots spent on a chunk that overlaps an earlier one
(:func:`duplicate_slots`, ``Dup@k``), hits whose vectors nearly coincide (:func:`near_duplicate_share`,
``NearDup@k``), a system scored as ``embed --dedup`` would index it (:func:`dedup_scores`, ``compare
--dedup-threshold``), and a ranking with overlapping chunks dropped (:func:`drop_overlapping`).

Inputs and units as in :mod:`latechunk.eval.metrics`. Part of :mod:`latechunk.eval.metrics`; tests:
``tests/eval/test_eval_metrics.py``, ``tests/eval/test_eval_report.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .intervals import _as_span, _check_k, _spans


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
