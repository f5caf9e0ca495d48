"""latechunk/strategies/: property and unit tests of the five strategies, and the strategy side of the cases
BR-001..BR-010 of ``../shared/cases/README.md`` with their exact expectations (the sentence segmenter:
``tests/test_sentences.py``).

Every strategy runs on hypothesis-generated texts (unicode, CRLF, emoji, CJK and Hangul, empty, markdown-ish)
through the shared invariant helper ``tests/invariants.py``, which compares every chunk with the caller's own
string and checks each char span against its token span's offsets; plus parameter validation and SPEC round
trips. Tokenization: the bundled all-MiniLM-L6-v2 tokenizer (uncased BERT WordPiece), ``[CLS]`` at position 0.
"""

from __future__ import annotations

import dataclasses
import os
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latechunk.eval.datasets import data_root
from latechunk.output import chunk_rows
from latechunk.sentences import PYSBD_PLACEHOLDERS, SentenceSegmenter
from latechunk.strategies import get_strategy, registry
from latechunk.strategies._common import PieceSplitter, allowed_cuts, content_offsets
from latechunk.strategies.fixed import Fixed
from latechunk.strategies.heading import Heading
from latechunk.strategies.recursive import Recursive
from latechunk.strategies.semantic import Semantic
from latechunk.strategies.sentence_window import SentenceWindow
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.models import tiny_document_tokenizer

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


def fixed_ref(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Reference fixed windows over n content tokens, content-relative: a plain loop."""
    out, start = [], 0
    while n > 0:
        out.append((start, min(start + size, n)))
        if start + size >= n:
            break
        start += size - overlap
    return out


# --- properties -----------------------------------------------------------------------------------------------


@SETTINGS
@given(text=texts, size=st.integers(1, 24), data=st.data())
def test_fixed_invariants(minilm_tokenizer, text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    tok, b = _split(Fixed(size=size, overlap=overlap), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=size, chunk_texts=handed_out(Document("d", text), b))
    if allowed_cuts(content_offsets(tok)).all():
        spans_new = (b.token_spans - tok.content_start).tolist()
        assert [tuple(s) for s in spans_new] == fixed_ref(tok.n_content, size, overlap)


@SETTINGS
@given(text=texts, max_tokens=st.integers(1, 40), data=st.data())
def test_recursive_invariants(minilm_tokenizer, text, max_tokens, data):
    overlap = data.draw(st.integers(0, max_tokens - 1))
    tok, b = _split(Recursive(max_tokens=max_tokens, overlap=overlap), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=max_tokens, chunk_texts=handed_out(Document("d", text), b))
    ts = b.token_spans
    assert (np.maximum(ts[:-1, 1] - ts[1:, 0], 0) <= overlap).all()


@SETTINGS
@given(text=texts, max_tokens=st.integers(1, 40), levels=st.sets(st.integers(1, 6), min_size=1))
def test_heading_invariants(minilm_tokenizer, text, max_tokens, levels):
    tok, b = _split(Heading(max_tokens=max_tokens, levels=tuple(levels)), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=max_tokens, chunk_texts=handed_out(Document("d", text), b))
    for (s, e), ctx in zip(b.token_spans.tolist(), b.contexts):
        if ctx:  # a table header repeated as context counts against the budget
            assert e - s + minilm_tokenizer(ctx).n_content <= max_tokens
    for path in b.heading_paths:
        assert all(title.strip() for title in path)


@SETTINGS
@given(text=texts, window=st.integers(0, 3), data=st.data())
def test_sentence_window_invariants(minilm_tokenizer, text, window, data):
    stride = data.draw(st.integers(1, 2 * window + 1))
    tok, b = _split(SentenceWindow(window=window, stride=stride), text, minilm_tokenizer)
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))
    sent = SentenceSegmenter().token_spans(text, tok)
    if window == 0:
        np.testing.assert_array_equal(b.token_spans, sent)
    # every chunk starts and ends on sentence boundaries
    assert set(b.token_spans[:, 0].tolist()) <= set(sent[:, 0].tolist())
    assert set(b.token_spans[:, 1].tolist()) <= set(sent[:, 1].tolist())


@SETTINGS
@given(
    text=texts,
    percentile=st.floats(0, 100),
    max_tokens=st.integers(1, 60),
    data=st.data(),
)
def test_semantic_invariants(minilm_tokenizer, text, percentile, max_tokens, data):
    min_tokens = data.draw(st.integers(0, max_tokens))
    calls: list = []
    strategy = Semantic(percentile=percentile, min_tokens=min_tokens, max_tokens=max_tokens)
    tok, b = _split(strategy, text, minilm_tokenizer, fake_embedder(calls))
    check_boundaries(text, tok, b, max_tokens=max_tokens, chunk_texts=handed_out(Document("d", text), b))
    sent = SentenceSegmenter().token_spans(text, tok)
    assert len(calls) == (1 if sent.shape[0] >= 2 else 0)
    if calls:
        np.testing.assert_array_equal(calls[0], sent)


@SETTINGS
@given(
    text=texts,
    percentile=st.floats(0, 100),
    max_tokens=st.integers(1, 60),
    data=st.data(),
)
def test_memory_grows_with_the_largest_document_semantic_cut_points_hold_every_chunk_end(
    minilm_tokenizer, text, percentile, max_tokens, data
):
    """Issue 10, fault 4: the pipeline pools semantic chunks while it encodes, from sums between the strategy's
    cut_points; every chunk start and end must be one of them, whatever the sentence vectors."""
    min_tokens = data.draw(st.integers(0, max_tokens))
    strategy = Semantic(percentile=percentile, min_tokens=min_tokens, max_tokens=max_tokens)
    tok, b = _split(strategy, text, minilm_tokenizer, fake_embedder())
    points = strategy.cut_points(Document("d", text), tok)
    assert points.dtype == np.int64 and (np.diff(points) > 0).all()
    assert set(b.token_spans.reshape(-1).tolist()) <= set(points.tolist())


@SETTINGS
@given(text=st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join).map(lambda t: t.replace("\r", "")))
def test_crlf_cuts_like_lf(minilm_tokenizer, text):
    """Replacing every LF by CRLF changes no token span (BR-005's kind) for the line-aware strategies."""
    crlf = text.replace("\n", "\r\n")
    for strategy in (Recursive(max_tokens=12), Heading(max_tokens=12), Fixed(size=5)):
        tok_lf, b_lf = _split(strategy, text, minilm_tokenizer)
        tok_crlf, b_crlf = _split(strategy, crlf, minilm_tokenizer)
        np.testing.assert_array_equal(tok_lf.input_ids, tok_crlf.input_ids)
        np.testing.assert_array_equal(b_lf.token_spans, b_crlf.token_spans)
        assert b_lf.heading_paths == b_crlf.heading_paths


# --- examples -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fixed", "recursive", "heading", "sentence_window", "semantic"])
@pytest.mark.parametrize("text", ["", "   ", "\n\t\r\n", "\u200b"])
def test_no_tokens_no_chunks(minilm_tokenizer, name, text):
    tok, b = _split(get_strategy(name), text, minilm_tokenizer, fake_embedder())
    assert len(b) == 0 or text.strip()
    if len(b) == 0:
        assert b.token_spans.shape == (0, 2) and b.char_spans.shape == (0, 2)
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))


