"""Tokenize once, encode once, pool many times: late and naive chunk vectors for many strategies.

Late chunking (Günther et al. 2024, arXiv:2409.04701): the document is encoded once (or in overlapping macro
windows) and each chunk vector is the mean of the token states in its token span. Naive chunking: each chunk's
original substring is encoded on its own with the model's own pooling. Both modes use the *same* Boundaries.

In late mode the token states of one document serve every strategy asked for in the same run: N strategies cost
one forward pass per document (or per macro window), not N. Documents are processed in groups (a token budget),
so memory stays bounded by the group, not the corpus.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from latechunk import segment
from latechunk.encoder import Encoder
from latechunk.pooling import segment_mean
from latechunk.strategies.base import SentenceEmbedder, Strategy, get_strategy
from latechunk.types import Boundaries, ChunkVectors, Document, Mode, Skipped, Tokenization

__all__ = ["EmbedResult", "GroupResult", "StrategyRun", "Skipped", "embed", "iter_embed", "new_stats", "chunk_documents",
           "late_vectors", "naive_texts", "naive_vectors"]

log = logging.getLogger("latechunk")


@dataclass
class StrategyRun:
    """One strategy's output: Boundaries per embedded document, and vectors per mode.

    Attributes:
        strategy: The strategy.
        boundaries: One Boundaries per embedded document, in document order.
        vectors: ``{"late": ChunkVectors, "naive": ChunkVectors}`` for the modes asked for; row i of each is
            chunk i of the concatenated boundaries (identical chunk records in both modes).
        tokens_encoded: Tokens through the encoder per mode (for late: the shared pass, counted once per run).
        seconds: Seconds per mode (late: the shared encode plus this strategy's pooling; naive: its encode).
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
        skipped: Documents not embedded, with reasons.
        runs: ``{strategy spec: StrategyRun}``, in the order the strategies were given.
        stats: Counters: documents, content tokens, forward calls and tokens per pass, seconds per stage.
    """

    documents: list[Document]
    tokenizations: list[Tokenization]
    skipped: list[Skipped]
    runs: dict[str, StrategyRun]
    stats: dict

    def run(self, spec: str | Strategy) -> StrategyRun:
        """The run of a strategy given by any SPEC form (``fixed`` finds ``fixed:size=256,overlap=0``).

        Raises:
            ValueError: on an unknown strategy or parameter.
            KeyError: if the strategy was not part of this result.
        """
        return self.runs[get_strategy(spec).spec]


def _late_embedder(states: torch.Tensor) -> SentenceEmbedder:
    def embed_sentences(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        return segment_mean(states, spans, normalize=True).cpu().numpy()

    return embed_sentences


def _model_embedder(encoder: Encoder) -> SentenceEmbedder:
    def embed_sentences(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        offs = tok.offsets
        texts = [doc.text[int(offs[a, 0]) : int(offs[b - 1, 1])] for a, b in spans.tolist()]
        return encoder.encode_texts(texts, kind="plain")

    return embed_sentences


def _pool_spans(b: Boundaries, tok: Tokenization, include_special: bool) -> np.ndarray:
    spans = b.token_spans.astype(np.int64, copy=True)
    if include_special and len(spans):
        # jina's convention: the first chunk absorbs the lead frame, the last the trail frame
        spans[0, 0] = 0
        spans[-1, 1] = len(tok)
    return spans


def naive_texts(doc: Document, b: Boundaries) -> list[str]:
    """The texts naive mode encodes for ``b``'s chunks: each chunk's original substring, preceded by its
    embedding context line where it has one (e.g. a table header for a chunk of table rows)."""
    texts = []
    for (cs, ce), ctx in zip(b.char_spans.tolist(), b.contexts):
        chunk = doc.text[cs:ce]
        texts.append(f"{ctx}\n{chunk}" if ctx else chunk)
    return texts


def naive_vectors(
    encoder: Encoder, documents: Sequence[Document], boundaries: Sequence[Boundaries], normalize: bool = True
) -> tuple[np.ndarray, int, int]:
    """Naive-mode vectors of the chunks of several documents, in one length-sorted encode call.

    Each chunk's :func:`naive_texts` entry is encoded on its own, with the document prompt and the model's own
    pooling (:meth:`Encoder.encode_texts`).

    Args:
        encoder: The encoder.
        documents: The documents, in order.
        boundaries: Their boundaries, same order.
        normalize: L2-normalise each vector.

    Returns:
        ``(vectors, tokens, forward_calls)``: (total_chunks, dim) float32, rows in document then chunk order;
        the tokens sent through the encoder (frame included) and its forward calls.

    Raises:
        ValueError: if a document is paired with the boundaries of another document.
    """
    texts = []
    for doc, b in zip(documents, boundaries):
        if doc.doc_id != b.doc_id:
            raise ValueError(f"document {doc.doc_id!r} paired with boundaries of {b.doc_id!r}")
        texts.extend(naive_texts(doc, b))
    before = dict(encoder.stats)
    vectors = encoder.encode_texts(texts, kind="document", normalize=normalize)
    tokens = encoder.stats["tokens"] - before["tokens"]
    return vectors, tokens, encoder.stats["forward_calls"] - before["forward_calls"]


def late_vectors(
    states: Sequence[torch.Tensor],
    toks: Sequence[Tokenization],
    boundaries: Sequence[Boundaries],
    normalize: bool = True,
    include_special: bool = False,
    dim: int | None = None,
    packed: torch.Tensor | None = None,
) -> np.ndarray:
    """Late-chunking vectors of several documents in one segment-mean call (packed, one kernel launch on CUDA).

    Args:
        states: Per document (n_tokens_i, dim) float token states.
        toks: Their tokenizations.
        boundaries: Their boundaries.
        normalize: L2-normalise each chunk vector.
        include_special: Let the first/last chunk absorb the frame tokens (default: excluded).
        dim: Vector dimension, used for the empty result when there are no states.
        packed: ``torch.cat(states)`` when the caller already has it (the pipeline packs a group once and
            pools every strategy from it); built here otherwise.

    Returns:
        (total_chunks, dim) float32 on the host; row order = documents in order, chunks in order. Row i is
        the mean of the token states in chunk i's token span (:func:`~latechunk.pooling.segment_mean`).

    Raises:
        ValueError: if ``packed`` does not have one row per token of the documents, or a span is empty or
            outside the packed states.
    """
    spans, offset = [], 0
    for st, tok, b in zip(states, toks, boundaries):
        spans.append(_pool_spans(b, tok, include_special) + offset)
        offset += st.shape[0]
    if not spans or offset == 0:
        d = states[0].shape[1] if states else (dim or 0)
        return np.zeros((0, d), dtype=np.float32)
    if packed is None:
        packed = states[0] if len(states) == 1 else torch.cat(list(states), dim=0)
    elif packed.shape[0] != offset:
        raise ValueError(f"packed states have {packed.shape[0]} rows, the documents {offset} tokens")
    out = segment_mean(packed, np.concatenate(spans).reshape(-1, 2), normalize=normalize)
    return out.cpu().numpy().astype(np.float32, copy=False)


def _groups(items: Iterable, budget: int) -> Iterator[list]:
    """Group ``(doc, tok)`` pairs and :class:`Skipped` records, in input order, by a token budget."""
    group, tokens = [], 0
    for item in items:
        group.append(item)
        if not isinstance(item, Skipped):
            tokens += len(item[1])
            if tokens >= budget:
                yield group
                group, tokens = [], 0
    if group:
        yield group


def presegment_for(strats: Sequence[Strategy], pairs: Sequence[tuple[Document, Tokenization]],
                   workers: int | None = None) -> dict | None:
    """Segment ahead the sentences ``strats`` will read in these documents (one pass shared by all of them).

    The paragraphs are those of :meth:`Strategy.sentence_paragraphs` (the least demanding hint wins);
    see :func:`latechunk.segment.presegment` for ``workers`` and the return value. None when no strategy
    reads sentences.
    """
    hints = [h for h in (s.sentence_paragraphs() for s in strats) if h is not None]
    if not hints:
        return None
    return segment.presegment([d.text for d, _ in pairs], min(hints),
                              [t.offsets[t.content_start : t.content_end, 0] for _, t in pairs], workers=workers)


def _doc_batches(documents: Iterable[Document], max_chars: int = 1 << 18, max_docs: int = 64) -> Iterator[list]:
    """Documents in input order, in lists of at most ``max_docs`` and about ``max_chars`` characters."""
    batch, chars = [], 0
    for doc in documents:
        batch.append(doc)
        chars += len(doc.text)
        if chars >= max_chars or len(batch) >= max_docs:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _prefetch(it: Iterator, depth: int = 1) -> Iterator:
    """Run ``it`` one step ahead in a background thread (tokenization overlaps device work; the Rust
    tokenizer releases the GIL). Order is preserved and exceptions are re-raised in the caller."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def worker() -> None:
        try:
            for x in it:
                if stop.is_set():
                    return
                q.put((True, x))
                if stop.is_set():
                    return
            q.put((True, done))
        except BaseException as err:  # noqa: BLE001  (re-raised in the consumer)
            q.put((False, err))

    t = threading.Thread(target=worker, daemon=True, name="latechunk-tokenize")
    t.start()
    try:
        while True:
            ok, x = q.get()
            if not ok:
                raise x
            if x is done:
                return
            yield x
    finally:
        # a consumer that stops early (an error, a break) waits for the worker to finish its item, draining the
        # queue so it cannot block: a thread left inside native code at interpreter exit aborts the process
        stop.set()
        while t.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass


@dataclass
class GroupResult:
    """The output of one group of documents from :func:`iter_embed` (documents in input order).

    Attributes:
        documents / tokenizations: The group's embedded documents and their tokenizations.
        skipped: The group's skipped documents. A group covers a contiguous run of input documents:
            ``len(documents) + len(skipped)`` of them.
        boundaries: ``{spec: [Boundaries per document]}``.
        vectors: ``{spec: {mode: (n_chunks, dim) float32}}``, rows in document then chunk order.
        index: The group's number in the stream (0, 1, ...), whether selected or not.
        selected: False for a group that ``select_group`` left out: ``documents`` are then its documents that
            tokenized (not chunked, so one whose chunking would fail is among them), ``skipped`` those that did
            not, and ``tokenizations``, ``boundaries`` and ``vectors`` are empty. The group still covers
            ``len(documents) + len(skipped)`` input documents.
    """

    documents: list[Document]
    tokenizations: list[Tokenization]
    skipped: list[Skipped]
    boundaries: dict[str, list[Boundaries]]
    vectors: dict[str, dict[str, np.ndarray]]
    index: int = 0
    selected: bool = True


def _check_args(strategies, modes) -> list[Strategy]:
    if not modes:
        raise ValueError("give at least one mode: late, naive")
    for m in modes:
        if m not in ("late", "naive"):
            raise ValueError(f"mode must be 'late' or 'naive', got {m!r}")
    strats = [get_strategy(s) for s in strategies]
    if not strats:
        raise ValueError("give at least one strategy")
    specs = [s.spec for s in strats]
    if len(set(specs)) != len(specs):
        raise ValueError(f"the same strategy was given twice: {specs}")
    return strats


def new_stats() -> dict:
    """Zeroed counters as filled by :func:`iter_embed`."""
    return {
        "documents_in": 0,
        "content_tokens": 0,
        "late_tokens": 0,
        "naive_tokens": 0,
        "forward_calls": {"late": 0, "naive": 0},
        "naive_tokens_by_strategy": {},
        "seconds_by_strategy": {},
        "seconds": {"tokenize": 0.0, "late_encode": 0.0, "split": 0.0, "pool": 0.0, "naive_encode": 0.0},
    }


def iter_embed(
    documents: Iterable[Document],
    strategies: Sequence[str | Strategy],
    encoder: Encoder,
    modes: Sequence[Mode] = ("late",),
    normalize: bool = True,
    include_special: bool = False,
    macro_windows: bool = True,
    group_tokens: int = 1 << 18,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
    stats: dict | None = None,
    select_group: Callable[[int], bool] | None = None,
) -> Iterator[GroupResult]:
    """Streaming form of :func:`embed`: yields one :class:`GroupResult` per group of about ``group_tokens``
    tokens, so memory stays bounded by a group, not the corpus. Same arguments as :func:`embed`; ``stats``
    (from :func:`new_stats`) is updated in place. Arguments are validated before the first document is read.

    ``select_group(i)`` (default: every group) picks the groups to chunk and encode, by group number. The
    groups are formed from token counts alone, so they are the same whichever are selected; an unselected
    group is still tokenized and yielded, as a light record with ``selected=False`` (see :class:`GroupResult`).
    Several processes can so split one stream between them (``latechunk.ingest`` with ``WORLD_SIZE > 1``).
    It is called from the tokenizer thread, once per group, in order.

    Raises:
        ValueError: on an unknown mode or strategy spec (when called, before any document is read).
    """
    strats = _check_args(strategies, modes)
    sentence_encoders = dict(sentence_encoders or {})
    for s in strats:  # a named sentence model is loaded up front: a bad name fails before any document is read
        source = getattr(s, "source", "late")
        if s.needs_embedder and source != "late" and source not in sentence_encoders:
            sentence_encoders[source] = Encoder(source, device=str(encoder.device))
    return _iter_embed(documents, strats, encoder, modes, normalize, include_special, macro_windows,
                       group_tokens, progress, dict(sentence_encoders or {}), stats if stats is not None else new_stats(),
                       select_group)


def _iter_embed(documents, strats, encoder, modes, normalize, include_special, macro_windows, group_tokens,
                progress, sentence_encoders, stats, select_group=None) -> Iterator[GroupResult]:
    need_states = "late" in modes or any(s.needs_embedder and getattr(s, "source", "late") == "late" for s in strats)
    sec = stats["seconds"]

    def tokenized() -> Iterator[tuple[Document, Tokenization] | Skipped]:
        batch_tokenize = getattr(encoder.tokenizer, "batch", None)
        for batch in _doc_batches(documents):
            stats["documents_in"] += len(batch)
            t0 = time.perf_counter()
            toks: list = []
            if batch_tokenize is not None and len(batch) > 1:
                try:  # one call for the batch: the Rust tokenizer uses every core
                    toks = batch_tokenize(batch)
                except Exception:  # noqa: BLE001  (one by one below, so only a bad document is skipped)
                    toks = []
            if not toks:
                for doc in batch:
                    try:
                        toks.append(encoder.tokenizer(doc))
                    except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                        toks.append(err)
            sec["tokenize"] += time.perf_counter() - t0
            yield from _screen(batch, toks)

    def _screen(batch, toks) -> Iterator[tuple[Document, Tokenization] | Skipped]:
        for doc, tok in zip(batch, toks):
            if isinstance(tok, Exception):
                yield Skipped(doc.doc_id, f"tokenizer failed: {type(tok).__name__}: {tok}")
            elif tok.n_content == 0:
                yield Skipped(doc.doc_id, "empty or whitespace-only (no tokens)")
            elif not macro_windows and len(tok) > encoder.window:
                yield Skipped(doc.doc_id, f"{len(tok)} tokens > model limit {encoder.window} and macro windows are off")
            else:
                yield doc, tok

    def presplit(groups: Iterator[list]) -> Iterator[tuple[int, list, bool]]:
        """``(group index, items, selected)``. Strategies that need no sentence vectors split here, in the
        prefetch thread, so chunking overlaps the forward pass of the previous group (torch releases the GIL
        while it computes). It runs after grouping, so the groups depend on token counts alone (a document
        whose chunking fails still counts its tokens), and an unselected group is not chunked at all."""
        for gi, items in enumerate(groups):
            if select_group is not None and not select_group(gi):
                yield gi, items, False
                continue
            t0 = time.perf_counter()
            try:  # the group's sentences, segmented once for every strategy (in worker processes if set)
                presegment_for(strats, [x for x in items if not isinstance(x, Skipped)])
            except Exception as err:  # noqa: BLE001  (a speed-up only: each split segments what it needs)
                log.warning("sentence segmentation ahead of the split failed: %s: %s", type(err).__name__, err)
            out = []
            for x in items:
                if isinstance(x, Skipped):
                    out.append(x)
                    continue
                doc, tok = x
                try:
                    out.append((doc, tok, [None if s.needs_embedder else s.split(doc, tok) for s in strats]))
                except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                    log.warning("document %r skipped: %s: %s", doc.doc_id, type(err).__name__, err)
                    out.append(Skipped(doc.doc_id, f"chunking failed: {type(err).__name__}: {err}"))
            sec["split"] += time.perf_counter() - t0
            yield gi, out, True

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(unit="doc", desc="embed")

    for gi, items, selected in _prefetch(presplit(_groups(tokenized(), group_tokens))):
        # each group is a contiguous run of input documents: embedded ones and skipped ones, in input order
        group_skips = [x for x in items if isinstance(x, Skipped)]
        group = [x for x in items if not isinstance(x, Skipped)]
        if not selected:  # someone else's group: which documents it holds, nothing chunked or encoded
            if bar is not None:
                bar.update(len(group))
            yield GroupResult([x[0] for x in group], [], group_skips, {}, {}, index=gi, selected=False)
            continue
        docs = [x[0] for x in group]
        toks = [x[1] for x in group]
        states: list[torch.Tensor] = []
        if need_states and toks:
            before = dict(encoder.stats)
            t0 = time.perf_counter()
            states = encoder.token_states(toks, progress=progress)
            sec["late_encode"] += time.perf_counter() - t0
            stats["late_tokens"] += encoder.stats["tokens"] - before["tokens"]
            stats["forward_calls"]["late"] += encoder.stats["forward_calls"] - before["forward_calls"]
        # strategies that need sentence vectors split now; a failing document is skipped for all strategies
        t0 = time.perf_counter()
        keep: list[int] = []
        bounds: list[list[Boundaries]] = []
        for i, (doc, tok, pre) in enumerate(group):
            try:
                per = []
                for s, b in zip(strats, pre):
                    if b is not None:
                        per.append(b)
                        continue
                    emb = None
                    if s.needs_embedder:
                        source = getattr(s, "source", "late")
                        if source == "late":
                            emb = _late_embedder(states[i])
                        else:
                            if source not in sentence_encoders:
                                sentence_encoders[source] = Encoder(source, device=str(encoder.device))
                            emb = _model_embedder(sentence_encoders[source])
                    per.append(s.split(doc, tok, emb))
            except Exception as err:  # noqa: BLE001
                log.warning("document %r skipped: %s: %s", doc.doc_id, type(err).__name__, err)
                group_skips.append(Skipped(doc.doc_id, f"chunking failed: {type(err).__name__}: {err}"))
                continue
            keep.append(i)
            bounds.append(per)
        sec["split"] += time.perf_counter() - t0
        docs = [docs[i] for i in keep]
        toks = [toks[i] for i in keep]
        states = [states[i] for i in keep] if states else []
        packed = None
        if states and "late" in modes:
            # pack the group once; every strategy pools from it (one segment-mean launch per strategy)
            packed = states[0] if len(states) == 1 else torch.cat(states, dim=0)
            states = list(torch.split(packed, [st.shape[0] for st in states]))  # views: the copies are freed
        stats["content_tokens"] += sum(t.n_content for t in toks)
        out = GroupResult(docs, toks, group_skips, {}, {}, index=gi)
        for j, s in enumerate(strats):
            b_list = [per[j] for per in bounds]
            out.boundaries[s.spec] = b_list
            out.vectors[s.spec] = {}
            by_strat = stats["seconds_by_strategy"].setdefault(s.spec, {"pool": 0.0, "naive": 0.0})
            if "late" in modes:
                t0 = time.perf_counter()
                out.vectors[s.spec]["late"] = late_vectors(states, toks, b_list, normalize, include_special,
                                                               encoder.dim, packed)
                dt = time.perf_counter() - t0
                sec["pool"] += dt
                by_strat["pool"] += dt
            if "naive" in modes:
                # the strategy's chunk texts of the group in one length-sorted encode call
                t0 = time.perf_counter()
                out.vectors[s.spec]["naive"], n_tok, n_calls = naive_vectors(encoder, docs, b_list, normalize)
                dt = time.perf_counter() - t0
                sec["naive_encode"] += dt
                by_strat["naive"] += dt
                stats["naive_tokens"] += n_tok
                stats["naive_tokens_by_strategy"][s.spec] = stats["naive_tokens_by_strategy"].get(s.spec, 0) + n_tok
                stats["forward_calls"]["naive"] += n_calls
        del states, packed
        if bar is not None:
            bar.update(len(group))
        yield out
    if bar is not None:
        bar.close()


def embed(
    documents: Iterable[Document],
    strategies: Sequence[str | Strategy],
    encoder: Encoder,
    modes: Sequence[Mode] = ("late",),
    normalize: bool = True,
    include_special: bool = False,
    macro_windows: bool = True,
    group_tokens: int = 1 << 18,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
) -> EmbedResult:
    """Chunk and embed documents with several strategies at once.

    Each document is tokenized once. In late mode its token states are computed once and pooled for every
    strategy. Naive mode encodes every chunk's text on its own. Strategies needing sentence vectors
    (``semantic``) get them from the same late states (``source=late``) or from the named model.

    Args:
        documents: Input documents (an iterable: consumed once, in groups of about ``group_tokens`` tokens).
        strategies: SPEC strings or Strategy objects.
        encoder: The :class:`Encoder`.
        modes: Any of ``"late"``, ``"naive"``.
        normalize: L2-normalise chunk vectors.
        include_special: Late mode: the first/last chunk absorb the frame tokens (default excluded).
        macro_windows: If False, a document longer than the model limit is skipped with its token count
            instead of being encoded in macro windows (never silently truncated).
        group_tokens: Documents are processed in groups of about this many tokens (bounds memory).
        progress: Show a progress bar (documents).
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (built on demand otherwise).

    Returns:
        EmbedResult: embedded documents, skipped documents with reasons, per-strategy boundaries and vectors.

    Raises:
        ValueError: on an unknown mode or strategy spec (before any work).
    """
    strats = _check_args(strategies, modes)
    stats = new_stats()
    runs = {s.spec: StrategyRun(strategy=s) for s in strats}
    vecs: dict[str, dict[str, list[np.ndarray]]] = {s.spec: {m: [] for m in modes} for s in strats}
    embedded: list[Document] = []
    toks_out: list[Tokenization] = []
    skipped: list[Skipped] = []
    for g in iter_embed(documents, strats, encoder, modes, normalize, include_special, macro_windows,
                        group_tokens, progress, sentence_encoders, stats):
        embedded.extend(g.documents)
        toks_out.extend(g.tokenizations)
        skipped.extend(g.skipped)
        for s in strats:
            runs[s.spec].boundaries.extend(g.boundaries[s.spec])
            for m, v in g.vectors[s.spec].items():
                vecs[s.spec][m].append(v)
    dim = encoder.dim
    for s in strats:
        run = runs[s.spec]
        counts = np.asarray([len(b) for b in run.boundaries], dtype=np.int64)
        cu = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        chunk_index = (np.concatenate([np.arange(c, dtype=np.int32) for c in counts])
                       if len(counts) else np.zeros(0, np.int32))
        doc_ids = tuple(b.doc_id for b in run.boundaries)
        for m in modes:
            v = np.concatenate(vecs[s.spec][m]) if vecs[s.spec][m] else np.zeros((0, dim), np.float32)
            if v.shape[0] != int(cu[-1]):
                raise RuntimeError(f"{s.spec} {m}: {v.shape[0]} vectors for {int(cu[-1])} chunks")
            run.vectors[m] = ChunkVectors(v, doc_ids, chunk_index, cu, m, normalized=normalize)
        by = stats["seconds_by_strategy"].get(s.spec, {"pool": 0.0, "naive": 0.0})
        if "late" in modes:
            run.tokens_encoded["late"] = stats["late_tokens"]
            run.seconds["late"] = stats["seconds"]["late_encode"] + by["pool"]
        if "naive" in modes:
            run.tokens_encoded["naive"] = stats["naive_tokens_by_strategy"].get(s.spec, 0)
            run.seconds["naive"] = by["naive"]
    return EmbedResult(embedded, toks_out, skipped, runs, stats)


def chunk_documents(
    documents: Iterable[Document],
    strategy: str | Strategy,
    tokenizer,
    embed_sentences: SentenceEmbedder | None = None,
) -> Iterator[tuple[Document, Boundaries | None, str]]:
    """Chunk documents without an encoder (all strategies but ``semantic`` need none).

    Args:
        documents: The documents (consumed lazily, one at a time).
        strategy: A SPEC or Strategy.
        tokenizer: A :class:`~latechunk.tokenize.DocumentTokenizer` (or any ``doc -> Tokenization`` callable).
        embed_sentences: Sentence vectors for ``semantic`` (see :data:`~latechunk.strategies.base.SentenceEmbedder`).

    Yields:
        ``(doc, boundaries, "")`` per chunked document, or ``(doc, None, reason)`` for a skipped one (no content
        tokens, or the tokenizer or strategy failed on it).

    Raises:
        ValueError: on an unknown strategy spec, or ``semantic`` without ``embed_sentences`` (at the first
            ``next()``: this is a generator).
    """
    strat = get_strategy(strategy)
    if strat.needs_embedder and embed_sentences is None:
        raise ValueError(f"strategy {strat.name!r} needs sentence vectors: run it through embed() or pass a model")
    for doc in documents:
        try:
            tok = tokenizer(doc)
            if tok.n_content == 0:
                yield doc, None, "empty or whitespace-only (no tokens)"
                continue
            yield doc, strat.split(doc, tok, embed_sentences), ""
        except Exception as err:  # noqa: BLE001
            yield doc, None, f"chunking failed: {type(err).__name__}: {err}"
