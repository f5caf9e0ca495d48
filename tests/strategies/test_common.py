"""latechunk/strategies/: the rules every strategy holds (no tokens no chunks, BR-004 empty input, BR-023 a
content token in every chunk under every tokenizer family, CRLF cuts like LF, the instruction prefix and the
sentences it is given, long documents), parameter validation and SPEC round trips through the registry, and
``merge_pieces`` (latechunk/strategies/_common.py). Each strategy's own tests, with its side of the cases
BR-001..BR-025 of ``../shared/cases/README.md`` and their exact expectations, are in the files beside this one
(``test_fixed.py``, ``test_recursive.py``, ``test_heading.py``, ``test_sentence_window.py``, ``test_semantic.py``,
``test_code.py``; the sentence segmenter: ``tests/sentences/test_sentences.py``); their helpers:
``strategy_helpers.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latechunk.eval.datasets import data_root
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies import get_strategy, registry
from latechunk.strategies.fixed import Fixed
from latechunk.strategies.heading import Heading
from latechunk.strategies.recursive import Recursive
from latechunk.strategies.semantic import Semantic
from latechunk.strategies.sentence_window import SentenceWindow
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.models import tiny_document_tokenizer
from tests.strategies.strategy_helpers import (
    EXAMPLES,
    FRAGMENTS,
    SETTINGS,
    STRATEGIES,
    CountingEmbedder,
    _split,
    fake_embedder,
    handed_out,
    split,
    texts,
)

# --- properties -----------------------------------------------------------------------------------------------


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


# --- issue 10, fault 8: headings and table headers belong to what follows -----------------------------------------


def test_merge_pieces_moves_a_sticky_run_to_the_next_chunk():
    from latechunk.strategies._common import merge_pieces

    pieces = np.array([[0, 4], [4, 6], [6, 10]])  # 4, 2 (a heading), 4 tokens
    assert merge_pieces(pieces, 6).tolist() == [[0, 6], [6, 10]]
    assert merge_pieces(pieces, 6, sticky=np.array([False, True, False])).tolist() == [[0, 4], [4, 10]]
    # it would not fit with the next piece: stays
    assert merge_pieces(pieces, 5, sticky=np.array([False, True, False])).tolist() == [[0, 4], [4, 6], [6, 10]]


# --- issue 36: a run of headings is not left alone at small budgets ------------------------------------------------


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
