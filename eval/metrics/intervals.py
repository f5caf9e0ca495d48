"""Validation of the metrics' inputs (``k``, spans, one query's ranking and references) and the interval
arithmetic they share (union, length, intersection of half-open character intervals).

Part of :mod:`latechunk.eval.metrics`; tests: ``tests/eval/test_eval_metrics.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

_Interval = tuple[int, int]


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