def test_fixed_keeps_one_character_whole(minilm_tokenizer):
    """A Hangul syllable is several wordpieces with the same offsets; no window edge falls inside it."""
    text = "한국어 텍스트"
    tok, b = _split(Fixed(size=2, overlap=1), text, minilm_tokenizer)
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))
    offs = tok.offsets
    for a, e in b.token_spans.tolist():
        assert a == tok.content_start or offs[a, 0] > offs[a - 1, 0]


def test_heading_paths_and_levels(minilm_tokenizer):
    text = "# A\n\nintro text here\n\n## B\n\nbody of b\n\n### C\n\nbody of c\n\n## D\n\nbody of d\n"
    _, b = _split(Heading(max_tokens=64), text, minilm_tokenizer)
    assert b.heading_paths == (("A",), ("A", "B"), ("A", "B", "C"), ("A", "D"))
    tok, b2 = _split(Heading(max_tokens=64, levels=(1, 2)), text, minilm_tokenizer)
    assert b2.heading_paths == (("A",), ("A", "B"), ("A", "D"))
    check_boundaries(text, tok, b2, chunk_texts=handed_out(Document("d", text), b2))


def test_heading_only_section_joins_the_next(minilm_tokenizer):
    text = "# Guide\n\n## Install\n\nRun the installer.\n"
    _, b = _split(Heading(max_tokens=64), text, minilm_tokenizer)
    assert b.texts(text) == [text.strip()]
    assert b.heading_paths == (("Guide", "Install"),)


def test_semantic_cuts_at_the_topic_change(minilm_tokenizer):
    """Two topics with disjoint vocabularies: the one low-similarity boundary is the one cut."""
    text = "Cats purr softly. Cats purr loudly. Cats purr often. Trains run late. Trains run early. Trains run fast."
    vocab = {}

    def embed(doc, tok, spans):
        out = np.zeros((len(spans), 64), dtype=np.float32)
        for i, (a, b) in enumerate(spans.tolist()):
            for t in tok.input_ids[a:b].tolist():
                out[i, vocab.setdefault(t, len(vocab)) % 64] += 1
        return out

    # min_tokens=0: each topic is 15 tokens, under the default min_tokens (16), which would join them
    tok, b = _split(Semantic(percentile=30, min_tokens=0), text, minilm_tokenizer, embed)
    assert [t.split(".")[0] for t in b.texts(text)] == ["Cats purr softly", "Trains run late"]
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))


def test_semantic_without_embedder_raises(minilm_tokenizer):
    with pytest.raises(ValueError, match="sentence_vectors"):
        _split(Semantic(), "One. Two.", minilm_tokenizer, None)


def test_semantic_rejects_bad_embedder_output(minilm_tokenizer):
    with pytest.raises(ValueError, match="expected"):
        _split(Semantic(), "One here. Two there.", minilm_tokenizer, lambda d, t, s: np.zeros((1, 4)))
    with pytest.raises(ValueError, match="NaN"):
        _split(
            Semantic(), "One here. Two there.", minilm_tokenizer, lambda d, t, s: np.full((len(s), 4), np.nan)
        )


def test_semantic_zero_vectors_give_no_nan(minilm_tokenizer):
    tok, b = _split(
        Semantic(), "One here. Two there. Three.", minilm_tokenizer, lambda d, t, s: np.zeros((len(s), 4))
    )
    check_boundaries("One here. Two there. Three.", tok, b)


# --- BR-001 offset-mismatch ------------------------------------------------------------------------------------


def test_br001_repeated_words_fixed_offsets(minilm_tokenizer):
    text = "echo echo echo echo echo echo"
    tok, b = split("fixed:chunk_size=2,chunk_overlap=1", text, minilm_tokenizer)
    assert len(tok) == 8 and tok.n_content == 6  # "echo" is one wordpiece
    assert len(b) == 5
    assert spans(b.char_spans) == [(0, 9), (5, 14), (10, 19), (15, 24), (20, 29)]
    assert spans(b.token_spans) == [(1, 3), (2, 4), (3, 5), (4, 6), (5, 7)]
    assert len(set(spans(b.char_spans))) == len(b)


def test_br001_repeated_sentences_recursive_offsets(minilm_tokenizer):
    text = "Keep it simple. " * 6
    assert len(text) == 96
    _, b = split("recursive:chunk_size=8,chunk_overlap=0", text, minilm_tokenizer)
    assert spans(b.char_spans) == [(0, 31), (32, 63), (64, 95)]
    assert all(t == "Keep it simple. Keep it simple." for t in b.texts(text))
    assert len(set(spans(b.char_spans))) == len(b)


# --- BR-002 boundary-duplication -------------------------------------------------------------------------------

TWELVE = "one two three four five six seven eight nine ten eleven twelve"


def test_br002_zero_overlap_no_duplication(minilm_tokenizer):
    assert len(TWELVE) == 62
    tok, b = split("fixed:chunk_size=4,chunk_overlap=0", TWELVE, minilm_tokenizer)
    assert tok.n_content == 12
    assert spans(b.char_spans) == [(0, 18), (19, 39), (40, 62)]
    assert b.texts(TWELVE) == ["one two three four", "five six seven eight", "nine ten eleven twelve"]
    assert spans(b.token_spans) == [(1, 5), (5, 9), (9, 13)]
    seen = np.concatenate([np.arange(a, e) for a, e in spans(b.token_spans)])
    assert len(seen) == len(set(seen.tolist()))  # no content token in two spans


