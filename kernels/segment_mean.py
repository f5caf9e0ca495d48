"""Segment mean pooling in one Triton kernel: vector i = mean of states[start_i:end_i], optionally normalised.

The pooling of late chunking (Günther et al. 2024, arXiv:2409.04701; see :mod:`latechunk.pooling`).

Same signature, semantics and errors as its torch reference :func:`.reference.segment_mean_ref`, which sits beside
it in ``reference.py`` (flash-attn's ``layer_norm_fn`` / ``layer_norm_ref`` pairing). Installed as
``latechunk.kernels.segment_mean``; like every module of this package it imports nothing from ``latechunk``.

Design (one launch for all spans):

- Grid ``(n_spans, n_d_programs)``. Program ``(s, p)`` owns span ``s`` and the dim blocks
  ``p, p + n_d_programs, ...`` of width ``BLOCK_D``. Without normalisation ``n_d_programs =
  cdiv(dim, BLOCK_D)``: one dim block each, the most parallelism, which matters when there are few long spans.
  With normalisation ``n_d_programs = 1``: one program owns the whole output row, because the L2 norm needs
  every column before any column can be scaled.
- For each of its dim blocks the program streams the span's rows in ``[BLOCK_T, BLOCK_D]`` tiles into a
  float32 ``[BLOCK_T, BLOCK_D]`` register accumulator (one reduction over tokens at the end, not one per
  tile), then multiplies by ``1 / span_len`` and stores the float32 mean.
- Normalisation (``NORMALIZE``): while storing the means the program also sums their squares; after a CTA
  barrier it re-reads its own row (``dim * 4`` bytes it just wrote, so served from L2) and rescales it by
  ``1 / max(||row||_2, 1e-12)`` (the eps of ``torch.nn.functional.normalize``).
- Per-document spans (``HAS_CU_SEQLENS``): the launcher expands ``cu_chunks`` into a per-span document index
  ``span_doc`` (n_spans,) int32 with ``torch.repeat_interleave`` (on the device, no extra host sync); the
  program loads ``doc = span_doc[s]`` and adds ``cu_seqlens[doc]`` to its start and end. Packed spans read
  nothing extra.
- Row offsets are computed in int64 (``total_tokens * dim`` may exceed 2**31); token indices are int32.

Memory traffic (bandwidth bound; one add per element read):

- reads ``sum_i(span_len_i) * dim * elem_size`` bytes of states (overlapping spans re-read their shared rows,
  mostly from L2) + ``n_spans * 2 * 4`` bytes of spans (+ ``n_spans * 4 * 2`` of ``span_doc`` and
  ``cu_seqlens`` entries per document);
- writes ``n_spans * dim * 4`` bytes (float32 means); normalisation adds an L2-resident re-read and re-write
  of the same ``n_spans * dim * 4`` bytes.

Runs on CUDA tensors, or on CPU tensors in the Triton interpreter: ``TRITON_INTERPRET=1`` must be in the
environment before this module is imported, since ``triton.jit`` picks the interpreter at decoration time.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from .reference import check_segment_inputs, segment_mean_ref

__all__ = ["launch_config", "segment_mean", "segment_mean_bytes", "segment_mean_ref"]

_SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_INTERPRETED = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


@triton.jit
def _segment_mean_fwd_kernel(
    states_ptr,  # (total_tokens, dim), fp32/bf16/fp16; column stride 1
    out_ptr,  # (n_spans, dim), fp32; row stride out_row_stride, column stride 1
    span_starts_ptr,  # start of span s at span_starts_ptr + s * span_stride
    span_ends_ptr,  # end of span s at span_ends_ptr + s * span_stride
    span_doc_ptr,  # (n_spans,) int32, document of each span; read only when HAS_CU_SEQLENS
    cu_seqlens_ptr,  # (n_docs + 1,) int32, token offsets of documents; read only when HAS_CU_SEQLENS
    states_row_stride,
    out_row_stride,
    span_stride,
    n_spans,
    dim,
    eps,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
    HAS_CU_SEQLENS: tl.constexpr,
    NORMALIZE: tl.constexpr,
):
    pid_s = tl.program_id(0)
    pid_d = tl.program_id(1)
    n_pid_d = tl.num_programs(1)

    start = tl.load(span_starts_ptr + pid_s * span_stride)
    end = tl.load(span_ends_ptr + pid_s * span_stride)
    if HAS_CU_SEQLENS:
        doc = tl.load(span_doc_ptr + pid_s)
        doc_offset = tl.load(cu_seqlens_ptr + doc)
        start += doc_offset
        end += doc_offset
    inv_len = 1.0 / (end - start).to(tl.float32)

    out_row_ptr = out_ptr + pid_s.to(tl.int64) * out_row_stride
    offs_t0 = tl.arange(0, BLOCK_T)
    sumsq = tl.zeros([BLOCK_D], dtype=tl.float32)
    for d0 in range(pid_d * BLOCK_D, dim, n_pid_d * BLOCK_D):
        offs_d = d0 + tl.arange(0, BLOCK_D)
        mask_d = offs_d < dim
        acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
        for t0 in range(start, end, BLOCK_T):
            offs_t = t0 + offs_t0
            row_ptrs = states_ptr + offs_t.to(tl.int64)[:, None] * states_row_stride + offs_d[None, :]
            mask = (offs_t < end)[:, None] & mask_d[None, :]
            acc += tl.load(row_ptrs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) * inv_len
        tl.store(out_row_ptr + offs_d, mean, mask=mask_d)
        if NORMALIZE:
            sumsq += mean * mean

    if NORMALIZE:
        # the whole row is written (n_pid_d == 1); make it visible to every thread of the CTA, then rescale
        tl.debug_barrier()
        inv_norm = 1.0 / tl.maximum(tl.sqrt(tl.sum(sumsq, axis=0)), eps)
        for d0 in range(0, dim, BLOCK_D):
            offs_d = d0 + tl.arange(0, BLOCK_D)
            mask_d = offs_d < dim
            row = tl.load(out_row_ptr + offs_d, mask=mask_d, other=0.0)
            tl.store(out_row_ptr + offs_d, row * inv_norm, mask=mask_d)


def launch_config(dim: int, normalize: bool, elem_size: int) -> dict:
    """Tile sizes and warps for a row width: ``BLOCK_D`` columns by ``BLOCK_T`` tokens per tile.

    Args:
        dim: row width of ``states`` (columns).
        normalize: whether the launch normalises (one program per row, so wider dim blocks: fewer passes).
        elem_size: bytes per element of ``states`` (4, 2).

    Returns:
        ``{"BLOCK_T", "BLOCK_D", "num_warps"}``. A tile holds about 4096 elements, 32 float32 accumulators per
        thread at 4 warps, so each thread keeps several 16-byte loads in flight; ``BLOCK_D`` is at least one
        16-byte vector wide.
    """
    block_d = min(triton.next_power_of_2(max(dim, 1)), 1024 if normalize else 256)
    # 16-byte vector loads: 4 fp32 or 8 half-precision elements per thread along dim
    min_block_d = 16 // elem_size
    block_d = max(block_d, min_block_d)
    block_t = max(1, min(64, 4096 // block_d))
    num_warps = 8 if block_t * block_d >= 8192 else 4
    return {"BLOCK_T": block_t, "BLOCK_D": block_d, "num_warps": num_warps}


def segment_mean_bytes(states: torch.Tensor, token_spans, cu_seqlens=None) -> int:
    """Bytes the kernel must move at least (the docstring's formula), for GB/s reports.

    Args:
        states: (n_tokens, dim). Only shape and dtype are used.
        token_spans: (n_spans, 2) integer. Span lengths are ``end - start`` in either coordinate system.
        cu_seqlens: None, or (n_docs + 1,); adds ``n_spans * 8`` bytes of per-document offsets read.

    Returns:
        ``sum(span_len) * dim * elem_size + n_spans * 8`` (+ ``n_spans * 8`` per document) read, plus
        ``n_spans * dim * 4`` written.
    """
    spans = torch.as_tensor(token_spans).reshape(-1, 2)
    n_spans, dim = spans.shape[0], states.shape[1]
    total_len = int((spans[:, 1].to(torch.int64) - spans[:, 0].to(torch.int64)).sum()) if n_spans else 0
    read = total_len * dim * states.element_size() + n_spans * 2 * 4
    if cu_seqlens is not None:
        read += n_spans * 2 * 4
    return read + n_spans * dim * 4


def segment_mean(
    states: torch.Tensor,
    token_spans,
    normalize: bool = False,
    cu_seqlens=None,
    cu_chunks=None,
    *,
    config: dict | None = None,
) -> torch.Tensor:
    """Segment mean of token states over token spans, one Triton launch for all spans.

    Args:
        states: (total_tokens, dim), float32, bfloat16 or float16, on CUDA (or on the CPU under
            ``TRITON_INTERPRET=1``). Packed token states; any row stride (columns are made contiguous).
        token_spans: (n_spans, 2), int32 (int64 / ndarray / list accepted, converted to int32). Half-open
            ``[start, end)`` token indices into ``states``, or into the span's own document when
            ``cu_seqlens`` is given.
        normalize: L2-normalise each output row inside the kernel: ``row / max(||row||_2, 1e-12)``.
        cu_seqlens: None, or (n_docs + 1,) int32. Token offsets of the documents packed in ``states``
            (flash-attn's ``cu_seqlens``): document j is ``states[cu_seqlens[j]:cu_seqlens[j+1]]``.
        cu_chunks: None, or (n_docs + 1,) int32. Document j owns spans ``cu_chunks[j]:cu_chunks[j+1]`` (the
            same array as ``ChunkVectors.cu_chunks``); required with ``cu_seqlens``. The launcher expands it
            to a per-span document index ``span_doc`` (n_spans,) int32 that the kernel reads.
        config: internal tuning override ``{"BLOCK_T", "BLOCK_D", "num_warps"}`` (benchmarks only); default
            :func:`launch_config`.

    Returns:
        (n_spans, dim), float32, on ``states.device``; row i = ``mean(states[o_i + start_i : o_i + end_i])``
        accumulated in float32 (``o_i`` = 0 packed, ``cu_seqlens[doc_i]`` per document), L2-normalised when
        ``normalize``. Zero spans give a (0, dim) tensor without a launch.

    Raises:
        ValueError: if any span is empty, outside ``states`` (or its document), the offsets are malformed, or
            ``states`` is on a device the kernel cannot run on.
        TypeError: if ``states`` is not float32, bfloat16 or float16, or ``token_spans`` is not integer.

    Memory traffic: reads ``sum(span_len) * dim * elem_size + n_spans * 8`` bytes, writes
    ``n_spans * dim * 4`` bytes (see the module docstring; :func:`segment_mean_bytes` computes it).
    """
    spans, span_doc, cu = check_segment_inputs(states, token_spans, cu_seqlens, cu_chunks)
    if states.dtype not in _SUPPORTED_DTYPES:
        raise TypeError(f"states must be float32, bfloat16 or float16, got {states.dtype}; cast it first")
    if states.device.type != "cuda" and not _INTERPRETED:
        raise ValueError(
            f"the Triton kernel needs CUDA tensors, got states on {states.device}; use "
            "latechunk.pooling.segment_mean (dispatches to the reference off CUDA), or set "
            "TRITON_INTERPRET=1 before importing latechunk.kernels.segment_mean to run the interpreter on CPU tensors"
        )
    n_spans, dim = spans.shape[0], states.shape[1]
    out = torch.empty((n_spans, dim), dtype=torch.float32, device=states.device)
    if n_spans == 0 or dim == 0:
        return out
    if states.shape[0] >= 2**31:
        raise ValueError(f"states has {states.shape[0]} rows; token indices must fit int32 (< 2**31)")
    if states.stride(1) != 1:
        states = states.contiguous()
    spans32 = spans.to(torch.int32).contiguous()
    if span_doc is not None:
        span_doc32 = span_doc.to(torch.int32).contiguous()
        cu32 = cu.to(torch.int32).contiguous()
    else:
        span_doc32 = cu32 = spans32  # never read: HAS_CU_SEQLENS is False
    cfg = dict(launch_config(dim, normalize, states.element_size()) if config is None else config)
    block_d = cfg["BLOCK_D"]
    n_d_programs = 1 if normalize else triton.cdiv(dim, block_d)
    grid = (n_spans, n_d_programs)
    _segment_mean_fwd_kernel[grid](
        states,
        out,
        spans32,
        spans32[:, 1:],
        span_doc32,
        cu32,
        states.stride(0),
        out.stride(0),
        spans32.stride(0),
        n_spans,
        dim,
        1e-12,
        BLOCK_T=cfg["BLOCK_T"],
        BLOCK_D=block_d,
        HAS_CU_SEQLENS=span_doc is not None,
        NORMALIZE=bool(normalize),
        num_warps=cfg.get("num_warps", 4),
    )
    return out
