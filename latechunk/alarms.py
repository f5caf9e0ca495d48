"""Parse-quality alarms: a chunk count far outside the corpus's own spread is a parser alarm, not a result.

Chunking quality is bounded by parse quality: text whose two columns a PDF extractor read across, line by line,
alternates between two unrelated arguments, and a splitter that cuts where the subject changes cuts it far more
often than the rest of the corpus. Such a jump in *chunks per 1,000 tokens* is visible before any retrieval
metric is computed. :func:`parse_alarms` flags the documents (and source types) whose density is far from that
of their peers.

The rule (defaults in brackets; all in :func:`parse_alarms`'s arguments):

1. Density ``d = 1000 * chunks / tokens`` per document; the rule reads ``x = ln d`` (a jump by a factor is a
   fixed step, up or down).
2. Reference group (leave-one-out: never the document itself), of documents of two or more chunks only (a
   one-chunk document's density is ``1000 / tokens``, set by its length, not by any split; short notes would
   otherwise pull the median up and flag every normal long document as under-split): the other such documents
   of its source type when, with the document itself, they are at least ``min_group`` [5], else all other
   such documents of the corpus (when they are that many); with fewer, no document alarm. Any document,
   one-chunk ones too, is compared with its group. In a group of more than :data:`LEAVE_ONE_OUT_EXACT` (2,000)
   documents the document's own value is left in (it moves the median by at most one rank), so the rule runs
   in O(n log n): 200,000 documents in under a second, where the exact leave-one-out took 9 s for 20,000.
3. Robust spread: ``sigma = max(1.4826 * MAD, sigma_floor)`` with ``MAD = median |x - median(x)|`` over the
   group (1.4826 makes the MAD a consistent estimate of a normal sigma: Rousseeuw & Croux 1993,
   "Alternatives to the Median Absolute Deviation", JASA 88(424)); ``sigma_floor`` [0.2] keeps a corpus of
   near-identical documents from flagging a difference that ordinary documents have: with ``k`` = 3.5 no
   document within ``exp(3.5 * 0.2)`` = 2.0x of its group's median density is flagged. Measured
   (``tests/test_alarms.py``): where the density follows sentence length (``sentence_window``, ``semantic``),
   clean prose documents differ by up to 1.6x (Chroma's five corpora under ``sentence_window``: 33.5-39.6
   chunks per 1,000 tokens, and 59.7 for ``state_of_the_union``'s short spoken sentences), while a two-column
   page read across its columns is 2.3x (``semantic``) to 4.3x (``sentence_window``) its peers. The earlier
   floor, 0.1, flagged ``state_of_the_union`` (robust z +4.5).
4. A document is flagged when its robust z ``(x - median) / sigma`` is beyond ``k`` [3.5: the modified
   z-score threshold of Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers", ASQC] *and* its chunk
   count differs from the count its group's median density predicts by at least ``min_chunks`` [3] (one chunk
   more in a short document is not a parser failure).
5. With two or more source types, a source type whose median density is at least ``source_ratio`` [10] times
   (or at most 1/``source_ratio`` of) the median density of all other documents raises a source-type alarm:
   the order-of-magnitude jump on one source format. With exactly two types the comparison is symmetric, so
   both are flagged (either parser may be at fault); with three or more, the odd one out. Only documents of two
   or more chunks count here: a one-chunk document's density is set by its length alone (1000 / tokens), so a
   source of short one-sentence records is not an over-splitting parser.

The density depends on the strategy: ``fixed`` makes about ``1000 / size`` chunks per 1,000 tokens on any text,
so it never alarms; ``semantic``, ``recursive`` and ``heading`` read the text's structure, and a broken parse
moves them. Run the rule over one strategy's counts at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["DocCount", "Alarm", "SourceDensity", "alarms_unchecked", "source_densities", "parse_alarms", "source_type"]


def source_type(doc_id: str, source: str) -> str:
    """A document's source type, the group :func:`parse_alarms` compares it with (what ``embed`` records).

    A file read as one document has its path as both id and source (:func:`latechunk.io.iter_inputs`); a JSONL
    line or a parquet/arrow row has its own id and a ``FILE:N`` source.

    Args:
        doc_id: The document's id.
        source: Its ``metadata["source"]`` (``""`` when unknown).

    Returns:
        ``"record"`` for a JSONL/parquet/arrow row (id differs from source, or no source); else the file's
        suffix without the dot, lowercased (``"md"``, ``"txt"``, ``"html"``, ``"py"``), or ``"file"`` for a
        file without one.
    """
    if not source or source != doc_id:
        return "record"
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, suffix = name.rpartition(".")
    return suffix.lower() if dot and stem and suffix else "file"

MAD_TO_SIGMA = 1.4826
"""``1 / Phi^-1(3/4)``: the MAD of a normal sample times this estimates its standard deviation."""


@dataclass(frozen=True)
class DocCount:
    """One document's counts under one strategy.

    Attributes:
        doc_id: The document.
        source: Its source type (a file format such as ``md``, ``pdf``, ``html``, or a collection): the group of
            documents expected to chunk alike.
        tokens: Content tokens of the document (> 0).
        chunks: Its chunks (> 0).
    """

    doc_id: str
    source: str
    tokens: int
    chunks: int

    @property
    def density(self) -> float:
        """Chunks per 1,000 tokens."""
        return 1000.0 * self.chunks / self.tokens


@dataclass(frozen=True)
class Alarm:
    """A document (or source type) whose chunk density is far outside its peers'.

    Attributes:
        level: ``"document"`` or ``"source"``.
        doc_id: The document (``""`` for a source-type alarm).
        source: The source type.
        tokens: Content tokens (of the document, or of all the source's documents).
        chunks: Chunks (likewise).
        density: Chunks per 1,000 tokens (the source's median for a source-type alarm).
        expected: The reference density: the median of the group it was compared with.
        reference: What it was compared with: ``"source:NAME"``, ``"corpus"`` or ``"other sources"``.
        z: Robust z of ``ln density`` (document alarms); None for a source-type alarm.
        message: One line for stderr and the manifest.
    """

    level: str
    doc_id: str
    source: str
    tokens: int
    chunks: int
    density: float
    expected: float
    reference: str
    z: float | None
    message: str

    @property
    def ratio(self) -> float:
        """``density / expected``."""
        return self.density / self.expected

    def to_dict(self) -> dict:
        """JSON-ready: every field, plus ``ratio``."""
        return {"level": self.level, "doc_id": self.doc_id, "source": self.source, "tokens": self.tokens,
                "chunks": self.chunks, "density": self.density, "expected": self.expected,
                "reference": self.reference, "z": self.z, "ratio": self.ratio, "message": self.message}


@dataclass(frozen=True)
class SourceDensity:
    """Chunk density of one source type.

    Attributes:
        source: The source type.
        documents: Its documents.
        tokens: Their content tokens.
        chunks: Their chunks.
        median: Median of the documents' densities (chunks per 1,000 tokens).
        sigma: Robust spread of ``ln density`` (``1.4826 * MAD``, before any floor).
    """

    source: str
    documents: int
    tokens: int
    chunks: int
    median: float
    sigma: float

    @property
    def density(self) -> float:
        """Pooled density: ``1000 * chunks / tokens``."""
        return 1000.0 * self.chunks / self.tokens

    def to_dict(self) -> dict:
        """JSON-ready: every field, plus the pooled ``density``."""
        return {"source": self.source, "documents": self.documents, "tokens": self.tokens, "chunks": self.chunks,
                "density": self.density, "median": self.median, "sigma": self.sigma}


def _rows(rows: Iterable) -> list[DocCount]:
    out = []
    for k, r in enumerate(rows):
        if isinstance(r, DocCount):
            dc = r
        elif isinstance(r, Mapping):
            try:
                dc = DocCount(str(r["doc_id"]), str(r["source"]), r["tokens"], r["chunks"])
            except KeyError as err:
                raise ValueError(f"parse_alarms: row {k} lacks {err} (needs doc_id, source, tokens, chunks)") from err
        else:
            try:
                doc_id, source, tokens, chunks = r
            except (TypeError, ValueError) as err:
                raise ValueError(f"parse_alarms: row {k} is not (doc_id, source, tokens, chunks): {r!r}") from err
            dc = DocCount(str(doc_id), str(source), tokens, chunks)
        for name in ("tokens", "chunks"):
            v = getattr(dc, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"parse_alarms: document {dc.doc_id!r}: {name} must be an int >= 1, got {v!r}")
        out.append(dc)
    return out


def _median_sigma(x: np.ndarray) -> tuple[float, float]:
    med = float(np.median(x))
    return med, MAD_TO_SIGMA * float(np.median(np.abs(x - med)))


def alarms_unchecked(rows: Iterable, *, min_group: int = 5) -> str:
    """Why :func:`parse_alarms` compared no document at all (so its empty list says nothing), or ``""``.

    A document needs a reference group of ``min_group`` documents with itself, counting only documents of two
    or more chunks (rule 2 of the module docstring); a corpus with fewer such documents is not checked.

    Args:
        rows: As for :func:`parse_alarms`.
        min_group: As for :func:`parse_alarms`.

    Returns:
        ``""`` when at least one document was compared, else one line saying why none was (for the manifest).

    Raises:
        ValueError: on a malformed row (as :func:`parse_alarms`).
    """
    docs = _rows(rows)
    n_split = sum(1 for d in docs if d.chunks >= 2)
    # a split document has n_split - 1 split peers, a one-chunk one n_split: each needs min_group - 1 of them
    if not docs or (n_split if n_split < len(docs) else n_split - 1) + 1 >= min_group:
        return ""
    return (f"not checked: {n_split} of {len(docs)} document(s) have two or more chunks; the rule compares a "
            f"document with at least {min_group - 1} such others")


def source_densities(rows: Iterable) -> dict[str, SourceDensity]:
    """Chunks per 1,000 tokens per source type.

    Args:
        rows: Per document ``(doc_id, source, tokens, chunks)`` tuples, mappings with those keys, or
            :class:`DocCount`.

    Returns:
        ``{source: SourceDensity}``, in order of first appearance.

    Raises:
        ValueError: on a malformed row, or tokens or chunks below 1.
    """
    docs = _rows(rows)
    out = {}
    for src in dict.fromkeys(d.source for d in docs):
        group = [d for d in docs if d.source == src]
        x = np.log([d.density for d in group])
        med, sigma = _median_sigma(x)
        out[src] = SourceDensity(src, len(group), sum(d.tokens for d in group), sum(d.chunks for d in group),
                                 math.exp(med), sigma)
    return out


#: groups of at most this many documents get exact leave-one-out statistics (O(n) per document); in a larger
#: group one document moves the median by at most one rank of thousands, so its own value is left in
LEAVE_ONE_OUT_EXACT = 2000


class _Reference:
    """A reference group's values of ``ln density`` (sorted), with the median and robust spread of the group
    without one of its members: exact up to :data:`LEAVE_ONE_OUT_EXACT` values, the whole group's beyond (so a
    corpus of a million documents is checked in O(n log n), not O(n^2))."""

    def __init__(self, values: np.ndarray):
        self.values = np.sort(np.asarray(values, dtype=np.float64))
        self.size = len(self.values)
        self._whole = _median_sigma(self.values) if self.size else (0.0, 0.0)

    def stats(self, member: float | None) -> tuple[float, float]:
        """``(median, 1.4826 * MAD)`` of the group, without one value equal to ``member`` (None: a document
        outside the group, which is compared with all of it)."""
        if member is None or self.size > LEAVE_ONE_OUT_EXACT:
            return self._whole
        j = int(np.searchsorted(self.values, member))
        return _median_sigma(np.delete(self.values, j))


def parse_alarms(rows: Iterable, *, k: float = 3.5, sigma_floor: float = 0.2, min_group: int = 5,
                 min_chunks: int = 3, source_ratio: float = 10.0) -> list[Alarm]:
    """Flag documents and source types whose chunks per 1,000 tokens are far outside the corpus's own spread.

    The rule is the module docstring's: robust z of ``ln(chunks per 1,000 tokens)`` against the document's
    source type (or the corpus), beyond ``k`` and at least ``min_chunks`` chunks off; and source types an
    order of magnitude (``source_ratio``) away from the rest.

    Args:
        rows: Per document ``(doc_id, source, tokens, chunks)`` under one strategy: tuples, mappings with those
            keys, or :class:`DocCount`. ``tokens``: content tokens; ``chunks``: that strategy's chunks.
        k: Robust-z threshold (> 0); 3.5 after Iglewicz & Hoaglin (1993).
        sigma_floor: Least spread of ``ln density`` (> 0 is advised; 0.2: no document within 2.0x of its
            group's median is flagged at ``k`` = 3.5; see the module docstring for the measurement).
        min_group: Fewest documents a group needs to be a reference (>= 3).
        min_chunks: Fewest chunks a flagged document is off from its group's median density (>= 0).
        source_ratio: Factor (> 1) between a source type's median density and the other documents' that
            raises a source-type alarm.

    Returns:
        The alarms: document alarms in input order, then source-type alarms; empty when all is well.

    Raises:
        ValueError: on a malformed row, tokens or chunks below 1, or a threshold out of range.
    """
    if not k > 0 or sigma_floor < 0 or min_group < 3 or min_chunks < 0 or not source_ratio > 1:
        raise ValueError(f"parse_alarms: needs k > 0, sigma_floor >= 0, min_group >= 3, min_chunks >= 0 and "
                         f"source_ratio > 1; got k={k}, sigma_floor={sigma_floor}, min_group={min_group}, "
                         f"min_chunks={min_chunks}, source_ratio={source_ratio}")
    docs = _rows(rows)
    if not docs:
        return []
    x = np.log([d.density for d in docs])
    sources = [d.source for d in docs]
    # a one-chunk document says nothing about splitting (its density is 1000 / its length): as a reference it
    # would pull the median up, so that many short notes flag every normal long document as under-split
    split = np.asarray([d.chunks >= 2 for d in docs])
    by_source: dict[str, list[int]] = {}
    for i, src in enumerate(sources):
        by_source.setdefault(src, []).append(i)
    corpus = _Reference(x[split])
    refs = {src: _Reference(x[[i for i in idx if split[i]]]) for src, idx in by_source.items()}
    alarms = []
    for i, d in enumerate(docs):
        # leave-one-out: the document is compared with its peers, never with itself
        own = refs[d.source]
        if own.size - split[i] + 1 >= min_group:
            name, (med, sigma) = f"source:{d.source}", own.stats(float(x[i]) if split[i] else None)
        elif corpus.size - split[i] + 1 >= min_group:
            name, (med, sigma) = "corpus", corpus.stats(float(x[i]) if split[i] else None)
        else:
            continue
        z = (float(x[i]) - med) / max(sigma, sigma_floor, 1e-12)
        expected = math.exp(med)
        off = d.chunks - expected * d.tokens / 1000.0
        if abs(z) > k and abs(off) >= min_chunks:
            where = f"its source type {d.source!r}" if name != "corpus" else "the corpus"
            alarms.append(Alarm(
                "document", d.doc_id, d.source, d.tokens, d.chunks, d.density, expected, name, z,
                f"parse alarm: {d.doc_id}: {d.density:.1f} chunks per 1,000 tokens, {d.density / expected:.1f}x "
                f"the median {expected:.1f} of {where} (robust z {z:+.1f}, beyond {k}; {d.chunks} chunks where "
                f"about {expected * d.tokens / 1000:.0f} were expected): check how it was parsed (interleaved "
                f"columns, lost line breaks) before reading its chunks as a result"))
    groups = list(dict.fromkeys(sources))
    if len(groups) >= 2:
        # a one-chunk document says nothing about splitting (its density is 1000 / its length): short records
        # of one sentence each would otherwise look like an over-splitting parser
        for src in groups:
            mine = np.asarray([s == src for s in sources])
            if not (mine & split).any() or not (~mine & split).any():
                continue
            src_med = math.exp(float(np.median(x[mine & split])))
            other_med = math.exp(float(np.median(x[~mine & split])))
            ratio = src_med / other_med
            if ratio >= source_ratio or ratio <= 1 / source_ratio:
                n_tok = sum(d.tokens for d, m in zip(docs, mine) if m)
                n_chunks = sum(d.chunks for d, m in zip(docs, mine) if m)
                alarms.append(Alarm(
                    "source", "", src, n_tok, n_chunks, src_med, other_med, "other sources", None,
                    f"parse alarm: source type {src!r}: median {src_med:.1f} chunks per 1,000 tokens, "
                    f"{ratio:.1f}x the {other_med:.1f} of the other sources (threshold {source_ratio:g}x): check "
                    f"its parser before reading its chunks as a result"
                    + (" (with two source types, either one's parser may be at fault)" if len(groups) == 2 else "")))
    return alarms