def test_br002_overlap_one_no_trailing_contained_chunk(minilm_tokenizer):
    _, b = split("fixed:chunk_size=4,chunk_overlap=1", TWELVE, minilm_tokenizer)
    ts = spans(b.token_spans)
    assert ts == [(1, 5), (4, 8), (7, 11), (10, 13)]
    assert spans(b.char_spans) == [(0, 18), (14, 33), (28, 48), (45, 62)]
    for (a0, e0), (a1, e1) in pairwise(ts):
        assert e0 - a1 == 1  # consecutive spans share exactly one token
        assert not (a0 <= a1 and e1 <= e0)  # no span inside the one before
    assert all(e - a <= 4 for a, e in ts)


# --- BR-003 overlap-infinite-loop ------------------------------------------------------------------------------
# (bad size/overlap pairs raise in the constructor: test_br003_bad_size_overlap_raise_naming_both_values below)


@pytest.mark.parametrize(
    "text",
    [
        # the case: one 640-char word; BERT WordPiece maps a word over 100 chars to one [UNK]
        "9f3b7c1e" * 80,
        "9f3b7c1e" * 12,  # same kind, short enough to be wordpieces: the token-level fallback does the work
        " ".join(["9f3b7c1e" * 12] * 20),
    ],
)
def test_br003_separator_free_text_returns_fast(minilm_tokenizer, monkeypatch, text):
    """The splitter's work is bounded by the document's size (counted, not timed): at most one ``pieces`` call
    per level and content token; a loop that makes no progress fails at the bound instead of hanging."""
    doc = Document("case", text)
    tok = minilm_tokenizer(doc)
    bound = len(PieceSplitter.LEVELS) * (tok.n_content + 1)
    calls = []
    inner = PieceSplitter.pieces

    def counted(self, *args, **kwargs):
        calls.append(args)
        assert len(calls) <= bound, f"more than {bound} pieces() calls for {tok.n_content} tokens"
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(PieceSplitter, "pieces", counted)
    strategy = get_strategy("recursive:chunk_size=16,chunk_overlap=4")
    b = strategy.split(doc, tok)
    assert calls  # the counter saw the splitter
    check_boundaries(text, tok, b, chunk_texts=handed_out(doc, b))
    ts = spans(b.token_spans)
    assert all(e - a <= 16 for a, e in ts)
    assert all(a1 > a0 for (a0, _), (a1, _) in pairwise(ts))
    assert all(e0 - a1 <= 4 for (_, e0), (a1, _) in pairwise(ts))
    held = np.zeros(len(tok), dtype=bool)
    for a, e in ts:
        held[a:e] = True
    assert held[tok.content_start : tok.content_end].all()
    if tok.n_content > 16:
        assert len(b) > 1


# --- BR-004 empty-input (strategy part) ------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("text", ["", "  \n\t\n  "])
def test_br004_empty_and_whitespace_give_zero_chunks(minilm_tokenizer, name, text):
    embed = CountingEmbedder()
    _, b = split(name, text, minilm_tokenizer, embed)
    assert len(b) == 0
    assert b.char_spans.shape == (0, 2) and b.token_spans.shape == (0, 2)
    assert embed.calls == []


@pytest.mark.parametrize("name", STRATEGIES)
def test_br004_trailing_whitespace_gives_no_blank_chunk(minilm_tokenizer, name):
    text = "alpha beta gamma   \n\n   "
    _, b = split(name, text, minilm_tokenizer, CountingEmbedder())
    assert all(t.strip() for t in b.texts(text))
    assert len(b) == 1
    assert b.char_spans[0, 1] <= 16


# --- BR-005 crlf-line-endings ----------------------------------------------------------------------------------

CRLF = "Apples grow on trees.\r\n\r\nTrains run on rails.\r\n\r\nRivers flow to the sea."


def test_br005_crlf_blank_lines_split_paragraphs(minilm_tokenizer):
    assert len(CRLF) == 72
    _, b = split("recursive:chunk_size=8", CRLF, minilm_tokenizer)
    assert len(b) == 3
    assert stripped_spans(CRLF, b) == [(0, 21), (25, 45), (49, 72)]
    for s, e in b.char_spans.tolist():
        for cut in (s, e):
            assert not (0 < cut < len(CRLF) and CRLF[cut - 1] == "\r" and CRLF[cut] == "\n")
    lf = CRLF.replace("\r\n", "\n")
    _, b_lf = split("recursive:chunk_size=8", lf, minilm_tokenizer)
    assert [t.strip() for t in b_lf.texts(lf)] == [t.strip() for t in b.texts(CRLF)]


# --- BR-006 markdown-code-fence --------------------------------------------------------------------------------

FENCE = (
    "# Setup\n\nInstall the tool first.\n\n```python\n# fetch the data\nrows = load()\n```\n\n## Usage\n\n"
    "Call run() afterwards, then read the printed summary line by line and fix every warning before you ship "
    "the release.\n"
)


def test_br006_hash_in_code_fence_is_not_a_heading(minilm_tokenizer):
    assert len(FENCE) == 207 and FENCE[34:37] == "```" and FENCE[75:78] == "```"
    assert FENCE[80:88] == "## Usage" and FENCE[90:100] == "Call run()"
    _, b = split("heading:chunk_size=34", FENCE, minilm_tokenizer)
    assert len(b) == 2
    (s0, e0), (s1, e1) = spans(b.char_spans)
    assert s0 <= 34 and e0 >= 78  # the whole fence, "rows = load()" included
    assert "rows = load()" in b.texts(FENCE)[0]
    assert 78 <= e0 <= 90 and 78 <= s1 <= 90
    assert e1 == len(FENCE.rstrip())
    assert b.heading_paths == (("Setup",), ("Setup", "Usage"))
    assert all("fetch the data" not in title for path in b.heading_paths for title in path)


# --- BR-007 markdown-setext ------------------------------------------------------------------------------------

SETEXT = (
    "Field Notes\n===========\n\nWe walked the north trail before sunrise and counted eleven herons along the reed "
    "beds near the old mill.\n\nWeather\n-------\n\nLight rain after noon kept the path muddy, so we turned back at "
    "the bridge and reached camp by four.\n\n---\n\nEnd of log.\n"
)


def test_br007_setext_headings_and_thematic_break(minilm_tokenizer):
    assert len(SETEXT) == 268
    assert SETEXT[25:34] == "We walked" and SETEXT[121:130] == "old mill." and SETEXT[132:139] == "Weather"
    assert SETEXT[256:267] == "End of log."
    _, b = split("heading:chunk_size=44", SETEXT, minilm_tokenizer)
    assert len(b) == 2
    (_, e0), (s1, _) = spans(b.char_spans)
    assert 130 <= e0 <= 132 and 130 <= s1 <= 132
    assert "End of log." in b.texts(SETEXT)[1]
    # "Field Notes" is level 1 and "Weather" level 2 under it
    assert b.heading_paths == (("Field Notes",), ("Field Notes", "Weather"))
    assert all(title.strip() and title != "---" for path in b.heading_paths for title in path)


