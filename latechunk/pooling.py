"""Segment mean pooling: chunk vector = mean of the token states inside its token span.

This is the pooling step of late chunking (Günther et al., "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", 2024, arXiv:2409.04701): the document is encoded once and each chunk vector is
the mean of the token states of its span.

A pure function of token states and spans: inputs are never mutated, no span is dropped, row i is span i.
On CUDA with Triton importable, :func:`segment_mean` dispatches to the Triton kernel
``latechunk.kernels.segment_mean`` (same signature); elsewhere it runs :func:`segment_mean_ref`. The reference and
its input checks live beside the kernel in ``latechunk.kernels.reference`` (the repository's ``kernels/``
folder), which needs no Triton; this module re-exports them, so ``from latechunk.pooling import
segment_mean_ref`` keeps working.

Spans are packed (indices into ``states``) or per document (``cu_seqlens``/``cu_chunks``, the arrays of
flash-attn's varlen functions; ``cu_chunks`` is :attr:`ChunkVectors.cu_chunks`): see
:mod:`latechunk.kernels.reference`.
"""

from __future__ import annotations

import torch

from latechunk.kernels.reference import check_segment_inputs, check_spans, segment_mean_ref

__all__ = ["check_segment_inputs", "check_spans", "segment_mean", "segment_mean_ref"]


def _kernel_available(states: torch.Tensor) -> bool:
    """True when ``states`` lives on a CUDA device and Triton plus ``latechunk.kernels.segment_mean`` import."""
    if not isinstance(states, torch.Tensor) or states.device.type != "cuda":
        return False
    try:
        import triton  # noqa: F401

        import latechunk.kernels.segment_mean  # noqa: F401
    except ImportError:
        return False
    return True


def segment_mean(
    states: torch.Tensor, token_spans, normalize: bool = False, cu_seqlens=None, cu_chunks=None
) -> torch.Tensor:
    """Segment mean with dispatch: the Triton kernel on CUDA when available, else :func:`segment_mean_ref`.

    Both paths validate with the same :func:`check_segment_inputs` and accumulate in float32.

    Args:
        states: (n_tokens, dim), float32, bfloat16 or float16. Token states (packed or one document).
        token_spans: (n_spans, 2), int32/int64. Half-open ``[start, end)`` token indices into ``states``, or
            into the span's own document when ``cu_seqlens`` is given.
        normalize: L2-normalise each output row.
        cu_seqlens: None, or (n_docs + 1,) int32. Token offsets of the documents packed in ``states``.
        cu_chunks: None, or (n_docs + 1,) int32. Document j owns spans ``cu_chunks[j]:cu_chunks[j+1]``;
            required with ``cu_seqlens``.

    Returns:
        (n_spans, dim), float32, on ``states.device``; row i is the mean of span i's token states (divided by
        ``max(||row||_2, 1e-12)`` when ``normalize``).

    Raises:
        ValueError: if any span is empty or outside ``states`` (or its document), or the offsets are malformed.
        TypeError: if ``states`` is not floating point, or ``token_spans`` is not integer (the kernel also
            rejects float64 states).
    """
    if _kernel_available(states):
        from latechunk.kernels.segment_mean import segment_mean as segment_mean_kernel

        return segment_mean_kernel(
            states, token_spans, normalize=normalize, cu_seqlens=cu_seqlens, cu_chunks=cu_chunks
        )
    return segment_mean_ref(
        states, token_spans, normalize=normalize, cu_seqlens=cu_seqlens, cu_chunks=cu_chunks
    )
