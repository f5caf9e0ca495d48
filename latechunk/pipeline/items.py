"""Input items on their way to a group: batches for the tokenizer, tokenization and screening, the skip reasons
the pipeline gives, sentences segmented ahead, and progress in bytes of document text.

A document that fails to tokenize, holds nothing the model can read (:func:`unreadable_reason`), is too long with
macro windows off, or fails to split is a :class:`~latechunk.types.Skipped` item with its reason
(:data:`PIPELINE_SKIP_PREFIXES`), never an error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from latechunk.encoder import Encoder
from latechunk.io import surrogate_reason
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies.base import Strategy
from latechunk.types import Boundaries, Document, Skipped, Tokenization

log = logging.getLogger("latechunk")


@dataclass
class _Entry:
    """One input item on its way through the prefetch thread."""

    pos: int
    item: Document | Skipped
    tok: Tokenization | None = None  # None for a skipped item
    skip: Skipped | None = None  # set when the item is (or becomes) skipped
    pre: list[Boundaries | None] | None = None  # per strategy; None where the split needs sentence vectors
    window_ends: np.ndarray | None = None  # where a chunk-aligned macro window may stop (None: token-aligned)
    pooled: dict[int, np.ndarray] = field(default_factory=dict)  # strategy index -> late mode's pooled token spans


def _item_batches(items: Iterable[Document | Skipped], max_chars: int = 1 << 18,
                  max_docs: int = 64) -> Iterator[list[_Entry]]:
    """Input items with their positions, in lists of at most ``max_docs`` documents and about ``max_chars``
    characters (the unit of one batch tokenizer call)."""
    batch: list[_Entry] = []
    chars = docs = 0
    for pos, item in enumerate(items):
        batch.append(_Entry(pos, item))
        if isinstance(item, Document):
            docs += 1
            chars += len(item.text)
            if chars >= max_chars or docs >= max_docs:
                yield batch
                batch, chars, docs = [], 0, 0
    if batch:
        yield batch


def _tokenize_batch(encoder: Encoder, batch: list[_Entry], max_tokens: int | None) -> None:
    """Tokenize the batch's documents (one call on all cores, else one by one so only a bad document fails)
    and screen them: set ``tok`` or ``skip`` on each entry."""
    entries = [e for e in batch if isinstance(e.item, Document)]
    for e in batch:
        if isinstance(e.item, Skipped):
            e.skip = e.item
    if not entries:
        return
    toks: list = []
    batch_tokenize = getattr(encoder.tokenizer, "batch", None)
    if batch_tokenize is not None and len(entries) > 1:
        try:
            toks = batch_tokenize([e.item for e in entries])
        except Exception:  # noqa: BLE001  (one by one below, so only a bad document is skipped)
            toks = []
    if not toks:
        for e in entries:
            try:
                toks.append(encoder.tokenizer(e.item))
            except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                toks.append(err)
    unk = getattr(encoder.tokenizer, "unk_token_id", None)
    for e, tok in zip(entries, toks):
        doc_id = e.item.doc_id
        if isinstance(tok, Exception):  # text that is not valid Unicode says so (the tokenizer's TypeError does not)
            e.skip = Skipped(doc_id, surrogate_reason(e.item.text) or f"tokenizer failed: {type(tok).__name__}: {tok}")
        elif reason := unreadable_reason(tok, unk):
            e.skip = Skipped(doc_id, reason)
        elif max_tokens is not None and len(tok) > max_tokens:
            e.skip = Skipped(doc_id, f"{len(tok)} tokens > macro window {max_tokens} and macro windows are off (--long-documents skip)")
        else:
            e.tok = tok


#: how the skip reasons the pipeline gives a document it has read begin (:func:`unreadable_reason`, a tokenizer
#: or splitter that failed, a lone surrogate, a document too long with macro windows off); every other skip
#: reason is :mod:`latechunk.io`'s, given when the source was read (``latechunk verify`` tells the two apart)
PIPELINE_SKIP_PREFIXES = ("empty or whitespace-only (no tokens)", "nothing the model can read", "tokenizer failed",
                          "chunking failed")


def is_pipeline_skip(reason: str) -> bool:
    """Whether a skip reason is the pipeline's (the document was read, then not embedded), not the reader's.

    Args:
        reason: A :class:`~latechunk.types.Skipped` reason.

    Returns:
        True for the reasons of :data:`PIPELINE_SKIP_PREFIXES`, ``"N tokens > macro window ..."`` and a lone
        surrogate in the text.
    """
    return reason.startswith(PIPELINE_SKIP_PREFIXES) or bool(
        re.match(r"\d+ tokens > macro window ", reason)) or " holds a lone surrogate " in reason


def unreadable_reason(tok: Tokenization, unk_token_id: int | None) -> str:
    """Why a tokenized document holds nothing to embed (``embed`` and ``chunk`` skip it with this reason), or ``""``.

    Args:
        tok: The document's tokenization.
        unk_token_id: The tokenizer's unknown-token id (None: the tokenizer has none).

    Returns:
        ``"empty or whitespace-only (no tokens)"`` for no content token; ``"nothing the model can read: ..."`` when
        every content token is the unknown token (a vector of nothing but [UNK] is the same for every such
        document: nothing of the text is in it); else ``""``.
    """
    if tok.n_content == 0:
        return "empty or whitespace-only (no tokens)"
    if unk_token_id is not None and bool(np.all(tok.input_ids[~tok.special_tokens_mask] == unk_token_id)):
        return (f"nothing the model can read: all {tok.n_content} content token(s) are the tokenizer's unknown "
                "token (a word over its length limit, or characters outside its vocabulary)")
    return ""


def _split_failed(doc: Document, err: Exception) -> Skipped:
    log.warning("document %r skipped: %s: %s", doc.doc_id, type(err).__name__, err)
    return Skipped(doc.doc_id, f"chunking failed: {type(err).__name__}: {err}")


def presegment_for(strats: Sequence[Strategy], pairs: Sequence[tuple[Document, Tokenization]],
                   segmenter: SentenceSegmenter) -> dict | None:
    """Segment ahead the sentences ``strats`` will read in these documents (one pass shared by all of them).

    Args:
        strats: The strategies of the run.
        pairs: ``(document, tokenization)`` pairs.
        segmenter: The run's segmenter (its cache then serves every strategy's split).

    Returns:
        What :meth:`SentenceSegmenter.presegment` returns, or None when no strategy reads sentences. The
        paragraphs are those of :meth:`Strategy.sentence_paragraphs` (the least demanding hint wins).
    """
    hints = [h for h in (s.sentence_paragraphs() for s in strats) if h is not None]
    if not hints:
        return None
    return segmenter.presegment([d.text for d, _ in pairs], min(hints),
                                [t.offsets[t.content_start : t.content_end, 0] for _, t in pairs])


def text_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (its length when ASCII, without encoding it): the unit of progress.

    Args:
        text: A document text.

    Returns:
        Its UTF-8 length in bytes (lone surrogates count 3 bytes each).
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _TextMeter:
    """A group's progress in bytes of document text, reported to ``callback`` as forward batches finish (a
    document in several macro windows advances window by window); a group's reports add up to the text bytes
    of its documents, embedded or not (:meth:`finish`)."""

    def __init__(self, callback: Callable[[int], None] | None, items: Sequence[Document | Skipped]) -> None:
        self.callback = callback
        self.total = sum(text_bytes(x.text) for x in items if isinstance(x, Document)) if callback else 0
        self.done = 0.0
        self.reported = 0
        self.per_token: list[float] = []

    def start_pass(self, docs: Sequence[Document], toks: Sequence[Tokenization]) -> None:
        if self.callback is not None:
            self.per_token = [text_bytes(d.text) / max(len(t), 1) for d, t in zip(docs, toks)]

    def encoded(self, blocks) -> None:
        if self.callback is None:
            return
        self.done += sum(self.per_token[b.doc] * b.n for b in blocks)
        self._report(min(int(self.done), self.total))

    def finish(self) -> None:
        if self.callback is not None:
            self._report(self.total)

    def _report(self, upto: int) -> None:
        if upto > self.reported:
            self.callback(upto - self.reported)  # type: ignore[misc]
            self.reported = upto
