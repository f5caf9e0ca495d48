"""What the pipeline returns: :class:`GroupResult` (one group of :func:`~latechunk.pipeline.iter_embed`'s stream),
:class:`EmbedResult` and :class:`StrategyRun` (:func:`~latechunk.pipeline.embed`), :class:`PipelineStats` (the
counters of a group or a run), and :func:`pack_chunk_vectors`, the one place a mode's vector rows and the chunks of
their Boundaries become a :class:`~latechunk.types.ChunkVectors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from latechunk.strategies.base import Strategy, get_strategy
from latechunk.types import Boundaries, ChunkVectors, Document, Mode, Skipped, Tokenization

STAGES = ("tokenize", "split", "late_encode", "pool", "naive_encode", "contextual_encode")
"""The timed stages of the pipeline (keys of :attr:`PipelineStats.seconds`)."""


@dataclass
class PipelineStats:
    """Counters of a pipeline run or of one group (add groups with :meth:`add`).

    Attributes:
        documents_in: Documents read (input items that are documents; io-level skips not counted).
        content_tokens: Content tokens of the embedded documents (frame excluded).
        tokens: Tokens sent through the encoder per mode (``late``: the shared pass, frame and macro-window
            overlaps included; ``naive``: every chunk's input; ``contextual``: every chunk's input with its
            header, only where that mode runs).
        forward_calls: Encoder forward calls per mode.
        naive_tokens_by_strategy: Naive tokens per strategy SPEC.
        contextual_tokens_by_strategy: Contextual tokens per strategy SPEC (empty unless that mode runs).
        seconds: Wall seconds per stage (:data:`STAGES`); ``late_encode`` includes adding each forward batch
            into the segment sums of the streamed late pass, ``pool`` the chunk means taken from them.
        seconds_by_strategy: Per strategy SPEC: ``{"pool": s, "naive": s}`` (and ``"contextual": s`` where that
            mode runs).
    """

    documents_in: int = 0
    content_tokens: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    forward_calls: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    naive_tokens_by_strategy: dict[str, int] = field(default_factory=dict)
    contextual_tokens_by_strategy: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    seconds_by_strategy: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, other: PipelineStats) -> None:
        """Add ``other``'s counters to these (in place).

        Args:
            other: The counters of another group or run; it is not changed.
        """
        self.documents_in += other.documents_in
        self.content_tokens += other.content_tokens
        for mine, theirs in ((self.tokens, other.tokens), (self.forward_calls, other.forward_calls),
                             (self.naive_tokens_by_strategy, other.naive_tokens_by_strategy),
                             (self.contextual_tokens_by_strategy, other.contextual_tokens_by_strategy),
                             (self.seconds, other.seconds)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for spec, d in other.seconds_by_strategy.items():
            mine = self.seconds_by_strategy.setdefault(spec, {"pool": 0.0, "naive": 0.0})
            for k, v in d.items():
                mine[k] = mine.get(k, 0.0) + v

    def to_dict(self) -> dict:
        """JSON-ready counters.

        Returns:
            A new dict with the fields of this class as keys (nested dicts copied): counts in documents and
            tokens, ``seconds`` in wall seconds.
        """
        return {
            "documents_in": self.documents_in,
            "content_tokens": self.content_tokens,
            "tokens": dict(self.tokens),
            "forward_calls": dict(self.forward_calls),
            "naive_tokens_by_strategy": dict(self.naive_tokens_by_strategy),
            **({"contextual_tokens_by_strategy": dict(self.contextual_tokens_by_strategy)}
               if self.contextual_tokens_by_strategy else {}),
            "seconds": dict(self.seconds),
            "seconds_by_strategy": {k: dict(v) for k, v in self.seconds_by_strategy.items()},
        }


@dataclass
class StrategyRun:
    """One strategy's output over all embedded documents: Boundaries per document, and vectors per mode.

    Attributes:
        strategy: The strategy.
        boundaries: One Boundaries per embedded document, in document order.
        vectors: ``{mode: ChunkVectors}`` (``late``, ``naive``, ``contextual``, ``fused``) for the modes asked for; row i of
            each is chunk i of the concatenated boundaries (identical chunk records in every mode).
        tokens_encoded: Tokens through the encoder per mode (late: the shared pass, counted once per run).
        seconds: Seconds per mode (late: the shared encode plus this strategy's pooling; naive and contextual: its
            encode).
    """

    strategy: Strategy
    boundaries: list[Boundaries] = field(default_factory=list)
    vectors: dict[str, ChunkVectors] = field(default_factory=dict)
    tokens_encoded: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def n_chunks(self) -> int:
        """Chunks over all embedded documents."""
        return sum(len(b) for b in self.boundaries)


@dataclass
class EmbedResult:
    """The output of :func:`embed`.

    Attributes:
        documents: The embedded documents, in input order.
        tokenizations: Their tokenizations (same order).
        skipped: Input items not embedded, with reasons, in input order.
        runs: ``{strategy spec: StrategyRun}``, in the order the strategies were given.
        stats: The run's counters.
    """

    documents: list[Document]
    tokenizations: list[Tokenization]
    skipped: list[Skipped]
    runs: dict[str, StrategyRun]
    stats: PipelineStats

    def run(self, spec: str | Strategy) -> StrategyRun:
        """The run of a strategy given by any SPEC form (``fixed`` finds ``fixed:size=256,overlap=0``).

        Args:
            spec: A SPEC string (defaults filled in, aliases accepted) or a Strategy.

        Returns:
            The :class:`StrategyRun` of that strategy.

        Raises:
            ValueError: on an unknown strategy or parameter.
            KeyError: if the strategy was not part of this result.
        """
        return self.runs[get_strategy(spec).spec]


@dataclass
class GroupResult:
    """One group of input items from :func:`iter_embed`: a contiguous run of the input stream.

    Attributes:
        index: The group's number in the stream (0, 1, ...), whether selected or not.
        start: Input position (0-based, counting every item: documents and skipped ones) of the first item.
        items: The group's input items, in input order; the next group starts at ``start + len(items)``.
        documents / tokenizations: The embedded documents and their tokenizations, in input order.
        unknown_chars: Per embedded document, its characters read as the tokenizer's unknown token
            (:meth:`~latechunk.tokenize.DocumentTokenizer.unknown_chars`: content in no vector); empty where
            the encoder's tokenizer cannot tell.
        skipped: Every item of the group that is not embedded (from the reader or from the pipeline), with its
            reason, in input order. ``len(documents) + len(skipped) == len(items)``.
        boundaries: ``{spec: [Boundaries per document]}``.
        vectors: ``{spec: {mode: (n_chunks, dim) float32}}``, rows in document then chunk order
            (:meth:`chunk_vectors` gives one of them as a :class:`~latechunk.types.ChunkVectors`).
        selected: False for a group that ``select_group`` left out: ``documents`` are then its documents that
            tokenized (not chunked), ``skipped`` those that did not, and ``tokenizations``, ``boundaries`` and
            ``vectors`` are empty.
        stats: This group's counters.
        normalized: Whether the vectors' rows are L2-normalised (the run's ``PipelineConfig.normalize``).
    """

    index: int
    start: int
    items: list[Document | Skipped]
    documents: list[Document] = field(default_factory=list)
    tokenizations: list[Tokenization] = field(default_factory=list)
    unknown_chars: list[int] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    boundaries: dict[str, list[Boundaries]] = field(default_factory=dict)
    vectors: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    selected: bool = True
    stats: PipelineStats = field(default_factory=PipelineStats)
    normalized: bool = True

    @property
    def end(self) -> int:
        """Input position one past the group's last item."""
        return self.start + len(self.items)

    def chunk_vectors(self, spec: str, mode: Mode) -> ChunkVectors:
        """One strategy's vectors of one mode over the group's documents, with their chunk records.

        Args:
            spec: The strategy's SPEC, as a key of :attr:`boundaries` (``Strategy.spec``: defaults filled in).
            mode: One of the run's modes (``late``, ``naive``, ``contextual``, ``fused``).

        Returns:
            A :class:`~latechunk.types.ChunkVectors` (:func:`pack_chunk_vectors` of ``boundaries[spec]`` and
            ``vectors[spec][mode]``).

        Raises:
            KeyError: if the group holds no vectors of that strategy and mode (an unselected group holds none).
            ValueError: if the vectors and the chunks differ in number (a bug).
        """
        return pack_chunk_vectors(self.boundaries[spec], self.vectors[spec][mode], mode, self.normalized)


