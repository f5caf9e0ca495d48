"""Lead-ins (a heading, an admonition's or content tab's title line) and the piece after them (issue 36).

``merge_pieces`` moves a run of sticky pieces to the start of the next chunk when it fits there with the piece
after it. When even the last lead-in does not fit with that piece (a paragraph, a sentence, a code fence that
fits the budget alone but not after the heading), the lead-in would end its chunk, alone or after other text:
:func:`split_after_lead_ins` cuts that piece instead, coarse first, so that its start fits with the lead-in.
"""

from __future__ import annotations

import numpy as np

from latechunk.strategies._common import PieceSplitter

__all__ = ["join_table_heads", "split_after_lead_ins"]

#: a code block after a lead-in is cut at lines only: no line of code (a fence's ```` ```python ```` line
#: among them) is cut to make room for a heading (issue 36)
_CODE_LEVELS = ("line",)


def split_after_lead_ins(
    splitter: PieceSplitter,
    pieces: np.ndarray,
    lead_in_at: np.ndarray,
    max_tokens: int,
    cost: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cut the piece after a lead-in when the two do not fit ``max_tokens`` together, so that its start does.

    For each piece that ends at a lead-in position (the lead-in piece, ``h`` tokens) followed by a piece of ``L``
    tokens that is no lead-in itself, with ``h + L`` over the budget of a chunk that starts with the lead-in
    (``max_tokens - cost``) and ``h`` under it: the following piece is cut with :meth:`PieceSplitter.pieces` at
    budget ``max_tokens - cost - t`` (paragraphs, lines, sentences, tokens, coarse first; a code block at its
    lines only: its blank lines are code, and no line of it is cut for room), where ``t`` is the run of lead-ins ending with this one (``# Guide``,
    ``## Billing``, ``### Fees``) when it holds at most half the budget, else ``h``; it becomes two pieces: the
    longest run of those parts from its start that fits that room, and the rest, whole; never at a cut that would
    take a fence's delimiter line from its code (:meth:`PieceSplitter.keep_delimiters`: a one-line fence is not
    cut for a heading). A part that is itself a lead-in (a container's title line at the start of the piece) is
    handled in turn. Pieces that need no cut are returned as they are.

    Args:
        splitter: The document's splitter (its markdown blocks set, :meth:`PieceSplitter.set_blocks`).
        pieces: (k, 2), int. Contiguous content-relative token ranges, in order.
        lead_in_at: Sorted token positions where a lead-in ends (the start of the line after a heading or a
            title line): a piece ending there is a lead-in.
        max_tokens: The chunk budget (tokens).
        cost: (k,), int or None. Extra tokens a chunk costs when it starts with piece i (a table header context).

    Returns:
        ``(pieces, origin)``: (m, 2) int64 pieces, m >= k, tiling the same range; (m,) int64 the input piece each
        came from (for its cost and context).
    """
    p = [tuple(r) for r in np.asarray(pieces, dtype=np.int64).tolist()]
    origin = list(range(len(p)))
    costs = [0] * len(p) if cost is None else np.asarray(cost, dtype=np.int64).tolist()
    lead = set(np.asarray(lead_in_at, dtype=np.int64).tolist())
    if not lead or len(p) < 2:
        return np.asarray(p, dtype=np.int64).reshape(-1, 2), np.asarray(origin, dtype=np.int64)
    code = [(s, e) for s, e in splitter.blocks.tolist() if (s, e) not in splitter._containers]
    i = 0
    while i + 1 < len(p):
        (a, b), (x, y) = p[i], p[i + 1]
        budget = max_tokens - costs[origin[i]]
        h = b - a
        if b in lead and y not in lead and h < budget and h + (y - x) > budget:
            r = i  # room for the run of lead-ins before it too, while the run takes at most half the budget
            while r > 0 and p[r - 1][1] in lead and b - p[r - 1][0] <= budget // 2:
                r -= 1
            room = budget - (b - p[r][0]) if b - p[r][0] <= budget // 2 else budget - h
            in_code = any(s <= x and y <= e for s, e in code)
            parts = splitter.pieces(x, y, _CODE_LEVELS if in_code else PieceSplitter.LEVELS, room)
            lengths = (parts[:, 1] - parts[:, 0]).tolist()
            take, total = 0, 0
            while take < len(lengths) and total + lengths[take] <= room:
                total += lengths[take]
                take += 1
            while 0 < take < len(lengths) and splitter.is_delimiter_cut(int(parts[take, 0])):
                take -= 1  # a fence's delimiter line stays with its code (issue 36)
            if 0 < take < len(lengths):
                cut = int(parts[take, 0])
                p[i + 1 : i + 2] = [(x, cut), (cut, y)]
                origin[i + 1 : i + 2] = [origin[i + 1]] * 2
        i += 1
    return np.asarray(p, dtype=np.int64).reshape(-1, 2), np.asarray(origin, dtype=np.int64)


def join_table_heads(pieces: np.ndarray, header_ends: np.ndarray, max_tokens: int) -> np.ndarray:
    """Join a table's header row and its delimiter row into one piece when the two fit ``max_tokens``, so that a
    run of sticky pieces never leaves one of them in a chunk without the other (issue 36).

    Args:
        pieces: (k, 2), int. Contiguous content-relative token ranges, in order.
        header_ends: Token positions where a table's header row ends (the start of its delimiter row).
        max_tokens: The chunk budget (tokens).

    Returns:
        (m, 2), int64 pieces, m <= k, tiling the same range.
    """
    p = np.asarray(pieces, dtype=np.int64).reshape(-1, 2)
    at = np.flatnonzero(np.isin(p[:-1, 1], np.asarray(header_ends, dtype=np.int64)))
    at = at[p[at + 1, 1] - p[at, 0] <= max_tokens]
    if at.size == 0:
        return p
    keep = np.ones(p.shape[0], dtype=bool)
    keep[at + 1] = False
    out = p[keep].copy()
    out[np.searchsorted(np.flatnonzero(keep), at), 1] = p[at + 1, 1]
    return out

