"""Boundary agreement: where two chunking strategies cut one document alike, and where they do not.

Two strategies that both claim to find the author's own divisions (``heading`` reads the headings, ``semantic``
the drop in similarity between neighbouring sentences) can be checked against each other: list each one's
*cuts*, match them one to one, and account for every cut left over (a *residual*) with the text around it. On
a well-written page the residuals are few and each has a reason (a section introduction leading into its
first subsection is a heading cut with no change of subject). See the late-chunking paper (arXiv:2409.04701)
for the pipeline the boundaries come from, and :func:`agreement` for the rules.

Units: ``token_*`` fields are positions in the document's one :class:`~latechunk.types.Tokenization` (frame
included, as in :class:`~latechunk.types.Boundaries` and the chunk table), ``char_*`` fields are Python string
indices into the document text.

The core (:func:`agreement`, :func:`agreement_report`, :func:`agreement_markdown`, :func:`render_document_html`)
is pure: it reads Boundaries and text. :func:`run_agree` gets the Boundaries of several strategies from one
late pass of :func:`latechunk.pipeline.iter_embed` (``semantic`` needs the encoder).
"""

from __future__ import annotations

import bisect
import functools
import html
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from latechunk.types import Boundaries, Document, Skipped

__all__ = [
    "DEFAULT_TOLERANCE",
    "Cut",
    "Match",
    "Residual",
    "Agreement",
    "AgreeRun",
    "cuts_of",
    "agreement",
    "summarize",
    "agreement_report",
    "agreement_markdown",
    "run_agree",
    "render_document_html",
    "render_index_html",
    "write_html",
]

DEFAULT_TOLERANCE = 2
"""Tokens: two cuts at most this far apart are the same cut. 2 covers a cut named from either side of the
boundary ("430" as the last token of one chunk, "431" as the first of the next) and one stray token (a
punctuation mark or a heading marker that one strategy keeps on the other side)."""

CONTEXT_CHARS = 60
"""Characters of text shown on each side of a residual cut."""

#: Okabe & Ito (2008), "Color Universal Design": eight colours that colour-blind readers can tell apart
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


# ------------------------------------------------------------------------------------------------ cuts
@dataclass(frozen=True)
class Cut:
    """The boundary between chunk ``after`` and chunk ``after + 1`` of one strategy.

    Adjacent chunks give a point (``token_start == token_end``: the first token of the next chunk, which is
    also one past the last token of the chunk before). Chunks with a gap between them (whitespace that no chunk
    holds) or an overlap (``fixed`` with ``overlap``, ``sentence_window``) give the range between the end of one
    and the start of the next, both ends included: any position in it is the cut.

    Attributes:
        after: Index of the chunk before the cut (0-based).
        token_start: Lower end, in tokens: ``min(end of chunk after, start of chunk after + 1)``.
        token_end: Upper end, in tokens: ``max(...)``.
        char_start: Lower end, in characters.
        char_end: Upper end, in characters; ``text[char_end:]`` starts the next chunk (adjacent or gap).
    """

    after: int
    token_start: int
    token_end: int
    char_start: int
    char_end: int

    @property
    def token(self) -> int:
        """The position that names the cut, in tokens: the first token of the next chunk (``token_end``)."""
        return self.token_end

    def label(self) -> str:
        """``"430"`` for a point, ``"430-432"`` for a range (tokens)."""
        return str(self.token_start) if self.token_start == self.token_end else f"{self.token_start}-{self.token_end}"

    def to_dict(self) -> dict:
        """JSON-ready: ``{"after", "token", "token_start", "token_end", "char_start", "char_end"}``."""
        return {"after": self.after, "token": self.token, "token_start": self.token_start,
                "token_end": self.token_end, "char_start": self.char_start, "char_end": self.char_end}


def cuts_of(b: Boundaries) -> tuple[Cut, ...]:
    """The cuts of one strategy's chunks: one between each chunk and the next, in chunk order.

    Args:
        b: The Boundaries of one document (n chunks).

    Returns:
        ``n - 1`` cuts (none for 0 or 1 chunk).
    """
    ts, cs = b.token_spans.tolist(), b.char_spans.tolist()
    out = []
    for i in range(len(ts) - 1):
        t0, t1 = sorted((ts[i][1], ts[i + 1][0]))
        c0, c1 = sorted((cs[i][1], cs[i + 1][0]))
        out.append(Cut(i, t0, t1, c0, c1))
    return tuple(out)


