"""Paired comparison of two systems over the same queries: per-query differences and a bootstrap CI.

Method: the paired (percentile) bootstrap of the mean per-query difference (Efron & Tibshirani, "An
Introduction to the Bootstrap", Chapman & Hall 1993, ch. 13 and 16), as used for IR significance testing by
Sakai ("Evaluating evaluation metrics based on the bootstrap", SIGIR 2006; "Statistical reform in information
retrieval?", SIGIR Forum 48(1), 2014). Queries are resampled with replacement, keeping each query's A and B
scores together. Tests: ``tests/eval/test_eval_stats.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["BootstrapResult", "paired_bootstrap", "paired_differences"]

_BLOCK = 1000  # resamples drawn per block, to bound memory at _BLOCK * n_queries indices


@dataclass(frozen=True)
class BootstrapResult:
    """Result of :func:`paired_bootstrap`.

    Attributes:
        mean_diff: ``mean_q (a_q - b_q)``, the observed mean difference (A minus B).
        ci_low: Lower end of the percentile CI of the mean difference.
        ci_high: Upper end of the percentile CI.
        p_le_zero: Share of bootstrap means ``<= 0``: a one-sided, p-value-like figure for "A beats B"
            (small when A is better; near 1 when B is better). Not a calibrated p-value.
        n_queries: Number of paired queries.
        n_resamples: Number of bootstrap resamples.
        confidence: CI level, e.g. 0.95.
        seed: Seed of the ``numpy.random.Generator`` (PCG64) used.
    """

    mean_diff: float
    ci_low: float
    ci_high: float
    p_le_zero: float
    n_queries: int
    n_resamples: int
    confidence: float
    seed: int

    def to_dict(self) -> dict:
        """A JSON-ready dict of the fields.

        Returns:
            ``{field name: value}`` for every field.
        """
        return asdict(self)


def paired_differences(
    a: Mapping[str, float] | Sequence[float] | np.ndarray,
    b: Mapping[str, float] | Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Per-query differences ``d_q = a_q - b_q``.

    Args:
        a: System A's per-query scores: ``{query_id: score}``, or a 1-D sequence in a fixed query order.
        b: System B's scores, in the same form: the same query ids (order irrelevant; aligned by id, sorted),
            or a sequence of the same length and order.

    Returns:
        (n_queries,), float64. For mappings the order is ``sorted(query_ids)``.

    Raises:
        ValueError: if the query ids or lengths differ, there are no queries, or a score is not finite.
        TypeError: if one input is a mapping and the other is not.
    """
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise TypeError(
            "paired_differences: pass two {query_id: score} mappings or two sequences, not one of each"
        )
    if isinstance(a, Mapping):
        if set(a) != set(b):
            only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            raise ValueError(
                f"paired_differences: query ids differ: {len(only_a)} only in A (e.g. {only_a[:3]}), "
                f"{len(only_b)} only in B (e.g. {only_b[:3]}); a paired test needs the same queries"
            )
        ids = sorted(a)
        xa = np.array([a[q] for q in ids], dtype=np.float64)
        xb = np.array([b[q] for q in ids], dtype=np.float64)
    else:
        xa = np.asarray(a, dtype=np.float64)
        xb = np.asarray(b, dtype=np.float64)
        if xa.ndim != 1 or xb.ndim != 1 or xa.shape != xb.shape:
            raise ValueError(
                f"paired_differences: need two 1-D arrays of one length, got {xa.shape} and {xb.shape}"
            )
    if xa.size == 0:
        raise ValueError("paired_differences: no queries")
    if not (np.isfinite(xa).all() and np.isfinite(xb).all()):
        raise ValueError("paired_differences: scores must be finite")
    return xa - xb


def paired_bootstrap(
    a: Mapping[str, float] | Sequence[float] | np.ndarray,
    b: Mapping[str, float] | Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Paired bootstrap CI of the mean per-query difference A minus B (percentile method).

    With ``d_q = a_q - b_q`` over ``n`` queries: draw ``n_resamples`` resamples ``d*_r`` of ``n`` queries with
    replacement (``numpy.random.default_rng(seed)``); ``m_r = mean(d*_r)``. The CI is the
    ``(1 - confidence)/2`` and ``(1 + confidence)/2`` quantiles of ``{m_r}`` (``numpy.quantile``, linear
    interpolation), and ``p_le_zero = |{r : m_r <= 0}| / n_resamples``. Efron & Tibshirani 1993; Sakai 2014.

    Args:
        a: System A's per-query scores (``{query_id: score}`` or a 1-D sequence).
        b: System B's per-query scores, same queries.
        n_resamples: Bootstrap resamples, ``>= 1``.
        confidence: CI level in ``(0, 1)``.
        seed: Seed of the generator, so a report is reproducible.

    Returns:
        A :class:`BootstrapResult`; inputs are not modified.

    Raises:
        ValueError: on mismatched queries, no queries, ``n_resamples < 1`` or ``confidence`` outside
            ``(0, 1)``.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"paired_bootstrap: n_resamples must be an integer >= 1, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"paired_bootstrap: confidence must lie in (0, 1), got {confidence!r}")
    d = paired_differences(a, b)
    n = d.shape[0]
    rng = np.random.default_rng(seed)
    means = np.empty(int(n_resamples), dtype=np.float64)
    for lo in range(0, int(n_resamples), _BLOCK):
        hi = min(lo + _BLOCK, int(n_resamples))
        idx = rng.integers(0, n, size=(hi - lo, n))
        means[lo:hi] = d[idx].mean(axis=1)
    alpha = 1.0 - confidence
    ci_low, ci_high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return BootstrapResult(
        mean_diff=math.fsum(d.tolist()) / n,
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        p_le_zero=int((means <= 0.0).sum()) / int(n_resamples),
        n_queries=int(n),
        n_resamples=int(n_resamples),
        confidence=float(confidence),
        seed=int(seed),
    )