# --- BR-008 markdown-table-split -------------------------------------------------------------------------------

TABLE = "## Parts\n\n| Part | Unit | Price |\n|---|---|---|\n" + "".join(
    f"| part-{i:02d} | box | {1 + 0.05 * i:.2f} |\n" for i in range(1, 31)
)


def test_br008_table_split_between_rows_with_header_context(minilm_tokenizer):
    assert len(TABLE) == 798 and TABLE.index("| part-01") == 48
    _, b = split("heading:chunk_size=64,chunk_overlap=0", TABLE, minilm_tokenizer)
    assert len(b) >= 2
    # line char ranges (without the newline) of every table line
    lines, pos = [], 0
    for line in TABLE.splitlines(keepends=True):
        lines.append((pos, pos + len(line.rstrip("\n"))))
        pos += len(line)
    for s, e in b.char_spans.tolist():
        for a, z in lines:
            assert not a < s < z and not a < e < z, f"chunk ({s}, {e}) cuts inside line {TABLE[a:z]!r}"
    for i in range(1, 31):
        row = f"| part-{i:02d} |"
        assert sum(row in t for t in b.texts(TABLE)) == 1
    assert all(e - s <= 64 for s, e in b.token_spans.tolist())
    header, delimiter = "| Part | Unit | Price |", "|---|---|---|"
    for (s, e), chunk, ctx in zip(b.token_spans.tolist(), b.texts(TABLE), b.contexts):
        if "| part-" in chunk and header not in chunk:
            assert ctx == f"{header}\n{delimiter}"
            assert e - s + minilm_tokenizer(ctx).n_content <= 64  # the context counts inside the budget
        else:
            assert ctx == ""


# --- BR-009 sentence-abbreviation ------------------------------------------------------------------------------

ABBREV_A = (
    "The Ph.D.'s committee approved 3.14 million for field work, e.g. soil cores from the U.S. state of Ohio. "
    "Dr. Ames signed the form on Friday."
)
ABBREV_B = "She earned a Ph.D.: a rare feat. It took six years."


def test_br009_abbreviations_do_not_end_sentences(minilm_tokenizer):
    assert len(ABBREV_A) == 140
    _, b = split("sentence_window:window_size=0", ABBREV_A, minilm_tokenizer)
    assert stripped_spans(ABBREV_A, b) == [(0, 104), (105, 140)]
    for chunk in b.texts(ABBREV_A):
        assert not chunk.endswith(("Ph.D.", "3.", "e.g.", "U.S.", "Dr."))


def test_br009_abbreviation_before_colon(minilm_tokenizer):
    assert len(ABBREV_B) == 51
    _, b = split("sentence_window:window_size=0", ABBREV_B, minilm_tokenizer)
    assert stripped_spans(ABBREV_B, b) == [(0, 32), (33, 51)]


def test_br009_same_segmenter_feeds_recursive_and_semantic(minilm_tokenizer):
    tok = minilm_tokenizer(ABBREV_A)
    sentence_ends = {int(tok.offsets[e - 1, 1]) for _, e in SentenceSegmenter().token_spans(ABBREV_A, tok).tolist()}
    assert sentence_ends == {104, 140}
    # recursive must cut at the sentence level here (the text is 42 tokens, one line): only at 104
    _, b = split("recursive:chunk_size=34", ABBREV_A, minilm_tokenizer)
    assert stripped_spans(ABBREV_A, b) == [(0, 104), (105, 140)]
    embed = CountingEmbedder()
    _, b = split("semantic:percentile=100", ABBREV_A, minilm_tokenizer, embed)
    assert len(embed.calls) == 1 and embed.calls[0].shape == (2, 2)
    assert {e for _, e in b.char_spans.tolist()} <= {104, 140}


# --- BR-010 semantic-single-sentence ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["The harbor froze early this winter.", "notes without any final punctuation"]
)
def test_br010_single_sentence_semantic(minilm_tokenizer, text):
    assert len(text) == 35
    embed = CountingEmbedder()
    with np.errstate(all="raise"):  # a percentile of an empty list would warn; NaN math would raise
        _, b = split("semantic:breakpoint_percentile=95", text, minilm_tokenizer, embed)
    assert spans(b.char_spans) == [(0, 35)]
    assert len(embed.calls) <= 1
    assert sum(c.shape[0] for c in embed.calls) <= 1  # at most once per sentence


def test_br010_empty_document_semantic(minilm_tokenizer):
    embed = CountingEmbedder()
    _, b = split("semantic:breakpoint_percentile=95", "", minilm_tokenizer, embed)
    assert len(b) == 0 and b.char_spans.shape == (0, 2)
    assert embed.calls == []


def test_br010_two_sentences_call_the_embedder_once(minilm_tokenizer):
    text = "The harbor froze early this winter. Boats stayed in."
    embed = CountingEmbedder()
    with np.errstate(all="raise"):
        _, b = split("semantic:breakpoint_percentile=95", text, minilm_tokenizer, embed)
    assert len(embed.calls) == 1 and embed.calls[0].shape == (2, 2)
    assert len(b) == 1  # one similarity: nothing lies below its own percentile


# --- parameters and specs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fixed", "recursive", "heading"])
@pytest.mark.parametrize("size, overlap", [(8, 8), (8, 9), (0, 0), (8, -1), (-3, 0)])
def test_br003_bad_size_overlap_raise_naming_both_values(name, size, overlap):
    """BR-003: a size/overlap pair that would loop forever is refused when the strategy is built."""
    with pytest.raises(ValueError) as err:
        get_strategy(f"{name}:chunk_size={size},chunk_overlap={overlap}")
    assert f"={size}" in str(err.value) and f"overlap={overlap}" in str(err.value)


@pytest.mark.parametrize(
    "factory",
    [
        lambda: Fixed(size=8.0),
        lambda: Fixed(size=True),
        lambda: Recursive(max_tokens="8"),
        lambda: SentenceWindow(window=1.5),
        lambda: Semantic(percentile="10"),
        lambda: Heading(levels=("1",)),
    ],
)
def test_wrong_types_raise_type_error(factory):
    with pytest.raises(TypeError):
        factory()


