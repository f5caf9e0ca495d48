""":class:`SentenceSegmenter`: a run's sentences (char spans, token spans), with its cache and workers.

Tests: ``tests/sentences/test_sentences.py``, ``tests/strategies/``.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Sequence
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from latechunk.sentences import segment
from latechunk.sentences.cache import _DocumentSentences, _long_line_paragraphs, _SentenceCache
from latechunk.sentences.workers import _WorkerPool
from latechunk.types import Document, Tokenization

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11


def _check_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"SentenceSegmenter: {name} must be an int, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"SentenceSegmenter: {name} must be >= {minimum}, got {name}={value}")
    return int(value)


class SentenceSegmenter:
    """The sentences of a run's documents: pysbd segmentation with a per-run cache and optional worker processes.

    One segmenter serves every strategy of a run (the pipeline makes one per run and passes it to each
    ``Strategy.split``), so a document is segmented once, however many strategies read its sentences. Each
    document's paragraphs are segmented lazily, when first asked for, and kept in a cache keyed by the document
    text, least recently used out first, bounded by ``max_cache_chars`` characters of text (a document longer
    than the bound is still kept alone). :meth:`presegment` segments the paragraphs a run will need ahead of the
    split, in ``workers`` subprocesses (started on first use, ended by :meth:`close`, by ``with``, when the
    segmenter is garbage collected, or at interpreter exit). The output is the same with or without workers.

    Thread safety: the cache may be read and filled from several threads (the pipeline's prefetch thread and its
    main thread); at worst two threads segment the same paragraph, with the same result.

    Args:
        workers: Worker processes for :meth:`presegment`; 0 or 1: segment in the calling thread. The CLI's
            default is :func:`default_workers`.
        max_cache_chars: Characters of document text whose sentences stay cached (default 64 M).
        task_chars: Characters of paragraphs per task sent to a worker (default 32 k).
        min_pool_chars: Below this many characters to segment, :meth:`presegment` stays in the calling thread
            (workers are not worth their messages; default 64 k).

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if ``workers`` or ``min_pool_chars`` is negative, or ``max_cache_chars`` or ``task_chars`` is
            not positive.

    Example::

        with SentenceSegmenter(workers=4) as sentences:
            sentences.presegment(texts)
            spans = sentences.char_spans(texts[0])  # (n, 2) int32, from the cache
    """

    def __init__(self, workers: int = 0, *, max_cache_chars: int = 1 << 26, task_chars: int = 1 << 15,
                 min_pool_chars: int = 1 << 16) -> None:
        self._workers = _check_count("workers", workers, 0)
        self.task_chars = _check_count("task_chars", task_chars, 1)
        self.min_pool_chars = _check_count("min_pool_chars", min_pool_chars, 0)
        self._cache = _SentenceCache(_check_count("max_cache_chars", max_cache_chars, 1))
        self._pool: _WorkerPool | None = None
        self._pool_closer: weakref.finalize | None = None
        self._pool_lock = threading.Lock()

    @property
    def workers(self) -> int:
        """Worker processes :meth:`presegment` uses (0 or 1: none)."""
        return self._workers

    @property
    def running_workers(self) -> int:
        """Worker processes started and not yet closed (0 until a :meth:`presegment` needs them)."""
        pool = self._pool
        return 0 if pool is None else pool.n

    def __repr__(self) -> str:
        return f"SentenceSegmenter(workers={self._workers}, running_workers={self.running_workers})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- sentences of one document ---------------------------------------------------------------------------

    def char_spans(self, text: str, cache: bool = True) -> np.ndarray:
        """Sentence char spans of ``text``.

        Args:
            text: Any string.
            cache: Keep the segmentation for later calls on the same text (this segmenter's cache); pass False
                for one-off strings.

        Returns:
            (n_sentences, 2), int32, read-only. Half-open ``[start, end)`` char offsets, increasing and
            disjoint; each span starts and ends on a non-whitespace character; together they hold every
            non-whitespace character. ``(0, 2)`` for an empty or whitespace-only text.

        Raises:
            TypeError: if ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"SentenceSegmenter.char_spans expects str, got {type(text).__name__}")
        return self._cache.get(text).spans() if cache else segment._segment_text(text)

    def char_spans_in(self, text: str, c0: int, c1: int) -> np.ndarray:
        """Sentence char spans of the paragraphs of ``text`` that overlap chars ``[c0, c1)`` (only those
        paragraphs are segmented, once per document; cached).

        Args:
            text: The document text.
            c0: First char of the range.
            c1: End of the range (exclusive, chars).

        Returns:
            (n, 2), int32, read-only, as :meth:`char_spans`; spans may reach outside ``[c0, c1)``.
        """
        return self._cache.get(text).spans(c0, c1)

    def token_spans(self, doc: Document | str, tok: Tokenization, keys: np.ndarray | None = None) -> np.ndarray:
        """Sentence token spans: each content token goes to the sentence its first character lies in.

        Args:
            doc: The document (or its text).
            tok: Its whole-document tokenization.
            keys: (n_content,) int, non-decreasing, or None: where a cut before each content token falls in the
                text. The strategies pass :attr:`latechunk.tokenize.ContentTokens.keys`, so that whitespace
                tokens (byte-level BPE, SentencePiece) stay with the sentence before them and a token that
                starts with a space (``" fox"``) goes with its word (BR-023); None: the tokens' start offsets
                (the same thing for WordPiece).

        Returns:
            (n_sentences, 2), int32. Half-open positions into ``tok`` (frame tokens excluded): non-empty,
            increasing, tiling the content tokens ``[tok.content_start, tok.content_end)`` exactly; none for a
            text without sentences (only whitespace). A sentence with no token of its own (e.g. only characters
            the tokenizer drops) is absorbed by its neighbour. Tokens that share a start offset (one character
            split into several wordpieces) always stay together.

        Raises:
            ValueError: if ``keys`` is not one value per content token.
        """
        text = doc.text if isinstance(doc, Document) else doc
        cs, ce = tok.content_start, tok.content_end
        if ce <= cs:
            return np.zeros((0, 2), dtype=np.int32)
        starts = tok.offsets[cs:ce, 0].astype(np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
        if starts.shape != (ce - cs,):
            raise ValueError(f"token_spans: {starts.shape} keys for {ce - cs} content tokens")
        sent = self.char_spans(text)
        if sent.shape[0] == 0:  # whitespace only (in tokens of its own): no sentence, no span
            return np.zeros((0, 2), dtype=np.int32)
        if sent.shape[0] == 1:
            return np.asarray([[cs, ce]], dtype=np.int32)
        # a cut before the first token whose start (key) is at or after each sentence start (after the first)
        cuts = np.searchsorted(starts, sent[1:, 0], side="left")
        cuts = np.unique(cuts[(cuts > 0) & (cuts < starts.shape[0])])
        bounds = np.concatenate([[0], cuts, [starts.shape[0]]]) + cs
        return np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int32)

    def clear_cache(self) -> None:
        """Forget every cached segmentation (benchmarks call it to time a cold start)."""
        self._cache.clear()

    # --- many documents ahead, in worker processes -----------------------------------------------------------

    def presegment(
        self,
        texts: Sequence[str],
        min_tokens: int = 0,
        token_starts: Sequence[np.ndarray] | None = None,
    ) -> dict:
        """Segment the paragraphs of ``texts`` now, ahead of the strategies that will ask for their sentences.

        The results go to this segmenter's cache, so the later :meth:`char_spans`, :meth:`char_spans_in` and
        :meth:`token_spans` calls cost only a lookup. With ``workers > 1`` and at least ``min_pool_chars``
        characters to segment, the paragraphs are sent, in tasks of about ``task_chars`` characters, to the
        worker processes (started on the first such call and kept until :meth:`close`): pysbd is pure Python,
        about 220k MiniLM tokens (~0.9 M characters) per second on one core (``scripts/bench_segment.py``), so
        on a many-core GPU box this is what keeps
        sentence-based chunking behind the forward pass. A paragraph longer than ``task_chars`` is segmented in
        the calling thread meanwhile (pysbd goes through it block by block in order anyway; here it needs no copy
        in a message, and Ctrl-C or a stopped run acts between its blocks). If the workers fail (one died, say), they are closed and
        the paragraphs are segmented here instead, with a ``RuntimeWarning``; the output is the same either way.

        Args:
            texts: Document texts.
            min_tokens: With ``token_starts``: segment only paragraphs that hold a line of more than this many
                tokens (the others stay lazy: recursive and heading cut at sentences only inside a line over
                their budget). 0, or no ``token_starts``: every paragraph.
            token_starts: Per text, (n_tokens,) int, sorted: the start char offset of each content token.

        Returns:
            ``{"paragraphs": n, "chars": n, "workers": n}``: what was segmented now (already cached paragraphs
            excluded), its characters, and by how many processes (0: in this thread).

        Raises:
            ValueError: if ``token_starts`` is given with a length other than ``len(texts)``.
        """
        todo: list[tuple[_DocumentSentences, int]] = []
        chars = 0
        if token_starts is not None and len(token_starts) != len(texts):
            raise ValueError(f"presegment: {len(texts)} texts but {len(token_starts)} token_starts arrays")
        for k, text in enumerate(texts):
            ds = self._cache.get(text)
            wanted = None
            if min_tokens > 0 and token_starts is not None:
                wanted = _long_line_paragraphs(ds, token_starts[k], min_tokens)
            for i, (a, b) in enumerate(ds.paragraphs):
                if (wanted is None or wanted[i]) and i not in ds.memo:
                    todo.append((ds, i))
                    chars += b - a
        workers = self._workers
        used = workers if workers > 1 and chars >= self.min_pool_chars else 0
        if used:
            try:
                self._segment_in_workers(todo)
            except Exception as err:  # noqa: BLE001  (the pool is a speed-up: fall back to this thread)
                warnings.warn(
                    f"sentence segmentation in {workers} worker processes failed ({type(err).__name__}: {err}); "
                    "segmenting in this process instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self.close()
                used = 0
        if not used:
            for ds, i in todo:
                if i not in ds.memo:
                    ds.memo[i] = segment._segment_paragraph(ds.text, *ds.paragraphs[i])
        return {"paragraphs": len(todo), "chars": chars, "workers": used}

    def _segment_in_workers(self, todo: list[tuple[_DocumentSentences, int]]) -> None:
        # a paragraph longer than a task is segmented here, while the workers take the others: pysbd goes through
        # it block by block in sequence anyway, and here it costs no copy of it in a message and stops at Ctrl-C
        # between blocks (a worker busy with one paragraph for minutes would hold the run until it is done)
        long = [(ds, i) for ds, i in todo if ds.paragraphs[i][1] - ds.paragraphs[i][0] > self.task_chars]
        todo = [(ds, i) for ds, i in todo if ds.paragraphs[i][1] - ds.paragraphs[i][0] <= self.task_chars]
        tasks: list[list[tuple[_DocumentSentences, int]]] = [[]]
        size = 0
        for item in todo:
            if size >= self.task_chars:
                tasks.append([])
                size = 0
            tasks[-1].append(item)
            a, b = item[0].paragraphs[item[1]]
            size += b - a
        texts_per_task = [[ds.text[slice(*ds.paragraphs[i])] for ds, i in task] for task in tasks if task]
        results = self._started_pool().imap(texts_per_task) if texts_per_task else iter(())
        for ds, i in long:
            if i not in ds.memo:
                ds.memo[i] = segment._segment_paragraph(ds.text, *ds.paragraphs[i])
        for task, result in zip([t for t in tasks if t], results):
            for (ds, i), spans in zip(task, result):
                a = ds.paragraphs[i][0]
                ds.memo[i] = np.asarray(spans, dtype=np.int32).reshape(-1, 2) + np.int32(a)

    def _started_pool(self) -> _WorkerPool:
        with self._pool_lock:
            if self._pool is None:
                pool = _WorkerPool(self._workers)
                # the processes end with the segmenter (garbage collected) or at interpreter exit, whichever first;
                # the callback holds the pool, not the segmenter
                self._pool_closer = weakref.finalize(self, pool.close)
                self._pool = pool
            return self._pool

    def start(self) -> None:
        """Start the worker processes now and wait until each has answered (otherwise the first
        :meth:`presegment` that needs them starts them). Nothing to do with fewer than 2 workers."""
        if self._workers > 1:
            self._started_pool().ready()

    def close(self) -> None:
        """End the worker processes, if any are running (close their input; kill any that does not exit within
        5 s). The cache is kept and the segmenter stays usable; a later :meth:`presegment` that needs workers
        starts them again."""
        with self._pool_lock:
            closer, self._pool_closer = self._pool_closer, None
            self._pool = None
        if closer is not None:
            closer()  # pool.close(), once