def pack_chunk_vectors(boundaries: Sequence[Boundaries], vectors: np.ndarray, mode: Mode,
                       normalized: bool = True) -> ChunkVectors:
    """Pack one mode's vectors of a strategy's chunks with their chunk records.

    Args:
        boundaries: The strategy's Boundaries, one per document, in order.
        vectors: (total_chunks, dim) float32; row i is chunk i of the concatenated boundaries (document then
            chunk order), as every mode of the pipeline makes them.
        mode: The vectors' mode.
        normalized: Whether the rows are L2-normalised.

    Returns:
        A :class:`~latechunk.types.ChunkVectors`: ``doc_ids`` the boundaries' document ids, ``chunk_index`` each
        row's chunk number inside its document, ``cu_chunks`` the cumulative chunk counts (int32).

    Raises:
        ValueError: if ``vectors`` does not have one row per chunk, or holds NaN or inf.
    """
    counts = np.asarray([len(b) for b in boundaries], dtype=np.int64)
    cu = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    if vectors.shape[0] != int(cu[-1]):
        raise ValueError(f"{mode}: {vectors.shape[0]} vectors for {int(cu[-1])} chunks")
    chunk_index = (np.concatenate([np.arange(c, dtype=np.int32) for c in counts])
                   if len(counts) else np.zeros(0, np.int32))
    return ChunkVectors(vectors, tuple(b.doc_id for b in boundaries), chunk_index, cu, mode, normalized=normalized)