def _distance(x: Cut, y: Cut, text: str) -> int:
    """Tokens between two cuts (0 when their ranges meet); 0 as well when only whitespace lies between them."""
    d = max(0, x.token_start - y.token_end, y.token_start - x.token_end)
    if d and not text[min(x.char_start, y.char_start) : max(x.char_end, y.char_end)].strip():
        return 0
    return d


# ------------------------------------------------------------------------------------------------ agreement
@dataclass(frozen=True)
class Match:
    """A cut of ``a`` and a cut of ``b`` matched as one.

    Attributes:
        a: The cut of strategy a.
        b: The cut of strategy b.
        distance: Tokens between them (0: the same position, or only whitespace between).
    """

    a: Cut
    b: Cut
    distance: int

    def to_dict(self) -> dict:
        """JSON-ready: ``{"a": token, "b": token, "distance": tokens}``."""
        return {"a": self.a.token, "b": self.b.token, "distance": self.distance}


@dataclass(frozen=True)
class Residual:
    """A cut of one strategy that no cut of the other matches, with the text around it.

    Attributes:
        cut: The cut.
        side: ``"a"`` or ``"b"``: whose cut it is.
        before: Up to :data:`CONTEXT_CHARS` characters of text before the cut (``text[..:char_start]``).
        after: Up to :data:`CONTEXT_CHARS` characters after it (``text[char_end:..]``).
        nearest: Tokens to the nearest cut of the other strategy (None when it has none).
        heading_path: The heading path of the chunk after the cut (``()`` where the strategy records none).
    """

    cut: Cut
    side: str
    before: str
    after: str
    nearest: int | None
    heading_path: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """JSON-ready: the cut's fields plus ``side``, ``before``, ``after``, ``nearest`` and ``heading_path``."""
        return {**self.cut.to_dict(), "side": self.side, "before": self.before, "after": self.after,
                "nearest": self.nearest, "heading_path": list(self.heading_path)}


@dataclass(frozen=True)
class Agreement:
    """The boundary agreement of two strategies on one document (:func:`agreement`).

    Attributes:
        doc_id: The document.
        a: Strategy a's SPEC (or label).
        b: Strategy b's SPEC (or label).
        tolerance: Most tokens between two cuts matched as one.
        chunks_a: Chunks of a.
        chunks_b: Chunks of b.
        cuts_a: a's cuts, in order (``chunks_a - 1`` of them).
        cuts_b: b's cuts, in order.
        matched: The one-to-one matches, in order of a's cut.
        residual_a: a's cuts that no cut of b matches, in order.
        residual_b: b's cuts that no cut of a matches, in order.
    """

    doc_id: str
    a: str
    b: str
    tolerance: int
    chunks_a: int
    chunks_b: int
    cuts_a: tuple[Cut, ...]
    cuts_b: tuple[Cut, ...]
    matched: tuple[Match, ...]
    residual_a: tuple[Residual, ...]
    residual_b: tuple[Residual, ...]

    @property
    def exact(self) -> int:
        """Matches at distance 0."""
        return sum(1 for m in self.matched if m.distance == 0)

    def counts(self) -> dict:
        """The counts alone: ``{"chunks_a", "chunks_b", "cuts_a", "cuts_b", "matched", "exact",
        "residual_a", "residual_b"}``."""
        return {"chunks_a": self.chunks_a, "chunks_b": self.chunks_b, "cuts_a": len(self.cuts_a),
                "cuts_b": len(self.cuts_b), "matched": len(self.matched), "exact": self.exact,
                "residual_a": len(self.residual_a), "residual_b": len(self.residual_b)}

    def to_dict(self) -> dict:
        """JSON-ready: the doc id, the two strategies, the tolerance, :meth:`counts`, every cut's token position
        per side, the matched pairs and the residuals with their text."""
        return {
            "doc_id": self.doc_id, "a": self.a, "b": self.b, "tolerance": self.tolerance, **self.counts(),
            "cut_tokens_a": [c.token for c in self.cuts_a], "cut_tokens_b": [c.token for c in self.cuts_b],
            "matched_pairs": [m.to_dict() for m in self.matched],
            "residuals_a": [r.to_dict() for r in self.residual_a],
            "residuals_b": [r.to_dict() for r in self.residual_b],
        }


