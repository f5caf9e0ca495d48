"""Near-duplicate chunks: a chunk whose cosine to an earlier *kept* chunk is at least a threshold is dropped.

``embed --dedup THRESHOLD`` (:mod:`latechunk.ingest`) and ``compare --dedup-threshold`` (:mod:`latechunk.eval`) use
:class:`NearDuplicateFilter`; the rule lives here once:

- **order**: chunks are decided one by one in the order given (the input order: documents in input order,
  chunks in document order), so "earlier" is well defined; the chunks of one document are compared with each
  other too;
- **kept set**: a chunk is compared only with the chunks kept before it (a dropped chunk never causes another
  drop), so the result equals a greedy pass over the whole stream however it is cut into batches (shards);
- **cosine**: inner product of L2-normalised float32 copies of the vectors (the caller's vectors are never
  changed, so a ``--no-normalize`` run can deduplicate too); a cosine within :data:`COSINE_SLACK` below the
  threshold counts as reaching it, so that ``1.0`` catches exact copies despite float32 rounding;
- **exact**: FAISS range search (``IndexFlatIP.range_search``: every stored vector whose inner product with the
  query exceeds the radius), first against the chunks kept in earlier batches, then within the batch; no
  approximation. Of several kept chunks above the threshold, the one with the highest cosine (then the
  earliest) is named as the one the dropped chunk duplicates.

Memory: the kept vectors, ``ntotal * dim * 4`` bytes (as a flat index of the run). Tests: ``tests/test_dedup.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["COSINE_SLACK", "DedupDecision", "NearDuplicateFilter", "check_threshold"]

COSINE_SLACK = 1e-6
"""float32 rounding: a cosine at least ``threshold - COSINE_SLACK`` reaches the threshold."""


def check_threshold(threshold: float, what: str = "--dedup") -> float:
    """Validate a dedup threshold.

    Args:
        threshold: Cosine threshold, ``0 < threshold <= 1``.
        what: The option's name for the message.

    Returns:
        ``float(threshold)``.

    Raises:
        ValueError: if it is not a number in ``(0, 1]``.
    """
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {threshold!r}: give a cosine threshold, a number in (0, 1]") from None
    if isinstance(threshold, bool) or not 0.0 < t <= 1.0:
        raise ValueError(f"{what} {threshold!r}: the cosine threshold must be in (0, 1] (0.95: near-copies; "
                         "1: exact copies)")
    return t


@dataclass(frozen=True)
class DedupDecision:
    """What :meth:`NearDuplicateFilter.filter` decided for a batch of n chunks.

    Attributes:
        keep: (n,) bool; True for a chunk that is kept (added to the kept set).
        duplicate_of: (n,) int64; for a dropped chunk the id of the kept chunk it duplicates (its place in the
            kept set, 0-based over every kept chunk so far: in ``embed``, its vector id), else -1.
        cosine: (n,) float32; for a dropped chunk its cosine to that kept chunk, else NaN.
    """

    keep: np.ndarray
    duplicate_of: np.ndarray
    cosine: np.ndarray

    @property
    def dropped(self) -> np.ndarray:
        """(n_dropped,) int64: positions in the batch of the dropped chunks, in order."""
        return np.flatnonzero(~self.keep)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.array(x, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return np.ascontiguousarray(x)


class NearDuplicateFilter:
    """The kept set of a greedy near-duplicate pass (see the module doc), batch by batch.

    Args:
        dim: Vector dimension.
        threshold: Cosine threshold, ``0 < threshold <= 1``.

    Raises:
        ValueError: on a threshold outside ``(0, 1]`` or ``dim < 1``.
    """

    def __init__(self, dim: int, threshold: float) -> None:
        import faiss

        if int(dim) < 1:
            raise ValueError(f"NearDuplicateFilter: dim must be >= 1, got {dim}")
        self.dim = int(dim)
        self.threshold = check_threshold(threshold)
        self._index = faiss.IndexFlatIP(self.dim)

    @property
    def ntotal(self) -> int:
        """Chunks kept so far (the id the next kept chunk gets)."""
        return int(self._index.ntotal)

    def _check(self, vectors: np.ndarray) -> np.ndarray:
        v = np.asarray(vectors)
        if v.ndim != 2 or v.shape[1] != self.dim:
            raise ValueError(f"NearDuplicateFilter: vectors must be (n, {self.dim}), got {v.shape}")
        if v.shape[0] and not np.isfinite(v).all():
            raise ValueError("NearDuplicateFilter: vectors hold NaN or inf")
        return _unit(v) if v.shape[0] else np.zeros((0, self.dim), np.float32)

    def add_kept(self, vectors: np.ndarray) -> None:
        """Add chunks already kept (a resumed run's or an appended folder's earlier shards), in order, unchecked.

        Args:
            vectors: (n, dim) float vectors (normalised copies are stored).

        Raises:
            ValueError: on a wrong shape or a non-finite value.
        """
        x = self._check(vectors)
        if x.shape[0]:
            self._index.add(x)

    def filter(self, vectors: np.ndarray) -> DedupDecision:
        """Decide, in order, which of ``vectors`` are kept; the kept ones join the kept set.

        Args:
            vectors: (n, dim) float vectors of the next chunks, in order.

        Returns:
            The :class:`DedupDecision` (ids in ``duplicate_of`` count every kept chunk, earlier batches first).

        Raises:
            ValueError: on a wrong shape or a non-finite value.
        """
        import faiss

        x = self._check(vectors)
        n = x.shape[0]
        keep = np.ones(n, dtype=bool)
        dup = np.full(n, -1, dtype=np.int64)
        cos = np.full(n, np.nan, dtype=np.float32)
        if n == 0:
            return DedupDecision(keep, dup, cos)
        radius = float(self.threshold - COSINE_SLACK)
        base = self.ntotal
        if base:  # against the chunks kept in earlier batches
            lims, D, I = self._index.range_search(x, radius)
            for i in range(n):
                a, b = int(lims[i]), int(lims[i + 1])
                if b > a:
                    j = a + _best(D[a:b], I[a:b])
                    keep[i], dup[i], cos[i] = False, int(I[j]), float(D[j])
        # within the batch: pairs above the radius, decided in order against the chunks kept so far
        inner = faiss.IndexFlatIP(self.dim)
        inner.add(x)
        lims, D, I = inner.range_search(x, radius)
        new_id = np.full(n, -1, dtype=np.int64)
        next_id = base
        for i in range(n):
            if keep[i]:
                a, b = int(lims[i]), int(lims[i + 1])
                js, ds = I[a:b], D[a:b]
                m = (js < i) & keep[np.minimum(js, n - 1)] if b > a else np.zeros(0, dtype=bool)
                if m.any():
                    k = _best(ds[m], new_id[js[m]])
                    keep[i], dup[i], cos[i] = False, int(new_id[js[m]][k]), float(ds[m][k])
                    continue
                new_id[i] = next_id
                next_id += 1
        if keep.any():
            self._index.add(x[keep])
        return DedupDecision(keep, dup, cos)


def _best(scores: np.ndarray, ids: Sequence[int] | np.ndarray) -> int:
    """Position of the highest score, the smallest id among equal scores."""
    s = np.asarray(scores, dtype=np.float64)
    ids = np.asarray(ids, dtype=np.int64)
    order = np.lexsort((ids, -s))
    return int(order[0])
