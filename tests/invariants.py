"""The invariants every chunking result must hold, checked against the caller's own string.

Two checks that cannot pass by construction:

- :func:`check_chunk_texts`: the chunk texts *as latechunk hands them out* (``latechunk.output.chunk_rows``, the
  ``text`` column of ``chunks.parquet``, the lines of ``latechunk chunk``) equal ``original[s:e]``, where
  ``original`` is the string the caller passed in (never ``doc.text`` of a Document built inside latechunk);
- :func:`check_token_cover`: each char span is exactly the span of characters its token span's offsets cover:
  every span holds a *content token* (one covering a non-whitespace character; BR-023: byte-level BPE and
  SentencePiece also make whitespace-only tokens, WordPiece none), ``s`` is the first non-whitespace character
  of its first content token (the first chunk may start earlier only over characters no token covers), ``e`` is
  the end of its content tokens' text extended only over characters no token covers (the characters the
  tokenizer dropped, see ``latechunk.tokenize.char_spans_from_token_spans``), its tokens cover no
  non-whitespace character outside ``[s, e)``, and every character of ``[s, e)`` that none of the span's own
  tokens covers is whitespace or covered by no token at all;
- :func:`check_span_agreement` (issue 36): a token span holds no token outside its char span (whitespace or
  zero-width tokens strictly inside it excepted: the whitespace tokens before and after a chunk's text belong
  to no chunk), every content token overlapping the char span, and at most ``max_tokens`` tokens unless they
  are the tokens of one character.

:func:`check_boundaries` runs these with the structural checks (shapes, order, coverage, budget) over one
document's :class:`~latechunk.types.Boundaries` (chonkie ``verify_chunk_indices``); :func:`check_chunk_rows`
runs them over chunk records read back from an output. ``tests/test_invariants.py`` shows that each can fail.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from latechunk.types import Boundaries, Tokenization


def _covered_by(text: str, offsets: np.ndarray) -> np.ndarray:
    """(len(text),) bool: characters inside the ``[start, end)`` offsets of at least one of ``offsets``."""
    delta = np.zeros(len(text) + 1, dtype=np.int64)
    for a, b in np.clip(np.asarray(offsets, dtype=np.int64).reshape(-1, 2), 0, len(text)).tolist():
        if b > a:
            delta[a] += 1
            delta[b] -= 1
    return np.cumsum(delta)[: len(text)] > 0


def check_chunk_texts(original: str, char_spans, chunk_texts: Sequence[str]) -> None:
    """Assert ``chunk_texts[i] == original[s_i:e_i]`` for every char span, and that there is one text per span.

    Args:
        original: The string the caller passed to latechunk (not a copy latechunk made).
        char_spans: (n, 2) int, half-open char spans into ``original``.
        chunk_texts: n chunk texts as latechunk returned them.
    """
    cs = np.asarray(char_spans, dtype=np.int64).reshape(-1, 2)
    texts = list(chunk_texts)
    assert len(texts) == cs.shape[0], f"{len(texts)} chunk texts for {cs.shape[0]} char spans"
    for i, ((s, e), got) in enumerate(zip(cs.tolist(), texts)):
        assert 0 <= s < e <= len(original), f"chunk {i}: char span ({s}, {e}) outside the text ({len(original)})"
        assert got == original[s:e], f"chunk {i}: text {got!r} is not the caller's slice {original[s:e]!r}"


def _content_tokens(text: str, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per token: covers a non-whitespace character (a *content token*), and the first and one past the last
    non-whitespace character it covers (its offsets when it covers none). Computed here, not by latechunk."""
    offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    mask = np.zeros(offs.shape[0], dtype=bool)
    first, last = offs[:, 0].copy(), offs[:, 1].copy()
    for p, (a, b) in enumerate(offs.tolist()):
        piece = text[max(a, 0) : max(b, 0)]
        if piece.strip():
            mask[p] = True
            first[p] = a + len(piece) - len(piece.lstrip())
            last[p] = a + len(piece.rstrip())
    return mask, first, last


