r"""Indexing unit vs context unit: each search hit widened to the context a generator should read (issue 12, item 6).

A chunk is the unit that is indexed: small enough for its vector to mean one thing. What a generator should
read around it is larger: its heading section, a few neighbouring chunks, or the whole document (seed 000 of the
design notes: retrieve small, read large; dedup retrieved chunks by source offsets). ``latechunk search
--expand`` and :meth:`latechunk.api.Index.search` take one of:

- ``section``: the maximal run of consecutive chunks of the hit's document whose heading path equals the hit's
  (from the chunk table's ``heading_path``, not a second parse of the document: the heading strategy's chunks of
  one section are such a run; a strategy that records no headings, or a document without any, is one section,
  so ``section`` gives the document there);
- ``neighbors:N``: the hit's chunk and up to N chunks on each side within its document (``neighbors:0``: the
  chunk alone);
- ``document``: every chunk of the document.

Everything is built from the chunk table, never from the sources (they may have moved; a JSONL corpus would be
read again): a document's rows are consecutive in the table, ordered by ``chunk_index``, so the rows around a
hit's vector id are read and nothing else. The context's text is reassembled from the chunks' exact slices,
overlap-aware: char spans are merged, so text shared by overlapping chunks appears once. Between two chunks that
do not touch, the document holds characters no chunk kept (whitespace with latechunk's strategies); they are not
stored, so a one-character gap is filled with ``"\n"`` and a longer one with ``"\n\n"`` (a line break never
joins a heading to the line before it; where the document had a space, the context has a line break). The context's
``spans`` (the merged char spans, document offsets) say exactly which characters are the document's own.

Hits of one document whose contexts overlap or touch (their chunk ranges overlap or are adjacent) are merged into
one context: its score is the best of its hits, its ``hits`` lists every hit it holds (best first), and contexts
come best first. So two adjacent hits with ``neighbors:1`` give one context, and a generator never reads the same
characters twice.

Tests: ``tests/test_contexts.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["EXPANSIONS", "expand_hits", "parse_expand"]

#: what ``--expand`` takes (``neighbors`` with ``:N``)
EXPANSIONS = ("section", "neighbors:N", "document")
#: rows read per step while looking for the end of a document in the chunk table
_BLOCK = 256
_COLUMNS = ("doc_id", "chunk_index", "char_start", "char_end", "heading_path", "text")


def parse_expand(value: str, name: str = "--expand") -> tuple[str, int]:
    """An ``--expand`` value, checked.

    Args:
        value: ``"section"``, ``"document"`` or ``"neighbors:N"`` with N an integer >= 0 (``"neighbors"`` alone:
            N = 1).
        name: How the caller's option is named in an error (``--expand``; ``expand=`` for Python callers).

    Returns:
        ``(kind, n)``: ``("section", 0)``, ``("document", 0)`` or ``("neighbors", N)``.

    Raises:
        ValueError: naming the value and what is accepted.
    """
    v = str(value).strip().lower()
    kind, sep, arg = v.partition(":")
    if kind in ("section", "document") and not sep:
        return kind, 0
    if kind == "neighbors":
        if not sep:
            return kind, 1
        if arg.isdigit():
            return kind, int(arg)
        raise ValueError(f"{name} {value!r}: N in neighbors:N must be an integer >= 0 (chunks on each side)")
    raise ValueError(f"{name} {value!r} is not one of section, neighbors:N, document")


def _doc_rows(table, row: int, chunk_index: int, doc_id: str, upto: int | None) -> list[dict]:
    """The rows of one document from its first chunk on (``row - chunk_index``), to its last, or to chunk
    ``upto`` (inclusive) when given; read in blocks, stopping where ``doc_id`` changes."""
    first = row - chunk_index
    if first < 0:
        raise ValueError(f"chunk table row {row} ({doc_id!r}, chunk {chunk_index}) does not follow its document's "
                         "first chunk (not a latechunk chunk table?)")
    rows: list[dict] = []
    pos = first
    while pos < table.num_rows:
        n = _BLOCK if upto is None else min(_BLOCK, upto + 1 - len(rows))
        if n <= 0:
            break
        block = table.slice(pos, n).select(list(_COLUMNS)).to_pylist()
        for r in block:
            if r["doc_id"] != doc_id:
                return rows
            rows.append(r)
        pos += len(block)
    return rows


def _filler(gap: int) -> str:
    return "\n" if gap == 1 else "\n\n"


def _assemble(rows: Sequence[Mapping]) -> tuple[str, list[list[int]]]:
    """The text of consecutive chunk rows with char spans merged, and the merged spans (document offsets)."""
    parts: list[str] = []
    spans: list[list[int]] = []
    end = None
    for r in rows:
        cs, ce, text = int(r["char_start"]), int(r["char_end"]), r["text"]
        if end is None or cs > end:
            if end is not None:
                parts.append(_filler(cs - end))
            parts.append(text)
            spans.append([cs, ce])
            end = ce
        elif ce > end:  # overlaps (or touches) the text so far: only its new characters
            parts.append(text[end - cs:])
            spans[-1][1] = ce
            end = ce
    return "".join(parts), spans


def expand_hits(table, hits: Sequence[Mapping], expand: str) -> list[dict]:
    """Search hits widened to their contexts, merged per document where they overlap or touch, best first.

    Args:
        table: The chunk table (``pyarrow.Table``; row i = vector id i; a document's rows consecutive, in chunk
            order, as ``chunks.parquet`` is written). Only the rows of the hits' documents near the hits are read.
        hits: The hits, each a mapping with at least ``vector_id`` (int: the row), ``score`` (float), ``doc_id``
            and ``chunk_index`` (:func:`latechunk.output.search_records`' records, or :class:`latechunk.api.Hit`
            as a dict), in any order.
        expand: ``"section"``, ``"neighbors:N"`` or ``"document"`` (:func:`parse_expand`).

    Returns:
        One dict per context, best score first: ``rank`` (1-based), ``score`` (the best of its hits),
        ``doc_id``, ``expand`` (as parsed: ``"neighbors:1"``), ``chunk_start``, ``chunk_end`` (chunk indices,
        half-open), ``char_start``, ``char_end`` (characters, half-open: from the first chunk's start to the last
        one's end), ``spans`` (the merged char spans ``[[start, end], ...]`` whose characters the text holds
        verbatim; between two spans the text holds a filler, module doc), ``text``, ``section`` (the best hit's
        heading path as text, :func:`latechunk.output.section_text`), the document's ``title``, ``source`` and
        ``url`` where the hits carry them, and ``hits``: the hit mappings it holds, as given, best first.

    Raises:
        ValueError: on a bad ``expand``, or a hit whose row disagrees with the table (another table's hits).
    """
    from latechunk.output import section_text

    kind, n = parse_expand(expand)
    label = f"neighbors:{n}" if kind == "neighbors" else kind
    docs: dict[str, list[dict]] = {}
    ranges: dict[str, list[tuple[int, int, Mapping]]] = {}
    for h in hits:
        row, ci, doc_id = int(h["vector_id"]), int(h["chunk_index"]), h["doc_id"]
        if not 0 <= row < table.num_rows or table.slice(row, 1).column("doc_id")[0].as_py() != doc_id:
            raise ValueError(f"hit {doc_id!r} chunk {ci} (vector id {row}) is not row {row} of this chunk table")
        cached = docs.get(doc_id)
        if kind == "neighbors" and (cached is None or len(cached) <= ci + n):
            cached = docs[doc_id] = _doc_rows(table, row, ci, doc_id, upto=ci + n)
        elif kind != "neighbors" and cached is None:
            cached = docs[doc_id] = _doc_rows(table, row, ci, doc_id, upto=None)
        if kind == "neighbors":
            lo, hi = max(0, ci - n), min(len(cached), ci + n + 1)
        elif kind == "document":
            lo, hi = 0, len(cached)
        else:
            path = cached[ci]["heading_path"] or []
            lo = ci
            while lo > 0 and (cached[lo - 1]["heading_path"] or []) == path:
                lo -= 1
            hi = ci + 1
            while hi < len(cached) and (cached[hi]["heading_path"] or []) == path:
                hi += 1
        ranges.setdefault(doc_id, []).append((lo, hi, h))
    contexts: list[dict] = []
    for doc_id, rs in ranges.items():
        rs.sort(key=lambda t: (t[0], t[1]))
        groups: list[list] = []
        for lo, hi, h in rs:
            if groups and lo <= groups[-1][1]:  # overlapping or adjacent chunk ranges: one context
                groups[-1][1] = max(groups[-1][1], hi)
                groups[-1][2].append(h)
            else:
                groups.append([lo, hi, [h]])
        for lo, hi, held in groups:
            held.sort(key=lambda h: -float(h["score"]))
            rows = docs[doc_id][lo:hi]
            text, spans = _assemble(rows)
            best = held[0]
            contexts.append({"score": float(best["score"]), "doc_id": doc_id, "expand": label, "chunk_start": lo,
                             "chunk_end": hi, "char_start": spans[0][0], "char_end": spans[-1][1], "spans": spans,
                             "text": text, "section": section_text(docs[doc_id][int(best["chunk_index"])]["heading_path"]),
                             **{key: best[key] for key in ("title", "source", "url") if key in best},
                             "hits": held})
    contexts.sort(key=lambda c: -c["score"])
    return [{"rank": i, **c} for i, c in enumerate(contexts, 1)]
