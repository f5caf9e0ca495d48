"""Streaming and resume: the input items through :func:`latechunk.pipeline.iter_embed`, one shard per group.

Each :class:`~latechunk.pipeline.GroupResult` carries its input positions (``start``, ``items``), so a shard's
input range and the running digest of the input items (:func:`chain`) come straight from it. ``--resume`` skips
the items the complete shards consumed (:func:`skip_consumed`, checked against that digest) and starts the
pipeline at the next item: groups are formed from token counts alone and a group's budget restarts at every
group boundary, so the resumed run forms the same groups, forward batches and vectors as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from latechunk.alarms import source_type
from latechunk.config import EmbedConfig
from latechunk.console import visible
from latechunk.dedup import NearDuplicateFilter
from latechunk.ingest.files import sha256_text
from latechunk.ingest.shards import write_shard
from latechunk.io import count_input_bytes, count_inputs
from latechunk.output import OutputFolder
from latechunk.pipeline import GroupResult, iter_embed
from latechunk.pipeline import text_bytes as utf8_bytes
from latechunk.types import Boundaries, Document, Skipped

__all__ = ["DedupState", "ShardInput", "chain", "progress_counts", "shard_stats", "skip_consumed", "stream", "write_group"]


def chain(digest: str, item: Document | Skipped) -> str:
    """Running digest of the consumed input items: ``sha256(prev | type | doc_id | text sha256 or reason)``
    (``type`` is ``D`` for a document, ``S`` for a skipped item, whose source is hashed too).

    Args:
        digest: The digest before ``item`` (``""`` before the first item).
        item: The next input item.

    Returns:
        The digest after ``item`` (sha256 hex).
    """
    document = getattr(item, "document", None)  # a reused document (embed --reuse) counts as the document
    if document is not None:
        item = document
    if isinstance(item, Document):
        part = f"D\0{item.doc_id}\0{sha256_text(item.text)}"
    else:
        part = f"S\0{item.doc_id}\0{item.reason}\0{item.source}"
    return hashlib.sha256(f"{digest}\0{part}".encode()).hexdigest()


def skip_consumed(items: Iterator, consumed: int, expected_digest: str, records: list[dict] | None = None,
                  text_bytes: list[int] | None = None) -> str:
    """Read the first ``consumed`` input items (those the kept shards consumed) and check their digest.

    Args:
        items: The input stream (advanced by ``consumed`` items).
        consumed: Items to skip.
        expected_digest: The last kept shard's ``inputs_digest`` (``""`` when ``consumed == 0``).
        records: The kept shard records (``inputs`` ``[start, end)``, ``inputs_digest``), when known: the digest
            is then checked at the end of each, so the error names the first shard whose items differ and the
            documents it now reads there.
        text_bytes: When given, a one-element list that gets the UTF-8 bytes of the consumed documents' text
            added (where a resumed run's progress bar starts, :func:`stream`'s ``bar_bytes``).

    Returns:
        The running digest after them.

    Raises:
        ValueError: if the inputs now hold fewer items, or other ones ("the inputs changed", naming the items).
    """
    at = {int(r["inputs"][1]): (k, int(r["inputs"][0]), r["inputs_digest"], r) for k, r in enumerate(records or [])
          if r.get("inputs") and r.get("inputs_digest")}
    digest, first = "", []  # first: the items read since the last shard end (for the error)
    for i in range(consumed):
        try:
            item = next(items)
        except StopIteration:
            raise ValueError(f"--resume: the inputs now hold {i} items, but the interrupted run had consumed "
                             f"{consumed}; pass --force to start over") from None
        digest = chain(digest, item)
        if text_bytes is not None and isinstance(item, Document):
            text_bytes[0] += utf8_bytes(item.text)
        if records is not None:
            first.append(item)
        if i + 1 in at:
            k, start, want, rec = at[i + 1]
            if digest != want:
                raise ValueError(f"--resume: the inputs changed since the interrupted run: shard {k} consumed input "
                                 f"items {start}-{i}, and they now differ ({_what_changed(first, rec)}); pass "
                                 "--force to start over")
            first = []
    if digest != expected_digest:
        raise ValueError("--resume: the inputs changed since the interrupted run (the items it consumed differ); "
                         "pass --force to start over")
    return digest


def _what_changed(items: list, record: dict) -> str:
    """Which of a shard's input items differ from what its record says it consumed: the first document whose text
    changed, that is new there, or that is gone (the record lists each document's text sha256 and each skipped
    item's reason); else the first items read there now."""
    was = {str(d["doc_id"]): ("D", d.get("sha256", "")) for d in record.get("documents", [])}
    was.update({str(x["doc_id"]): ("S", x.get("reason", "")) for x in record.get("skipped", [])})
    for item in items:
        doc_id = str(item.doc_id)
        now = ("D", sha256_text(item.text)) if isinstance(item, Document) else ("S", item.reason)
        if doc_id not in was:
            return f"{visible(doc_id)} is new there"
        if was[doc_id] != now:
            if was[doc_id][0] == now[0] == "D":
                return f"the text of {visible(doc_id)} changed"
            return f"{visible(doc_id)} was {'embedded' if was[doc_id][0] == 'D' else 'skipped'} and is now " + (
                "embedded" if now[0] == "D" else f"skipped: {now[1]}")
    gone = [d for d in was if d not in {str(x.doc_id) for x in items}]
    if gone:
        return f"{visible(gone[0])} is no longer there"
    shown = ", ".join(visible(str(x.doc_id)) for x in items[:3]) + (", ..." if len(items) > 3 else "")
    return f"read there now: {shown}: a document was added or removed before them"


@dataclass(frozen=True)
class ShardInput:
    """What one shard is made of.

    Attributes:
        k: Shard number.
        start / end: Input items ``[start, end)`` it covers (positions in the whole input stream).
        digest: Running digest of the input items up to ``end``.
        group: The pipeline group (``None`` for the one empty shard of a run without input items).
        skipped: Its skipped items as records ``{"doc_id", "reason", "source"}``, in input order.
    """

    k: int
    start: int
    end: int
    digest: str
    group: GroupResult | None
    skipped: list[dict]

    @property
    def inputs(self) -> tuple[int, int]:
        """``(start, end)``."""
        return self.start, self.end


def _skipped_records(g: GroupResult) -> list[dict]:
    """The group's skipped items as records, in input order; a document the pipeline skipped takes its source
    from the document's metadata. A reused document (``embed --reuse``: passed through as an item not to encode,
    :class:`~latechunk.ingest.reuse.Reused`) is not a skip and has no record."""
    embedded = {id(d) for d in g.documents}
    out, j = [], 0
    for item in g.items:
        if isinstance(item, Document) and id(item) in embedded:
            continue
        if j >= len(g.skipped) or g.skipped[j].doc_id != item.doc_id:
            raise RuntimeError(f"pipeline group {g.index}: skipped items do not follow the input order at "
                               f"{item.doc_id!r}")
        s = g.skipped[j]
        j += 1
        if getattr(item, "document", None) is not None:  # reused: written among the documents (write_group)
            continue
        source = item.source if isinstance(item, Skipped) else str(item.metadata.get("source", ""))
        out.append({"doc_id": s.doc_id, "reason": s.reason, "source": s.source or source})
    if j != len(g.skipped):
        raise RuntimeError(f"pipeline group {g.index}: {len(g.skipped) - j} skipped items are not among its inputs")
    return out


def shard_stats(g: GroupResult | None, mode: str) -> dict:
    """A shard record's ``stats``: ``{"content_tokens", "tokens_encoded", "forward_calls", "seconds"}`` of the
    run's ``mode`` (tokens through the encoder, forward calls, wall seconds per pipeline stage).

    Args:
        g: The shard's group; None for the one empty shard of a run without input items (all zero).
        mode: ``"late"``, ``"naive"``, ``"contextual"`` or ``"fused"`` (counted as its late pass plus its naive
            encodes).

    Returns:
        The stats dict (counts in tokens and calls, ``seconds`` per stage).
    """
    if g is None:
        return {"content_tokens": 0, "tokens_encoded": 0, "forward_calls": 0, "seconds": {}}
    s = g.stats
    parts = ("late", "naive") if mode == "fused" else (mode,)
    return {"content_tokens": s.content_tokens, "tokens_encoded": sum(s.tokens.get(m, 0) for m in parts),
            "forward_calls": sum(s.forward_calls.get(m, 0) for m in parts), "seconds": dict(s.seconds)}


class DedupState:
    """``embed --dedup``: the kept chunks of the run so far (:class:`~latechunk.dedup.NearDuplicateFilter`) and,
    per kept chunk (= vector id), its ``(doc_id, chunk_index)`` for the records of the chunks it makes drop.

    Args:
        dim: Vector dimension.
        threshold: The run's cosine threshold (``0 < t <= 1``).

    Raises:
        ValueError: on a threshold outside ``(0, 1]``.
    """

    def __init__(self, dim: int, threshold: float) -> None:
        self.filter = NearDuplicateFilter(dim, threshold)
        self.labels: list[tuple[str, int]] = []

    @classmethod
    def from_shards(cls, folder: OutputFolder, records: Sequence[dict], dim: int, threshold: float) -> DedupState:
        """The kept set of the shards already written (``--resume``, ``--append``): their vectors and rows, in
        order (they hold only kept chunks).

        Args:
            folder: The output folder.
            records: The shard records kept, shard 0 first.
            dim: Vector dimension.
            threshold: The run's cosine threshold.

        Returns:
            The state, its ids continuing the shards' vector ids.

        Raises:
            ValueError: if a shard's files do not read back.
        """
        state = cls(dim, threshold)
        for rec in records:
            if not rec.get("rows"):
                continue
            state.filter.add_kept(folder.read_shard_vectors(rec["name"]))
            cols = folder.read_shard_table(rec["name"]).select(["doc_id", "chunk_index"]).to_pydict()
            state.labels.extend(zip(cols["doc_id"], cols["chunk_index"]))
        if len(state.labels) != state.filter.ntotal:
            raise ValueError(f"{folder.path}: the shards hold {state.filter.ntotal} vectors but "
                             f"{len(state.labels)} chunk rows; run `latechunk verify {folder.path}`")
        return state


def _subset(b: Boundaries, keep: np.ndarray) -> Boundaries:
    """The chunks of ``b`` where ``keep`` is True (their rows are numbered 0.. again in the chunk table)."""
    idx = np.flatnonzero(keep)
    return dataclasses.replace(b, token_spans=b.token_spans[idx], char_spans=b.char_spans[idx],
                               heading_paths=tuple(b.heading_paths[i] for i in idx),
                               contexts=tuple(b.contexts[i] for i in idx))


def _dedup_group(docs: Sequence[Document], bounds: Sequence[Boundaries], vecs: np.ndarray, state: DedupState
                 ) -> tuple[list[Boundaries], np.ndarray, list[int], list[dict], list[int]]:
    """Drop the group's near-duplicate chunks before its shard is written: ``(kept boundaries per document,
    kept vectors, chunks dropped per document, dropped-chunk records, non-whitespace characters per document that
    only chunks dropped as like one of the document's own hold, each counted once)``."""
    decision = state.filter.filter(vecs)
    kept_b, n_dropped, dropped, lost = [], [], [], []
    row = 0
    for doc, b in zip(docs, bounds):
        n = len(b)
        keep = decision.keep[row:row + n]
        n_kept = 0
        for i in range(n):
            r = row + i
            if keep[i]:
                state.labels.append((doc.doc_id, n_kept))
                n_kept += 1
                continue
            vid = int(decision.duplicate_of[r])
            (cs, ce), (ts, te) = b.char_spans[i].tolist(), b.token_spans[i].tolist()
            kept_doc, kept_chunk = state.labels[vid]
            dropped.append({"doc_id": doc.doc_id, "chunk": i, "char_start": cs, "char_end": ce, "token_start": ts,
                            "token_end": te, "cosine": round(float(decision.cosine[r]), 6),
                            "duplicate_of": {"vector_id": vid, "doc_id": kept_doc, "chunk_index": int(kept_chunk)}})
        lost.append(0 if keep.all() else _mark_uncovered(doc.text, b.char_spans[keep],
                                                         [d for d in dropped if d["doc_id"] == doc.doc_id]))
        kept_b.append(_subset(b, keep) if not keep.all() else b)
        n_dropped.append(n - n_kept)
        row += n
    return kept_b, np.ascontiguousarray(vecs[decision.keep]), n_dropped, dropped, lost


def _mark_uncovered(text: str, kept_spans: np.ndarray, records: list[dict]) -> int:
    """Add ``uncovered_chars`` to each dropped-chunk record of one document: its non-whitespace characters that no
    kept chunk of the document holds (overlapping chunks' late vectors are alike, so a dropped chunk can carry
    text of its own; 0 when the kept chunks hold all of it). Records already marked keep their count.

    Returns:
        The document's non-whitespace characters that no kept chunk holds but a chunk dropped as like one of the
        document's own does, each counted once (dropped chunks overlap, so their counts do not add up to it).
    """
    covered = np.zeros(len(text) + 1, dtype=np.int32)
    for a, b in np.asarray(kept_spans).tolist():
        covered[a] += 1
        covered[b] -= 1
    held = np.cumsum(covered)[: len(text)] > 0
    lost = np.zeros(len(text), dtype=bool)
    for d in records:
        a, b = d["char_start"], d["char_end"]
        if "uncovered_chars" not in d:
            d["uncovered_chars"] = sum(1 for i in np.flatnonzero(~held[a:b]).tolist() if not text[a + i].isspace())
        if d["duplicate_of"]["doc_id"] == d["doc_id"]:
            lost[a:b] = True
    return sum(1 for i in np.flatnonzero(lost & ~held).tolist() if not text[i].isspace())


def write_group(folder: OutputFolder, config: EmbedConfig, dim: int, shard: ShardInput,
                dedup: DedupState | None = None, reuse=None) -> dict:
    """Write ``shard`` (a selected group, or the empty shard) as shard ``shard.k``.

    Each document's record gets ``source_type`` (:func:`latechunk.alarms.source_type`) and ``tokens`` (content
    tokens), the per-document rows that :func:`latechunk.alarms.parse_alarms` reads at assembly, and
    ``unknown_chars`` (characters read as the tokenizer's unknown token: the manifest's ``unknown_tokens``).

    With ``dedup`` (``embed --dedup``), the group's chunks are decided in order against the kept set
    (:mod:`latechunk.dedup`) *before* the shard is written: a dropped chunk has no row and no vector, its
    document's record says how many were ``dropped`` (``chunks`` counts the rows; the kept rows of a document are
    numbered 0, 1, ... again), and the record's ``dedup`` lists each dropped chunk: ``doc_id``, ``chunk`` (its
    index among the strategy's chunks of the document), ``char_start``/``char_end`` (characters),
    ``token_start``/``token_end`` (tokens), ``cosine`` and ``duplicate_of`` (``vector_id``, ``doc_id``,
    ``chunk_index`` of the kept chunk: its row in chunks.parquet).

    Args:
        folder: The output folder.
        config: The run (its one strategy and mode pick the group's boundaries and vectors).
        dim: Vector dimension (for the (0, dim) vectors of an empty shard).
        shard: The shard's group, positions and digest.
        dedup: The run's kept set (``--dedup``), updated with this shard's kept chunks; None: no dedup.
        reuse: ``embed --reuse``: the :class:`~latechunk.ingest.reuse.ReuseStore` whose documents the group
            passed through unencoded, put back in their places here; None: none.

    Returns:
        The shard record (:func:`~latechunk.ingest.shards.write_shard`).

    Raises:
        RuntimeError: if the group's vectors and chunk rows differ in number (a bug).
        OSError: if a shard file cannot be written.
    """
    spec, g = config.strategy.spec, shard.group
    docs, bounds, vecs = (g.documents, g.boundaries.get(spec, []), g.vectors.get(spec, {}).get(config.mode)) \
        if g is not None else ([], [], None)
    if vecs is None:
        vecs = np.zeros((0, dim), np.float32)
    toks = g.tokenizations if g is not None else []
    extra = [{"source_type": source_type(d.doc_id, str(d.metadata.get("source", ""))),
              "tokens": int(t.n_content)} for d, t in zip(docs, toks)]
    if len(extra) != len(docs):  # no tokenizations (not expected for a selected group): no alarm rows
        extra = [{} for _ in docs]
    unknown = g.unknown_chars if g is not None else []
    if len(unknown) == len(docs):
        for e, n in zip(extra, unknown):
            e["unknown_chars"] = int(n)
    if reuse is not None and g is not None and g.selected:
        docs, bounds, vecs, extra = reuse.merge(g.items, docs, bounds, vecs, extra)
    dropped = None
    if dedup is not None:
        n_rows = sum(len(b) for b in bounds)
        if vecs.shape[0] != n_rows:
            raise RuntimeError(f"shard {folder.shard_name(shard.k)}: {vecs.shape[0]} vectors for {n_rows} chunks")
        bounds, vecs, n_dropped, dropped, lost = _dedup_group(docs, bounds, vecs, dedup)
        for e, n, u in zip(extra, n_dropped, lost):
            e["dropped"] = n
            if u:  # characters of the document no kept chunk holds, each counted once
                e["uncovered_chars"] = u
    return write_shard(folder, shard.k, shard.inputs, shard.digest, docs, bounds, vecs, shard.skipped, spec,
                       shard_stats(g, config.mode), doc_extra=extra, dedup=dropped)


def progress_counts(embedded: int, skipped: int, reused: int, done: int, total: int, *,
                    done_as: str = "embedded") -> str:
    """The progress bar's postfix: the input items done, embedded and skipped counted apart (a trial read "items
    written 17/17" where 14 were embedded and 3 skipped), e.g. ``"14 embedded, 3 skipped (17/17 items)"``;
    documents taken unchanged from ``embed --reuse``'s folder are counted as ``reused`` when there are any.
    ``latechunk chunk``'s bar says ``"14 chunked, 3 skipped (17/17 items)"`` (``done_as="chunked"``).

    Args:
        embedded: Items embedded (encoded; ``chunk``: chunked) so far.
        skipped: Items skipped so far (the manifest's ``skipped`` list has them all, with their reasons).
        reused: Documents taken from ``--reuse``'s folder so far.
        done: Input items consumed so far (``embedded + skipped + reused``).
        total: Input items in all (counted ahead).
        done_as: The word for the items done: ``"embedded"``, or ``"chunked"`` for ``latechunk chunk``.

    Returns:
        The postfix text.
    """
    parts = [f"{embedded:,} {done_as}", *([f"{reused:,} reused"] if reused else []), f"{skipped:,} skipped"]
    return f"{', '.join(parts)} ({done:,}/{total:,} items)"


def stream(config: EmbedConfig, encoder, items: Iterator, start: int, digest: str, k0: int,
           select: Callable[[int], bool] | None, on_shard: Callable[[ShardInput], None],
           progress: bool = False, bar_start: int | None = None,
           bar_bytes: int | None = None, bar_skipped: int = 0) -> tuple[int, int, str]:
    """Run the pipeline over ``items`` and hand each group to ``on_shard`` as shard ``k0, k0 + 1, ...``.

    Args:
        config: The run.
        encoder: The encoder.
        items: The input items from position ``start`` on.
        start: Position of the first of ``items`` in the whole input stream.
        digest: Running digest of the items before ``start``.
        k0: Number of the first shard.
        select: ``select(k)`` picks the shards to chunk and encode (default all); the others arrive as light
            groups (``group.selected`` False), whose positions and digest still count.
        on_shard: Called once per shard, in order.
        progress: Show a progress bar (on stderr, when it is a terminal) in bytes of document text (UTF-8),
            with its rate and time left: its total is counted ahead from the input files' sizes
            (:func:`~latechunk.io.count_input_bytes`), and it moves as each forward batch of the late pass finishes (one long document advances macro window
            by macro window; many small ones batch by batch) and as each group ends (naive mode, skipped
            items, other ranks' groups); its total never shrinks: the bar ends full when the bytes read were
            fewer than counted ahead (skipped files, JSONL syntax). Its postfix counts the input items done
            (counted ahead, :func:`~latechunk.io.count_inputs`), the embedded and the skipped ones apart
            (:func:`progress_counts`).
        bar_start: Items of ``config.inputs`` consumed before ``items`` (for the progress bar); default ``start``
            (a resumed run). An append gives 0: its inputs start at ``items`` while ``start`` counts the
            folder's earlier items.
        bar_bytes: UTF-8 bytes of document text in those consumed items (a resumed run, as
            :func:`skip_consumed` counts them), where the bar starts; default: estimated from their number.
        bar_skipped: How many of those consumed items were skipped (the kept shards' ``skipped`` records), so
            the bar's counts start right.

    Returns:
        ``(shards, items consumed, digest after them)``; ``shards`` counts from 0 (i.e. ``k0`` + new ones).
        A run without any input item gets one empty shard.

    Raises:
        ValueError: as :func:`~latechunk.pipeline.iter_embed` (a macro window that does not fit the model).
        RuntimeError: if a pipeline group arrives out of order or its skipped items do not follow the input
            order (a bug).
    """
    k, pos = k0, start
    bar, n_items = None, 0
    before = start if bar_start is None else bar_start  # items of config.inputs consumed before ``items``
    if progress:
        from tqdm.auto import tqdm

        n_items = max(count_inputs(config.inputs, config.fields), before)
        total = count_input_bytes(config.inputs, config.fields)
        # a resumed run: the consumed items' share of the bytes, estimated by their number
        initial = bar_bytes if bar_bytes is not None else total * before // n_items if n_items else 0
        total = max(total, initial)
        # on stderr when it is a terminal only (disable=None): redirected to a file, the summary lines stay readable
        bar = tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc="embed", file=sys.stderr,
                   disable=None)
        bar.set_postfix_str(progress_counts(before - bar_skipped, bar_skipped, 0, before, n_items), refresh=False)
    n_skipped, n_reused = bar_skipped, 0
    groups = iter_embed(items, encoder, config.pipeline,
                        select_group=None if select is None else (lambda i: select(k0 + i)),
                        on_text_bytes=None if bar is None else bar.update)
    try:
        with contextlib.closing(groups):  # on an error, stop the prefetch thread before it propagates
            for g in groups:
                if k0 + g.index != k or start + g.start != pos:
                    raise RuntimeError(f"pipeline group {g.index} (input items from {start + g.start}) arrived "
                                       f"where group {k - k0} (from {pos}) was expected")
                for item in g.items:
                    digest = chain(digest, item)
                end = pos + len(g.items)
                on_shard(ShardInput(k, pos, end, digest, g, _skipped_records(g) if g.selected else []))
                if bar is not None:  # reused documents (embed --reuse) passed the encoder by: their bytes are done too
                    bar.update(sum(len(d.text.encode("utf-8")) for i in g.items
                                   if (d := getattr(i, "document", None)) is not None))
                    reused = sum(1 for i in g.items if getattr(i, "document", None) is not None)
                    n_skipped += len(g.skipped) - reused  # a reused document passes the pipeline as a skip
                    n_reused += reused
                    done = end - start + before
                    bar.set_postfix_str(progress_counts(done - n_skipped - n_reused, n_skipped, n_reused, done,
                                                        max(n_items, done)), refresh=False)
                    bar.refresh()
                k, pos = k + 1, end
        if bar is not None and bar.n != bar.total:  # the total was an estimate, and the run is complete
            if bar.n < bar.total:  # what the text of the items read gave less (skipped files, JSONL syntax): the
                bar.update(bar.total - bar.n)  # bar ends full, its total as found (it shrank at the end)
            else:  # more text than counted ahead (a file grew): the total grows to it
                bar.total = bar.n
            bar.refresh()
    finally:
        if bar is not None:
            bar.close()
    if k == 0:  # no input items at all: one empty shard, so the output has one
        on_shard(ShardInput(0, pos, pos, digest, None, []))
        k += 1
    return k, pos, digest
