"""Sentence segmentation: text -> sentence char spans -> sentence token spans.

Sentences come from pysbd (Sadvilkar & Neumann, "PySBD: Pragmatic Sentence Boundary Disambiguation", 2020,
https://github.com/nipunsadvilkar/pySBD), a rule-based segmenter that keeps abbreviations ("Ph.D.", "e.g.",
"U.S.", "Dr."), decimals ("3.14") and list numbering inside their sentence. pysbd's own ``char_span`` option
locates each sentence with a regex search from the start of the text, so repeated sentences get the offset of the
first occurrence (the BR-001 fault); here each sentence is located with a monotone cursor instead: sentence i is
searched for only after the end of sentence i-1, and only whitespace may lie in between.

The text is segmented one paragraph (blank-line separated block) at a time: a sentence never crosses a blank
line, and pysbd's cost grows faster than linearly with the length of its input. pysbd also ends a sentence at a
line break, so headings, list items and table rows are sentences of their own.

Speed: pysbd's abbreviation pass is replaced by an output-identical faster one (:func:`_fast_english`, 1.9x
overall); each document's sentences are cached once for every strategy of a run; and :func:`presegment` can
segment a group's paragraphs ahead in worker subprocesses (:func:`set_workers`, the CLI's ``--sentence-workers``).

Tested in ``tests/test_segment.py`` (against stock pysbd; workers against one process),
``tests/test_strategies.py`` and ``tests/test_cases_strategies.py`` (BR-009).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from latechunk.types import Document, Tokenization

__all__ = [
    "LINE_BREAK",
    "PARAGRAPH_BREAK",
    "clear_cache",
    "default_workers",
    "get_workers",
    "presegment",
    "sentence_char_spans",
    "sentence_char_spans_in",
    "sentence_token_spans",
    "set_workers",
]

#: a line break: CRLF, LF, or a lone CR (the three that markdown-it and ``str.splitlines`` agree on)
LINE_BREAK = re.compile(r"\r\n|\n|\r(?!\n)")
#: a blank line: a line break, optional horizontal whitespace, a line break (``\r\n\r\n`` counts, BR-005)
PARAGRAPH_BREAK = re.compile(r"(?:\r\n|\n|\r(?!\n))[^\S\r\n]*(?:\r\n|\n|\r(?!\n))")
_NON_SPACE = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
_SEPARATORS_TO_SPACE = {c: " " for c in range(0x1C, 0x20)}
_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line's text without its outer whitespace
#: characters per pysbd call (see _segment_paragraph)
_BLOCK_CHARS = 1000

_SEGMENTER = None
#: the pysbd release whose abbreviation loop :func:`_fast_english` replaces (its code is copied there)
_PYSBD_PATCHED_VERSION = "0.3.4"


def _fast_english():
    r"""The English rules of pysbd with a faster, output-identical abbreviation pass (pysbd 0.3.4 only).

    pysbd's ``AbbreviationReplacer.search_for_abbreviations_in_string`` loops, per line, over ~200
    abbreviations; for each one that occurs as a substring (``"a"``, ``"no"``, ``"st"`` almost always do) it
    finds every word that starts with it and runs one ``re.sub`` over the line per such word, about half of
    pysbd's time. Each of those substitutions rewrites only a period right after the abbreviation
    (``(?<=\s{abbr})\.``), so when the line has no match of ``(?:^|\s){abbr}\.`` (case-insensitive, the
    abbreviation as the same unescaped pattern pysbd's own ``findall`` uses) none of them can change anything,
    and the abbreviation is skipped here (first by a cheaper necessary test: its last letter must stand right
    before some period). The rest is pysbd's code unchanged; ``tests/test_segment.py`` checks
    the output against stock pysbd on real corpora and on generated text. Any other pysbd version gets stock
    pysbd.
    """
    import pysbd
    from pysbd.lang.english import English

    if getattr(pysbd, "__version__", None) != _PYSBD_PATCHED_VERSION:
        return English
    guards: dict[str, re.Pattern] = {}

    class FastAbbreviationReplacer(English.AbbreviationReplacer):
        def search_for_abbreviations_in_string(self, text):
            if "." not in text:  # every substitution below needs a period
                return text
            # the characters right before a period, lowercased; a non-ASCII one may case-fold to an ASCII letter
            # ("ſ" matches "s"), and then only the regex guard decides
            before, exotic = set(), False
            i = text.find(".", 1)
            while i != -1:
                c = text[i - 1]
                if c.isascii():
                    before.add(c.lower())
                else:
                    exotic = True
                i = text.find(".", i + 1)
            lowered = text.lower()
            for abbr in self.lang.Abbreviation.ABBREVIATIONS:
                stripped = abbr.strip()
                if stripped not in lowered:
                    continue
                last = stripped[-1]
                if (not exotic and last.isascii() and last.isalnum() and stripped[-2:-1] != "\\"
                        and last.lower() not in before):
                    continue  # the guard's match would need this letter right before a period
                guard = guards.get(stripped)
                if guard is None:
                    guard = guards[stripped] = re.compile(rf"(?:^|\s){stripped}\.", re.IGNORECASE)
                if not guard.search(text):
                    continue
                abbrev_match = re.findall(rf"(?:^|\s|\r|\n){stripped}", text, flags=re.IGNORECASE)
                if not abbrev_match:
                    continue
                next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
                char_array = re.findall(next_word_start, text)
                for ind, match in enumerate(abbrev_match):
                    text = self.scan_for_replacements(text, match, ind, char_array)
            return text

    class FastEnglish(English):
        AbbreviationReplacer = FastAbbreviationReplacer

    return FastEnglish


def _segmenter(fast: bool = True):
    """The shared pysbd segmenter (English, no cleaning); ``fast=False`` gives stock pysbd (for tests)."""
    global _SEGMENTER
    if not fast:
        import pysbd

        return pysbd.Segmenter(language="en", clean=False, char_span=False)
    if _SEGMENTER is None:
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False, char_span=False)
        seg.language_module = _fast_english()
        _SEGMENTER = seg
    return _SEGMENTER


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Char ranges of the blank-line separated blocks of ``text`` that hold a non-whitespace character."""
    out = []
    pos = 0
    for m in PARAGRAPH_BREAK.finditer(text):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return [(a, b) for a, b in out if not text[a:b].isspace() and a < b]


def _align(para: str, segments: list[str]) -> list[tuple[int, int]] | None:
    """Locate each segment in ``para`` with a monotone cursor; None if a segment is not where it must be.

    Each segment, stripped, must start at the next non-whitespace character after the previous one's end.
    """
    spans = []
    cursor = 0
    n = len(para)
    for seg in segments:
        s = seg.strip()
        if not s:
            continue
        # skip whitespace after the cursor
        while cursor < n and para[cursor].isspace():
            cursor += 1
        if not para.startswith(s, cursor):
            return None
        spans.append((cursor, cursor + len(s)))
        cursor += len(s)
    if para[cursor:].strip():
        return None
    return spans


def _align_non_space(para: str, segments: list[str]) -> list[tuple[int, int]] | None:
    """Fallback alignment by counts of non-whitespace characters (when a segment's whitespace was altered)."""
    if "".join("".join(seg.split()) for seg in segments) != "".join(para.split()):
        return None
    # char position of the k-th non-whitespace character
    pos = np.fromiter(
        (i for m in _NON_SPACE.finditer(para) for i in range(m.start(), m.end())), dtype=np.int64
    )
    spans = []
    k = 0
    for seg in segments:
        c = sum(len(w) for w in seg.split())
        if c == 0:
            continue
        spans.append((int(pos[k]), int(pos[k + c - 1]) + 1))
        k += c
    return spans


def _segment_block(block: str, a: int) -> list[tuple[int, int]]:
    """Sentence spans of one block (a substring of the text starting at char ``a``), in text coordinates."""
    # the separators \x1c-\x1f are whitespace to Python but make pysbd's list rule call int("\x1f1"); a space in
    # their place keeps every offset
    block = block.translate(_SEPARATORS_TO_SPACE)
    try:
        # pysbd's Processor gives the sentences; Segmenter.segment() would then re-find each one in the block
        # with a fresh regex per sentence (a third of its time); _align does that job with a cursor
        segmenter = _segmenter()
        segments = segmenter.processor(block).process()
    except Exception as err:  # noqa: BLE001  (pysbd is rule code: a crash on odd input must not stop a corpus)
        warnings.warn(
            f"pysbd failed on the block at chars [{a}, {a + len(block)}) ({type(err).__name__}: {err}); "
            "its lines are used as sentences",
            RuntimeWarning,
            stacklevel=4,
        )
        segments = None
    spans = None if segments is None else _align(block, segments)
    if spans is None and segments is not None:
        spans = _align_non_space(block, segments)
        if spans is None:
            warnings.warn(
                f"pysbd changed the text of the block at chars [{a}, {a + len(block)}); its lines are used as "
                "sentences",
                RuntimeWarning,
                stacklevel=4,
            )
    if spans is None:  # one sentence per line (pysbd ends a sentence at every line break anyway)
        spans = [(m.start(), m.end()) for m in _LINE.finditer(block)]
    return [(a + s, a + e) for s, e in spans if e > s]


def _segment_paragraph(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[a:b]``, fed to pysbd in blocks of about ``_BLOCK_CHARS`` characters.

    pysbd's time grows with (characters x sentences) of one call, so a long paragraph is cut into blocks at
    whitespace; the last (possibly incomplete) sentence of a block is segmented again at the head of the next
    block, so every boundary is decided with the text on both sides of it.
    """
    out: list[tuple[int, int]] = []
    pos = a
    while pos < b:
        end = b
        if b - pos > _BLOCK_CHARS:
            m = _SPACE.search(text, pos + _BLOCK_CHARS, b)
            end = m.start() if m else b
        spans = _segment_block(text[pos:end], pos)
        if end < b and len(spans) > 1:
            out.extend(spans[:-1])
            pos = spans[-1][0]
        else:
            out.extend(spans)
            pos = end
    return out


def _segment_text(text: str) -> np.ndarray:
    out: list[tuple[int, int]] = []
    for a, b in _paragraphs(text):
        out.extend(_segment_paragraph(text, a, b))
    arr = np.asarray(out, dtype=np.int32).reshape(-1, 2)
    arr.setflags(write=False)
    return arr


class _DocumentSentences:
    """One document's sentences, segmented lazily paragraph by paragraph and memoised, so every strategy of a
    run (recursive's sentence level, sentence_window, semantic, heading's long sections) shares one pysbd pass
    per paragraph instead of segmenting the same text again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.paragraphs = _paragraphs(text)
        self.starts = np.asarray([a for a, _ in self.paragraphs], dtype=np.int64)
        self.ends = np.asarray([b for _, b in self.paragraphs], dtype=np.int64)
        self.memo: dict[int, list[tuple[int, int]]] = {}

    def spans(self, c0: int = 0, c1: int | None = None) -> np.ndarray:
        """(n, 2) int32 sentence spans of the paragraphs that overlap chars ``[c0, c1)``."""
        c1 = len(self.text) if c1 is None else c1
        i0 = int(np.searchsorted(self.ends, c0, side="right"))
        i1 = int(np.searchsorted(self.starts, c1, side="left"))
        out: list[tuple[int, int]] = []
        for i in range(i0, i1):
            if i not in self.memo:
                self.memo[i] = _segment_paragraph(self.text, *self.paragraphs[i])
            out.extend(self.memo[i])
        arr = np.asarray(out, dtype=np.int32).reshape(-1, 2)
        arr.setflags(write=False)
        return arr


class _SentenceCache:
    """Text -> :class:`_DocumentSentences`, least recently used first out, bounded by the characters it holds.

    The bound is in characters, not documents, so a whole group of short documents stays cached between the
    prefetch thread (which segments a group ahead) and the main thread (where ``semantic`` splits after the
    forward pass). The texts are the documents' own strings, already held by the pipeline.
    """

    def __init__(self, max_chars: int = 1 << 26) -> None:
        self.max_chars = max_chars
        self._items: OrderedDict[str, _DocumentSentences] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> _DocumentSentences:
        with self._lock:
            ds = self._items.get(text)
            if ds is not None:
                self._items.move_to_end(text)
                return ds
            ds = self._items[text] = _DocumentSentences(text)
            self._chars += len(text)
            while self._chars > self.max_chars and len(self._items) > 1:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
            return ds

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


_CACHE = _SentenceCache()


def _document_sentences(text: str) -> _DocumentSentences:
    return _CACHE.get(text)


def clear_cache() -> None:
    """Forget every cached segmentation (benchmarks call it to time a cold start)."""
    _CACHE.clear()


# --- segmenting many paragraphs at once, in worker processes -------------------------------------------------

_POOL: _WorkerPool | None = None
_POOL_LOCK = threading.Lock()
#: characters per task sent to a worker process
_TASK_CHARS = 1 << 15
#: below this many characters to segment, worker processes are not worth their messages
_MIN_POOL_CHARS = 1 << 16


def _segment_many(paragraphs: list[str]) -> list[list[tuple[int, int]]]:
    """Worker task: sentence spans of each paragraph, in the paragraph's own coordinates."""
    return [_segment_paragraph(p, 0, len(p)) for p in paragraphs]


def _worker_main() -> None:
    """``python -m latechunk._segment_worker``: one JSON list of paragraphs per stdin line, one JSON list of
    their sentence spans per stdout line; ends at end of input (the parent closed the pipe, or died)."""
    import signal

    # Ctrl-C reaches the whole process group: the parent handles it, and a worker ends when its pipe closes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # only the replies go to the pipe, whatever else prints
    for line in sys.stdin.buffer:
        reply = json.dumps(_segment_many(json.loads(line)), separators=(",", ":"))
        out.write(reply.encode("ascii") + b"\n")
        out.flush()


class _WorkerPool:
    """``n`` worker processes (``python -m latechunk._segment_worker``), fed over pipes, one task at a time each.

    They are plain subprocesses that import only this module (numpy and pysbd): unlike multiprocessing's
    spawn and forkserver methods they never import the caller's main module (so a script needs no
    ``if __name__ == "__main__":`` guard), and unlike fork they copy no torch, CUDA or tokenizer threads. A
    worker ends when its input pipe closes, so none outlives this process.
    """

    def __init__(self, n: int) -> None:
        import subprocess
        from concurrent.futures import ThreadPoolExecutor

        env = dict(os.environ)  # the workers import this very package, installed or not
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH", "")) if x)
        cmd = [sys.executable, "-m", "latechunk._segment_worker"]
        self.n = n
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(n)]
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for proc in self.procs:
            self.free.put(proc)
        self.threads = ThreadPoolExecutor(n, thread_name_prefix="latechunk-sentences")

    def _run(self, paragraphs: list[str]) -> list:
        proc = self.free.get()
        try:
            proc.stdin.write(json.dumps(paragraphs).encode("ascii") + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"sentence worker (pid {proc.pid}) exited with code {proc.wait()}")
            return json.loads(line)
        finally:
            self.free.put(proc)

    def map(self, tasks: list[list[str]]) -> list[list]:
        """Sentence spans per task, in task order (tasks run on the workers in parallel)."""
        return list(self.threads.map(self._run, tasks))

    def ready(self) -> None:
        """Wait until every worker has started and answered."""
        self.map([[] for _ in range(self.n)])

    def close(self) -> None:
        """End the workers (close their input; kill any that does not exit within 5 s)."""
        self.threads.shutdown(wait=False, cancel_futures=True)
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                proc.kill()


def _pool(workers: int) -> _WorkerPool:
    """The shared pool of ``workers`` worker processes (started on first use, kept for the process)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.n != workers:
            if _POOL is not None:
                _POOL.close()
            _POOL = _WorkerPool(workers)
        return _POOL


def _drop_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.close()
        _POOL = None


atexit.register(_drop_pool)


def default_workers() -> int:
    """Worker processes :func:`presegment` uses by default: one per CPU core the process may use, less one for
    the main process, at most 16; 0 (segment in the calling thread) on a machine with fewer than 4 cores."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 0 if cores < 4 else min(16, cores - 1)


_WORKERS = 0


def set_workers(n: int | None) -> int:
    """Set the worker processes :func:`presegment` uses when not told (the pipeline's sentence segmentation).

    Args:
        n: Processes; 0 or 1: segment in the calling thread (the library's default); None: :func:`default_workers`.

    Returns:
        The number now in effect.

    Raises:
        ValueError: if ``n`` is negative.
    """
    global _WORKERS
    if n is not None and n < 0:
        raise ValueError(f"sentence workers must be >= 0 (or None for default_workers()), got {n}")
    _WORKERS = default_workers() if n is None else int(n)
    return _WORKERS


def get_workers() -> int:
    """The worker processes :func:`presegment` uses when not told (see :func:`set_workers`)."""
    return _WORKERS


def _long_line_paragraphs(ds: _DocumentSentences, token_starts: np.ndarray, min_tokens: int) -> np.ndarray:
    """(n_paragraphs,) bool: the paragraph holds a line of more than ``min_tokens`` tokens (a token belongs to
    the line its first character is in)."""
    text = ds.text
    line_starts = np.fromiter((m.end() for m in LINE_BREAK.finditer(text)), dtype=np.int64)
    line_starts = np.concatenate([[0], line_starts])
    counts = np.diff(np.searchsorted(np.asarray(token_starts, dtype=np.int64), np.append(line_starts, len(text)),
                                     side="left"))
    long_lines = line_starts[counts > min_tokens]
    hit = np.zeros(len(ds.paragraphs), dtype=bool)
    if long_lines.size and len(ds.paragraphs):
        # a long line is in the paragraph whose range holds its first character (blank lines are in none)
        i = np.searchsorted(ds.starts, long_lines, side="right") - 1
        ok = (i >= 0) & (long_lines < ds.ends[np.maximum(i, 0)])
        hit[i[ok]] = True
    return hit


def presegment(
    texts: Sequence[str],
    min_tokens: int = 0,
    token_starts: Sequence[np.ndarray] | None = None,
    workers: int | None = None,
) -> dict:
    """Segment the paragraphs of ``texts`` now, ahead of the strategies that will ask for their sentences.

    The results go to the same cache :func:`sentence_char_spans` and :func:`sentence_char_spans_in` read, so
    the later calls cost only a lookup. With ``workers > 1`` the paragraphs are sent, in tasks of about 32k
    characters, to ``workers`` worker processes (started once and kept; see :class:`_WorkerPool`): pysbd is
    pure Python, about 0.7 M characters per second on one core, so on a many-core GPU box this is what keeps
    sentence-based chunking behind the forward pass. If the workers fail, the paragraphs are segmented here
    instead, with a warning; the output is the same either way.

    Args:
        texts: Document texts.
        min_tokens: With ``token_starts``: segment only paragraphs that hold a line of more than this many
            tokens (the others stay lazy: recursive and heading cut at sentences only inside a line over their
            budget). 0, or no ``token_starts``: every paragraph.
        token_starts: Per text, (n_tokens,) int, sorted: the start char offset of each content token.
        workers: Worker processes; 0 or 1 segments in the calling thread; None: :func:`get_workers`.

    Returns:
        ``{"paragraphs": n, "chars": n, "workers": n}``: what was segmented now (already cached paragraphs
        excluded) and by how many processes (0: in this thread).
    """
    workers = _WORKERS if workers is None else workers
    todo: list[tuple[_DocumentSentences, int]] = []
    chars = 0
    if token_starts is not None and len(token_starts) != len(texts):
        raise ValueError(f"presegment: {len(texts)} texts but {len(token_starts)} token_starts arrays")
    for k, text in enumerate(texts):
        ds = _document_sentences(text)
        wanted = None
        if min_tokens > 0 and token_starts is not None:
            wanted = _long_line_paragraphs(ds, token_starts[k], min_tokens)
        for i, (a, b) in enumerate(ds.paragraphs):
            if (wanted is None or wanted[i]) and i not in ds.memo:
                todo.append((ds, i))
                chars += b - a
    used = workers if workers > 1 and chars >= _MIN_POOL_CHARS else 0
    if used:
        try:
            tasks: list[list[tuple[_DocumentSentences, int]]] = [[]]
            size = 0
            for item in todo:
                if size >= _TASK_CHARS:
                    tasks.append([])
                    size = 0
                tasks[-1].append(item)
                a, b = item[0].paragraphs[item[1]]
                size += b - a
            texts_per_task = [[ds.text[slice(*ds.paragraphs[i])] for ds, i in task] for task in tasks]
            for task, result in zip(tasks, _pool(workers).map(texts_per_task)):
                for (ds, i), spans in zip(task, result):
                    a = ds.paragraphs[i][0]
                    ds.memo[i] = [(a + s, a + e) for s, e in spans]
        except Exception as err:  # noqa: BLE001  (the pool is a speed-up: fall back to this thread)
            warnings.warn(
                f"sentence segmentation in {workers} worker processes failed ({type(err).__name__}: {err}); "
                "segmenting in this process instead",
                RuntimeWarning,
                stacklevel=2,
            )
            _drop_pool()
            used = 0
    if not used:
        for ds, i in todo:
            if i not in ds.memo:
                ds.memo[i] = _segment_paragraph(ds.text, *ds.paragraphs[i])
    return {"paragraphs": len(todo), "chars": chars, "workers": used}


def sentence_char_spans(text: str, cache: bool = True) -> np.ndarray:
    """Sentence char spans of ``text``.

    Args:
        text: Any string.
        cache: Share the segmentation with later calls on the same text (recent texts up to 64 M characters
            are kept); pass False for one-off strings.

    Returns:
        (n_sentences, 2), int32. Half-open ``[start, end)`` char offsets, increasing and disjoint; each span
        starts and ends on a non-whitespace character; together they hold every non-whitespace character.
        ``(0, 2)`` for an empty or whitespace-only text.

    Raises:
        TypeError: if ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"sentence_char_spans expects str, got {type(text).__name__}")
    return _document_sentences(text).spans() if cache else _segment_text(text)


def sentence_char_spans_in(text: str, c0: int, c1: int) -> np.ndarray:
    """Sentence char spans of the paragraphs of ``text`` that overlap chars ``[c0, c1)``, from the segmentation
    shared by all strategies (only those paragraphs are segmented, once per document).

    Returns:
        (n, 2), int32, as :func:`sentence_char_spans`; spans may reach outside ``[c0, c1)``.
    """
    return _document_sentences(text).spans(c0, c1)


def sentence_token_spans(doc: Document | str, tok: Tokenization) -> np.ndarray:
    """Sentence token spans: each content token goes to the sentence its first character lies in.

    Args:
        doc: The document (or its text).
        tok: Its whole-document tokenization.

    Returns:
        (n_sentences, 2), int32. Half-open positions into ``tok`` (frame tokens excluded): non-empty, increasing,
        tiling the content tokens ``[tok.content_start, tok.content_end)`` exactly. A sentence with no token of
        its own (e.g. only characters the tokenizer drops) is absorbed by its neighbour. Tokens that share a
        start offset (one character split into several wordpieces) always stay together.
    """
    text = doc.text if isinstance(doc, Document) else doc
    cs, ce = tok.content_start, tok.content_end
    if ce <= cs:
        return np.zeros((0, 2), dtype=np.int32)
    starts = tok.offsets[cs:ce, 0].astype(np.int64)
    sent = sentence_char_spans(text)
    if sent.shape[0] <= 1:
        return np.asarray([[cs, ce]], dtype=np.int32)
    # a cut before the first token whose start is at or after each sentence start (after the first)
    cuts = np.searchsorted(starts, sent[1:, 0], side="left")
    cuts = np.unique(cuts[(cuts > 0) & (cuts < starts.shape[0])])
    bounds = np.concatenate([[0], cuts, [starts.shape[0]]]) + cs
    return np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int32)
