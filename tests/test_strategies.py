"""Property and unit tests of the five strategies (the sentence segmenter: ``tests/test_sentences.py``).

Every strategy runs on hypothesis-generated texts (unicode, CRLF, emoji, CJK and Hangul, empty, markdown-ish)
through the shared invariant helper ``tests/invariants.py``; plus parameter validation and SPEC round trips.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latechunk.eval.datasets import data_root
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies import get_strategy, registry
from latechunk.strategies._common import allowed_cuts, content_offsets
from latechunk.strategies.fixed import Fixed
from latechunk.strategies.heading import Heading
from latechunk.strategies.recursive import Recursive
from latechunk.strategies.semantic import Semantic
from latechunk.strategies.sentence_window import SentenceWindow
from latechunk.types import Document
from tests.invariants import check_boundaries

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


def fake_embedder(calls: list | None = None):
    """A deterministic sentence embedder: a hashed bag of the sentence's token ids (dim 16)."""

    def embed(doc, tok, spans):
        if calls is not None:
            calls.append(np.asarray(spans).copy())
        out = np.zeros((len(spans), 16), dtype=np.float32)
        for i, (a, b) in enumerate(np.asarray(spans).tolist()):
            np.add.at(out[i], tok.input_ids[a:b] % 16, 1.0)
        return out

    return embed


def _split(strategy, text, tokenizer, embed=None):
    doc = Document("d", text)
    tok = tokenizer(doc)
    return tok, strategy.split(doc, tok, embed)


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
    check_boundaries(text, tok, b, max_tokens=size)
    if allowed_cuts(content_offsets(tok)).all():
        spans_new = (b.token_spans - tok.content_start).tolist()
        assert [tuple(s) for s in spans_new] == fixed_ref(tok.n_content, size, overlap)


@SETTINGS
@given(text=texts, max_tokens=st.integers(1, 40), data=st.data())
def test_recursive_invariants(minilm_tokenizer, text, max_tokens, data):
    overlap = data.draw(st.integers(0, max_tokens - 1))
    tok, b = _split(Recursive(max_tokens=max_tokens, overlap=overlap), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=max_tokens)
    ts = b.token_spans
    assert (np.maximum(ts[:-1, 1] - ts[1:, 0], 0) <= overlap).all()


@SETTINGS
@given(text=texts, max_tokens=st.integers(1, 40), levels=st.sets(st.integers(1, 6), min_size=1))
def test_heading_invariants(minilm_tokenizer, text, max_tokens, levels):
    tok, b = _split(Heading(max_tokens=max_tokens, levels=tuple(levels)), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=max_tokens)
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
    check_boundaries(text, tok, b)
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
    check_boundaries(text, tok, b, max_tokens=max_tokens)
    sent = SentenceSegmenter().token_spans(text, tok)
    assert len(calls) == (1 if sent.shape[0] >= 2 else 0)
    if calls:
        np.testing.assert_array_equal(calls[0], sent)


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
    check_boundaries(text, tok, b)


def test_fixed_keeps_one_character_whole(minilm_tokenizer):
    """A Hangul syllable is several wordpieces with the same offsets; no window edge falls inside it."""
    text = "한국어 텍스트"
    tok, b = _split(Fixed(size=2, overlap=1), text, minilm_tokenizer)
    check_boundaries(text, tok, b)
    offs = tok.offsets
    for a, e in b.token_spans.tolist():
        assert a == tok.content_start or offs[a, 0] > offs[a - 1, 0]


def test_heading_paths_and_levels(minilm_tokenizer):
    text = "# A\n\nintro text here\n\n## B\n\nbody of b\n\n### C\n\nbody of c\n\n## D\n\nbody of d\n"
    _, b = _split(Heading(max_tokens=64), text, minilm_tokenizer)
    assert b.heading_paths == (("A",), ("A", "B"), ("A", "B", "C"), ("A", "D"))
    tok, b2 = _split(Heading(max_tokens=64, levels=(1, 2)), text, minilm_tokenizer)
    assert b2.heading_paths == (("A",), ("A", "B"), ("A", "D"))
    check_boundaries(text, tok, b2)


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

    tok, b = _split(Semantic(percentile=30), text, minilm_tokenizer, embed)
    assert [t.split(".")[0] for t in b.texts(text)] == ["Cats purr softly", "Trains run late"]
    check_boundaries(text, tok, b)


def test_semantic_without_embedder_raises(minilm_tokenizer):
    with pytest.raises(ValueError, match="embed_sentences"):
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


# --- parameters and specs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fixed", "recursive", "heading"])
@pytest.mark.parametrize("size, overlap", [(8, 8), (8, 9), (0, 0), (8, -1), (-3, 0)])
def test_size_overlap_validation_names_both_values(name, size, overlap):
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
    assert reg["semantic"].needs_embedder and not reg["fixed"].needs_embedder


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


@pytest.mark.slow
@pytest.mark.skipif(not FINANCE.exists(), reason="shared corpus not present")
@pytest.mark.parametrize("name", ["fixed", "recursive", "heading", "sentence_window", "semantic"])
def test_long_document_is_fast(minilm_tokenizer, name):
    """finance.md (738k chars, about 157k tokens) in seconds, not minutes."""
    text = FINANCE.read_text(encoding="utf-8")
    doc = Document("finance.md", text)
    tok = minilm_tokenizer(doc)
    sentences = SentenceSegmenter()
    sentences.char_spans(text)  # the segmenter's time is measured on its own (cached afterwards)
    t0 = time.perf_counter()
    b = get_strategy(name).split(doc, tok, fake_embedder(), sentences=sentences)
    elapsed = time.perf_counter() - t0
    check_boundaries(text, tok, b)
    assert elapsed < 10, f"{name}: {elapsed:.1f} s"


@pytest.mark.parametrize(
    "name", ["fixed:size=3", "recursive:max_tokens=6", "heading:max_tokens=6", "sentence_window", "semantic"]
)
def test_split_reads_the_sentences_it_is_given(minilm_tokenizer, monkeypatch, name):
    """``split(..., sentences=seg)`` reads ``seg``'s cache (segmented ahead: pysbd is not called again) and cuts
    exactly as ``split`` with its own fresh segmenter."""
    import latechunk.sentences

    text = "# Notes\n\nDr. Ames went home. It rained all day, e.g. on the U.S. team.\n\nBirds sing. Done."
    doc = Document("d", text)
    tok = minilm_tokenizer(doc)
    strategy = get_strategy(name)
    alone = strategy.split(doc, tok, fake_embedder())
    seg = SentenceSegmenter()
    seg.presegment([text])

    def no_pysbd(*args):
        raise AssertionError("segmented again")

    monkeypatch.setattr(latechunk.sentences, "_segment_paragraph", no_pysbd)
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
    check_boundaries(text, tok, b)
    _, b_plain = _split(get_strategy(name), text, minilm_tokenizer, fake_embedder())
    np.testing.assert_array_equal(b.char_spans, b_plain.char_spans)
    np.testing.assert_array_equal(b.token_spans - 3, b_plain.token_spans - 1)
