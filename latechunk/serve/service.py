"""What each endpoint does below HTTP.

:class:`Service` turns a validated request into jobs of the :class:`~latechunk.serve.batcher.Batcher` and their
results into the response body, over the same encoder, configs and pipeline as the command line (no second copy of
them):

- ``/v1/embeddings``: each input tokenized by the encoder's tokenizer of the asked prompt, encoded in the merged
  batches of the batcher with :meth:`Encoder.encode <latechunk.encoder.Encoder.encode>`'s macro window (one model
  input up to ``max_length`` tokens, longer ones in windows, never truncated) and pooled by
  :meth:`Encoder.pool_model <latechunk.encoder.Encoder.pool_model>`, L2-normalised: ``Encoder.encode``'s vectors.
  With ``late_chunking`` the inputs are joined by :data:`~latechunk.serve.config.LATE_CHUNKING_SEPARATOR` (one
  space) into one document, tokenized once with the document prompt (or the task's), encoded in the late pass's
  macro windows (:class:`~latechunk.config.PipelineConfig`'s, as ``embed``) and each input's token span
  mean-pooled (:func:`latechunk.pooling.segment_mean`), as ``LateChunker`` pools a chunk.
- ``/v1/chunk``: :class:`~latechunk.api.LateChunker` (one per strategy, mode, macro window and markdown flag,
  kept) over the server's encoder; without vectors, its documents split by
  :func:`latechunk.pipeline.chunk_documents` with the same tokenizer, no model pass.
- ``/v1/search``: :meth:`Index.search_rows <latechunk.api_index.Index.search_rows>` (what ``search --json``
  prints), widened by :func:`latechunk.contexts.expand_hits` with ``expand``.

Tests: ``tests/serve/test_serve_http.py``, ``tests/serve/test_serve_search.py``,
``tests/serve/test_serve_trial_fixes.py``.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import dataclasses
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from latechunk.config import DEFAULT_STRATEGY, PipelineConfig
from latechunk.serve.batcher import Batcher, CallJob, EncodeJob
from latechunk.serve.config import LATE_CHUNKING_SEPARATOR, ServeConfig
from latechunk.serve.schemas import TASK_PROMPTS, BadRequest, ChunkRequest, EmbeddingRequest, SearchRequest

#: tokenizations of a request with more characters than this run in a thread, not on the event loop
_THREAD_CHARS = 20_000
#: LateChunkers kept (one per strategy, mode, macro window, markdown flag)
_CHUNKERS = 16


def late_spans(starts: Sequence[int], ends: Sequence[int], tok) -> np.ndarray:
    """The token span of each input of a late-chunking document: the content tokens whose last character lies in
    the input's characters ``[start, end)`` of the joined text (a token of the separator alone, which WordPiece
    never makes, joins the input before it).

    Args:
        starts: Each input's first character in the joined text.
        ends: One past its last character.
        tok: The joined text's :class:`~latechunk.types.Tokenization`.

    Returns:
        (n_inputs, 2) int64 half-open token spans into ``tok``, in input order; ``[a, a]`` (empty) for an input
        with no token.
    """
    offs = tok.offsets[tok.content_start : tok.content_end].astype(np.int64)
    last = np.where(offs[:, 1] > offs[:, 0], offs[:, 1] - 1, offs[:, 0])  # the token's last character
    owner = np.searchsorted(np.asarray(starts, np.int64), last, side="right") - 1
    owner = np.clip(owner, 0, len(starts) - 1)
    spans = np.zeros((len(starts), 2), np.int64)
    for i in range(len(starts)):
        lo = int(np.searchsorted(owner, i, side="left"))
        hi = int(np.searchsorted(owner, i, side="right"))
        spans[i] = (lo + tok.content_start, hi + tok.content_start)
    return spans


def _encoded(vecs: np.ndarray, fmt: str) -> list:
    """Each row as the response gives it: a list of floats, or base64 of its little-endian float32 bytes."""
    if fmt == "base64":
        return [base64.b64encode(np.ascontiguousarray(v, dtype="<f4").tobytes()).decode("ascii") for v in vecs]
    return vecs.astype(np.float32).tolist()


def _truncated(vecs: np.ndarray, dimensions: int | None, dim: int) -> np.ndarray:
    """The first ``dimensions`` of each (unit) row, L2-normalised again (Matryoshka); unchanged without it."""
    if dimensions is None or dimensions == dim:
        return vecs
    if dimensions > dim:
        raise BadRequest(f"dimensions={dimensions} is more than the model's {dim}", param="dimensions",
                         code="invalid_dimensions")
    out = np.ascontiguousarray(vecs[:, :dimensions], dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norms > 0, norms, 1.0)
    return out


class Service:
    """The server's work over one encoder (and optionally one index folder).

    Args:
        encoder: The :class:`~latechunk.encoder.Encoder`.
        config: The :class:`~latechunk.serve.config.ServeConfig`.
        pipeline: The late pass's settings (:class:`~latechunk.config.PipelineConfig`: macro window and its
            overlap, ``late_pooling``); default ``PipelineConfig(DEFAULT_STRATEGY)`` (the model's ``max_seq_length``, no overlap).
        index: An :class:`~latechunk.api_index.Index` for ``/v1/search``, or None.
        metrics: The app's :class:`~latechunk.serve.metrics.Metrics`, or None.

    Raises:
        ValueError: if the macro window does not fit the model.
    """

    def __init__(self, encoder, config: ServeConfig, pipeline: PipelineConfig | None = None, index=None,
                 metrics=None) -> None:
        self.encoder = encoder
        self.config = config
        self.pipeline = pipeline or PipelineConfig(strategies=(DEFAULT_STRATEGY,))
        self.index = index
        self.metrics = metrics
        self.batcher = Batcher(encoder, config.max_batch_requests, config.max_batch_tokens, config.max_queue, metrics)
        self.plain_window = encoder.macro_window(size=encoder.max_length, overlap=0)  # Encoder.encode's
        self.late_window = encoder.macro_window(self.pipeline.macro_window, self.pipeline.macro_window_overlap)
        try:  # late chunking is defined for mean-pooled models (PipelineConfig's one check)
            PipelineConfig(strategies=(DEFAULT_STRATEGY,), modes=("late",), macro_window=self.pipeline.macro_window,
                           macro_window_overlap=self.pipeline.macro_window_overlap,
                           late_pooling=self.pipeline.late_pooling).check_model(encoder.facts)
            self.late_problem = ""
        except ValueError as err:
            self.late_problem = str(err)
        self._chunkers: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The served model's name (``all-MiniLM-L6-v2`` for the default)."""
        return self.encoder.name

    def check_model(self, name: str | None) -> None:
        """Refuse a request for another model (404); None or the served model's name (or its folder's name) pass."""
        if name is None or name in (self.model_name, self.encoder.path, Path(self.encoder.path).name):
            return
        raise BadRequest(f"model {name!r} is not served here; this server serves {self.model_name!r} (GET /v1/models)",
                         status=404, param="model", code="model_not_found")

    # ------------------------------------------------------------------ shared checks
    def _check_texts(self, texts: Sequence[str], field: str) -> None:
        from latechunk.io import surrogate_reason

        if not texts:
            raise BadRequest(f"{field} is empty: give at least one text", param=field, code="empty_input")
        if len(texts) > self.config.max_inputs:
            raise BadRequest(f"{field} has {len(texts):,} items, more than this server's limit of "
                             f"{self.config.max_inputs:,} per request (--max-inputs)", status=413, param=field,
                             code="too_many_inputs")
        for i, t in enumerate(texts):
            if not t:
                raise BadRequest(f"{field}[{i}] is an empty string", param=field, code="empty_input")
            if not t.strip():  # LateChunker skips such a text (no tokens): a 400 here, as an empty one
                raise BadRequest(f"{field}[{i}] is whitespace only (no text to embed)", param=field,
                                 code="empty_input")
            problem = surrogate_reason(t)
            if problem:
                raise BadRequest(f"{field}[{i}]: {problem}", param=field, code="invalid_text")

    def _check_tokens(self, n: int, what: str, param: str = "input") -> None:
        if n > self.config.max_request_tokens:
            raise BadRequest(f"{what} has {n:,} tokens, more than this server's limit of "
                             f"{self.config.max_request_tokens:,} tokens per request (--max-request-tokens); "
                             "nothing is truncated: send it in parts", status=413, param=param,
                             code="request_too_large")

    async def _tokenize(self, tokenizer, texts: Sequence[str]) -> list:
        if sum(map(len, texts)) > _THREAD_CHARS:
            return await asyncio.to_thread(tokenizer.batch, list(texts))
        return tokenizer.batch(list(texts))

    def _prompt_tokenizer(self, task: str | None, default: str | None):
        """The tokenizer of a Jina task or prompt name (``Encoder.encode``'s rule for ``prompt_name``)."""
        name = TASK_PROMPTS.get(task, task) if task is not None else default
        try:
            return self.encoder._prompt_tokenizer(name, None)
        except ValueError:
            names = [*TASK_PROMPTS, *sorted(self.encoder.prompts)]
            raise BadRequest(f"task {task!r} is not known here; give one of {', '.join(names)}", param="task",
                             code="invalid_task") from None

    # ------------------------------------------------------------------ /v1/embeddings
    async def embeddings(self, req: EmbeddingRequest, wait) -> tuple[dict, int]:
        """Answer ``POST /v1/embeddings``.

        Args:
            req: The request.
            wait: ``await wait(future)``: the job's result, or a BadRequest (timeout, client gone).

        Returns:
            ``(body, tokens)``: OpenAI's response object and the request's tokens.

        Raises:
            BadRequest: on a bad or oversized request (4xx), or a full queue (429).
        """
        self.check_model(req.model)
        texts = [req.input] if isinstance(req.input, str) else list(req.input)
        self._check_texts(texts, "input")
        if req.dimensions is not None and req.dimensions > self.encoder.dim:
            raise BadRequest(f"dimensions={req.dimensions} is more than the model's {self.encoder.dim}",
                             param="dimensions", code="invalid_dimensions")
        if req.late_chunking:
            vecs, tokens = await self._late(texts, req.task, wait)
        else:
            tokenizer = self._prompt_tokenizer(req.task, self.encoder.default_prompt_name)
            toks = await self._tokenize(tokenizer, texts)
            tokens = sum(len(t) for t in toks)
            self._check_tokens(tokens, "the request")
            vecs = await wait(self.batcher.submit(EncodeJob(toks, self.plain_window, self._pooled(toks), tokens)))
        vecs = _truncated(vecs, req.dimensions, self.encoder.dim)
        data = [{"object": "embedding", "index": i, "embedding": e}
                for i, e in enumerate(_encoded(vecs, req.encoding_format))]
        return {"object": "list", "data": data, "model": self.model_name,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, tokens

    def _pooled(self, toks):
        encoder = self.encoder

        def finish(states) -> np.ndarray:  # Encoder.encode's pooling (the model's own) and normalisation
            import torch

            vecs = torch.stack([encoder.pool_model(s, t) for s, t in zip(states, toks)])
            return torch.nn.functional.normalize(vecs, p=2.0, dim=1).cpu().float().numpy()

        return finish

    async def _late(self, texts: list[str], task: str | None, wait) -> tuple[np.ndarray, int]:
        """Late chunking: the inputs joined by one space, one pass, each input's span mean-pooled."""
        if self.late_problem:
            raise BadRequest(f"late_chunking: {self.late_problem}", param="late_chunking", code="late_unsupported")
        sep = LATE_CHUNKING_SEPARATOR
        starts, ends, at = [], [], 0
        for t in texts:
            starts.append(at)
            ends.append(at + len(t))
            at += len(t) + len(sep)
        joined = sep.join(texts)
        tokenizer = self._prompt_tokenizer(task, "document")
        (tok,) = await self._tokenize(tokenizer, [joined])
        self._check_tokens(len(tok), "the document (the inputs joined)")
        spans = late_spans(starts, ends, tok)
        empty = [i for i, (a, b) in enumerate(spans.tolist()) if b <= a]
        if empty:
            raise BadRequest(f"late_chunking: input[{empty[0]}] has no tokens of its own (whitespace or characters "
                             "the tokenizer drops); every input needs one", param="input", code="empty_input")

        def finish(states) -> np.ndarray:
            from latechunk.pooling import segment_mean

            return segment_mean(states[0], spans, normalize=True).cpu().float().numpy()

        vecs = await wait(self.batcher.submit(EncodeJob([tok], self.late_window, finish, len(tok), "late")))
        return vecs, len(tok)

    # ------------------------------------------------------------------ /v1/chunk
    def chunker(self, strategy: str | None, mode: str, macro_window: int | None, markdown: bool | None):
        """The :class:`~latechunk.api.LateChunker` of these settings over the server's encoder (kept, 16 at most).

        Raises:
            BadRequest: (400) on an unknown strategy, a bad parameter or a macro window the model cannot take.
        """
        from latechunk.api import LateChunker

        key = (strategy or DEFAULT_STRATEGY, mode, macro_window or self.pipeline.macro_window, markdown)
        with self._lock:
            if key in self._chunkers:
                self._chunkers.move_to_end(key)
                return self._chunkers[key]
        try:
            c = LateChunker(self.encoder, strategy=key[0], mode=mode, macro_window=key[2], markdown=markdown)
            p = self.pipeline  # the server's late-pass settings that LateChunker takes no argument for
            c.config = dataclasses.replace(c.config, macro_window_overlap=p.macro_window_overlap,
                                           macro_window_align=p.macro_window_align, late_pooling=p.late_pooling)
            c.config.check_model(self.encoder.facts)
        except (ValueError, TypeError, KeyError, LookupError) as err:
            raise BadRequest(str(err), param="strategy", code="invalid_settings") from None
        source = getattr(c.config.strategies[0], "source", "late")
        if source != "late":  # the server loads no model of a client's choosing
            raise BadRequest(f"{c.strategy}: source={source!r} is not served: this server pools sentence vectors "
                             "from its own late pass only (source=late)", param="strategy", code="invalid_settings")
        with self._lock:
            self._chunkers[key] = c
            while len(self._chunkers) > _CHUNKERS:
                self._chunkers.popitem(last=False)
        return c

    async def chunk(self, req: ChunkRequest, wait) -> tuple[dict, int]:
        """Answer ``POST /v1/chunk``: ``LateChunker.map``'s chunks of each document, vectors as asked.

        The encoder's work is counted before it runs (the documents split first, no model pass, except for a
        strategy that needs sentence vectors): the documents' tokens for the late pass (``late``, ``fused``,
        ``semantic``) plus the chunks' token lengths for a per-chunk pass (``naive``, ``contextual``, ``fused``;
        for ``semantic`` the documents' tokens again); ``tokens`` and ``usage`` are that count.

        Returns:
            ``(body, tokens)``: ``{"model", "strategy", "mode", "documents": [{"id", "chunks": [...]}], "usage"}``.

        Raises:
            BadRequest: on a bad request (400: a duplicate id, a whitespace-only document, a strategy that cannot
                split or whose ``source`` is not ``late``), work past ``--max-request-tokens`` (413), or a full
                queue.
        """
        self.check_model(req.model)
        if (req.document is None) == (req.documents is None):
            raise BadRequest("give one of document (a text) and documents (a list)", param="document",
                             code="invalid_field")
        items = [req.document] if req.document is not None else list(req.documents)
        texts = [it if isinstance(it, str) else it.text for it in items]
        self._check_texts(texts, "documents" if req.documents is not None else "document")
        if req.dimensions is not None and req.dimensions > self.encoder.dim:
            raise BadRequest(f"dimensions={req.dimensions} is more than the model's {self.encoder.dim}",
                             param="dimensions", code="invalid_dimensions")
        ids = [_doc_id(it, pos) for pos, it in enumerate(items)]
        seen: set[str] = set()
        for pos, i in enumerate(ids):
            if i in seen:
                raise BadRequest(f"documents[{pos}]: the id {i!r} is already taken by an earlier document of this "
                                 "request (ids must be unique; a document without one gets its position)",
                                 param="documents", code="duplicate_id")
            seen.add(i)
        chunker = self.chunker(req.strategy, req.mode, req.macro_window, req.markdown)
        toks = await self._tokenize(self.encoder.tokenizer, texts)
        tokens = sum(len(t) for t in toks)
        self._check_tokens(tokens, "the request")
        docs = [it if isinstance(it, str) else _document(it, pos) for pos, it in enumerate(items)]
        strategy = chunker.config.strategies[0]
        late = chunker.mode in ("late", "fused")
        per_chunk = chunker.mode in ("naive", "contextual", "fused")
        if strategy.needs_sentence_vectors:
            # the late pass is needed to split: its tokens, and (the chunks partition the text) as many again
            # for the chunks' own pass
            work = tokens + (tokens if req.vectors and per_chunk else 0)
            self._check_tokens(work, f"the encoder's work for this request ({chunker.strategy}, mode "
                                     f"{chunker.mode}: the late pass, then the chunks)", param="strategy")
            per_doc = await wait(self.batcher.submit(CallJob(self._guarded(lambda: list(chunker.map(docs))), work,
                                                             "chunk")))
        else:
            try:
                per_doc = await asyncio.to_thread(_split_only, chunker, docs)
            except Exception as err:  # noqa: BLE001  (a split is the client's strategy over its text: a 4xx)
                raise BadRequest(f"{chunker.strategy}: {type(err).__name__}: {err}", param="strategy",
                                 code="invalid_settings") from None
            work = tokens
            if req.vectors:
                chunk_tokens = sum(c.token_end - c.token_start for cs in per_doc for c in cs)
                work = (tokens if late else 0) + (chunk_tokens if per_chunk else 0)
                self._check_tokens(work, f"the encoder's work for this request ({chunker.strategy}, mode "
                                         f"{chunker.mode}: {'the late pass and ' if late else ''}"
                                         f"{chunk_tokens:,} tokens of chunks encoded one by one)" if per_chunk else
                                         "the request", param="strategy")
                per_doc = await wait(self.batcher.submit(CallJob(self._guarded(lambda: list(chunker.map(docs))),
                                                                 work, "chunk")))
        tokens = work
        out_docs = []
        for pos, chunks in enumerate(per_doc):
            vecs = None
            if req.vectors and chunks:
                vecs = _truncated(np.stack([c.embedding for c in chunks]), req.dimensions, self.encoder.dim)
                vecs = _encoded(vecs, req.encoding_format)
            out_docs.append({"index": pos, "id": chunks[0].doc_id if chunks else _doc_id(items[pos], pos),
                             "chunks": [_chunk_body(c, None if vecs is None else vecs[i])
                                        for i, c in enumerate(chunks)]})
        return {"object": "list", "model": self.model_name, "strategy": chunker.strategy, "mode": chunker.mode,
                "documents": out_docs, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, tokens

    @staticmethod
    def _guarded(fn):
        """``fn`` with a ValueError or TypeError (a strategy that cannot split the client's text) as a 400."""

        def run():
            try:
                return fn()
            except BadRequest:
                raise
            except (ValueError, TypeError) as err:
                raise BadRequest(f"chunking failed: {type(err).__name__}: {err}", param="strategy",
                                 code="invalid_settings") from None

        return run

    # ------------------------------------------------------------------ /v1/search
    async def search(self, req: SearchRequest, wait) -> tuple[list[dict], int]:
        """Answer ``POST /v1/search``: the hits ``latechunk search --json`` prints (with ``expand``, the contexts).

        Returns:
            ``(hits, tokens)``: the query's tokens (the index's model's tokenizer), counted against
            ``--max-request-tokens`` (413 past it) before the search runs.

        Raises:
            BadRequest: (404) without ``--index``; (400) on a bad query, ``where``, ``expand`` or ``nprobe``.
        """
        if self.index is None:
            raise BadRequest("this server has no index: start it with --index DIR (a folder of latechunk embed)",
                             status=404, code="no_index")
        index = self.index
        where = req.where
        try:
            if isinstance(where, list):
                from latechunk.output import parse_where

                where = parse_where(where)
            if req.expand is not None:
                from latechunk.contexts import parse_expand

                parse_expand(req.expand, "expand=")
        except ValueError as err:
            raise BadRequest(str(err), param="where" if req.expand is None else "expand") from None

        tokenizer = index.encoder.tokenizer if len(index) else self.encoder.tokenizer
        (qtok,) = await self._tokenize(tokenizer, [req.query])
        tokens = len(qtok)
        self._check_tokens(tokens, "the query", param="query")

        def run() -> list[dict]:
            rows = index.search_rows(req.query, req.k, nprobe=req.nprobe, where=where or None)
            if req.expand is not None:
                from latechunk.contexts import expand_hits

                rows = expand_hits(index.table, rows, req.expand)
            return rows

        try:
            rows = await wait(self.batcher.submit(CallJob(run, tokens, "search")))
        except (ValueError, TypeError) as err:
            if isinstance(err, BadRequest):
                raise
            raise BadRequest(str(err), param="query", code="invalid_search") from None
        return rows, tokens


def _doc_id(item, pos: int) -> str:
    return str(pos) if isinstance(item, str) or item.id is None else item.id


def _document(item, pos: int):
    from latechunk.types import Document

    return Document(_doc_id(item, pos), item.text, dict(item.metadata or {}))


def _chunk_body(c, vector) -> dict:
    body = {"doc_id": c.doc_id, "chunk_index": c.chunk_index, "text": c.text, "char_start": c.char_start,
            "char_end": c.char_end, "token_start": c.token_start, "token_end": c.token_end,
            "heading_path": list(c.heading_path), "metadata": c.metadata}
    if vector is not None:
        body["embedding"] = vector
    return body


def _split_only(chunker, docs) -> list[list]:
    """``LateChunker.map``'s chunks without a model pass: its documents (ids, markdown flag, duplicates and blank
    ones as it takes them) split by :func:`latechunk.pipeline.chunk_documents` with the encoder's tokenizer."""
    from latechunk.api import Chunk
    from latechunk.pipeline import chunk_documents
    from latechunk.types import CHUNKER_MARKDOWN_KEY, Document

    items = list(chunker._items(docs))
    wanted = [it for it in items if isinstance(it, Document)]
    split = {id(d): b for d, b, _reason in chunk_documents(wanted, chunker.config.strategies[0],
                                                            chunker.encoder.tokenizer, segmenter=chunker._sentences())}
    out = []
    for it in items:
        b = split.get(id(it)) if isinstance(it, Document) else None
        if b is None:
            out.append([])
            continue
        meta = {k: v for k, v in it.metadata.items() if k != CHUNKER_MARKDOWN_KEY}
        out.append([Chunk(text=it.text[cs:ce], doc_id=it.doc_id, chunk_index=i, char_start=cs, char_end=ce,
                          token_start=ts, token_end=te, heading_path=tuple(hp), strategy=chunker.strategy,
                          mode=chunker.mode, embedding=None, metadata=meta)
                    for i, ((cs, ce), (ts, te), hp) in enumerate(zip(b.char_spans.tolist(), b.token_spans.tolist(),
                                                                      b.heading_paths))])
    return out