@functools.lru_cache(maxsize=1)
def _space_codes() -> np.ndarray:
    """Sorted code points of every character ``str.isspace`` accepts (the test ``str.strip()`` uses)."""
    return np.array([c for c in range(0x110000) if chr(c).isspace()], dtype=np.uint32)


def _nonspace_prefix(text: str) -> np.ndarray:
    """``p[i]`` = non-whitespace characters in ``text[:i]``; (len(text) + 1,) int64.

    ``text[lo:hi].strip() == ""`` exactly when ``p[hi] - p[lo] == 0`` (for ``0 <= lo <= hi <= len(text)``).
    """
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    out = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(~np.isin(codes, _space_codes()), out=out[1:])
    return out


def _cut_array(cuts: Sequence[Cut]) -> np.ndarray:
    """(n_cuts, 4) int64: ``token_start, token_end, char_start, char_end`` of each cut."""
    return np.array([(c.token_start, c.token_end, c.char_start, c.char_end) for c in cuts],
                    dtype=np.int64).reshape(-1, 4)


def _nearest(cut: Cut, others: np.ndarray, nonspace: np.ndarray) -> int | None:
    """``min(_distance(cut, o, text) for o in others)`` over all of ``others`` at once (None when empty).

    ``others`` is :func:`_cut_array` of the other strategy's cuts, ``nonspace`` :func:`_nonspace_prefix` of the
    text: the whitespace test of :func:`_distance` becomes two look-ups instead of a slice of the text between
    the cuts (which made residuals cost O(cuts x cuts x characters) on long documents).
    """
    if not len(others):
        return None
    ts, te, cs, ce = others.T
    d = np.maximum(0, np.maximum(cut.token_start - te, ts - cut.token_end))
    lo = np.minimum(cut.char_start, cs)
    hi = np.maximum(cut.char_end, ce)
    blank = nonspace[hi] == nonspace[lo]
    return int(np.where(blank, 0, d).min())


def _residual(cut: Cut, side: str, text: str, others: np.ndarray, b: Boundaries, nonspace: np.ndarray) -> Residual:
    nearest = _nearest(cut, others, nonspace)
    path = b.heading_paths[cut.after + 1] if cut.after + 1 < len(b) else ()
    return Residual(cut, side, text[max(0, cut.char_start - CONTEXT_CHARS) : cut.char_start],
                    text[cut.char_end : cut.char_end + CONTEXT_CHARS], nearest, tuple(path))


def _check_boundaries(b: Boundaries, text: str, what: str) -> None:
    if len(b) and int(b.char_spans[:, 1].max()) > len(text):
        raise ValueError(f"document {b.doc_id!r}: {what}'s char spans reach {int(b.char_spans[:, 1].max())}, "
                         f"past the end of its text ({len(text)} characters): not this document's text")


