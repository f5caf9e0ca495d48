"""The cuts of one strategy (:class:`Cut`, :func:`cuts_of`) and the agreement of two on one document
(:func:`agreement`: cuts matched one to one within a tolerance, residuals with their text).

Pure: it reads Boundaries and text. Units: ``token_*`` fields are positions in the document's one
:class:`~latechunk.types.Tokenization` (frame included), ``char_*`` fields are Python string indices into the
document text.

Part of :mod:`latechunk.agree`; tests: ``tests/test_agree.py``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from latechunk.types import Boundaries

DEFAULT_TOLERANCE = 2
"""Tokens: two cuts at most this far apart are the same cut. 2 covers a cut named from either side of the
boundary ("430" as the last token of one chunk, "431" as the first of the next) and one stray token (a
punctuation mark or a heading marker that one strategy keeps on the other side)."""

CONTEXT_CHARS = 60
"""Characters of text shown on each side of a residual cut."""


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