@pytest.mark.parametrize(
    "spec, words",
    [
        ("sentence_window:window=-1", ["window=-1"]),
        ("sentence_window:window=0,stride=2", ["window=0", "stride=2"]),
        ("sentence_window:window=1,stride=0", ["stride=0"]),
        ("semantic:percentile=101", ["percentile=101"]),
        ("semantic:percentile=-1", ["percentile=-1"]),
        ("semantic:min_tokens=10,max_tokens=5", ["min_tokens=10", "max_tokens=5"]),
        ("semantic:max_tokens=0", ["max_tokens=0"]),
        ("heading:levels=7", ["levels"]),
        ("fixed:size=abc", ["size", "abc"]),
        ("fixed:width=3", ["width"]),
        ("nonexistent", ["nonexistent"]),
    ],
)
def test_bad_specs_raise_value_error(spec, words):
    with pytest.raises(ValueError) as err:
        get_strategy(spec)
    for word in words:
        assert word in str(err.value)


def test_registry_has_the_five_with_help():
    reg = registry()
    assert {"fixed", "recursive", "heading", "sentence_window", "semantic"} <= set(reg)
    for name in ("fixed", "recursive", "heading", "sentence_window", "semantic"):
        cls = reg[name]
        assert cls.name == name and cls.bet
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{name}.{f.name} has no help"
    assert reg["semantic"].needs_sentence_vectors and not reg["fixed"].needs_sentence_vectors


@pytest.mark.parametrize(
    "strategy",
    [
        Fixed(),
        Fixed(size=32, overlap=8),
        Recursive(max_tokens=100, overlap=10),
        Heading(),
        Heading(max_tokens=64, overlap=4, levels=(1, 3)),
        SentenceWindow(),
        SentenceWindow(window=2, stride=3),
        Semantic(),
        Semantic(percentile=2.5, min_tokens=4, max_tokens=300, source="BAAI/bge-small-en-v1.5"),
    ],
)
def test_spec_round_trip(strategy):
    again = get_strategy(strategy.spec)
    assert again == strategy
    assert again.spec == strategy.spec
    assert strategy.to_dict()["name"] == strategy.name


def test_spec_aliases():
    assert get_strategy("fixed:chunk_size=4,chunk_overlap=1") == Fixed(size=4, overlap=1)
    assert get_strategy("recursive:chunk_size=8") == Recursive(max_tokens=8)
    assert get_strategy("heading:chunk_size=34") == Heading(max_tokens=34)
    assert get_strategy("sentence_window:window_size=0") == SentenceWindow(window=0)
    # LangChain's breakpoint_percentile thresholds distances (95 = cut the top 5%): our percentile is 100 - p
    assert get_strategy("semantic:breakpoint_percentile=95") == Semantic(percentile=5.0)
    with pytest.raises(ValueError, match="twice"):
        get_strategy("fixed:size=4,chunk_size=5")


# --- long documents -------------------------------------------------------------------------------------------

FINANCE = data_root() / "chroma_chunking_eval" / "corpora" / "finance.md"


@pytest.mark.slow  # finance.md through each strategy: about a minute on 2 cores
@pytest.mark.skipif(not FINANCE.exists(), reason="shared corpus not present")
@pytest.mark.parametrize("name", STRATEGIES)
def test_long_document_holds_the_invariants(minilm_tokenizer, name):
    """finance.md (738k chars, about 157k tokens) through each strategy (its speed: test_br003 counts the
    splitter's work; scripts/bench_*.py time it)."""
    text = FINANCE.read_text(encoding="utf-8")
    doc = Document("finance.md", text)
    tok = minilm_tokenizer(doc)
    sentences = SentenceSegmenter()
    b = get_strategy(name).split(doc, tok, fake_embedder(), sentences=sentences)
    check_boundaries(text, tok, b, chunk_texts=handed_out(doc, b, name))


@pytest.mark.parametrize(
    "name", ["fixed:size=3", "recursive:max_tokens=6", "heading:max_tokens=6", "sentence_window", "semantic"]
)
def test_split_reads_the_sentences_it_is_given(minilm_tokenizer, monkeypatch, name):
    """``split(..., sentences=seg)`` reads ``seg``'s cache (segmented ahead: pysbd is not called again) and cuts
    exactly as ``split`` with its own fresh segmenter."""
    text = "# Notes\n\nDr. Ames went home. It rained all day, e.g. on the U.S. team.\n\nBirds sing. Done."
    doc = Document("d", text)
    tok = minilm_tokenizer(doc)
    strategy = get_strategy(name)
    alone = strategy.split(doc, tok, fake_embedder())
    seg = SentenceSegmenter()
    seg.presegment([text])

    def no_pysbd(*args):
        raise AssertionError("segmented again")

    monkeypatch.setattr("latechunk.sentences.segment._segment_paragraph", no_pysbd)
    shared = strategy.split(doc, tok, fake_embedder(), sentences=seg)
    np.testing.assert_array_equal(shared.token_spans, alone.token_spans)
    np.testing.assert_array_equal(shared.char_spans, alone.char_spans)
    if strategy.sentence_paragraphs() is not None:  # the others never ask for sentences
        with pytest.raises(AssertionError, match="segmented again"):
            strategy.split(doc, tok, fake_embedder())  # a fresh segmenter of its own


@pytest.mark.parametrize(
    "name", ["fixed:size=3", "recursive:max_tokens=6", "heading:max_tokens=6", "sentence_window", "semantic"]
)
def test_instruction_prefix_stays_out_of_spans(minilm_tokenizer, name):
    """With a prefix the lead frame is [CLS] + prefix tokens; spans start after it and char spans index the text."""
    from latechunk.tokenize import DocumentTokenizer

    prefixed = DocumentTokenizer(minilm_tokenizer.tokenizer, prefix="passage: ")
    text = "# Notes\n\nDogs bark. Cats sleep.\n\nBirds sing at dawn."
    tok, b = _split(get_strategy(name), text, prefixed, fake_embedder())
    assert tok.content_start == 3  # [CLS] passage :
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))
    _, b_plain = _split(get_strategy(name), text, minilm_tokenizer, fake_embedder())
    np.testing.assert_array_equal(b.char_spans, b_plain.char_spans)
    np.testing.assert_array_equal(b.token_spans - 3, b_plain.token_spans - 1)


# --- BR-021 segmenter-placeholder-chars (strategy part; the segmenter: tests/test_sentences.py) ----------------

BR021_MARKS = list(PYSBD_PLACEHOLDERS) + ["&ᓴ&", "☏☏", "ƪƪƪ", PYSBD_PLACEHOLDERS]