def agreement(a: Boundaries, b: Boundaries, text: str, tolerance: int = DEFAULT_TOLERANCE,
              labels: tuple[str, str] | None = None) -> Agreement:
    """Match the cuts of two strategies on one document, one to one, and list the rest with their text.

    Rules:

    - A cut is the boundary between two consecutive chunks (:func:`cuts_of`); one cut named from either side
      ("430" as the end of a chunk, "431" as the start of the next) counts once, through the tolerance.
    - Two cuts are *candidates* when at most ``tolerance`` tokens lie between them (0 when their ranges meet),
      or when only whitespace lies between them (whitespace between chunks is not a disagreement).
    - Matching is one to one and greedy by distance: candidates are taken in order of distance (then
      position), each cut at most once. On a line, with the small tolerances this is meant for, greedy equals
      the optimal assignment except where three or more cuts crowd within the tolerance.
    - Cuts left over on either side are the residuals, each with :data:`CONTEXT_CHARS` characters of text on
      each side and the distance to the nearest cut of the other strategy.

    Args:
        a: Strategy a's Boundaries of the document.
        b: Strategy b's Boundaries of the same document (same tokenization).
        text: The document text (the one both char spans index).
        tolerance: Most tokens between two cuts matched as one (>= 0); default :data:`DEFAULT_TOLERANCE`.
        labels: Names for a and b in the result; default each Boundaries' ``strategy`` SPEC.

    Returns:
        Agreement: counts, cuts, matched pairs and residuals.

    Raises:
        ValueError: if the two Boundaries are of different documents, a char span runs past the text, or
            ``tolerance`` is negative.
        TypeError: if ``tolerance`` is not an int.
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, int):
        raise TypeError(f"agreement: tolerance must be an int (tokens), got {tolerance!r}")
    if tolerance < 0:
        raise ValueError(f"agreement: tolerance must be >= 0 tokens, got {tolerance}")
    if a.doc_id != b.doc_id:
        raise ValueError(f"agreement: boundaries of two documents, {a.doc_id!r} and {b.doc_id!r}")
    la, lb = labels or (a.strategy or "a", b.strategy or "b")
    _check_boundaries(a, text, la)
    _check_boundaries(b, text, lb)
    ca, cb = cuts_of(a), cuts_of(b)
    starts_b = [c.token_start for c in cb]  # sorted: chunks are in order
    reach_b = list(itertools.accumulate((c.token_end for c in cb), max))  # running max of the upper ends
    candidates = []
    for i, x in enumerate(ca):
        # b's cuts within the tolerance lie in [lo, hi): none before lo reaches x, none from hi starts near it
        lo = bisect.bisect_left(reach_b, x.token_start - tolerance)
        hi = bisect.bisect_right(starts_b, x.token_end + tolerance)
        for j in range(lo, hi):
            d = _distance(x, cb[j], text)
            if d <= tolerance:
                candidates.append((d, x.token, i, j))
        for j in (lo - 1, hi):  # the neighbours just outside: only whitespace between them?
            if 0 <= j < len(cb) and _distance(x, cb[j], text) == 0:
                candidates.append((0, x.token, i, j))
    used_a, used_b, matches = set(), set(), []
    for d, _, i, j in sorted(set(candidates)):
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            matches.append(Match(ca[i], cb[j], d))
    matches.sort(key=lambda m: m.a.after)
    nonspace = _nonspace_prefix(text)
    arr_a, arr_b = _cut_array(ca), _cut_array(cb)
    res_a = tuple(_residual(c, "a", text, arr_b, b, nonspace) for i, c in enumerate(ca) if i not in used_a)
    res_b = tuple(_residual(c, "b", text, arr_a, a, nonspace) for j, c in enumerate(cb) if j not in used_b)
    return Agreement(a.doc_id, la, lb, tolerance, len(a), len(b), ca, cb, tuple(matches), res_a, res_b)


def summarize(agreements: Iterable[Agreement]) -> dict:
    """Totals of one strategy pair over documents.

    Args:
        agreements: Agreements of the same two strategies, one per document.

    Returns:
        ``{"documents", "chunks_a", "chunks_b", "cuts_a", "cuts_b", "matched", "exact", "residual_a",
        "residual_b", "matched_share_a", "matched_share_b"}``: sums, and the share of each side's cuts that are
        matched (None where that side has no cut).
    """
    keys = ("chunks_a", "chunks_b", "cuts_a", "cuts_b", "matched", "exact", "residual_a", "residual_b")
    tot = dict.fromkeys(keys, 0)
    n = 0
    for ag in agreements:
        n += 1
        for k, v in ag.counts().items():
            tot[k] += v
    return {"documents": n, **tot,
            "matched_share_a": tot["matched"] / tot["cuts_a"] if tot["cuts_a"] else None,
            "matched_share_b": tot["matched"] / tot["cuts_b"] if tot["cuts_b"] else None}


def _labels(specs: Sequence[str]) -> dict[str, str]:
    """Short names for strategy SPECs: the name before ``:`` where it is unique among them, else the SPEC."""
    names = [s.split(":", 1)[0] for s in specs]
    return {s: (n if names.count(n) == 1 else s) for s, n in zip(specs, names)}


def _pairwise(boundaries_by_strategy: Mapping[str, Sequence[Boundaries]], texts, tolerance: int):
    """``{(a, b): [Agreement per common document]}`` for every pair of strategies, in the order given."""
    text_of = texts if isinstance(texts, Mapping) else None
    specs = list(boundaries_by_strategy)
    labels = _labels(specs)
    by_doc = {s: {b.doc_id: b for b in bs} for s, bs in boundaries_by_strategy.items()}
    order = [b.doc_id for b in boundaries_by_strategy[specs[0]]] if specs else []
    if text_of is None:
        texts = list(texts)
        if len(texts) != len(order):
            raise ValueError(f"agreement_report: {len(texts)} texts for {len(order)} documents of {specs[0]!r}")
        text_of = dict(zip(order, texts))
    out = {}
    for sa, sb in itertools.combinations(specs, 2):
        ags = []
        for doc_id in order:
            if doc_id not in by_doc[sb]:
                continue
            if doc_id not in text_of:
                raise ValueError(f"agreement_report: no text for document {doc_id!r}")
            ags.append(agreement(by_doc[sa][doc_id], by_doc[sb][doc_id], text_of[doc_id], tolerance,
                                 labels=(labels[sa], labels[sb])))
        out[(sa, sb)] = ags
    return out


def agreement_report(boundaries_by_strategy: Mapping[str, Sequence[Boundaries]],
                     texts: Mapping[str, str] | Sequence[str], tolerance: int = DEFAULT_TOLERANCE,
                     details: bool = False) -> dict:
    """The boundary agreement of every pair of strategies over a corpus (what ``compare`` adds to its report).

    Args:
        boundaries_by_strategy: ``{strategy SPEC: [Boundaries per document]}`` (e.g. ``{spec:
            run.boundaries}`` of :class:`~latechunk.pipeline.EmbedResult`'s runs); documents are paired by doc
            id, in the first strategy's order; a document missing from one strategy is left out of its pairs.
        texts: ``{doc_id: text}``, or the texts in the first strategy's document order.
        tolerance: Most tokens between two cuts matched as one (:func:`agreement`).
        details: Also give every document's cuts, matched pairs and residuals (with text); default counts only.

    Returns:
        ``{"tolerance", "unit": "tokens", "strategies": {spec: label}, "pairs": [{"a", "b", "label_a",
        "label_b", "total": summarize(...), "documents": [{"doc_id", counts...} or Agreement.to_dict()]}]}``,
        JSON-ready; render it with :func:`agreement_markdown`.

    Raises:
        ValueError: on a bad tolerance, texts that do not match the documents, or boundaries that do not fit
            their text.
    """
    labels = _labels(list(boundaries_by_strategy))
    pairs = []
    for (sa, sb), ags in _pairwise(boundaries_by_strategy, texts, tolerance).items():
        docs = [ag.to_dict() if details else {"doc_id": ag.doc_id, **ag.counts()} for ag in ags]
        pairs.append({"a": sa, "b": sb, "label_a": labels[sa], "label_b": labels[sb], "total": summarize(ags),
                      "documents": docs})
    return {"tolerance": tolerance, "unit": "tokens", "strategies": labels, "pairs": pairs}


def _share(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def agreement_markdown(report: Mapping) -> str:
    """A Markdown section for :func:`agreement_report`'s result: one row per strategy pair.

    Args:
        report: What :func:`agreement_report` returned.

    Returns:
        Markdown text: a heading, a sentence on the rules (tolerance in tokens), and a table with chunks, cuts,
        matched (exact), residuals and the matched share of each side's cuts.
    """
    lines = [
        "## Boundary agreement",
        "",
        (f"Cuts (boundaries between consecutive chunks) of each pair of strategies matched one to one, greedy by "
        f"distance, within {report['tolerance']} tokens (or only whitespace apart); a residual is a cut the "
        f"other strategy does not make."),
        "",
        ("| a | b | documents | chunks a | chunks b | cuts a | cuts b | matched (exact) | residual a | residual b "
        "| a matched | b matched |"),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in report["pairs"]:
        t = p["total"]
        lines.append(
            f"| {p['label_a']} | {p['label_b']} | {t['documents']} | {t['chunks_a']} | {t['chunks_b']} | "
            f"{t['cuts_a']} | {t['cuts_b']} | {t['matched']} ({t['exact']}) | {t['residual_a']} | "
            f"{t['residual_b']} | {_share(t['matched_share_a'])} | {_share(t['matched_share_b'])} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ running
@dataclass
class AgreeRun:
    """What :func:`run_agree` found: every document's Boundaries per strategy and the agreement of each pair.

    Attributes:
        strategies: Strategy SPECs, in the order given.
        labels: ``{spec: short label}`` (the name where unique).
        tolerance: Tokens (:func:`agreement`).
        documents: The documents chunked, in input order.
        boundaries: ``{spec: [Boundaries per document]}``.
        agreements: ``{(spec_a, spec_b): [Agreement per document]}`` for every pair, in order.
        skipped: Input items not chunked, with reasons.
    """

    strategies: list[str]
    labels: dict[str, str]
    tolerance: int
    documents: list[Document] = field(default_factory=list)
    boundaries: dict[str, list[Boundaries]] = field(default_factory=dict)
    agreements: dict[tuple[str, str], list[Agreement]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready: ``{"tolerance", "unit", "strategies", "documents": [{"doc_id", "chunks", "cuts",
        "pairs"}], "total": [{"a", "b", **summarize}], "skipped"}`` (cuts as token positions per label)."""
        docs = []
        for k, d in enumerate(self.documents):
            docs.append({
                "doc_id": d.doc_id,
                "chunks": {self.labels[s]: len(self.boundaries[s][k]) for s in self.strategies},
                "cuts": {self.labels[s]: [c.token for c in cuts_of(self.boundaries[s][k])] for s in self.strategies},
                "pairs": [ags[k].to_dict() for ags in self.agreements.values()],
            })
        return {
            "tolerance": self.tolerance, "unit": "tokens", "strategies": dict(self.labels), "documents": docs,
            "total": [{"a": self.labels[a], "b": self.labels[b], **summarize(ags)}
                      for (a, b), ags in self.agreements.items()],
            "skipped": [{"doc_id": s.doc_id, "reason": s.reason} for s in self.skipped],
        }


def run_agree(items: Iterable[Document | Skipped], encoder, strategies: Sequence[str],
              tolerance: int = DEFAULT_TOLERANCE, *, sentence_workers: int = 0, progress: bool = False) -> AgreeRun:
    """Chunk documents with several strategies in one late pass and match their cuts pair by pair.

    Args:
        items: Documents (and the reader's skipped items), e.g. :func:`latechunk.io.iter_inputs`.
        encoder: A :class:`~latechunk.encoder.Encoder` (its tokenizer; ``semantic`` pools sentence vectors from
            its late pass).
        strategies: Two or more SPECs.
        tolerance: Tokens (:func:`agreement`).
        sentence_workers: Processes segmenting sentences (0: in this process).
        progress: Show the late pass's progress bar.

    Returns:
        AgreeRun.

    Raises:
        ValueError: with fewer than two strategies, an unknown or repeated SPEC, or a bad tolerance.
    """
    from latechunk.config import PipelineConfig
    from latechunk.pipeline import iter_embed

    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise ValueError(f"--tolerance must be an int >= 0 (tokens), got {tolerance!r}")
    if len(strategies) < 2:
        raise ValueError(f"agree needs two or more strategies to compare, got {list(strategies)}")
    config = PipelineConfig(strategies=tuple(strategies), modes=("late",), sentence_workers=sentence_workers)
    specs = [s.spec for s in config.strategies]
    run = AgreeRun(specs, _labels(specs), tolerance, boundaries={s: [] for s in specs})
    for g in iter_embed(items, encoder, config, progress=progress):
        run.documents.extend(g.documents)
        run.skipped.extend(g.skipped)
        for s in specs:
            run.boundaries[s].extend(g.boundaries[s])
    run.agreements = _pairwise(run.boundaries, [d.text for d in run.documents], tolerance)
    return run


# ------------------------------------------------------------------------------------------------ HTML view
_CSS = """
body{font:15px/1.5 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}
.legend span.key{display:inline-block;padding:0 .5em;margin-right:.5em;border-left:6px solid var(--c)}
table.summary{border-collapse:collapse;margin:1em 0}
table.summary td,table.summary th{border:1px solid #ccc;padding:2px 8px;text-align:right}
table.summary td:first-child,table.summary th:first-child{text-align:left}
.doc{border-top:1px solid #ccc;margin-top:1em}
.row{display:flex;align-items:flex-start}
.row.has-residual{background:#fff3b0}
.margin{flex:0 0 15em;text-align:right;padding-right:.6em;font:12px/1.9 monospace}
.text{flex:1;white-space:pre-wrap;font:14px/1.6 monospace;border-left:1px solid #ddd;padding-left:.6em;min-height:1.6em}
.mark{display:inline-block;border-left:8px solid var(--c);padding-left:3px;margin-left:4px;color:var(--c)}
.mark.residual{outline:2px solid #c00;font-weight:bold}
.cut{display:inline-block;width:0;height:1.3em;border-left:3px solid var(--c);vertical-align:text-bottom;margin:0 1px}
.cut.residual{outline:2px solid #c00;outline-offset:1px}
.residuals li{margin:.4em 0}
.ctx{font-family:monospace;background:#f4f4f4}
"""


def _slug(doc_id: str, k: int) -> str:
    return f"{k:04d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', doc_id)[:60]}.html"


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


def render_document_html(doc: Document, boundaries: Mapping[str, Boundaries], agreements: Sequence[Agreement],
                         labels: Mapping[str, str] | None = None) -> str:
    """One self-contained HTML page: the document's text, each strategy's cuts in its own colour in the
    margin and in the text, residuals highlighted.

    Every cut is a ``<span class="cut sN">`` in the text and a ``<span class="mark sN">`` in the margin of its
    line (N: the strategy's place in ``boundaries``), with ``data-strategy``, ``data-token`` and ``data-char``;
    a cut that is a residual in any pair also has the class ``residual`` (and its line ``has-residual``). All
    text is HTML-escaped; the page loads nothing (no script, no external file).

    Args:
        doc: The document.
        boundaries: ``{spec: Boundaries of doc}``, in display order (colours follow it, :data:`PALETTE`).
        agreements: The document's agreements (pairs of those specs), for the residuals and the summary.
        labels: ``{spec: label}``; default the name of each strategy where unique.

    Returns:
        The page, as a string.
    """
    specs = list(boundaries)
    labels = dict(labels or _labels(specs))
    colour = {s: PALETTE[k % len(PALETTE)] for k, s in enumerate(specs)}
    cls = {s: f"s{k}" for k, s in enumerate(specs)}
    by_label = {labels[s]: s for s in specs}
    residual = set()  # (spec, after)
    for ag in agreements:
        residual |= {(by_label.get(ag.a, ag.a), r.cut.after) for r in ag.residual_a}
        residual |= {(by_label.get(ag.b, ag.b), r.cut.after) for r in ag.residual_b}
    text = doc.text
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    marks: dict[int, list[tuple[int, str, Cut]]] = {}  # line -> [(char, spec, cut)]
    for s in specs:
        for c in cuts_of(boundaries[s]):
            line = bisect.bisect_right(line_starts, c.char_end) - 1
            marks.setdefault(line, []).append((c.char_end, s, c))
    rows = []
    for line, start in enumerate(line_starts):
        end = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        here = sorted(marks.get(line, []), key=lambda m: (m[0], specs.index(m[1])))
        margin, parts, pos, has_res = [], [], start, False
        for char, s, c in here:
            res = (s, c.after) in residual
            has_res |= res
            attrs = (f'class="{{}} {cls[s]}{" residual" if res else ""}" style="--c:{colour[s]}" '
                     f'data-strategy="{html.escape(labels[s])}" data-token="{c.token}" data-char="{c.char_end}" '
                     f'title="{html.escape(labels[s])} cut after chunk {c.after} at token {c.label()}'
                     f'{" (residual)" if res else ""}"')
            margin.append(f'<span {attrs.format("mark")}>{html.escape(labels[s])} {c.label()}</span>')
            cut_at = min(char, end)
            parts.append(html.escape(text[pos:cut_at]))
            parts.append(f'<span id="{cls[s]}-c{c.after}" {attrs.format("cut")}></span>')
            pos = cut_at
        parts.append(html.escape(text[pos:end]))
        rows.append(f'<div class="row{" has-residual" if has_res else ""}"><div class="margin">{"".join(margin)}'
                    f'</div><div class="text">{"".join(parts)}</div></div>')
    legend = " ".join(
        f'<span class="key {cls[s]}" style="--c:{colour[s]}">{html.escape(labels[s])}: {len(boundaries[s])} '
        f"chunks, {max(len(boundaries[s]) - 1, 0)} cuts</span>" for s in specs)
    summary = [("<table class=\"summary\"><tr><th>pair</th><th>matched (exact)</th><th>residual a</th>"
               "<th>residual b</th></tr>")]
    items = []
    for ag in agreements:
        summary.append(f"<tr><td>{html.escape(ag.a)} vs {html.escape(ag.b)}</td><td>{len(ag.matched)} "
                       f"({ag.exact})</td><td>{len(ag.residual_a)}</td><td>{len(ag.residual_b)}</td></tr>")
        for r in (*ag.residual_a, *ag.residual_b):
            who, other = (ag.a, ag.b) if r.side == "a" else (ag.b, ag.a)
            s = by_label.get(who, who)
            near = "none" if r.nearest is None else f"{r.nearest} tokens away"
            items.append(
                f'<li><a href="#{cls.get(s, "s")}-c{r.cut.after}">{html.escape(who)} cut at token {r.cut.label()}'
                f"</a>, not in {html.escape(other)} (nearest {near}): <span class=\"ctx\">…"
                f"{html.escape(r.before)}</span> ⟂ <span class=\"ctx\">{html.escape(r.after)}…</span></li>")
    summary.append("</table>")
    body = (f"<h1>{html.escape(doc.doc_id)}</h1>\n<p class=\"legend\">{legend}</p>\n{''.join(summary)}\n"
            f'<h2>Residuals</h2>\n<ul class="residuals">{"".join(items) or "<li>none</li>"}</ul>\n'
            f'<div class="doc">\n' + "\n".join(rows) + "\n</div>")
    return _page(f"agree: {doc.doc_id}", body)


def render_index_html(run: AgreeRun, pages: Sequence[str]) -> str:
    """The index page: one row per document (link, chunk counts, matched and residuals per pair) and the totals.

    Args:
        run: The run.
        pages: The page file name of each document, in ``run.documents`` order.

    Returns:
        The page, as a string.
    """
    pairs = list(run.agreements)
    head = "".join(f"<th>{html.escape(run.labels[s])} chunks</th>" for s in run.strategies) + "".join(
        f"<th>{html.escape(run.labels[a])} vs {html.escape(run.labels[b])}: matched / residual</th>" for a, b in pairs)
    rows = []
    for k, (d, page) in enumerate(zip(run.documents, pages)):
        cells = "".join(f"<td>{len(run.boundaries[s][k])}</td>" for s in run.strategies)
        cells += "".join(f"<td>{len(run.agreements[p][k].matched)} / {len(run.agreements[p][k].residual_a)} + "
                         f"{len(run.agreements[p][k].residual_b)}</td>" for p in pairs)
        rows.append(f'<tr><td><a href="{html.escape(page)}">{html.escape(d.doc_id)}</a></td>{cells}</tr>')
    tot = []
    for (a, b), ags in run.agreements.items():
        t = summarize(ags)
        tot.append(f"<li>{html.escape(run.labels[a])} vs {html.escape(run.labels[b])}: {t['cuts_a']} and "
                   f"{t['cuts_b']} cuts, {t['matched']} matched ({t['exact']} exact), residuals {t['residual_a']} "
                   f"and {t['residual_b']}</li>")
    body = (f"<h1>Boundary agreement ({len(run.documents)} documents, tolerance {run.tolerance} tokens)</h1>\n"
            f"<ul>{''.join(tot)}</ul>\n<table class=\"summary\"><tr><th>document</th>{head}</tr>"
            + "".join(rows) + "</table>")
    return _page("agree: index", body)


def write_html(run: AgreeRun, out_dir: Path | str) -> list[Path]:
    """Write the HTML view: ``index.html`` and one page per document (:func:`render_document_html`).

    Args:
        run: The run.
        out_dir: The folder (created if missing; files of the same names are replaced).

    Returns:
        The paths written: the index first, then the documents' pages in order.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pages = [_slug(d.doc_id, k) for k, d in enumerate(run.documents)]
    written = []
    index = out / "index.html"
    index.write_text(render_index_html(run, pages), encoding="utf-8")
    written.append(index)
    for k, (d, page) in enumerate(zip(run.documents, pages)):
        bs = {s: run.boundaries[s][k] for s in run.strategies}
        ags = [ags[k] for ags in run.agreements.values()]
        path = out / page
        path.write_text(render_document_html(d, bs, ags, run.labels), encoding="utf-8")
        written.append(path)
    return written
