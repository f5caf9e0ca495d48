"""Issue 36 (results/docs_markdown.md, fence cuts left at budgets 64 and 128): link reference definitions after a
fence that fits the budget took the fence's last lines. The markup-only chunk of the definitions joins a
neighbour; when neither fits whole, the chunk before it hands over its tail (``join_markup_only``), and that tail
was cut at any paragraph or line, also inside the fence (mkdocs-material's ``reference/index.md``, pydantic's
``concepts/fields.md``) or a content tab (``reference/data-tables.md``), although the cut before the block was
there. A tail is now cut only outside fences, admonitions and tabs that fit the budget; definitions that fit
nowhere else stay a chunk of their own (the budget is a hard limit).
"""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.output import chunk_rows
from latechunk.strategies import get_strategy
from latechunk.strategies._common import PieceSplitter
from latechunk.types import Document
from tests.invariants import check_boundaries

INTRO = ("In order to add custom meta tags to your document, you can [extend the theme][theme extension] and\n"
         "[override the block][overriding blocks], e.g. to add indexing policies for search engines:\n\n")
FENCE = ('``` html\n{% extends "base.html" %}\n\n{% block extrahead %}\n'
         '  <meta name="robots" content="noindex, nofollow" />\n{% endblock %}\n```')
TAB = ('=== "Right"\n\n    The table aligns each column to the right, as the delimiter row says.\n\n'
       "    <div class=\"result\" markdown>\n\n    | Method | Description |\n    | -----: | ----------: |\n"
       "    | GET | Fetch a resource |\n\n    </div>")
AFTER = ("\n\n  [overriding blocks]: ../customization.md#overriding-blocks\n\n#### On a single page\n\n"
         "If you want to set a meta tag on a single page, or want to set different values for different pages, you "
         "can\nuse the page.meta object inside your template override.\n")


def n_tokens(tok, a: int, e: int) -> int:
    offs = tok.offsets
    return int(((offs[:, 0] >= a) & (offs[:, 1] <= e) & (offs[:, 1] > offs[:, 0])).sum())


@pytest.mark.parametrize("block", [FENCE, TAB], ids=["fence", "content_tab"])
@pytest.mark.parametrize("spec", ["heading", "recursive"])
def test_link_definitions_never_take_the_tail_of_a_block_that_fits(minilm_tokenizer, spec, block):
    """At every budget from the block's size up to the block with the definitions after it, one chunk holds the
    block whole (before: 52..62 tokens for the fence cut it at its blank line)."""
    text = INTRO + block + AFTER
    doc = Document("page", text, {"source": "page.md"})
    tok = minilm_tokenizer(doc)
    a = text.index(block)
    e = a + len(block)
    defs = text.index("[overriding blocks]:")
    fits, with_defs = n_tokens(tok, a, e), n_tokens(tok, a, text.index("\n\n####"))
    assert with_defs > fits + 10
    for budget in range(fits, with_defs + 1):
        b = get_strategy(f"{spec}:max_tokens={budget}").split(doc, tok)
        check_boundaries(text, tok, b, max_tokens=budget,
                         chunk_texts=[r["text"] for r in chunk_rows(doc, b, spec)])
        spans = b.char_spans.tolist()
        assert any(s <= a and e <= t for s, t in spans), (spec, budget, [text[s:t] for s, t in spans])
        assert any(s <= defs < t for s, t in spans)


def test_outside_fitting_blocks_drops_cuts_inside_blocks_that_fit(minilm_tokenizer):
    """PieceSplitter.outside_fitting_blocks: cuts strictly inside a block of at most ``budget`` tokens go; cuts at
    its ends and inside longer blocks stay."""
    text = "Intro words here.\n\n```\na b\n\nc d\n```\n\nOutro words.\n"
    doc = Document("page", text, {"source": "page.md"})
    splitter = PieceSplitter(text, minilm_tokenizer(doc), 64)
    splitter.set_blocks([(2, 7)], [], [0] + [i + 1 for i, c in enumerate(text) if c == "\n"])
    (s, e), = splitter.blocks.tolist()
    cuts = np.arange(0, splitter.n + 1)
    kept = splitter.outside_fitting_blocks(cuts, e - s)
    assert kept.tolist() == [c for c in range(splitter.n + 1) if not s < c < e]
    assert splitter.outside_fitting_blocks(cuts, e - s - 1).tolist() == cuts.tolist()
