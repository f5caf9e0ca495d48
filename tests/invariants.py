"""One helper that checks the invariants every strategy's Boundaries must hold (chonkie ``verify_chunk_indices``).

Used by the strategy tests and by any test that produces Boundaries.
"""

from __future__ import annotations

import numpy as np

from latechunk.types import Boundaries, Tokenization


def check_boundaries(
    text: str, tok: Tokenization, boundaries: Boundaries, max_tokens: int | None = None
) -> None:
    """Assert the invariants of ``boundaries`` over ``text`` and its tokenization ``tok``.

    - shapes: token_spans and char_spans are int32 (n, 2); heading_paths and contexts have n entries;
    - token spans are non-empty, inside the content tokens ``[content_start, content_end)``, never touch a frame
      token (``special_tokens_mask``), and their starts strictly increase;
    - together the token spans hold every content token;
    - char spans are consistent with the token offsets: a chunk starts at its first token's start (the first
      chunk may start earlier, over leading characters the tokenizer dropped) and ends at or after its last
      token's end, with no whitespace at either end; char starts strictly increase;
    - exact slice: ``boundaries.texts(text)[i] == text[s:e]`` and no chunk is empty or whitespace-only;
    - coverage: every non-whitespace character of ``text`` lies in some chunk;
    - with ``max_tokens``: every span has at most ``max_tokens`` tokens, unless it is the wordpieces of one
      character (no two of its tokens have different start offsets).
    """
    ts, cs = boundaries.token_spans, boundaries.char_spans
    n = len(boundaries)
    assert ts.dtype == np.int32 and cs.dtype == np.int32
    assert ts.shape == (n, 2) and cs.shape == (n, 2)
    assert len(boundaries.heading_paths) == n and len(boundaries.contexts) == n
    if not text.strip() or tok.n_content == 0:
        assert n == 0, f"expected no chunks for a text without tokens, got {n}"
        return
    assert n > 0, "a text with content tokens must give at least one chunk"
    c0, c1 = tok.content_start, tok.content_end
    assert (ts[:, 1] > ts[:, 0]).all(), f"empty token span in {ts.tolist()}"
    assert (ts[:, 0] >= c0).all() and (ts[:, 1] <= c1).all(), (
        f"token span outside content [{c0}, {c1}): {ts.tolist()}"
    )
    mask = tok.special_tokens_mask
    for a, b in ts.tolist():
        assert not mask[a:b].any(), f"token span ({a}, {b}) holds a frame token"
    assert (np.diff(ts[:, 0]) > 0).all(), f"token starts must strictly increase: {ts[:, 0].tolist()}"
    held = np.zeros(tok.n_content, dtype=bool)
    for a, b in ts.tolist():
        held[a - c0 : b - c0] = True
    assert held.all(), f"content tokens not in any span: {np.flatnonzero(~held)[:10].tolist()}"

    assert (np.diff(cs[:, 0]) > 0).all(), f"char starts must strictly increase: {cs[:, 0].tolist()}"
    offs = tok.offsets
    covered = np.zeros(len(text) + 1, dtype=np.int64)
    texts = boundaries.texts(text)
    for i, ((a, b), (s, e)) in enumerate(zip(ts.tolist(), cs.tolist())):
        assert 0 <= s < e <= len(text), f"chunk {i}: char span ({s}, {e}) outside the text"
        assert texts[i] == text[s:e], f"chunk {i}: text is not the exact slice"
        chunk = text[s:e]
        assert chunk.strip(), f"chunk {i}: whitespace-only chunk {chunk!r}"
        assert not chunk[0].isspace() and not chunk[-1].isspace(), (
            f"chunk {i}: {chunk!r} has outer whitespace"
        )
        if a > c0:
            assert s == offs[a, 0], f"chunk {i}: char start {s} != start of token {a} ({offs[a, 0]})"
        else:
            assert s <= offs[a, 0], f"chunk {i}: first chunk starts after its first token"
        assert e >= offs[b - 1, 1], (
            f"chunk {i}: char end {e} before the end of token {b - 1} ({offs[b - 1, 1]})"
        )
        if b < c1:
            assert e <= offs[b, 0] or offs[b, 0] < offs[b - 1, 1], (
                f"chunk {i}: char end {e} runs into token {b}"
            )
        covered[s] += 1
        covered[e] -= 1
    inside = np.cumsum(covered)[: len(text)] > 0
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not inside[i]]
    assert not missing, (
        f"non-whitespace chars not in any chunk at {missing[:10]}: {[text[i] for i in missing[:10]]}"
    )

    if max_tokens is not None:
        for a, b in ts.tolist():
            if b - a > max_tokens:
                starts = offs[a:b, 0]
                assert (starts == starts[0]).all(), f"span ({a}, {b}) has {b - a} > {max_tokens} tokens"
