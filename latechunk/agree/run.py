"""``latechunk agree``'s run: the Boundaries of several strategies from one late pass of
:func:`latechunk.pipeline.iter_embed` (``semantic`` needs the encoder), matched pair by pair (:func:`run_agree`,
:class:`AgreeRun`).

Part of :mod:`latechunk.agree`; tests: ``tests/test_agree.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from latechunk.agree.matching import DEFAULT_TOLERANCE, Agreement, cuts_of
from latechunk.agree.report import _labels, _pairwise, summarize
from latechunk.types import Boundaries, Document, Skipped


@dataclass
class AgreeRun:
    """What :func:`run_agree` found: every document's Boundaries per strategy and the agreement of each pair.

    Attributes:
        strategies: Strategy SPECs, in the order given.
        labels: ``{spec: short label}`` (the name where unique).
        tolerance: Tokens (:func:`agreement`).
        documents: The documents chunked, in input order.
        boundaries: ``{spec: [Boundaries per document]}``.
        agreements: ``{(spec_a, spec_b): [Agreement per document]}`` for every pair, in order.
        skipped: Input items not chunked, with reasons.
    """

    strategies: list[str]
    labels: dict[str, str]
    tolerance: int
    documents: list[Document] = field(default_factory=list)
    boundaries: dict[str, list[Boundaries]] = field(default_factory=dict)
    agreements: dict[tuple[str, str], list[Agreement]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready: ``{"tolerance", "unit", "strategies", "documents": [{"doc_id", "chunks", "cuts",
        "pairs"}], "total": [{"a", "b", **summarize}], "skipped"}`` (cuts as token positions per label)."""
        docs = []
        for k, d in enumerate(self.documents):
            docs.append({
                "doc_id": d.doc_id,
                "chunks": {self.labels[s]: len(self.boundaries[s][k]) for s in self.strategies},
                "cuts": {self.labels[s]: [c.token for c in cuts_of(self.boundaries[s][k])] for s in self.strategies},
                "pairs": [ags[k].to_dict() for ags in self.agreements.values()],
            })
        return {
            "tolerance": self.tolerance, "unit": "tokens", "strategies": dict(self.labels), "documents": docs,
            "total": [{"a": self.labels[a], "b": self.labels[b], **summarize(ags)}
                      for (a, b), ags in self.agreements.items()],
            "skipped": [{"doc_id": s.doc_id, "reason": s.reason} for s in self.skipped],
        }


def run_agree(items: Iterable[Document | Skipped], encoder, strategies: Sequence[str],
              tolerance: int = DEFAULT_TOLERANCE, *, sentence_workers: int = 0, progress: bool = False) -> AgreeRun:
    """Chunk documents with several strategies in one late pass and match their cuts pair by pair.

    Args:
        items: Documents (and the reader's skipped items), e.g. :func:`latechunk.io.iter_inputs`.
        encoder: A :class:`~latechunk.encoder.Encoder` (its tokenizer; ``semantic`` pools sentence vectors from
            its late pass).
        strategies: Two or more SPECs.
        tolerance: Tokens (:func:`agreement`).
        sentence_workers: Processes segmenting sentences (0: in this process).
        progress: Show the late pass's progress bar.

    Returns:
        AgreeRun.

    Raises:
        ValueError: with fewer than two strategies, an unknown or repeated SPEC, or a bad tolerance.
    """
    from latechunk.config import PipelineConfig
    from latechunk.pipeline import iter_embed

    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise ValueError(f"--tolerance must be an int >= 0 (tokens), got {tolerance!r}")
    if len(strategies) < 2:
        raise ValueError(f"agree needs two or more strategies to compare, got {list(strategies)}")
    config = PipelineConfig(strategies=tuple(strategies), modes=("late",), sentence_workers=sentence_workers)
    specs = [s.spec for s in config.strategies]
    run = AgreeRun(specs, _labels(specs), tolerance, boundaries={s: [] for s in specs})
    for g in iter_embed(items, encoder, config, progress=progress):
        run.documents.extend(g.documents)
        run.skipped.extend(g.skipped)
        for s in specs:
            run.boundaries[s].extend(g.boundaries[s])
    run.agreements = _pairwise(run.boundaries, [d.text for d in run.documents], tolerance)
    return run