@pytest.mark.parametrize("mark", BR021_MARKS)
def test_br021_pysbd_placeholders_keep_sentence_chunks(minilm_tokenizer, mark):
    """BR-021: a text holding one of pysbd's placeholder characters: three sentence chunks, whole sentences
    under recursive, no warning, exact slices and coverage."""
    import warnings

    text = f"Pack the tent {mark} before dusk. Light the stove early. Boil the water twice."
    shift = len(mark) - 1
    sentences = [(0, 28 + shift), (29 + shift, 51 + shift), (52 + shift, 73 + shift)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, b = split("sentence_window:window=0", text, minilm_tokenizer)
        assert stripped_spans(text, b) == sentences
        tok, b = split("recursive:max_tokens=8", text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=8)
    if len(mark) == 1:  # (a longer mark makes the first sentence longer than 8 tokens: it is cut inside)
        starts, ends = {s for s, _ in sentences}, {e for _, e in sentences}
        for s, e in stripped_spans(text, b):  # every chunk is a run of whole sentences
            assert s in starts and e in ends, (text[s:e], sentences)


# --- BR-023 whitespace-only-chunk: every strategy with byte-level BPE and Unigram as well as WordPiece ----------

TOKENIZER_KINDS = ["wordpiece", "bpe", "bpe-untrimmed", "unigram"]
BR023 = "Owls hunt at night.\n\n\n\nBats fly at dusk.\n   "


@pytest.mark.parametrize("kind", ["bpe", "bpe-untrimmed"])
@pytest.mark.parametrize("spec", ["recursive:max_tokens=10", "fixed:size=4", "heading:max_tokens=10"])
def test_br023_no_whitespace_only_chunk_under_byte_level_bpe(kind, spec):
    """BR-023: with byte-level BPE (runs of newlines and spaces are tokens of their own, zero-width under
    trim_offsets) every chunk holds a content token and text, spans tile the tokens, budget, exact slices."""
    dt = tiny_document_tokenizer(kind)
    tok, b = split(spec, BR023, dt)
    assert any(tok.offsets[p, 1] <= tok.offsets[p, 0] or BR023[slice(*tok.offsets[p])].isspace()
               for p in range(tok.content_start, tok.content_end)), "the case needs whitespace tokens"
    budget = get_strategy(spec).to_dict().get("max_tokens") or get_strategy(spec).to_dict().get("size")
    check_boundaries(BR023, tok, b, max_tokens=budget, chunk_texts=handed_out(Document("case", BR023), b))
    assert all(BR023[s:e].strip() for s, e in b.char_spans.tolist())
    ts = b.token_spans
    assert (np.diff(ts[:, 0]) > 0).all() and (ts[1:, 0] >= ts[:-1, 1]).all()  # increasing, no overlap
    # issue 36: only whitespace tokens lie between chunks, or before the first and after the last
    bounds = [tok.content_start, *ts.reshape(-1).tolist(), tok.content_end]
    gaps = [p for x, y in zip(bounds[::2], bounds[1::2]) for p in range(x, y)]
    assert gaps and not any(BR023[slice(*tok.offsets[p])].strip() for p in gaps)


@pytest.mark.parametrize("kind", ["bpe", "bpe-untrimmed", "unigram"])
@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("text", ["   ", "\n\n\n", " \r\n\t ", "\u3000\u00a0"])
def test_whitespace_only_text_gives_no_chunk_with_whitespace_tokens(kind, name, text):
    """BR-004 with tokenizers that make whitespace tokens: a text of whitespace alone has tokens but no chunk."""
    _, b = split(name, text, tiny_document_tokenizer(kind), CountingEmbedder())
    assert len(b) == 0


def _strategy_draw(name: str, data) -> tuple:
    """A random strategy of ``name`` and its token budget (None for sentence_window)."""
    if name == "fixed":
        size = data.draw(st.integers(1, 24))
        return Fixed(size=size, overlap=data.draw(st.integers(0, size - 1))), size
    if name == "recursive":
        m = data.draw(st.integers(1, 40))
        return Recursive(max_tokens=m, overlap=data.draw(st.integers(0, m - 1))), m
    if name == "heading":
        return Heading(max_tokens=(m := data.draw(st.integers(1, 40)))), m
    if name == "sentence_window":
        w = data.draw(st.integers(0, 2))
        return SentenceWindow(window=w, stride=data.draw(st.integers(1, 2 * w + 1))), None
    m = data.draw(st.integers(1, 60))
    return Semantic(percentile=data.draw(st.floats(0, 100)), min_tokens=data.draw(st.integers(0, m)), max_tokens=m), m


@pytest.mark.parametrize("kind", TOKENIZER_KINDS)
@pytest.mark.parametrize("name", STRATEGIES)
@settings(max_examples=max(10, EXAMPLES // 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, data=st.data())
def test_every_strategy_has_a_content_token_in_every_chunk_with_every_tokenizer_family(kind, name, text, data):
    """BR-023's kind: every strategy under WordPiece, byte-level BPE (trimmed and untrimmed offsets) and Unigram:
    every chunk holds a token covering a non-whitespace character, and every other invariant holds."""
    strategy, budget = _strategy_draw(name, data)
    dt = tiny_document_tokenizer(kind)
    doc = Document("d", text)
    tok = dt(doc)
    b = strategy.split(doc, tok, CountingEmbedder())
    check_boundaries(text, tok, b, max_tokens=budget, chunk_texts=handed_out(doc, b))


# --- BR-022 markdown-front-matter -------------------------------------------------------------------------------

BR022 = ("---\ntitle: Pond survey\ntags: field\n---\n\nNotes from the spring count at the north pond.\n\n# Frogs\n\n"
         "Frogs call after rain.\n")
BR022_TOML = ("+++\n# settings\ntitle = \"Pond survey\"\n+++\n\nNotes from the spring count at the north pond.\n\n"
              "# Frogs\n\nFrogs call after rain.\n")


@pytest.mark.parametrize("text", [BR022, BR022_TOML, BR022.replace("\n", "\r\n"), "\ufeff" + BR022],
                         ids=["yaml", "toml", "yaml-crlf", "yaml-after-bom"])
def test_br022_front_matter_is_not_read_as_headings(minilm_tokenizer, text):
    """BR-022: YAML (---) and TOML (+++) front matter is text of the preamble: no heading path holds a front
    matter line, no cut inside it, no chunk of a lone fence; "Notes" has path (), "# Frogs" ("Frogs",)."""
    fence = "+++" if "+++" in text else "---"
    fm_end = text.rindex(fence, 0, text.index("Notes")) + 3  # the end of the closing fence
    _, b = split("heading:max_tokens=64", text, minilm_tokenizer)
    chunks = [(text[s:e], s, e, path) for (s, e), path in zip(b.char_spans.tolist(), b.heading_paths)]
    for _, s, e, path in chunks:
        assert not any(word in title for title in path for word in ("title", "tags", "settings", "Pond"))
        assert not 0 < s < fm_end and not 0 < e < fm_end, (s, e)
    assert all(chunk.strip() not in ("---", "+++") for chunk, *_ in chunks)
    (notes,) = [c for c in chunks if "Notes" in c[0]]
    (frogs,) = [c for c in chunks if "# Frogs" in c[0]]
    assert notes[3] == () and frogs[3] == ("Frogs",)
    assert frogs[1] == text.index("# Frogs")
    if text == BR022:
        assert frogs[1] == 88 and fm_end == 38 and len(text) == 120


def test_br022_front_matter_only_at_the_start(minilm_tokenizer):
    """A --- block later in the text is markdown as before (a setext h2 over ---), not front matter."""
    text = "Intro line.\n\n---\ntitle: x\n---\n\nBody text here.\n"
    _, b = split("heading:max_tokens=64", text, minilm_tokenizer)
    assert ("title: x",) in b.heading_paths


# --- BR-025 leading-bom-heading ---------------------------------------------------------------------------------

BR025 = ("\ufeff# Field notes\n\nWe counted eleven herons by the reeds before sunrise.\n\n## Weather\n\n"
         "Rain after noon kept the path muddy until evening.\n")


@pytest.mark.parametrize("mark", ["\ufeff", "\u200b", "\u200e\ufeff"])
def test_br025_leading_bom_does_not_hide_the_first_heading(minilm_tokenizer, mark):
    """BR-025 through the Python API: an invisible mark before the first # keeps the heading a heading; chunks
    are exact slices of the text as given (the mark included)."""
    text = mark + BR025[1:]
    _, b = split("heading:max_tokens=64", text, minilm_tokenizer)
    assert b.heading_paths == (("Field notes",), ("Field notes", "Weather"))
    assert b.char_spans[0, 0] == 0 and text[b.char_spans[0, 0] : b.char_spans[0, 1]].startswith(mark + "# Field")


def test_br025_leading_bom_through_a_jsonl_line(minilm_tokenizer, tmp_path):
    """BR-025 through a .jsonl line (plain, and with a title that puts the text's start on a later line)."""
    import json

    from latechunk.io import iter_inputs

    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "a", "text": BR025}) + "\n"
                    + json.dumps({"id": "b", "title": "Trip", "text": BR025}) + "\n", encoding="utf-8")
    docs = {d.doc_id: d for d in iter_inputs([path])}
    assert docs["a"].text == BR025  # the text as given, mark included
    _, b = split("heading:max_tokens=64", docs["a"].text, minilm_tokenizer)
    assert b.heading_paths == (("Field notes",), ("Field notes", "Weather"))
    _, b = split("heading:max_tokens=64", docs["b"].text, minilm_tokenizer)
    assert b.heading_paths[-2:] == (("Field notes",), ("Field notes", "Weather"))


