"""Costs: how many times each content token is encoded or stored, observed over a corpus
(:func:`observed_overlap_multiplier`) and in theory for ``fixed`` with an overlap
(:func:`theoretical_overlap_multiplier`).

Part of :mod:`latechunk.eval.metrics`; tests: ``tests/eval/test_eval_metrics.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


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
