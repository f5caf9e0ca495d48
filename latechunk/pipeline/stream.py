"""The pipeline's entry points: :func:`iter_embed` (a stream of groups), :func:`embed` (every group, in memory)
and :func:`chunk_documents` (boundaries without an encoder).

Each :class:`~latechunk.pipeline.results.GroupResult` carries its input positions (``start``, ``items``) and its
own :class:`~latechunk.pipeline.results.PipelineStats`, written by one thread at a time: the prefetch thread
(:func:`~latechunk.pipeline.prefetch._prefetch` over :meth:`_Run.prepared_groups
<latechunk.pipeline.run._Run.prepared_groups>`), then the calling thread (:meth:`_Run.embed_group
<latechunk.pipeline.run._Run.embed_group>`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.pipeline.items import unreadable_reason
from latechunk.pipeline.prefetch import _TRIM_CHARS, _prefetch, _release_free_heap
from latechunk.pipeline.results import (
    EmbedResult,
    GroupResult,
    PipelineStats,
    StrategyRun,
    pack_chunk_vectors,
)
from latechunk.pipeline.run import _Run, _sentence_encoders
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies.base import SentenceVectors, Strategy, get_strategy
from latechunk.types import Boundaries, Document, Skipped, Tokenization


def iter_embed(
    items: Iterable[Document | Skipped],
    encoder: Encoder,
    config: PipelineConfig,
    *,
    select_group: Callable[[int], bool] | None = None,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
    segmenter: SentenceSegmenter | None = None,
    on_text_bytes: Callable[[int], None] | None = None,
) -> Iterator[GroupResult]:
    """Streaming form of :func:`embed`: one :class:`GroupResult` per group of about ``config.group_tokens``
    tokens, so memory stays bounded by a group, not the corpus.

    Args:
        items: The input stream: documents and the reader's skipped items (as
            :func:`latechunk.io.iter_inputs` yields them), consumed once, in order.
        encoder: The encoder (its tokenizer tokenizes every document once, with the document prompt).
        config: Strategies, modes and pooling settings.
        select_group: ``select_group(i)`` (default: every group) picks the groups to chunk and encode, by
            group number. Groups are formed from token counts alone, so they are the same whichever are
            selected; an unselected group is still tokenized and yielded, as a light record with
            ``selected=False``. Several processes can so split one stream (``latechunk.ingest`` with
            ``WORLD_SIZE > 1``). Called from the prefetch thread, once per group, in order.
        progress: Show a progress bar of the late pass (tokens) per group.
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded here otherwise).
        segmenter: The sentence segmenter (default: one for this run with ``config.sentence_workers`` workers,
            closed when the stream ends).
        on_text_bytes: Progress in bytes of document text (:func:`text_bytes`), called from the consuming
            thread with the bytes done since the last call: as each forward batch of the late pass finishes (in
            proportion to the tokens of each document it encoded, so one long document advances macro window
            by macro window) and when a group ends. A group's calls add up to the text bytes of its documents,
            embedded, skipped or in an unselected group (the reader's skipped items have no text: 0).

    Returns:
        An iterator of :class:`GroupResult`, in input order; ``groups[i + 1].start == groups[i].end``. The
        prefetch thread starts at the first ``next()``; closing the iterator early stops it (and closes a
        segmenter made here).

    Raises:
        ValueError: on a macro window that does not fit the model (:meth:`MacroWindow.check
            <latechunk.macro_window.MacroWindow.check>`), late pooling of a model that does not mean-pool
            without ``config.late_pooling="mean"`` (:meth:`PipelineConfig.check_model
            <latechunk.config.PipelineConfig.check_model>`), or a ``semantic:source=MODEL`` model that does not
            load (when called, before any item is read).
        TypeError: if a ``semantic:source=MODEL`` model's tokenizer is not a fast tokenizer.

    Errors while the stream runs (reading, encoding) propagate from ``next()``; a document that fails to
    tokenize or split is a skipped item, not an error.
    """
    run_encoders = _sentence_encoders(config, encoder, sentence_encoders)  # a bad name fails before any work
    own = segmenter is None
    seg = SentenceSegmenter(workers=config.sentence_workers) if own else segmenter
    run = _Run(encoder, config, seg, run_encoders, on_text_bytes)
    return _stream(run, items, select_group, progress, seg if own else None)


def _stream(run: _Run, items, select_group, progress: bool, owned: SentenceSegmenter | None) -> Iterator[GroupResult]:
    try:
        for g, entries in _prefetch(run.prepared_groups(items, select_group)):
            yield run.embed_group(g, entries, progress)
    finally:
        if owned is not None:
            owned.close()


def embed(
    documents: Iterable[Document],
    encoder: Encoder,
    config: PipelineConfig,
    *,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> EmbedResult:
    """Chunk and embed documents with several strategies and modes at once.

    Each document is tokenized once. In late mode its token states are computed once and pooled for every
    strategy. Naive mode encodes every chunk's text on its own; contextual mode the same text after its header
    ``[title > section path]`` and a blank line. Strategies needing sentence vectors
    (``semantic``) get them from the same late states (``source=late``) or from the named model.

    Args:
        documents: Input documents (or the reader's items; consumed once, in groups).
        encoder: The :class:`Encoder`.
        config: Strategies, modes and pooling settings, e.g.
            ``PipelineConfig(("fixed:size=256", "semantic"), modes=("late", "naive"))``.
        progress: Show a progress bar (tokens of the late pass).
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded on demand otherwise).
        segmenter: The sentence segmenter (default: one for this call).

    Returns:
        EmbedResult: embedded documents, skipped items with reasons, per-strategy boundaries and vectors.

    Raises:
        ValueError: as :func:`iter_embed` (before any work).
        RuntimeError: if a strategy's vectors do not match its chunk count (a bug).
    """
    stats = PipelineStats()
    strats = config.strategies
    runs = {s.spec: StrategyRun(strategy=s) for s in strats}
    vecs: dict[str, dict[str, list[np.ndarray]]] = {s.spec: {m: [] for m in config.modes} for s in strats}
    embedded: list[Document] = []
    toks_out: list[Tokenization] = []
    skipped: list[Skipped] = []
    for g in iter_embed(documents, encoder, config, progress=progress, sentence_encoders=sentence_encoders,
                        segmenter=segmenter):
        stats.add(g.stats)
        embedded.extend(g.documents)
        toks_out.extend(g.tokenizations)
        skipped.extend(g.skipped)
        for s in strats:
            runs[s.spec].boundaries.extend(g.boundaries[s.spec])
            for m, v in g.vectors[s.spec].items():
                vecs[s.spec][m].append(v)
    for s in strats:
        run = runs[s.spec]
        n_chunks = sum(len(b) for b in run.boundaries)
        for m in config.modes:
            v = np.concatenate(vecs[s.spec][m]) if vecs[s.spec][m] else np.zeros((0, encoder.dim), np.float32)
            if v.shape[0] != n_chunks:
                raise RuntimeError(f"{s.spec} {m}: {v.shape[0]} vectors for {n_chunks} chunks")
            run.vectors[m] = pack_chunk_vectors(run.boundaries, v, m, config.normalize)
        _costs(run, stats, config.modes)
    return EmbedResult(embedded, toks_out, skipped, runs, stats)


def _costs(run: StrategyRun, stats: PipelineStats, modes: Sequence[str]) -> None:
    """A strategy's tokens encoded and seconds per mode, from the run's counters (late: the shared pass)."""
    s = run.strategy
    by = stats.seconds_by_strategy.get(s.spec, {"pool": 0.0, "naive": 0.0})
    if "late" in modes:
        run.tokens_encoded["late"] = stats.tokens["late"]
        run.seconds["late"] = stats.seconds["late_encode"] + by["pool"]
    if "naive" in modes:
        run.tokens_encoded["naive"] = stats.naive_tokens_by_strategy.get(s.spec, 0)
        run.seconds["naive"] = by["naive"]
    if "contextual" in modes:
        run.tokens_encoded["contextual"] = stats.contextual_tokens_by_strategy.get(s.spec, 0)
        run.seconds["contextual"] = by.get("contextual", 0.0)
    if "fused" in modes:  # both encodings
        run.tokens_encoded["fused"] = stats.tokens["late"] + stats.naive_tokens_by_strategy.get(s.spec, 0)
        run.seconds["fused"] = stats.seconds["late_encode"] + by["pool"] + by["naive"]


def chunk_documents(
    documents: Iterable[Document],
    strategy: str | Strategy,
    tokenizer,
    sentence_vectors: SentenceVectors | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> Iterator[tuple[Document, Boundaries | None, str]]:
    """Chunk documents without an encoder (all strategies but ``semantic`` need none).

    Args:
        documents: The documents (consumed lazily, one at a time).
        strategy: A SPEC or Strategy.
        tokenizer: A :class:`~latechunk.tokenize.DocumentTokenizer` (or any ``doc -> Tokenization`` callable);
            use the encoder's document tokenizer so that token spans equal ``embed``'s.
        sentence_vectors: Sentence vectors for ``semantic`` (see :data:`~latechunk.strategies.base.SentenceVectors`).
        segmenter: The sentence segmenter (default: a fresh in-process one).

    Yields:
        ``(doc, boundaries, "")`` per chunked document, or ``(doc, None, reason)`` for a skipped one (no content
        tokens or nothing but the unknown token, :func:`unreadable_reason`, as ``embed`` skips; or the tokenizer or
        strategy failed on it).

    Raises:
        ValueError: on an unknown strategy spec, or ``semantic`` without ``sentence_vectors`` (at the first
            ``next()``: this is a generator).
    """
    strat = get_strategy(strategy)
    if strat.needs_sentence_vectors and sentence_vectors is None:
        raise ValueError(f"strategy {strat.name!r} needs sentence vectors: run it through embed() or pass a model")
    seg = segmenter if segmenter is not None else SentenceSegmenter()
    unk = getattr(tokenizer, "unk_token_id", None)
    for doc in documents:
        try:
            tok = tokenizer(doc)
            if len(doc.text) >= _TRIM_CHARS:  # the tokenizer's freed transient back to the OS before the split
                _release_free_heap()
            reason = unreadable_reason(tok, unk)
            if reason:  # the documents embed skips, skipped here too: chunk's rows are embed's chunk table
                yield doc, None, reason
                continue
            yield doc, strat.split(doc, tok, sentence_vectors, sentences=seg), ""
        except Exception as err:  # noqa: BLE001
            yield doc, None, f"chunking failed: {type(err).__name__}: {err}"