# --- issue 10, fault 8: headings and table headers belong to what follows -----------------------------------------

HEADED = ("Some intro words here and there, enough of them to fill a chunk.\n\n## Prices\n\n"
          "The table below lists them.\n\n| Part | Unit | Price |\n|---|---|---|\n| bolt | box | 3.50 |\n"
          "| nut | bag | 1.20 |\n| gear | each | 9.99 |\n")


@pytest.mark.parametrize("max_tokens", [20, 24, 30, 40])
def test_recursive_keeps_a_heading_and_a_table_header_with_what_follows(minilm_tokenizer, max_tokens):
    """recursive never ends a chunk with a heading line or a table's header/delimiter rows when they fit at the
    start of the next chunk with what follows them."""
    tok, b = split(f"recursive:max_tokens={max_tokens}", HEADED, minilm_tokenizer)
    check_boundaries(HEADED, tok, b, max_tokens=max_tokens)
    chunks = [HEADED[s:e] for s, e in b.char_spans.tolist()]
    assert not any(c.endswith("## Prices") for c in chunks), chunks
    header = "| Part | Unit | Price |\n|---|---|---|"
    assert not any(c.endswith((header, "| Part | Unit | Price |")) for c in chunks if c != header), chunks
    if max_tokens >= 30:  # header, delimiter and the first row fit one chunk
        assert any(c.startswith(header + "\n| bolt") for c in chunks), chunks


def test_recursive_sticky_pieces_fall_back_when_they_do_not_fit(minilm_tokenizer):
    """A heading that cannot fit with the next piece stays where the budget puts it (never over budget)."""
    text = "Intro words.\n\n# A heading of several words here\n\n" + "word " * 40
    tok, b = split("recursive:max_tokens=12", text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=12)


def test_merge_pieces_moves_a_sticky_run_to_the_next_chunk():
    from latechunk.strategies._common import merge_pieces

    pieces = np.array([[0, 4], [4, 6], [6, 10]])  # 4, 2 (a heading), 4 tokens
    assert merge_pieces(pieces, 6).tolist() == [[0, 6], [6, 10]]
    assert merge_pieces(pieces, 6, sticky=np.array([False, True, False])).tolist() == [[0, 4], [4, 10]]
    # it would not fit with the next piece: stays
    assert merge_pieces(pieces, 5, sticky=np.array([False, True, False])).tolist() == [[0, 4], [4, 6], [6, 10]]


SEMANTIC_HEADED = ("# Tides\n\nThe moon pulls the sea. Tides rise twice a day. Sailors watch the tables.\n\n"
                   "```\n"
                   "tide --port brest\n"
                   "```\n\n"
                   "## Storms\n\nWind builds waves. Storm surges flood low coasts. Levees hold the water back.\n")


def test_semantic_default_min_tokens_keeps_a_heading_with_its_body(minilm_tokenizer):
    """semantic's default min_tokens joins a lone heading or code fence (3-token chunks under min_tokens=0) to the
    text after it: with any similarities no default chunk is a heading or a fence alone."""
    default = Semantic()
    assert default.min_tokens > 0
    for seed in range(5):
        rng = np.random.default_rng(seed)

        def random_vectors(doc, tok, spans, rng=rng):
            return rng.normal(size=(np.asarray(spans).shape[0], 8))

        tok, b = _split(Semantic(percentile=50), SEMANTIC_HEADED, minilm_tokenizer, random_vectors)
        check_boundaries(SEMANTIC_HEADED, tok, b, max_tokens=default.limit)
        for s, e in b.char_spans.tolist():
            chunk = SEMANTIC_HEADED[s:e]
            assert chunk not in ("# Tides", "## Storms", "```"), (seed, chunk)
            assert not chunk.endswith("## Storms"), (seed, chunk)


