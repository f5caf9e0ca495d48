"""A code fence's delimiter lines kept with its code when a fence is cut (issue 36).

A fence's opening line (```` ```python ````) is no code without the lines after it, and its closing line none
without the lines before it: a chunk that ends with the opening line, or starts with the closing line and goes
on with the text after the fence (rendered, a stray closing line opens a code block around that text), is what
:class:`~latechunk.strategies._common.PieceSplitter` avoids with :func:`keep_delimiters`. The delimiter cuts are
set by :meth:`~latechunk.strategies._common.PieceSplitter.set_blocks` from
:func:`~latechunk.strategies._markdown.fence_delimiters`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["keep_delimiters"]


def keep_delimiters(splitter, pieces: np.ndarray, budget: int, levels: tuple[str, ...]) -> np.ndarray:
    """Join a fence's delimiter line to its code across the cuts of ``pieces``.

    At a cut after an opening line or before a closing line, the two pieces become one when they fit ``budget``
    together; else the code piece is cut at a line (never at another delimiter cut) and the delimiter's piece
    takes the longest run of its lines next to the delimiter that fits. A code line is not cut for a delimiter
    (a fence is cut at line ends only): when the delimiter line and the one line of code next to it do not fit
    together, the cut stays.

    Args:
        splitter: The document's :class:`~latechunk.strategies._common.PieceSplitter` (its ``after_opening`` and
            ``before_closing`` token positions, its ``cuts``).
        pieces: (k, 2), int. Contiguous content-relative token ranges, in order.
        budget: Most tokens per piece.
        levels: The levels the pieces were cut at (``PieceSplitter.pieces``): the code piece is cut at no other.

    Returns:
        (m, 2), int64 pieces tiling the same range, m <= k + (number of delimiter cuts), none longer than
        ``budget`` unless it was.
    """
    p = np.asarray(pieces, dtype=np.int64).reshape(-1, 2)
    if p.shape[0] < 2 or not (splitter.after_opening or splitter.before_closing):
        return p
    rows = p.tolist()
    i = 0
    while i + 1 < len(rows):
        (a, b), (_, y) = rows[i], rows[i + 1]
        if not splitter.is_delimiter_cut(b):
            i += 1
            continue
        if y - a <= budget:
            rows[i : i + 2] = [[a, y]]  # the next cut may be a delimiter's too: look again at row i
            continue
        if b in splitter.after_opening:  # the opening line ends piece i: it takes the start of piece i + 1
            cut = _delimiter_cut(splitter, b, y, budget - (b - a), levels, first=True)
        else:  # the closing line starts piece i + 1: it takes the end of piece i
            cut = _delimiter_cut(splitter, a, b, budget - (y - b), levels, first=False)
        if cut is not None:
            rows[i : i + 2] = [[a, cut], [cut, y]]
        i += 1
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def _delimiter_cut(splitter, a: int, b: int, room: int, levels: tuple[str, ...], first: bool) -> int | None:
    """The line cut inside ``[a, b)`` (when ``levels`` has lines; no delimiter cut) that leaves the longest part at
    its start (``first``) or end that holds at most ``room`` tokens; None when there is none."""
    if room <= 0 or "line" not in levels:
        return None
    cut = splitter.cuts("line", a, b)
    cut = cut[(cut - a <= room) if first else (b - cut <= room)]
    cut = [c for c in cut.tolist() if not splitter.is_delimiter_cut(c)]
    return (cut[-1] if first else cut[0]) if cut else None
