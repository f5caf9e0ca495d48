"""Torch references of the kernels in this package: same signatures, semantics and errors, any device.

The pooling of late chunking (Günther et al., "Late Chunking: Contextual Chunk Embeddings Using Long-Context
Embedding Models", 2024, arXiv:2409.04701): each chunk vector is the mean of the token states of its span.
:func:`segment_mean_ref` is the reference of :func:`.segment_mean.segment_mean` (the Triton kernel), as flash-attn
keeps ``layer_norm_ref`` beside ``layer_norm_fn``; both validate with :func:`check_segment_inputs`, so they
raise the same errors. Needs only torch and numpy (no Triton): :mod:`latechunk.pooling` re-exports these names
and runs the reference wherever the kernel cannot run.

Two span coordinate systems, as in flash-attn's varlen functions:

- packed (default): ``token_spans`` index rows of ``states`` directly;
- per document: ``states`` packs ``n_docs`` documents back to back, ``cu_seqlens`` (n_docs + 1,) holds their
  token offsets, and ``cu_chunks`` (n_docs + 1,) says which rows of ``token_spans`` belong to which document
  (document j owns spans ``cu_chunks[j]:cu_chunks[j+1]``); each span is then relative to its own document's
  first token.

This package is a leaf: nothing here imports ``latechunk`` (checked by import-linter, see pyproject.toml).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

__all__ = ["check_segment_inputs", "check_spans", "segment_mean_ref"]


def check_spans(token_spans: torch.Tensor, n_tokens: int) -> None:
    """Validate packed spans up front.

    Args:
        token_spans: (n_spans, 2), integer tensor. Half-open ``[start, end)`` token indices.
        n_tokens: Rows of the states the spans index (tokens).

    Raises:
        ValueError: if spans are not (n, 2), any span is empty, or one exceeds ``n_tokens``.
    """
    if token_spans.ndim != 2 or token_spans.shape[1] != 2:
        raise ValueError(f"token_spans must have shape (n_spans, 2), got {tuple(token_spans.shape)}")
    if token_spans.shape[0] == 0:
        return
    starts, ends = token_spans[:, 0], token_spans[:, 1]
    if bool((starts < 0).any()) or bool((ends <= starts).any()) or int(ends.max()) > n_tokens:
        bad = int(torch.nonzero((starts < 0) | (ends <= starts) | (ends > n_tokens))[0, 0])
        raise ValueError(
            f"span {bad} = [{int(starts[bad])}, {int(ends[bad])}) is empty or outside [0, {n_tokens}) tokens"
        )


def _as_spans(token_spans, device) -> torch.Tensor:
    if isinstance(token_spans, np.ndarray):
        token_spans = torch.from_numpy(np.ascontiguousarray(token_spans))
    spans = torch.as_tensor(token_spans, device=device)
    if spans.dtype.is_floating_point or spans.dtype.is_complex or spans.dtype == torch.bool:
        raise TypeError(f"token_spans must be integer (int32 or int64), got dtype {spans.dtype}")
    if spans.numel() == 0:
        spans = spans.reshape(0, 2)
    if spans.ndim != 2 or spans.shape[1] != 2:
        raise ValueError(f"token_spans must have shape (n_spans, 2), got {tuple(spans.shape)}")
    return spans.to(torch.int64)


def _as_offsets(name: str, value, device) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.ascontiguousarray(value))
    value = torch.as_tensor(value, device=device)
    if value.dtype.is_floating_point or value.dtype == torch.bool or value.ndim != 1 or value.shape[0] < 1:
        raise ValueError(
            f"{name} must be a 1-D integer tensor of shape (n_docs + 1,), got shape {tuple(value.shape)} "
            f"dtype {value.dtype}"
        )
    return value.to(torch.int64)


def check_segment_inputs(states: torch.Tensor, token_spans, cu_seqlens=None, cu_chunks=None):
    """Validate every input of a segment mean up front and bring spans to one form.

    Args:
        states: (n_tokens, dim), floating point. Token states.
        token_spans: (n_spans, 2), integer (tensor, ndarray or nested list). Half-open ``[start, end)`` token
            indices; into ``states`` when ``cu_seqlens`` is None, else into the span's own document.
        cu_seqlens: None, or (n_docs + 1,) integer. Token offsets of the documents packed in ``states``:
            non-decreasing, ``cu_seqlens[0] == 0``, ``cu_seqlens[-1] == n_tokens``.
        cu_chunks: None, or (n_docs + 1,) integer. Span offsets: document j owns rows
            ``cu_chunks[j]:cu_chunks[j+1]`` of ``token_spans``; ``cu_chunks[-1] == n_spans``. Required exactly
            when ``cu_seqlens`` is given.

    Returns:
        ``(spans, span_doc, cu_seqlens)``: spans (n_spans, 2) int64 on ``states.device`` in the coordinates they
        came in; span_doc (n_spans,) int64, the document index of each span (None in packed mode); cu_seqlens
        (n_docs + 1,) int64 (None in packed mode).

    Raises:
        ValueError: on a wrong shape, an empty span, a span outside its document (or outside ``states``), or
            malformed ``cu_seqlens``/``cu_chunks``.
        TypeError: if ``states`` is not floating point, or ``token_spans`` is not integer.
    """
    if not isinstance(states, torch.Tensor) or states.ndim != 2:
        raise ValueError(
            f"states must be a tensor of shape (n_tokens, dim), got {getattr(states, 'shape', states)}"
        )
    if not states.dtype.is_floating_point:
        raise TypeError(f"states must be floating point (float32, bfloat16, float16), got {states.dtype}")
    spans = _as_spans(token_spans, states.device)
    if (cu_seqlens is None) != (cu_chunks is None):
        raise ValueError(
            "cu_seqlens and cu_chunks go together: per-document spans need both the documents' token offsets "
            "(cu_seqlens) and which spans belong to which document (cu_chunks); pass both or neither"
        )
    if cu_seqlens is None:
        check_spans(spans, states.shape[0])
        return spans, None, None
    cu_seqlens = _as_offsets("cu_seqlens", cu_seqlens, states.device)
    cu_chunks = _as_offsets("cu_chunks", cu_chunks, states.device)
    if cu_seqlens.shape != cu_chunks.shape:
        raise ValueError(
            f"cu_seqlens {tuple(cu_seqlens.shape)} and cu_chunks {tuple(cu_chunks.shape)} must both be (n_docs + 1,)"
        )
    for name, cu, total, unit in (
        ("cu_seqlens", cu_seqlens, states.shape[0], "n_tokens = states.shape[0]"),
        ("cu_chunks", cu_chunks, spans.shape[0], "n_spans = token_spans.shape[0]"),
    ):
        if int(cu[0]) != 0 or int(cu[-1]) != total or bool((cu[1:] < cu[:-1]).any()):
            raise ValueError(
                f"{name} must be non-decreasing, start at 0 and end at {unit} = {total}; "
                f"got first {int(cu[0])}, last {int(cu[-1])}"
            )
    n_docs = cu_chunks.shape[0] - 1
    counts = cu_chunks[1:] - cu_chunks[:-1]
    span_doc = torch.repeat_interleave(
        torch.arange(n_docs, device=states.device), counts, output_size=spans.shape[0]
    )
    if spans.shape[0]:
        doc_len = (cu_seqlens[1:] - cu_seqlens[:-1])[span_doc]
        starts, ends = spans[:, 0], spans[:, 1]
        bad_mask = (starts < 0) | (ends <= starts) | (ends > doc_len)
        if bool(bad_mask.any()):
            bad = int(torch.nonzero(bad_mask)[0, 0])
            raise ValueError(
                f"span {bad} = [{int(starts[bad])}, {int(ends[bad])}) of document {int(span_doc[bad])} is empty or "
                f"outside [0, {int(doc_len[bad])}) tokens (spans are relative to their document when cu_seqlens "
                "is given)"
            )
    return spans, span_doc, cu_seqlens


def segment_mean_ref(
    states: torch.Tensor, token_spans, normalize: bool = False, cu_seqlens=None, cu_chunks=None
) -> torch.Tensor:
    """Reference segment mean (torch, any device).

    Args:
        states: (n_tokens, dim), float32, bfloat16 or float16. Token states (packed or one document).
        token_spans: (n_spans, 2), int32/int64. Half-open ``[start, end)`` token indices into ``states``, or
            into the span's own document when ``cu_seqlens`` is given.
        normalize: L2-normalise each output row.
        cu_seqlens: None, or (n_docs + 1,) int32. Token offsets of the documents packed in ``states``.
        cu_chunks: None, or (n_docs + 1,) int32. Document j owns spans ``cu_chunks[j]:cu_chunks[j+1]``;
            required with ``cu_seqlens``.

    Returns:
        (n_spans, dim), float32; row i is ``states[o_i + start_i : o_i + end_i].mean(0)`` accumulated in
        float32 (a sparse CSR averaging matrix times the states), where ``o_i`` is 0 in packed mode and ``cu_seqlens[doc_i]`` per
        document (then divided by ``max(||row||_2, 1e-12)`` when ``normalize``).

    Raises:
        ValueError: if any span is empty or exceeds ``states.shape[0]`` (or its document), or the offsets
            are malformed.
        TypeError: if ``states`` is not floating point, or ``token_spans`` is not integer.
    """
    spans, span_doc, cu = check_segment_inputs(states, token_spans, cu_seqlens, cu_chunks)
    if span_doc is not None:
        spans = spans + cu[span_doc].unsqueeze(1)
    n, dim = spans.shape[0], states.shape[1]
    if n == 0:
        return torch.zeros((0, dim), dtype=torch.float32, device=states.device)
    # One sparse (n_spans, n_tokens) averaging matrix times the states: O(sum of span lengths * dim), exact
    # fp32 accumulation per span, overlapping spans allowed, no (n_tokens, dim) temporaries.
    lens = spans[:, 1] - spans[:, 0]
    rows = torch.repeat_interleave(torch.arange(n, device=states.device), lens)
    first = torch.repeat_interleave(spans[:, 0] - (torch.cumsum(lens, 0) - lens), lens)
    cols = first + torch.arange(rows.shape[0], device=states.device)
    vals = torch.repeat_interleave(1.0 / lens.to(torch.float32), lens)
    crow = torch.zeros(n + 1, dtype=torch.int64, device=states.device)
    torch.cumsum(lens, 0, out=crow[1:])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        avg = torch.sparse_csr_tensor(crow, cols, vals, size=(n, states.shape[0]), check_invariants=False)
        out = avg @ states.to(torch.float32)
    if normalize:
        out = torch.nn.functional.normalize(out, p=2.0, dim=1)
    return out
