"""Markup-only chunks joined to a neighbour (issue 16): a chunk of front matter, a thematic break, a fence marker,
link reference definitions or an HTML comment alone carries nothing to embed (:func:`content_prefix` says which
tokens carry content). Re-exported by :mod:`latechunk.strategies._common`.
"""

from __future__ import annotations

import numpy as np

from latechunk.strategies._markdown import content_counts

__all__ = ["content_prefix", "join_markup_only"]


def content_prefix(text: str, offs: np.ndarray) -> np.ndarray:
    """Prefix counts of the content tokens that carry content, not markup alone
    (:func:`latechunk.strategies._markdown.content_counts`).

    Args:
        text: The document text.
        offs: (n, 2), int. Character offsets of the content tokens (:func:`~latechunk.strategies._split.content_offsets`).

    Returns:
        (n + 1,), int64. ``c[b] - c[a]``: tokens of ``[a, b)`` that cover a content character.
    """
    counts = content_counts(text)
    offs = np.clip(np.asarray(offs, dtype=np.int64), 0, len(text))
    carries = counts[offs[:, 1]] > counts[offs[:, 0]]
    return np.concatenate([[0], np.cumsum(carries)]).astype(np.int64)


def join_markup_only(
    spans: np.ndarray,
    content: np.ndarray,
    budget: int | None,
    cost: np.ndarray | None = None,
    cuts: tuple[np.ndarray, ...] = (),
    trailing=(),
) -> tuple[np.ndarray, np.ndarray]:
    """Join each markup-only chunk to a neighbour (issue 16): to the next chunk when the joined span fits the
    budget, else to the previous one when that fits; with ``budget=None`` always (the next, or the previous for
    the last chunk). When neither fits whole, the previous chunk hands over its tail from the last of ``cuts``
    (tried coarse first: paragraphs, then lines) after which the tail and the markup fit together, so the
    markup is held with the text before it. A markup-only chunk that still fits nowhere stays as it is: the
    budget is a hard limit. A chunk that starts at one of ``trailing`` (a fence's closing line cut from its code,
    issue 36) belongs to the text before it: it joins the previous chunk or takes its tail, never the next one
    (rendered, a stray closing line before a heading would open a code block around it).

    Args:
        spans: (k, 2), int. Chunk token spans, starts strictly increasing (they may overlap).
        content: (n + 1,), int. Prefix counts of the tokens that carry content
            (:func:`content_prefix`): chunk ``[a, b)`` is markup-only when
            ``content[b] == content[a]``.
        budget: Most tokens per joined chunk; None: no limit.
        cost: (k,), int or None. Extra tokens chunk i costs (a table header context); a joined chunk costs the
            cost of the chunk whose content it holds.
        cuts: Sorted int arrays of positions where a chunk may be cut (same units as ``spans``), coarse first.
        trailing: Positions (same units as ``spans``) where markup that belongs to the text before it starts.

    Returns:
        ``(spans, keep)``: (m, 2) int64 joined spans, and (m,) int64 the index of the input chunk whose extras
        (heading path, context) each joined chunk takes.
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    k = spans.shape[0]
    content = np.asarray(content, dtype=np.int64)
    is_markup = content[spans[:, 1]] == content[spans[:, 0]]
    if k <= 1 or not is_markup.any():
        return spans, np.arange(k, dtype=np.int64)
    cost_l = [0] * k if cost is None else np.asarray(cost).tolist()
    rows = [[int(a), int(b), i, bool(m)] for i, ((a, b), m) in enumerate(zip(spans.tolist(), np.asarray(is_markup)))]

    def fits(a, b, owner):
        return budget is None or b - a <= budget - cost_l[owner]

    trailing = {int(t) for t in np.asarray(trailing, dtype=np.int64).reshape(-1).tolist()}
    changed = True
    while changed and len(rows) > 1:
        changed = False
        for i, (a, b, owner, markup) in enumerate(rows):
            if not markup:
                continue
            forward = a not in trailing  # a stray closing fence line joins no text after it
            if (
                forward
                and i + 1 < len(rows)
                and not rows[i + 1][3]
                and fits(a, max(b, rows[i + 1][1]), rows[i + 1][2])
            ):
                nxt = rows[i + 1]
                rows[i : i + 2] = [[a, max(b, nxt[1]), nxt[2], False]]
            elif i > 0 and not rows[i - 1][3] and fits(rows[i - 1][0], max(b, rows[i - 1][1]), rows[i - 1][2]):
                prv = rows[i - 1]
                rows[i - 1 : i + 1] = [[prv[0], max(b, prv[1]), prv[2], False]]
            elif forward and i + 1 < len(rows) and rows[i + 1][3] and fits(a, max(b, rows[i + 1][1]), owner):
                rows[i : i + 2] = [[a, max(b, rows[i + 1][1]), owner, True]]  # a run of markup first
            elif (
                budget is not None
                and i > 0
                and not rows[i - 1][3]
                and (p := _tail_cut(rows[i - 1], a, b, budget - cost_l[rows[i - 1][2]], cuts, content)) is not None
            ):
                prv = rows[i - 1]
                rows[i - 1 : i + 1] = [[prv[0], p, prv[2], False], [p, max(b, prv[1]), prv[2], False]]
            elif budget is None and forward and i + 1 < len(rows):
                nxt = rows[i + 1]
                rows[i : i + 2] = [[a, max(b, nxt[1]), nxt[2], nxt[3]]]
            elif budget is None and i > 0:
                prv = rows[i - 1]
                rows[i - 1 : i + 1] = [[prv[0], max(b, prv[1]), prv[2], prv[3]]]
            else:
                continue
            changed = True
            break
    out = np.asarray([r[:2] for r in rows], dtype=np.int64).reshape(-1, 2)
    return out, np.asarray([r[2] for r in rows], dtype=np.int64)


def _tail_cut(prev, a, b, budget, cuts, content):
    """The cut inside ``prev`` from which its tail (holding content, as what stays before it) and the markup chunk
    ``[a, b)`` fit ``budget`` together."""
    lo, end = prev[0], max(b, prev[1])
    for level in cuts:
        level = np.asarray(level, dtype=np.int64)
        inside = level[(level > lo) & (level < a)]
        ok = inside[(end - inside <= budget) & (content[a] > content[inside]) & (content[inside] > content[lo])]
        if ok.size:
            return int(ok[-1])  # the shortest tail: the least text moved
    return None
