"""Helpers of the strategy tests (tests/strategies/test_*.py): hypothesis texts, a counting sentence embedder,
splitting a text and checking every invariant against it.

Every strategy runs on hypothesis-generated texts (unicode, CRLF, emoji, CJK and Hangul, empty, markdown-ish)
through the shared invariant helper ``tests/invariants.py``, which compares every chunk with the caller's own
string and checks each char span against its token span's offsets. Tokenization: the bundled all-MiniLM-L6-v2
tokenizer (uncased BERT WordPiece), ``[CLS]`` at position 0.
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from latechunk.output import chunk_rows
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.invariants import check_boundaries

STRATEGIES = ["fixed", "recursive", "heading", "sentence_window", "semantic"]

# LATECHUNK_EXAMPLES=2000 for a longer hunt
EXAMPLES = int(os.environ.get("LATECHUNK_EXAMPLES", "100"))

SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# fmt: off
FRAGMENTS = [
    " ", "  ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\t", "\n   \n",
    "word", "Echo", "echo echo", "Dr.", "Ph.D.", "e.g.", "U.S.", "3.14", "Mr. Smith said so.", "It rained. ",
    "Keep it simple. ", "end!", "why?", "...", ",", ";", "(x)", "\"quoted.\"",
    "😀", "👍🏽", "🇫🇷", "中文字符", "日本語です。", "한국어 텍스트", "Straße", "naïve café", "İstanbul", "ﬁne",
    "\u200b", "\x00", "\x07", "\u00a0", "9f3b7c1e" * 3,
    "# Title\n", "## Sub heading\n", "Setext\n===\n", "Other\n---\n", "\n---\n", "```\n# not a heading\n```\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n", "- item one\n- item two\n", "> quoted line\n", "    code\n",
    "[ref]: http://example.com\n",
    "| Part | Unit | Price |\n|---|---|---|\n" + "".join(f"| part-{i:02d} | box | {i}.50 |\n" for i in range(8)),
    "```python\n" + "".join(f"x{i} = load({i})\n\n" for i in range(6)) + "```\n",
    "1. first\n2. second\n\n   continued para\n",
]
# fmt: on

texts = st.one_of(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join),
    st.text(max_size=200),
    st.sampled_from(["", " ", "\n\n", " \r\n\t ", "x"]),
)


class CountingEmbedder:
    """A fake sentence embedder that records its calls: a deterministic hashed bag of the sentence's token ids
    (dim 16)."""

    def __init__(self, calls: list | None = None):
        self.calls = [] if calls is None else calls

    def __call__(self, doc, tok, spans):
        spans = np.asarray(spans)
        self.calls.append(spans.copy())
        out = np.zeros((spans.shape[0], 16), dtype=np.float32)
        for i, (a, b) in enumerate(spans.tolist()):
            np.add.at(out[i], tok.input_ids[a:b] % 16, 1.0)
        return out


def fake_embedder(calls: list | None = None) -> CountingEmbedder:
    """A :class:`CountingEmbedder` that appends its calls to ``calls``."""
    return CountingEmbedder(calls)


def _split(strategy, text, tokenizer, embed=None):
    doc = Document("d", text)
    tok = tokenizer(doc)
    return tok, strategy.split(doc, tok, embed)


def handed_out(doc: Document, b, spec: str = "s") -> list[str]:
    """The chunk texts as latechunk hands them out (the ``text`` of :func:`latechunk.output.chunk_rows`)."""
    return [r["text"] for r in chunk_rows(doc, b, spec)]


def split(spec, text, tokenizer, embed=None):
    """Split the caller's ``text`` with ``spec`` and check every invariant against it."""
    doc = Document("case", text)
    tok = tokenizer(doc)
    b = get_strategy(spec).split(doc, tok, embed)
    check_boundaries(text, tok, b, chunk_texts=handed_out(doc, b, spec))
    return tok, b


def spans(arr) -> list[tuple[int, int]]:
    return [tuple(x) for x in np.asarray(arr).tolist()]


def stripped_spans(text, b) -> list[tuple[int, int]]:
    out = []
    for s, e in b.char_spans.tolist():
        chunk = text[s:e]
        lead = len(chunk) - len(chunk.lstrip())
        out.append((s + lead, s + lead + len(chunk.strip())))
    return out