def check_token_cover(text: str, tok: Tokenization, token_spans, char_spans) -> None:
    """Assert that each char span is exactly covered by the offsets of its token span (see the module docstring).

    A *content token* covers a non-whitespace character; byte-level BPE and SentencePiece tokenizers also make
    tokens of whitespace alone, some with zero-width offsets (WordPiece makes none, and every check below is then
    the plain one on token offsets). Every span must hold a content token (BR-023); its char span starts at the
    first non-whitespace character of its first content token and ends at or after the last non-whitespace
    character of its content tokens.

    Args:
        text: The caller's original string, which ``tok`` tokenizes.
        tok: Its Tokenization (content tokens ``[content_start, content_end)``).
        token_spans: (n, 2) int, half-open token spans (positions in ``tok``).
        char_spans: (n, 2) int, half-open char spans into ``text``.
    """
    ts = np.asarray(token_spans, dtype=np.int64).reshape(-1, 2)
    cs = np.asarray(char_spans, dtype=np.int64).reshape(-1, 2)
    assert ts.shape == cs.shape, f"{ts.shape[0]} token spans, {cs.shape[0]} char spans"
    c0, c1 = tok.content_start, tok.content_end
    offs = tok.offsets.astype(np.int64)
    any_token = _covered_by(text, offs[c0:c1])
    non_space = np.fromiter((not ch.isspace() for ch in text), dtype=bool, count=len(text))
    is_content, first_char, last_char = _content_tokens(text, offs)
    is_content[:c0] = False
    is_content[c1:] = False
    for i, ((a, b), (s, e)) in enumerate(zip(ts.tolist(), cs.tolist())):
        assert c0 <= a < b <= c1, f"chunk {i}: token span ({a}, {b}) outside content [{c0}, {c1})"
        assert 0 <= s < e <= len(text), f"chunk {i}: char span ({s}, {e}) outside the text"
        content = np.flatnonzero(is_content[a:b]) + a
        assert content.size, (
            f"chunk {i}: token span ({a}, {b}) holds no content token (no token covering a non-whitespace "
            f"character): {text[s:e]!r}"
        )
        first, last_end = int(first_char[content[0]]), int(last_char[content].max())
        if a > c0:
            assert s == first, f"chunk {i}: char start {s} != first character of its first content token ({first})"
        else:
            assert s <= first, f"chunk {i}: char start {s} after its first content token's text {first}"
            lead = np.flatnonzero(any_token[s:first] & non_space[s:first])
            assert lead.size == 0, f"chunk {i}: starts early over token-covered chars at {(s + lead[:5]).tolist()}"
        assert e >= last_end, f"chunk {i}: char end {e} before the end of its content tokens' text ({last_end})"
        tail = np.flatnonzero(any_token[last_end:e] & non_space[last_end:e])
        assert tail.size == 0, (
            f"chunk {i}: end {e} extends past its content tokens' text ({last_end}) over token-covered chars "
            f"at {(last_end + tail[:5]).tolist()}"
        )
        lo = max(0, min(s, int(offs[a:b, 0].min())))
        hi = min(len(text), max(e, int(offs[a:b, 1].max())))
        own = _covered_by(text[lo:hi], offs[a:b] - lo)  # local to [lo, hi), which holds [s, e)
        outside = np.flatnonzero(own & non_space[lo:hi])
        outside = outside[(outside < s - lo) | (outside >= e - lo)] + lo
        assert outside.size == 0, f"chunk {i}: its tokens cover text outside ({s}, {e}) at {outside[:5].tolist()}"
        own = own[s - lo : e - lo]  # local to [s, e)
        foreign = [s + q for q in np.flatnonzero(~own & any_token[s:e]) if not text[s + q].isspace()]
        assert not foreign, (
            f"chunk {i}: chars {foreign[:5]} ({[text[p] for p in foreign[:5]]}) belong to tokens outside "
            f"its token span ({a}, {b})"
        )