def test_semantic_front_matter_does_not_make_a_heading_long_enough_to_stand_alone(minilm_tokenizer):
    """Third trial: in a markdown file with front matter, semantic cut "front matter + # Heading" (22 tokens, over
    the default min_tokens of 16) off from the heading's text. On markdown input min_tokens counts the tokens that
    carry content, so the heading stays with its text; the same text as plain text is unchanged."""
    front = "---\ntitle: [unclosed\n  - broken: yaml: here\n  tags: [one, two, three]\n---\n\n"
    text = front + SEMANTIC_HEADED

    body = text.index("The moon")

    def cut_after_the_heading(doc, tok, spans):  # one low similarity: between "# Tides" and its first sentence
        starts = tok.offsets[np.asarray(spans)[:, 0], 0]
        return np.where((starts < body)[:, None], [[1.0, 0.0]], [[0.0, 1.0]])

    firsts = {}
    for md in (True, False):
        doc = Document("d", text, {"markdown": md})
        tok = minilm_tokenizer(doc)
        b = Semantic(percentile=50).split(doc, tok, cut_after_the_heading)
        check_boundaries(text, tok, b, max_tokens=Semantic().limit)
        firsts[md] = text[slice(*b.char_spans[0].tolist())]
    assert "The moon pulls the sea." in firsts[True], firsts[True]
    # as plain text the front matter's tokens count, so the cut the trial saw stays there (the test can fail)
    assert firsts[False].rstrip().endswith("# Tides"), firsts[False]


def test_semantic_default_max_tokens_is_capped_at_the_model_content_limit(minilm_tokenizer):
    """Issue 10: semantic's default max_tokens (512) exceeded MiniLM's 510 content tokens, so some naive chunks
    needed two windows. The default is now None: 512 capped at the content limit the pipeline gives; an explicit
    max_tokens wins; the SPEC does not change."""
    default = Semantic()
    assert default.max_tokens is None and default.limit == 512
    capped = default.for_model(510)
    assert capped.limit == 510 and capped.spec == default.spec and capped == default
    assert default.for_model(8190).limit == 512
    assert Semantic(max_tokens=600).for_model(510).limit == 600
    with pytest.raises(ValueError, match="content_limit"):
        default.for_model(0)
    # one long group (every similarity equal: no cut) is re-cut at the capped limit
    text = "The valve opens when the pressure rises above the set point. " * 120

    def same_vectors(doc, tok, spans):
        return np.ones((np.asarray(spans).shape[0], 4))

    for strat, limit in ((default.for_model(100), 100), (default, 512)):
        _tok, b = _split(strat, text, minilm_tokenizer, same_vectors)
        lengths = b.token_spans[:, 1] - b.token_spans[:, 0]
        assert lengths.max() <= limit
        assert lengths.max() > limit - 20  # the cap, not some smaller size, decides the cut


# --- issue 36: a run of headings is not left alone at small budgets ------------------------------------------------

HEADING_RUN = ("# Guide\n\n## Billing\n\n### Fees\n\nLate fees are charged monthly. They are added to the next invoice. "
               "A second late payment doubles the fee.\n")


@pytest.mark.parametrize("spec", ["heading", "recursive"])
@pytest.mark.parametrize("max_tokens", [6, 8, 10, 12, 14, 16, 20, 24])
def test_heading_run_is_not_left_alone_at_small_budgets(minilm_tokenizer, spec, max_tokens):
    """Issue 36: with a small budget a run of headings (``#``, ``##``, ``### Fees``: 2 + 3 + 4 tokens) was a chunk
    of its own and its body the next chunk, although ``### Fees`` and the start of its body fit the budget
    together. The last heading now starts the chunk of its body: the run keeps whatever of it fits with the body's
    first piece, the rest ends the chunk before; when the body's first piece (a sentence, a paragraph) does not
    fit with the heading, it is cut (coarse first) so that its start does."""
    doc = Document("fees", HEADING_RUN, {"source": "fees.md"})
    tok = minilm_tokenizer(doc)
    b = get_strategy(f"{spec}:max_tokens={max_tokens}").split(doc, tok, None)
    check_boundaries(HEADING_RUN, tok, b, max_tokens=max_tokens, chunk_texts=handed_out(doc, b, spec))
    chunks = b.texts(HEADING_RUN)
    assert not any(c.endswith(("### Fees", "## Billing\n\n### Fees")) for c in chunks), chunks
    with_body = [c for c in chunks if "### Fees" in c]
    assert len(with_body) == 1 and with_body[0].endswith(("Late", "fees", "are", "charged", "monthly.",
                                                           "invoice.", "fee.")), chunks
    if max_tokens >= 15:  # the whole run and the first sentence fit: one chunk, the sentence whole
        assert chunks[0].startswith("# Guide") and chunks[0].endswith("charged monthly."), chunks
    if spec == "heading":  # a chunk's path is that of the last heading it holds
        for chunk, path in zip(chunks, b.heading_paths):
            held = [t for t in ("Guide", "Billing", "Fees") if f" {t}" in chunk]
            expected = ("Guide", "Billing", "Fees")[: 3 if not held or "Fees" in held else len(held)]
            assert path == expected, (chunk, path)


def test_merge_pieces_keeps_the_fitting_tail_of_a_sticky_run_with_the_next_piece():
    """Issue 36: a chunk made only of sticky pieces (a heading run) ended with all of them, and a run too long to
    move whole stayed whole: now the longest tail of the run that fits with the next piece moves, and at least one
    piece stays before it."""
    from latechunk.strategies._common import merge_pieces

    pieces = np.array([[0, 2], [2, 5], [5, 9], [9, 15]])  # "# Guide" 2, "## Billing" 3, "### Fees" 4, body 6
    sticky = np.array([True, True, True, False])
    assert merge_pieces(pieces, 10, sticky=sticky).tolist() == [[0, 5], [5, 15]]
    assert merge_pieces(pieces, 13, sticky=sticky).tolist() == [[0, 2], [2, 15]]
    # after other text: the tail of the run that fits moves, the rest ends the chunk before
    pieces = np.array([[0, 4], [4, 6], [6, 9], [9, 15]])  # text 4, "## A" 2, "### B" 3, body 6
    sticky = np.array([False, True, True, False])
    assert merge_pieces(pieces, 10, sticky=sticky).tolist() == [[0, 6], [6, 15]]
