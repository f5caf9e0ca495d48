"""The streamed late pass's sums: token states summed between cut points, one forward batch at a time.

Each token's state comes from exactly one macro window (their keep ranges tile the document), so a chunk's mean
is the sum, over the windows, of its kept states in each window, divided by its length: the pass adds each batch
into float32 sums between the *cut points* of every document (the ends of every span the group pools: the chunks
of every strategy split before the pass, and for ``semantic:source=late`` its :meth:`Strategy.cut_points
<latechunk.strategies.base.Strategy.cut_points>`: sentence spans and every possible chunk end), one segment-mean
launch per batch (the Triton kernel on CUDA); a span's mean is then the sum of its segments' sums over its
length. Memory: one batch and the sums, never a whole long document's token states.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import torch

from latechunk.encoder import StateBatch
from latechunk.pooling import segment_mean
from latechunk.strategies.base import SentenceVectors, Strategy
from latechunk.types import Document, Tokenization


class _SegmentSums:
    """Sums of token states between consecutive cut points of each document, filled one forward batch at a time.

    A document's cut points (sorted, unique, ``0`` and ``len(tok)`` included) cut it into segments
    ``[points[k], points[k + 1])``; :meth:`add` adds a forward batch's states to the sums of the segments its
    blocks overlap (one segment-mean launch per batch: the Triton kernel on CUDA; on the CPU one ``index_add`` of
    the kept rows into their segments), so the sums are complete once
    every block of the document has been added (its blocks tile it). A span whose ends are cut points is a run
    of segments: its mean is the sum of their sums divided by its length (:meth:`means`). Memory: (segments,
    dim) float32, whatever the documents' lengths.
    """

    def __init__(self, points: Sequence[np.ndarray], dim: int, device: torch.device | str) -> None:
        self.points = [np.asarray(p, dtype=np.int64) for p in points]
        counts = [max(len(p) - 1, 0) for p in self.points]
        self.first = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
        self.sums = torch.zeros((int(self.first[-1]), dim), dtype=torch.float32, device=device)

    @classmethod
    def concat(cls, a: _SegmentSums, b: _SegmentSums) -> _SegmentSums:
        """``a``'s documents, then ``b``'s."""
        out = cls.__new__(cls)
        out.points = a.points + b.points
        out.first = np.concatenate([a.first, b.first[1:] + a.first[-1]])
        out.sums = torch.cat([a.sums, b.sums.to(a.sums.device)])
        return out

    def add(self, batch: StateBatch) -> None:
        """Add one forward batch (:meth:`Encoder.iter_token_states`) to the segment sums."""
        spans, index = [], []
        for blk in batch.blocks:
            p = self.points[blk.doc]
            lo, hi = blk.start, blk.start + blk.n
            k0 = max(int(np.searchsorted(p, lo, side="right")) - 1, 0)  # the segment holding lo
            k1 = min(int(np.searchsorted(p, hi, side="left")), len(p) - 1)  # one past the last starting below hi
            if k1 <= k0:
                continue
            # segments clipped to the block (positions of the document), then rows of the batch
            clipped = np.stack([np.maximum(p[k0:k1], lo), np.minimum(p[k0 + 1 : k1 + 1], hi)], axis=1)
            spans.append(clipped + (blk.row - lo))
            index.append(np.arange(k0, k1, dtype=np.int64) + self.first[blk.doc])
        if not spans:
            return
        rows = np.concatenate(spans)
        if batch.states.device.type == "cpu" and self.sums.device.type == "cpu":
            # on the CPU, each kept row straight into its segment's sum (one index_add over the rows): no
            # averaging matrix, no mean times length (issue 15: the five-strategy pass cuts many segments)
            lens = rows[:, 1] - rows[:, 0]
            before = np.cumsum(lens) - lens
            row_ids = np.repeat(rows[:, 0] - before, lens) + np.arange(int(lens.sum()), dtype=np.int64)
            seg = np.repeat(np.concatenate(index), lens)
            self.sums.index_add_(0, torch.from_numpy(seg), batch.states[torch.from_numpy(row_ids)].float())
            return
        means = segment_mean(batch.states, rows)
        lens = torch.from_numpy(rows[:, 1] - rows[:, 0]).to(device=means.device, dtype=torch.float32)
        idx = torch.from_numpy(np.concatenate(index)).to(self.sums.device)
        self.sums.index_add_(0, idx, (means * lens[:, None]).to(self.sums.device))

    def locate(self, doc: int, spans: np.ndarray) -> np.ndarray | None:
        """The segment ranges of ``spans`` of document ``doc``: (n, 2) int64 ``[first, last + 1)`` rows of
        :attr:`sums`; None when an end of a span is not a cut point."""
        p = self.points[doc]
        s = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        k = np.searchsorted(p, s)
        if s.size and (int(k.max()) >= len(p) or (p[k] != s).any()):
            return None
        return k + self.first[doc]

    def means(self, ranges: np.ndarray, spans: np.ndarray, normalize: bool) -> torch.Tensor:
        """(n, dim) float32 mean token state of each span, from its segment range (:meth:`locate`) and its
        token span (for its length); L2-normalised when ``normalize``."""
        n, dim = ranges.shape[0], self.sums.shape[1]
        if n == 0:
            return torch.zeros((0, dim), dtype=torch.float32, device=self.sums.device)
        counts = ranges[:, 1] - ranges[:, 0]
        crow = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        cols = np.repeat(ranges[:, 0] - crow[:-1], counts) + np.arange(crow[-1], dtype=np.int64)
        lengths = (spans[:, 1] - spans[:, 0]).astype(np.float32)
        vals = np.repeat(np.float32(1.0) / lengths, counts)
        dev = self.sums.device
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            avg = torch.sparse_csr_tensor(torch.from_numpy(crow).to(dev), torch.from_numpy(cols).to(dev),
                                          torch.from_numpy(vals).to(dev), size=(n, self.sums.shape[0]),
                                          check_invariants=False)
            out = avg @ self.sums
        if normalize:
            out = torch.nn.functional.normalize(out, p=2.0, dim=1)
        return out


def _summed_sentence_vectors(sums: _SegmentSums | None, doc: int) -> SentenceVectors:
    """Sentence vectors of the late pass for document ``doc`` of ``sums`` (normalised means of the spans)."""

    def sentence_vectors(d: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        where = None if sums is None else sums.locate(doc, spans)
        if where is None:
            raise RuntimeError(f"document {d.doc_id!r}: sentence spans end outside the late pass's cut points "
                               "(the strategy's cut_points() must hold every sentence start and end)")
        return sums.means(where, np.asarray(spans, dtype=np.int64), normalize=True).cpu().numpy()

    return sentence_vectors


def _reads_late_sentences(s: Strategy) -> bool:
    """True for a strategy that splits on sentence vectors of the late pass (``semantic:source=late``)."""
    return s.needs_sentence_vectors and getattr(s, "source", "late") == "late"