def check_span_agreement(text: str, tok: Tokenization, token_spans, char_spans, max_tokens: int | None = None) -> None:
    """Assert that each chunk's token span and char span describe the same content, and the token budget.

    - no token of a span lies wholly outside its char span ``[s, e)``, except a whitespace-only or zero-width
      token strictly inside it (between two of the chunk's characters: ``s < start`` and ``end < e``, or
      ``s < p < e`` for a zero-width token at ``p``): a whitespace token (``"\\n"`` under byte-level BPE) before
      or after the chunk's text belongs to no chunk;
    - every content token (covering a non-whitespace character) whose offsets overlap ``[s, e)`` is inside the
      token span;
    - with ``max_tokens``: ``token_end - token_start <= max_tokens``, unless every token of the span covers one
      and the same character (the documented case: one character whose tokens alone exceed the budget,
      ``latechunk.strategies._common.PieceSplitter``).

    Args:
        text: The caller's original string, which ``tok`` tokenizes.
        tok: Its Tokenization.
        token_spans: (n, 2) int, half-open token spans (positions in ``tok``).
        char_spans: (n, 2) int, half-open char spans into ``text``.
        max_tokens: The strategy's token budget, if it has one.
    """
    ts = np.asarray(token_spans, dtype=np.int64).reshape(-1, 2)
    cs = np.asarray(char_spans, dtype=np.int64).reshape(-1, 2)
    c0, c1 = tok.content_start, tok.content_end
    offs = tok.offsets.astype(np.int64)
    is_content = _content_tokens(text, offs)[0]
    is_content[:c0] = False
    is_content[c1:] = False
    starts, ends = offs[:, 0], offs[:, 1]
    for i, ((a, b), (s, e)) in enumerate(zip(ts.tolist(), cs.tolist())):
        for p in range(a, b):
            t0, t1 = int(starts[p]), int(ends[p])
            overlaps = t1 > t0 and t0 < e and t1 > s
            inside = not is_content[p] and s < t0 and t1 < e if t1 > t0 else s < t0 < e
            assert overlaps or inside, (
                f"chunk {i}: token {p} {text[t0:t1]!r} at ({t0}, {t1}) lies outside its char span ({s}, {e}) "
                f"{text[s:e]!r}; token span ({a}, {b})"
            )
        touching = np.flatnonzero(is_content & (ends > starts) & (starts < e) & (ends > s))
        stray = touching[(touching < a) | (touching >= b)]
        assert stray.size == 0, (
            f"chunk {i}: content tokens {stray[:5].tolist()} overlap its char span ({s}, {e}) {text[s:e]!r} but "
            f"lie outside its token span ({a}, {b})"
        )
        if max_tokens is not None and b - a > max_tokens:
            lo, hi = int(starts[a:b].max()), int(ends[a:b].min())
            assert hi > lo, (
                f"chunk {i}: token span ({a}, {b}) holds {b - a} > {max_tokens} tokens for {text[s:e]!r} "
                f"(only one character's tokens may exceed the budget)"
            )


