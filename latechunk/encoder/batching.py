"""Forward batches: the token budget per batch and the blocks of token states a batch gives back.

Batches are length-sorted and filled greedily up to a budget of padded tokens (``rows * longest``); the budget
never changes a vector (batches are padding-invariant, ``tests/encoder/test_encoder.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch


class StateBlock(NamedTuple):
    """The rows of one document's token states that one model input gives (see :meth:`Encoder.iter_token_states`).

    Attributes:
        doc: Index of the document in the tokenizations given.
        start: Its first token position in the document's tokenization; the block holds positions
            ``[start, start + n)``.
        row: Its first row in :attr:`StateBatch.states`.
        n: Rows (tokens).
    """

    doc: int
    start: int
    row: int
    n: int


class StateBatch(NamedTuple):
    """The token states of one forward batch (see :meth:`Encoder.iter_token_states`).

    Attributes:
        states: (rows, dim) float32 on the encoder's device: the batch's padded outputs, one model input after
            another (padding rows included; only the blocks' rows are token states a document keeps).
        blocks: One :class:`StateBlock` per model input of the batch; ``states[b.row : b.row + b.n]`` are the
            states of document ``b.doc``'s positions ``[b.start, b.start + b.n)``.
    """

    states: torch.Tensor
    blocks: list[StateBlock]


CPU_BATCH_TOKENS = 4096
"""The CPU's default token budget per forward batch (:func:`default_batch_tokens`)."""

GPU_BATCH_TOKENS = 16384
"""The default token budget per forward batch on CUDA and MPS (:func:`default_batch_tokens`)."""


def default_batch_tokens(device: torch.device) -> int:
    """The token budget per forward batch (padded tokens, ``rows * longest``) an encoder takes when none is asked for.

    :data:`CPU_BATCH_TOKENS` (4,096: 16 macro windows of 256 tokens) on the CPU, :data:`GPU_BATCH_TOKENS` (16,384)
    elsewhere. Measured on a 2-core AMD EPYC (all-MiniLM-L6-v2, latechunk late over the first quarter of the five
    Chroma corpora, 80,630 tokens, three interleaved rounds, ``scripts/bench_peers.py --budgets``;
    ``results/peers.md``, "batch budget"): fp32 12.0-12.8 s at 1,024-4,096 tokens against 13.7 s at 16,384;
    bf16 7.05 s at 4,096 (the fastest) against 8.0 s at 16,384 (a batch's activations outgrow the caches). The
    budget never changes a vector (batches are padding-invariant, ``tests/encoder/test_encoder.py``).

    Args:
        device: Where the encoder runs.

    Returns:
        The budget in tokens.
    """
    return CPU_BATCH_TOKENS if device.type == "cpu" else GPU_BATCH_TOKENS


def budget_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Greedy token-budget batches of row indices, longest first (so padding stays small).

    Args:
        lengths: Tokens of each model input.
        budget: Padded tokens per batch (``rows * longest``); a single input longer than it is a batch alone.

    Returns:
        Batches of indices into ``lengths``; every index once, the longest inputs first.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = lengths[cur[0]] if cur else lengths[i]
        if cur and longest * (len(cur) + 1) > budget:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches
