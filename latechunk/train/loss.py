"""The training loss: InfoNCE over cosine similarities, the fused vectors of a step's targets, and the
candidates left out of an inverse-cloze query's softmax.

Tests: ``tests/train/test_train.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

    from latechunk.train.data import TrainExample, _DocPlan


def _fused_targets(late: torch.Tensor, targets: Sequence[int], naive: torch.Tensor,
                   cols: Sequence[int]) -> torch.Tensor:
    """The fused vectors of a step's distinct target chunks, as ``--mode fused`` serves them (unit late + unit
    naive; :func:`latechunk.pipeline.fused_vectors` then normalises, which the InfoNCE cosine does here).

    Args:
        late: (n_candidates, dim) float32 late vectors of the step (:func:`_late_step_vectors`).
        targets: Per query of the batch, its target's row in ``late``.
        naive: (n_distinct, dim) float32 naive vectors of the distinct target chunks.
        cols: Per query of the batch, its target's row in ``naive`` (queries sharing a chunk share a row).

    Returns:
        (n_distinct, dim) float32: row i is the fused vector of ``naive``'s chunk i.
    """
    import torch.nn.functional as F

    rows = [0] * len(naive)
    for t, c in zip(targets, cols):
        rows[c] = t
    return F.normalize(late[rows], dim=1) + F.normalize(naive, dim=1)


def _info_nce(q: torch.Tensor, c: torch.Tensor, targets: Sequence[int], temperature: float,
              exclude: np.ndarray | None = None) -> torch.Tensor:
    """InfoNCE: cross-entropy of cosine(q, c) / temperature against the target column of each query; candidates
    where ``exclude[i, j]`` is True are left out of query i's softmax (never its target)."""
    import torch
    import torch.nn.functional as F

    logits = F.normalize(q, dim=1) @ F.normalize(c, dim=1).T / temperature
    if exclude is not None and exclude.any():
        logits = logits.masked_fill(torch.from_numpy(exclude).to(logits.device), float("-inf"))
    return F.cross_entropy(logits, torch.as_tensor(list(targets), device=logits.device))


def _overlapping(batch: Sequence[tuple[TrainExample, int]], keys: Sequence[tuple[str, int]],
                 plans: dict[str, _DocPlan]) -> np.ndarray | None:
    """Inverse cloze: a candidate from another passage of the query's source document may hold the very text of
    the target (passages drawn from one document overlap), so it is no negative: (n_queries, n_candidates) True
    where left out. None for supervised examples (no ``source_doc``)."""
    src = {d: p.doc.metadata.get("source_doc") for d, p in plans.items()}
    if not any(v is not None for v in src.values()):
        return None
    out = np.zeros((len(batch), len(keys)), dtype=bool)
    for i, (ex, _) in enumerate(batch):
        mine = src[ex.doc.doc_id]
        for j, (d, _) in enumerate(keys):
            out[i, j] = mine is not None and d != ex.doc.doc_id and src[d] == mine
    return out