def check_boundaries(
    text: str,
    tok: Tokenization,
    boundaries: Boundaries,
    max_tokens: int | None = None,
    chunk_texts: Sequence[str] | None = None,
) -> None:
    """Assert the invariants of ``boundaries`` over the caller's ``text`` and its tokenization ``tok``.

    - shapes: token_spans and char_spans are int32 (n, 2); heading_paths and contexts have n entries;
    - token spans are non-empty, inside the content tokens ``[content_start, content_end)``, never touch a frame
      token (``special_tokens_mask``), and their starts strictly increase; together they hold every token that covers a
      non-whitespace character (whitespace-only tokens between chunks belong to none, issue 36);
    - char spans: starts strictly increase; each is exactly covered by its token span (:func:`check_token_cover`);
      no chunk is empty, whitespace-only or has whitespace at either end;
    - exact slice: ``chunk_texts`` (when given; the texts latechunk handed out) equal ``text[s:e]``
      (:func:`check_chunk_texts`);
    - coverage: every non-whitespace character of ``text`` lies in some chunk;
    - token span and char span hold the same content, and with ``max_tokens`` every span has at most
      ``max_tokens`` tokens unless all of them cover one character (:func:`check_span_agreement`).

    Args:
        text: The string the caller passed in.
        tok: Its Tokenization.
        boundaries: The chunks latechunk made of it.
        max_tokens: The strategy's token budget, if it has one.
        chunk_texts: The chunk texts as latechunk handed them out (e.g. ``latechunk.output.chunk_rows``).
    """
    ts, cs = boundaries.token_spans, boundaries.char_spans
    n = len(boundaries)
    assert ts.dtype == np.int32 and cs.dtype == np.int32
    assert ts.shape == (n, 2) and cs.shape == (n, 2)
    assert len(boundaries.heading_paths) == n and len(boundaries.contexts) == n
    if chunk_texts is not None:
        check_chunk_texts(text, cs, chunk_texts)
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
    has_text = _content_tokens(text, tok.offsets)[0][c0:c1]
    assert held[has_text].all(), (
        f"content tokens not in any span: {(np.flatnonzero(~held & has_text)[:10] + c0).tolist()}"
    )

    assert (np.diff(cs[:, 0]) > 0).all(), f"char starts must strictly increase: {cs[:, 0].tolist()}"
    check_token_cover(text, tok, ts, cs)
    offs = tok.offsets
    covered = np.zeros(len(text) + 1, dtype=np.int64)
    for i, ((a, b), (s, e)) in enumerate(zip(ts.tolist(), cs.tolist())):
        chunk = text[s:e]
        assert chunk.strip(), f"chunk {i}: whitespace-only chunk {chunk!r}"
        assert not chunk[0].isspace() and not chunk[-1].isspace(), f"chunk {i}: {chunk!r} has outer whitespace"
        if b < c1:
            assert e <= offs[b, 0] or offs[b, 0] < offs[b - 1, 1], f"chunk {i}: char end {e} runs into token {b}"
        covered[s] += 1
        covered[e] -= 1
    inside = np.cumsum(covered)[: len(text)] > 0
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not inside[i]]
    assert not missing, (
        f"non-whitespace chars not in any chunk at {missing[:10]}: {[text[i] for i in missing[:10]]}"
    )

    check_span_agreement(text, tok, ts, cs, max_tokens)


def check_chunk_rows(originals: Mapping[str, str], rows: Iterable[Mapping], tokenizer=None) -> None:
    """Assert the invariants of chunk records read back from latechunk (``chunk_rows``, ``chunks.parquet`` rows,
    ``latechunk chunk`` JSONL lines) against the callers' original strings.

    Every row's ``text`` is ``originals[doc_id][char_start:char_end]``; a document's ``chunk_index`` runs
    0, 1, ...; with ``tokenizer`` (the run's :class:`~latechunk.tokenize.DocumentTokenizer`), each document's
    original is tokenized again and every row's token span must cover its char span exactly
    (:func:`check_token_cover`).

    Args:
        originals: ``doc_id`` -> the string the caller gave for that document.
        rows: Dicts with ``doc_id``, ``chunk_index``, ``char_start``, ``char_end``, ``token_start``,
            ``token_end`` and ``text``.
        tokenizer: Optional; callable on a str, returning a Tokenization.
    """
    by_doc: dict[str, list[Mapping]] = defaultdict(list)
    for row in rows:
        by_doc[row["doc_id"]].append(row)
    assert by_doc, "no chunk rows"
    for doc_id, doc_rows in by_doc.items():
        assert doc_id in originals, f"rows of an unknown document {doc_id!r}"
        original = originals[doc_id]
        assert [r["chunk_index"] for r in doc_rows] == list(range(len(doc_rows))), f"{doc_id}: chunk_index order"
        cs = np.array([(r["char_start"], r["char_end"]) for r in doc_rows], dtype=np.int64)
        check_chunk_texts(original, cs, [r["text"] for r in doc_rows])
        if tokenizer is not None:
            ts = np.array([(r["token_start"], r["token_end"]) for r in doc_rows], dtype=np.int64)
            check_token_cover(original, tokenizer(original), ts, cs)


def chunk_file_rows(path, text: str, strategy: str = "heading") -> list[dict]:
    """Write ``text`` to ``path``, run ``latechunk chunk PATH --strategy STRATEGY --out ...`` and return its rows (one
    dict per chunk, as the JSONL output holds them); asserts the command exits 0."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from latechunk.cli import app

    path = Path(path)
    path.write_text(text, encoding="utf-8")
    out = path.with_name(path.name + ".chunks.jsonl")
    res = CliRunner().invoke(app, ["chunk", str(path), "--strategy", strategy, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
