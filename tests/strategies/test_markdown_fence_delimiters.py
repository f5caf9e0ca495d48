"""Issue 36: at small budgets a fence's delimiter line was cut from its code, and a stray closing line was glued to
the heading after it (``heading:max_tokens=8`` gave the chunk ``"```\\n\\n### Deep"``: rendered, it opens a code
block around the heading).

The rule now: a fence's opening line (```` ```python ````) stays with its first line(s) of code and its closing
line with its last, whenever the two fit the budget together (a fence is still cut at line ends only); a code
line is not cut to make room for a heading (``split_after_lead_ins`` cuts a fence at lines, never at a delimiter
cut); a closing line that does not fit with its code is a chunk of its own or joins the chunk before it, never
the text after it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from latechunk.output import chunk_rows
from latechunk.strategies import get_strategy
from latechunk.strategies._common import join_markup_only, merge_pieces
from latechunk.strategies._markdown import fence_delimiters, markdown_parser
from latechunk.types import Document
from tests.invariants import check_boundaries

HEADS = ["## Setup\n\nInstall it.\n\n", "# Guide\n\n", "## Setup\n\n"]
FENCES = [
    "```\npip install pond\n```\n\n",
    "```python\nimport pond\npond.run()\n```\n\n",
    "~~~sh\nmake all\nmake install\nmake test\n~~~\n\n",
    "```\nfirst line of code here\n\nsecond line of code\n```\n\n",
    "- item\n\n    ```sh\n    make it so now\n    make it again\n    ```\n\n",
    "> ````\n> echo quoted\n> echo again\n> ````\n\n",
]
BODIES = ["The deep part explains the pond.\n", "#### Deeper\n\nText under the deeper heading.\n",
          "```\ncode in deep\n```\n"]
DOCS = [h + f + "### Deep\n\n" + b for h, f, b in itertools.product(HEADS, FENCES, BODIES)]


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) characters of each line, without its line break."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def delimiter_pairs(text: str):
    """For each fence with code lines: (delimiter line, the code line next to it, kind, its count of code lines),
    as (start, end) characters without the indent."""
    lines = line_spans(text)

    def stripped(i):
        a, e = lines[i]
        body = text[a:e]
        return a + len(body) - len(body.lstrip(" \t")), e  # a quote's ">" is part of the line

    out = []
    for t in markdown_parser().parse(text):
        l0, l1 = t.map or (0, 0)
        if t.type == "fence" and l1 - l0 >= 3:
            out.append((stripped(l0), stripped(l0 + 1), "opening", l1 - l0 - 2))
            out.append((stripped(l1 - 1), stripped(l1 - 2), "closing", l1 - l0 - 2))
    return out


def n_tokens(tok, a: int, e: int) -> int:
    offs = tok.offsets
    return int(((offs[:, 0] >= a) & (offs[:, 1] <= e) & (offs[:, 1] > offs[:, 0])).sum())


def split(spec, text, tokenizer, budget):
    doc = Document("page", text, {"source": "page.md"})
    tok = tokenizer(doc)
    b = get_strategy(spec).split(doc, tok)
    check_boundaries(text, tok, b, max_tokens=budget, chunk_texts=[r["text"] for r in chunk_rows(doc, b, spec)])
    return tok, b.char_spans.tolist()


def test_fence_delimiters_lines():
    text = ("a\n\n```py\nx\ny\n```\n\n> ~~~~\n> q\n> ~~~~~\n\n- item\n\n    ```\n    z\n    ```\n\n"
            "```\nstill open\n")
    assert fence_delimiters(text) == ([3, 8, 14, 18], [5, 9, 15])  # the unclosed last fence has no closing line
    assert fence_delimiters("no fences here\n") == ([], [])


@pytest.mark.parametrize("spec", ["heading", "recursive"])
def test_fence_delimiter_line_is_never_cut_from_its_fence(minilm_tokenizer, spec):
    """For every fence of every document and budgets 6..24: a delimiter line and the code line next to it are in
    one chunk whenever they fit the budget together (of a fence with one line of code that does not fit with both
    its delimiter lines, one of the two pairs); no chunk boundary falls inside a delimiter line that fits."""
    for text, budget in itertools.product(DOCS, range(6, 25)):
        tok, spans = split(f"{spec}:max_tokens={budget}", text, minilm_tokenizer, budget)
        pairs = delimiter_pairs(text)
        fits, held = [], []
        for (da, de), (ca, ce), _kind, _n in pairs:
            a, e = min(da, ca), max(de, ce)
            fits.append(n_tokens(tok, a, e) <= budget)
            held.append(any(s <= a and e <= t for s, t in spans))
            if n_tokens(tok, da, de) <= budget:
                assert not any(da < s < de or da < t < de for s, t in spans), (spec, budget, text[da:de])
        for j in range(0, len(pairs), 2):  # the opening pair, then the closing pair, of each fence
            whole = n_tokens(tok, pairs[j][0][0], pairs[j + 1][0][1]) <= budget
            if pairs[j][3] == 1 and not whole:  # one line of code that does not fit with both delimiter lines
                assert held[j] or held[j + 1] or not (fits[j] or fits[j + 1]), (spec, budget, text)
            else:
                assert (held[j] or not fits[j]) and (held[j + 1] or not fits[j + 1]), (
                    spec, budget, [text[s:t] for s, t in spans])


@pytest.mark.parametrize("spec", ["heading", "recursive"])
def test_fence_delimiter_stray_closing_line_glues_to_no_heading(minilm_tokenizer, spec):
    """The issue's chunk ``"```\\n\\n### Deep"``: a closing line that starts a chunk (it does not fit with its code:
    a one-line fence longer than the budget) holds nothing after it, at every budget."""
    text = "## Setup\n\n```\npip install pond\n```\n\n### Deep\n\n#### Deeper\n\nText under the deeper heading.\n"
    for budget in range(4, 25):
        _, spans = split(f"{spec}:max_tokens={budget}", text, minilm_tokenizer, budget)
        chunks = [text[s:t] for s, t in spans]
        assert "```\n\n### Deep" not in "\0".join(chunks), (budget, chunks)
        for (da, de), _, kind, _k in delimiter_pairs(text):
            if kind == "closing":
                for s, t in spans:
                    if s == da:
                        assert not text[de:t].strip(), (budget, chunks)


@pytest.mark.parametrize("spec", ["heading", "recursive"])
def test_fence_delimiter_info_string_stays_on_its_line_after_a_heading(minilm_tokenizer, spec):
    """``## Setup`` then ```` ```python ```` at budget 6: the fence's first line was cut between ```` ``` ```` and
    ``python`` to fit after the heading. A code line is not cut for a heading: the fence is cut at lines only."""
    text = "## Setup\n\n```python\nimport pond\npond.run()\n```\n\n### Deep\n\nThe deep part explains the pond.\n"
    for budget in range(6, 13):
        _, spans = split(f"{spec}:max_tokens={budget}", text, minilm_tokenizer, budget)
        chunks = [text[s:t] for s, t in spans]
        opening = text.index("```python")
        assert not any(opening < s < opening + 9 or opening < t < opening + 9 for s, t in spans), (budget, chunks)
        assert any("```python\nimport pond" in c for c in chunks), (budget, chunks)


def test_fence_delimiter_merge_pieces_keeps_a_stray_closing_line_alone():
    """merge_pieces: a piece marked alone takes no piece after it into its chunk, nor as overlap."""
    pieces = np.array([[0, 6], [6, 9], [9, 13], [13, 20]])  # code 6, closing line 3, heading 4, body 7
    assert merge_pieces(pieces, 8).tolist() == [[0, 6], [6, 13], [13, 20]]
    alone = np.array([False, True, False, False])
    assert merge_pieces(pieces, 8, alone=alone).tolist() == [[0, 6], [6, 9], [9, 13], [13, 20]]
    assert merge_pieces(pieces, 8, overlap=4, alone=alone).tolist() == [[0, 6], [6, 9], [9, 13], [13, 20]]


def test_fence_delimiter_join_markup_only_sends_a_closing_line_back_only():
    """join_markup_only: a markup-only chunk at a trailing position joins the chunk before it when that fits,
    and never the one after it."""
    content = np.array([0, 1, 2, 3, 4, 5, 6, 6, 6, 6, 7, 8, 9, 10])  # tokens 6..8: the closing line, markup
    spans = np.array([[0, 6], [6, 9], [9, 13]])
    assert join_markup_only(spans, content, 8)[0].tolist() == [[0, 6], [6, 13]]  # forward, as any markup
    assert join_markup_only(spans, content, 8, trailing=[6])[0].tolist() == [[0, 6], [6, 9], [9, 13]]
    assert join_markup_only(spans, content, 9, trailing=[6])[0].tolist() == [[0, 9], [9, 13]]
