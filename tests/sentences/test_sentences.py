"""latechunk.sentences: the faster pysbd abbreviation pass against stock pysbd, the SentenceSegmenter (cache,
worker processes against the calling thread, fallback, life cycle), and the pipeline's use of one segmenter per
run."""

from __future__ import annotations

import functools
import gc
import os
import pathlib
import re
import signal
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from latechunk import sentences
from latechunk.config import PipelineConfig
from latechunk.eval.datasets import data_root
from latechunk.sentences import SentenceSegmenter, default_workers
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.models import tiny_modernbert_encoder

CORPORA = data_root() / "chroma_chunking_eval" / "corpora"


def _processed(text: str, fast: bool) -> list[str]:
    return sentences._pysbd_segmenter(fast=fast).processor(text).process()


# --- the faster pysbd pass ----------------------------------------------------------------------------------


def test_fast_abbreviation_pass_is_active():
    import pysbd

    lang = sentences._pysbd_segmenter().language_module
    if pysbd.__version__ == sentences._PYSBD_PATCHED_VERSION:
        assert lang.__name__ == "FastEnglish"
        assert lang.AbbreviationReplacer.__name__ == "FastAbbreviationReplacer"
    else:  # another pysbd: stock rules
        assert lang.__name__ == "English"
    assert sentences._pysbd_segmenter(fast=False).language_module.__name__ == "English"


def test_a_token_of_many_periods_costs_linear_memory_and_matches_stock_pysbd():
    """User trial: 200,000 dots took 19.8 GB (the faster pass stored every prefix of the token before each of its
    periods: n prefixes of up to n characters); only prefixes as long as the longest abbreviation can match one.
    A memory bound, not a timing: 20,000 dots stored 200 MB of prefixes before."""
    import tracemalloc

    text = "Intro line. " + "." * 20_000 + " end. Mr. Smith left."
    tracemalloc.start()
    try:
        fast = _processed(text, fast=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 30_000_000, f"peak {peak:,} bytes"
    assert fast == _processed(text, fast=False)


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/data is not present")
def test_fast_pysbd_matches_stock_pysbd_on_real_corpora():
    """Every block of the first 60k characters of each Chroma corpus: identical sentences."""
    n_blocks = 0
    for path in sorted(CORPORA.glob("*.md")):
        text = path.read_text(encoding="utf-8")[:60_000]
        for a, b in sentences._paragraphs(text):
            pos = a
            while pos < b:  # the blocks _segment_paragraph feeds pysbd
                end = min(b, pos + sentences._BLOCK_CHARS)
                block = text[pos:end]
                assert _processed(block, True) == _processed(block, False), (path.name, pos)
                n_blocks += 1
                pos = end
    assert n_blocks > 100


_WORDS = ["Dr", "dr", "e.g", "i.e", "U.S", "Ph.D", "Mr", "no", "No", "St", "st", "a", "A", "approx", "Fig", "fig",
          "vs", "etc", "Inc", "Jan", "ſt", "\u212ag", "ıd", "3", "3.14", "1", "ii", "x", "Ames", "the", "data",
          "Ohio", "he", "It", "I", "mg", "p.m", "a.m", "cf", "al", "et", "(a)", "1)", "U.K", "PhD"]
_PUNCT = ["", "", ".", ".", ". ", "! ", "? ", ",", ":", "'s", ".)", '."', "...", "\n", "\n\n", " - "]


@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_PUNCT)), min_size=1, max_size=40))
@example([("see", ""), ("e.g", ""), ("the", ""), ("exg", "."), ("data", "")])  # "." in an abbreviation is a wildcard
@example([("first", ""), ("ſt", "."), ("next", "")])  # "ſ" matches "s" case-insensitively, but lower() keeps it
@example([("no", "."), ("5", ""), ("and", ""), ("No", "."), ("6", "")])
def test_fast_pysbd_matches_stock_pysbd_on_generated_text(parts):
    """Text dense in abbreviations, periods, case variants and the characters that case-fold to ASCII."""
    text = " ".join(w + p for w, p in parts)
    assert _processed(text, True) == _processed(text, False)


_SEPARATORS = [" ", " ", " ", "\t", "\x0b", "\x0c", "\n", "\r", "\r\n", "\u00a0", "\u2028", "\x85"]
_TOKENS = [*_WORDS, "(dr", "Dr.Smith", "İd", "dé", "“Dr", "Dr’s", "Ph.D.’s", "no.5", "e.g.,", "U.S.-based", "St.Louis", "-", '"', "'", "“", "”", "(", ")",
           "1.", "2.", "a)", "b)", "iv.", "v.", "?", "!", "!!!", "...", "Yahoo!", "word", "Word", "A", "@", "x.jpg"]


@given(st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from(_PUNCT), st.sampled_from(_SEPARATORS)),
                min_size=1, max_size=40))
@example([("Dr", ".", "\x0b"), ("Smith", "", " ")])  # \x0b: whitespace to str.split() and to \s alike
@example([("(dr", ".", " "), ("ames", "", " ")])  # "(dr." is no abbreviation "dr" (no whitespace right before)
def test_fast_pysbd_matches_stock_pysbd_with_any_whitespace(parts):
    """The abbreviation pre-test reads tokens with ``str.split()``: other whitespace, tokens glued to punctuation,
    lists, quotes and brackets, lines."""
    text = "".join(w + p + sep for w, p, sep in parts)
    assert _processed(text, True) == _processed(text, False)


_PLAIN = st.lists(st.sampled_from([*"abcXYZ09 -_,;:'\"“”()]#*|`\t\x0b\x0c\r\n\u00a0\u2028\x85é", "\r\n", "Word ", "- ",
                                   "a) ", "b) ", "1) ", "2) ", "(iv) "]),
                  max_size=80).map("".join)


@given(_PLAIN)
@example('He said -" Then we left')  # pysbd ends a sentence at -" + capital, without a period
@example("one\x85two\u2028three\n\n  four  ")
@example("a) first b) second c) third")  # a list in one line: pysbd cuts it without any period
@example("1) one 2) two 3) three")
@example('say "x" (a b) "y" ok')  # "(...)" between quotes: cut too
def test_plain_lines_path_matches_stock_pysbd(text):
    """Texts without ``.!?`` (those without ``)`` either take the plain-lines path: no pysbd call when they also
    hold no quotation end)."""
    assert _processed(text, True) == _processed(text, False)


def test_plain_lines_path_skips_pysbd(monkeypatch):
    seg = sentences._pysbd_segmenter()
    if not isinstance(seg, sentences._FastSegmenter):
        pytest.skip("another pysbd version: stock pysbd")
    text = "# Title\n\n- one item\n- two items\n| a | b |"
    proc = seg.processor(text)
    monkeypatch.setattr(proc.processor, "process", lambda: pytest.fail("pysbd was called"))
    assert proc.process() == ["# Title", "- one item", "- two items", "| a | b |"]
    with_quote = seg.processor('He said -" Then')  # a quotation end: pysbd decides
    assert with_quote.process() == _processed('He said -" Then', False) == ['He said -"', "Then"]


def test_abbreviation_pre_test_premises():
    """Over all of Unicode: ``str.split()`` and ``\\s`` agree on whitespace, and the only non-ASCII characters that
    ``re.IGNORECASE`` matches to an ASCII letter or digit are the four the fast abbreviation pass looks for."""
    chars = "".join(map(chr, range(0x110000)))
    assert re.sub(r"\s", "", chars) == "".join(chars.split())  # the same characters removed, in C
    folds = "".join(re.findall(r"[a-z0-9]", chars, flags=re.IGNORECASE))
    assert "".join(c for c in folds if not c.isascii()) == "\u0130\u0131\u017f\u212a"
    assert re.fullmatch(sentences._CASE_FOLDS_TO_ASCII, "\u212a")


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        (r"(?<=\s)a[bc](?:x|yz)+", 0, ("a", "bc", "xy")),
        (r"(?<=\s{abbr})\.(?=(\s|:\d+))".format(abbr="dr"), 0, ("d", "r", ".")),
        (r"\b[a-z](?:\.[a-z])+[.]", re.IGNORECASE, (".",)),  # letters under IGNORECASE: no requirement
        (r"ſt\.", re.IGNORECASE, (".",)),
        (r"(?i)dr\.", 0, (".",)),  # inline flag
        (r"a?b*(?!c)[^d]\s.", 0, ()),  # optional, negative lookahead, negated class, categories
        (r"x|y\.", 0, ("xy",)),  # a branch: one requirement of each branch
        (r"x|\s", 0, ()),  # a branch with no requirement
        (r"(?:ab){2,}", 0, ("a", "b")),
        (r"[0-3]", 0, ("0123",)),
        (r"[", 0, ()),  # not a pattern: no requirement (re raises when it runs)
    ],
)
def test_required_chars(pattern, flags, expected):
    assert sentences._required_chars(pattern, flags) == expected


@functools.cache
def _pysbd_patterns() -> tuple[re.Pattern, ...]:
    """Every pattern the fast pysbd ran through the gate (on a sample dense in rules)."""
    sample = ('Dr. Ames, Ph.D., said "wow!!!" (i) first (ii) second. 1. one 2. two\na) x b) y\n'
              "It cost $3.14 at 5 p.m. on Jan. 3, e.g. in the U.S. I.e. here? Yes! ... Ok.[12] Fig. 2 ‘q’ a.jpg")
    for text in (sample, sample.upper(), sample.replace(" ", "\n")):
        _processed(text, True)
    return tuple(p for p, _tests, _reqs in sentences._GATED_RE._compiled.values())


_GATE_TEXT = st.lists(st.sampled_from([*"aAdDrRsSiIvV019 .,;:!?()[]\"'“”-&∯♨☝ȸ\r\n\tſ", "Dr.", "p.m.", "U.S."]),
                      max_size=40).map("".join)


@settings(max_examples=40)
@given(texts=st.lists(_GATE_TEXT, min_size=10, max_size=10))
def test_gate_skips_only_patterns_that_cannot_match(texts):
    """The gate's premise: when a text lacks a required character, the pattern has no match in it."""
    patterns = _pysbd_patterns()
    assert len(patterns) > 50
    for p in patterns:
        tests = sentences._GATED_RE._entry(p.pattern, p.flags)[1]
        for text in texts:
            lacks = any((t not in text) if isinstance(t, str) else (t.search(text) is None) for t in tests)
            if lacks:
                assert p.search(text) is None, (p.pattern, text)


def test_gate_functions_equal_re(monkeypatch):
    """With the gate on: each function gives what ``re`` gives, skipped or not, and findall's memo answers only
    for the same text."""
    gate = sentences._GATED_RE
    monkeypatch.setattr(gate.local, "on", True, raising=False)
    monkeypatch.setattr(gate.local, "findall_memo", {}, raising=False)
    pattern = r"(?<=\s)[a-z](?=\.)"
    for text in ["x a. b. c.", "no period here", "y d. e.", "x a. b. c.", ""]:
        assert gate.findall(pattern, text) == re.findall(pattern, text)
        assert gate.sub(pattern, "#", text) == re.sub(pattern, "#", text)
        assert type(gate.sub(pattern, "#", text)) is str
        assert gate.split(r"\.", text) == re.split(r"\.", text)
        assert [m.span() for m in gate.finditer(pattern, text)] == [m.span() for m in re.finditer(pattern, text)]
        for fn in ("search", "match"):
            got, want = getattr(gate, fn)(r"\w\.", text), getattr(re, fn)(r"\w\.", text)
            assert (got and got.span()) == (want and want.span())
    found = gate.findall(pattern, "x a. b.")
    found.append("mutated by the caller")
    assert gate.findall(pattern, "x a. b.") == ["a", "b"]  # a copy each time
    assert gate.IGNORECASE is re.IGNORECASE and gate.escape is re.escape


def test_gate_is_off_outside_the_fast_path(monkeypatch):
    """Stock pysbd (what the differential tests compare against) never goes through the gate's shortcuts."""
    import pysbd.processor
    import pysbd.utils

    if not isinstance(sentences._pysbd_segmenter(), sentences._FastSegmenter):
        pytest.skip("another pysbd version: stock pysbd")
    assert pysbd.processor.re is sentences._GATED_RE
    assert pysbd.utils.Text.apply._latechunk_gated
    monkeypatch.setattr(sentences._GATED_RE, "_pattern", lambda *a: pytest.fail("gate used by stock pysbd"))
    monkeypatch.setattr(sentences._GATED_RE, "_rule_groups", None)  # apply() would fail on it
    assert _processed("Dr. Ames left. It rained!", False) == ["Dr. Ames left.", "It rained!"]
    assert not getattr(sentences._GATED_RE.local, "on", False)


_MKDOCS = pathlib.Path("/work/docs_corpus/mkdocs-material/docs")


def _blocks(text: str, limit: int):
    """The blocks _segment_paragraph feeds pysbd (stand-ins applied), over the first ``limit`` characters."""
    text = text[:limit]
    for a, b in sentences._paragraphs(text):
        pos = a
        while pos < b:
            end = min(b, pos + sentences._BLOCK_CHARS)
            yield pos, text[pos:end].translate(sentences._STAND_INS)
            pos = end


@pytest.mark.skipif(not _MKDOCS.is_dir(), reason="the mkdocs-material docs are not present")
def test_fast_pysbd_matches_stock_pysbd_on_markdown_docs():
    """Markdown (headings, lists, tables, code, admonitions): the first 60k characters of the docs."""
    n, left = 0, 60_000
    for path in sorted(_MKDOCS.rglob("*.md")):
        text = path.read_text(encoding="utf-8")[:left]
        left -= len(text)
        for pos, block in _blocks(text, len(text)):
            assert _processed(block, True) == _processed(block, False), (path.name, pos)
            n += 1
        if left <= 0:
            break
    assert n > 100


@pytest.mark.slow
@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/data is not present")
def test_fast_pysbd_matches_stock_pysbd_on_whole_corpora():
    """Every block of every Chroma corpus and of every mkdocs-material doc (~11k blocks; the default run checks
    the first 60k characters of each)."""
    paths = sorted(CORPORA.glob("*.md")) + (sorted(_MKDOCS.rglob("*.md")) if _MKDOCS.is_dir() else [])
    n = 0
    for path in paths:
        for pos, block in _blocks(path.read_text(encoding="utf-8"), 10**9):
            assert _processed(block, True) == _processed(block, False), (path.name, pos)
            n += 1
    # Chroma's five corpora alone hold ~3,077 blocks; the mkdocs docs (a local checkout, absent on fresh machines) ~8k
    assert n > (5000 if _MKDOCS.is_dir() else 2500), n


# --- one document -------------------------------------------------------------------------------------------


def test_char_spans_cached_and_uncached_agree():
    text = "Dr. Smith went home. It rained.\n\nU.S. data, e.g. 3.14 here.\nNext line"
    seg = SentenceSegmenter()
    cached = seg.char_spans(text)
    assert cached.dtype == np.int32 and not cached.flags.writeable
    assert [text[s:e] for s, e in cached.tolist()] == [
        "Dr. Smith went home.", "It rained.", "U.S. data, e.g. 3.14 here.", "Next line"]
    np.testing.assert_array_equal(seg.char_spans(text, cache=False), cached)
    assert seg.char_spans(text) is not cached  # a new array, from the same memo
    np.testing.assert_array_equal(seg.char_spans_in(text, 35, 40), cached[2:])  # the second paragraph only
    with pytest.raises(TypeError, match="expects str"):
        seg.char_spans(b"bytes")  # type: ignore[arg-type]


def test_segmenters_share_no_state(monkeypatch):
    """Two segmenters: each has its own cache (the second segments again); clear_cache forgets."""
    text = "One. Two.\n\nThree."
    calls = []
    real = sentences._segment_paragraph
    monkeypatch.setattr("latechunk.sentences.segment._segment_paragraph",
                        lambda t, a, b: calls.append(a) or real(t, a, b))
    a, b = SentenceSegmenter(), SentenceSegmenter()
    a.char_spans(text)
    a.char_spans(text)
    assert len(calls) == 2  # two paragraphs, once
    b.char_spans(text)
    assert len(calls) == 4
    a.clear_cache()
    a.char_spans(text)
    assert len(calls) == 6


_FRAGMENTS = ["Dr.", "Ph.D.", "e.g.", "U.S.", "3.14", "Mr. Smith said so.", "It rained. ", "Keep it simple. ", "end!",
              "why?", "...", " ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\t", "\u00a0", "\x1f", "日本語です。",
              "한국어 텍스트", "😀", "# Title\n", "- item one\n", "1. first\n2. second\n", "| a | b |\n"]
_TEXTS = st.one_of(
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=40).map("".join),
    st.text(max_size=200),
)


@given(text=_TEXTS)
def test_char_spans_properties(text):
    """Increasing, disjoint, non-empty spans that start and end on non-whitespace and hold every
    non-whitespace character."""
    spans = SentenceSegmenter().char_spans(text)
    assert spans.dtype == np.int32 and spans.ndim == 2 and spans.shape[1] == 2
    if spans.shape[0]:
        assert (spans[:, 1] > spans[:, 0]).all()
        assert (spans[1:, 0] >= spans[:-1, 1]).all()
    covered = np.zeros(len(text), dtype=bool)
    for s, e in spans.tolist():
        assert text[s].strip() and text[e - 1].strip()
        covered[s:e] = True
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))


def test_char_spans_of_repeated_text_are_distinct():
    """BR-001's kind in the segmenter: repeated sentences get their own offsets, not the first occurrence's."""
    text = "Keep it simple. " * 6
    spans = SentenceSegmenter().char_spans(text).tolist()
    assert spans == [[16 * i, 16 * i + 15] for i in range(6)]


def test_char_spans_of_a_long_paragraph_match_short_blocks():
    """pysbd is fed long paragraphs in blocks; the block edges must not add or move sentence ends."""
    unit = "The Ph.D.'s committee approved 3.14 million, e.g. for the U.S. team. Dr. Ames signed it. "
    text = unit * 60  # about 5,500 chars, several blocks
    spans = SentenceSegmenter().char_spans(text)
    assert spans.shape[0] == 120
    assert {text[s:e] for s, e in spans.tolist()} == {
        "The Ph.D.'s committee approved 3.14 million, e.g. for the U.S. team.",
        "Dr. Ames signed it.",
    }


def test_token_spans_tile_content(minilm_tokenizer):
    text = "Dogs bark. Cats sleep. 한국어 텍스트. Done"
    tok = minilm_tokenizer(text)
    spans = SentenceSegmenter().token_spans(Document("d", text), tok)
    assert spans.dtype == np.int32
    assert spans[0, 0] == tok.content_start and spans[-1, 1] == tok.content_end
    assert (spans[1:, 0] == spans[:-1, 1]).all()
    assert spans.shape[0] == 4
    np.testing.assert_array_equal(SentenceSegmenter().token_spans(text, tok), spans)  # the text alone


def test_segmenter_never_crashes_on_separator_characters():
    """pysbd raises ValueError on "\x1f1. first..." (its list-item rule calls int("\x1f1")); not here."""
    text = "\x1f1. first\n2. second\n\n   continued para\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spans = SentenceSegmenter().char_spans(text, cache=False)
    assert [text[s:e] for s, e in spans.tolist()] == ["1. first", "2. second", "continued para"]


# BR-021: each placeholder alone, the sequences pysbd writes them in ("&ᓴ&", "☏☏", "ƪƪƪ", ...), and all at once
_BR021_MARKS = [
    *sentences.PYSBD_PLACEHOLDERS,
    "&✂&", "&⌬&", "☏☏", "ƪƪƪ", "♟" * 7, "♝" * 7, "&ᓰ&", "&ᓱ&", "&ᓳ&", "&ᓴ&", "&ᓷ&", "&ᓸ&", "&⎋&",
    sentences.PYSBD_PLACEHOLDERS,
]


@pytest.mark.parametrize("mark", _BR021_MARKS)
def test_br021_pysbd_placeholder_characters_keep_sentences(mark):
    """BR-021: a text holding one of pysbd's own placeholder characters gives its three sentences, no warning."""
    text = f"Pack the tent {mark} before dusk. Light the stove early. Boil the water twice."
    shift = len(mark) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spans = SentenceSegmenter().char_spans(text, cache=False).tolist()
    assert spans == [[0, 28 + shift], [29 + shift, 51 + shift], [52 + shift, 73 + shift]]


def test_br021_placeholder_list_covers_pysbd_source():
    """Every non-ASCII character in pysbd's English code path is a placeholder latechunk replaces or a character
    pysbd reads as what it is (punctuation it splits at, quotes, the letters of its exclamation words); a new
    pysbd that adds a placeholder fails here."""
    import pathlib

    import pysbd

    root = pathlib.Path(pysbd.__file__).parent
    files = [p for p in root.rglob("*.py") if "lang" not in p.parts or p.parent.name == "common"]
    files.append(root / "lang" / "english.py")
    found = {c for p in files for c in p.read_text(encoding="utf-8") if ord(c) > 127}
    # read as text: punctuation (the Arabic comma is what ♬ turns into), quotes, a bullet (only in the cleaner,
    # which latechunk does not use), the letters of pysbd's exclamation words
    literal = set("。．！？（）「」«»‘’“”⁃°•،") | set("ũǃʼû")
    assert found - literal == set(sentences.PYSBD_PLACEHOLDERS)


def test_pysbd_crash_falls_back_to_lines_with_a_warning(monkeypatch):
    class Broken:
        def processor(self, text):
            raise ValueError("boom")

    monkeypatch.setattr("latechunk.sentences.pysbd_segmenter._pysbd_segmenter", lambda fast=True: Broken())
    text = "One. Two.\nThree"
    with pytest.warns(RuntimeWarning, match="pysbd failed"):
        spans = SentenceSegmenter().char_spans(text, cache=False)
    assert [text[s:e] for s, e in spans.tolist()] == ["One. Two.", "Three"]


def test_cache_is_bounded_by_characters():
    cache = sentences._SentenceCache(max_chars=100)
    a, b, c = "a" * 60, "b" * 30, "c" * 30
    da = cache.get(a)
    cache.get(b)
    assert cache.get(a) is da  # a hit, and now the most recent
    cache.get(c)  # 120 chars > 100: the least recent (b) goes
    assert list(cache._items) == [a, c]
    huge = "d" * 500  # bigger than the bound: kept alone
    cache.get(huge)
    assert list(cache._items) == [huge]


def test_segmenter_arguments_are_checked():
    assert SentenceSegmenter().workers == 0 and SentenceSegmenter(3).workers == 3
    with pytest.raises(ValueError, match="workers=-1"):
        SentenceSegmenter(-1)
    with pytest.raises(TypeError, match="workers"):
        SentenceSegmenter(2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="workers"):
        SentenceSegmenter(True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task_chars=0"):
        SentenceSegmenter(task_chars=0)
    with pytest.raises(ValueError, match="max_cache_chars=0"):
        SentenceSegmenter(max_cache_chars=0)


def test_default_workers(monkeypatch):
    for cores, expected in [(1, 0), (3, 0), (4, 3), (8, 7), (64, 16)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)), raising=False)
        assert default_workers() == expected


# --- many documents, ahead, in worker processes -------------------------------------------------------------


def _texts() -> list[str]:
    rng = np.random.default_rng(0)
    words = ["alpha", "Dr.", "beta", "e.g.", "gamma.", "Delta", "3.14", "U.S.", "state", "end."]
    out = []
    for d in range(6):
        paras = []
        for _ in range(40 + 10 * d):
            paras.append(" ".join(rng.choice(words, size=int(rng.integers(5, 120)))))
        out.append("\n\n".join(paras))
    return out


def test_presegment_in_worker_processes_equals_this_thread(monkeypatch):
    texts = _texts()
    one = SentenceSegmenter(0)
    serial = one.presegment(texts)
    assert serial["workers"] == 0 and serial["paragraphs"] > 200
    expected = [one.char_spans(t).copy() for t in texts]
    # many small tasks, so the order across tasks is exercised
    with SentenceSegmenter(2, min_pool_chars=0, task_chars=2000) as seg:
        info = seg.presegment(texts)
        assert info == {**serial, "workers": 2} and seg.running_workers == 2

        # every sentence now comes from the cache: segmenting again would fail
        def boom(*args):
            raise AssertionError("segmented again")

        monkeypatch.setattr("latechunk.sentences.segment._segment_paragraph", boom)
        for t, e in zip(texts, expected):
            np.testing.assert_array_equal(seg.char_spans(t), e)
        assert seg.presegment(texts)["paragraphs"] == 0  # nothing left to do
        procs = list(seg._pool.procs)
    assert seg.running_workers == 0  # closed by the with block
    assert all(p.poll() is not None for p in procs)


def test_presegment_falls_back_when_the_pool_fails(monkeypatch):
    texts = _texts()[:2]
    expected = [sentences._segment_text(t) for t in texts]
    seg = SentenceSegmenter(4, min_pool_chars=0)

    def broken():
        raise RuntimeError("no processes here")

    monkeypatch.setattr(seg, "_started_pool", broken)
    with pytest.warns(RuntimeWarning, match="segmenting in this process instead"):
        info = seg.presegment(texts)
    assert info["workers"] == 0
    for t, e in zip(texts, expected):
        np.testing.assert_array_equal(seg.char_spans(t), e)


def test_presegment_min_tokens_picks_paragraphs_with_a_long_line(minilm_tokenizer):
    """Only a paragraph holding a line of more than ``min_tokens`` tokens is segmented ahead; the rest stay
    lazy and give the same sentences when asked."""
    long_line = "A much longer line goes here. " * 8  # ~56 tokens on one line
    many_short = "\n".join(["Short line here."] * 10)  # ~40 tokens, but no line over 4
    text = f"Short one. Two.\n\n{many_short}\n\n{long_line}\n\nTiny."
    doc = Document("d", text)
    tok = minilm_tokenizer(doc)
    starts = tok.offsets[tok.content_start : tok.content_end, 0]
    seg = SentenceSegmenter()
    info = seg.presegment([text], 20, [starts])
    assert info["paragraphs"] == 1 and sorted(seg._cache.get(text).memo) == [2]
    np.testing.assert_array_equal(seg.char_spans(text), sentences._segment_text(text))
    seg.clear_cache()
    assert seg.presegment([text], 0, [starts])["paragraphs"] == 4  # 0: every paragraph
    with pytest.raises(ValueError, match="1 texts but 2"):
        seg.presegment([text], 20, [starts, starts])


def test_small_jobs_stay_in_this_thread(monkeypatch):
    seg = SentenceSegmenter(8)

    def no_pool():
        raise AssertionError("a pool for a few characters")

    monkeypatch.setattr(seg, "_started_pool", no_pool)
    assert seg.presegment(["One. Two."])["workers"] == 0
    assert SentenceSegmenter(1, min_pool_chars=0).presegment(_texts()[:1])["workers"] == 0  # 1: no pool


def test_a_dead_worker_falls_back_to_this_process():
    texts = _texts()[:2]
    expected = [sentences._segment_text(t) for t in texts]
    with SentenceSegmenter(2, min_pool_chars=0) as seg:
        seg.start()
        assert seg.running_workers == 2
        for proc in seg._pool.procs:
            proc.kill()
            proc.wait()
        with pytest.warns(RuntimeWarning, match="segmenting in this process instead"):
            info = seg.presegment(texts)
        assert info["workers"] == 0 and seg.running_workers == 0  # the broken pool was closed
        for t, e in zip(texts, expected):
            np.testing.assert_array_equal(seg.char_spans(t), e)


def test_workers_end_with_their_segmenter():
    """No close(): the worker processes end when the segmenter is garbage collected."""
    seg = SentenceSegmenter(2)
    seg.start()
    procs = list(seg._pool.procs)
    assert all(p.poll() is None for p in procs)
    del seg
    gc.collect()
    assert all(p.wait(timeout=120) == 0 for p in procs)  # the timeout only guards against a hang


def test_workers_ignore_sigint_sent_to_the_process_group(tmp_path):
    """Ctrl-C reaches the whole process group: the workers ignore it and keep serving the parent, which
    handles the KeyboardInterrupt (here: by segmenting once more in the workers)."""
    script = tmp_path / "ctrl_c.py"
    script.write_text(
        "import sys, time\n"
        "from latechunk.sentences import SentenceSegmenter\n"
        "seg = SentenceSegmenter(2, min_pool_chars=0, task_chars=500)\n"
        "seg.start()\n"
        "try:\n"  # 'ready' inside the try: the signal may come as soon as the parent reads it
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    alive = all(p.poll() is None for p in seg._pool.procs)\n"
        "    info = seg.presegment(['Dr. Smith went home. It rained. ' * 40])\n"
        "    print('interrupted', alive, info['workers'], flush=True)\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=tmp_path)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.split() == ["interrupted", "True", "2"], (out, err)


def test_workers_need_no_main_guard_and_never_rerun_the_script(tmp_path):
    """A script without ``if __name__ == "__main__":`` that turns workers on: its top level runs once (the
    workers import only latechunk.sentences), the workers are used, the sentences match one process, and the
    script ends without closing the segmenter (its workers end at exit)."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        "print('TOP-LEVEL RAN', file=sys.stderr)\n"
        "from latechunk.sentences import SentenceSegmenter\n"
        "seg = SentenceSegmenter(2, min_pool_chars=0, task_chars=500)\n"
        "texts = ['Dr. Smith went home. It rained. ' * 40 + '\\n\\n' + 'U.S. data, e.g. 3.14 here. Next one. ' * 30]\n"
        "info = seg.presegment(texts)\n"
        "a = seg.char_spans(texts[0]).tobytes()\n"
        "b = SentenceSegmenter(0).char_spans(texts[0]).tobytes()\n"
        "print(info['workers'], a == b, len(a))\n",
        encoding="utf-8",
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("TOP-LEVEL RAN") == 1, proc.stderr
    workers, same, n_bytes = proc.stdout.split()
    assert workers == "2" and same == "True" and int(n_bytes) > 100


# --- the pipeline: one segmenter per run --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("fixed:size=64", None), ("recursive:max_tokens=100", 100), ("heading:max_tokens=80", 80),
     ("sentence_window:window=1", 0), ("semantic", 0)],
)
def test_sentence_paragraph_hints(spec, expected):
    assert get_strategy(spec).sentence_paragraphs() == expected


FIVE = ["fixed:size=64", "recursive:max_tokens=64", "heading:max_tokens=64", "sentence_window:window=1",
        "semantic:percentile=10"]


def test_pipeline_segments_each_paragraph_once_for_all_strategies(monkeypatch):
    """Five strategies on one pass: one pysbd pass per paragraph, done ahead of the split; the run's own
    segmenter is closed when the stream ends."""
    from latechunk.pipeline import embed

    texts = _texts()[:3]
    docs = [Document(f"d{i}", t) for i, t in enumerate(texts)]
    n_paragraphs = sum(len(sentences._paragraphs(t)) for t in texts)
    calls, closed = [], []
    real = sentences._segment_paragraph
    monkeypatch.setattr("latechunk.sentences.segment._segment_paragraph",
                        lambda text, a, b: calls.append((text, a)) or real(text, a, b))
    real_close = SentenceSegmenter.close
    monkeypatch.setattr(SentenceSegmenter, "close", lambda self: closed.append(self) or real_close(self))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = embed(docs, tiny_modernbert_encoder(256), PipelineConfig(FIVE))
    assert not res.skipped
    assert len(calls) == n_paragraphs == len(set(calls))
    assert len(closed) == 1


def test_pipeline_with_sentence_workers_gives_the_same_chunks():
    """embed() with worker processes segmenting ahead (from the prefetch thread) = embed() in one process."""
    from latechunk.pipeline import embed

    docs = [Document(f"d{i}", t) for i, t in enumerate(_texts()[:3])]
    config = PipelineConfig(["recursive:max_tokens=64", "sentence_window:window=1"])
    enc = tiny_modernbert_encoder(256)
    one = embed(docs, enc, config)
    with SentenceSegmenter(2, min_pool_chars=0, task_chars=4000) as seg:
        two = embed(docs, enc, config, segmenter=seg)
        assert seg.running_workers == 2  # the workers were used, and a caller's segmenter stays open
    assert list(one.runs) == list(two.runs) and len(one.runs) == 2
    for r1, r2 in zip(one.runs.values(), two.runs.values()):
        assert len(r1.boundaries) == len(docs)
        for b1, b2 in zip(r1.boundaries, r2.boundaries):
            np.testing.assert_array_equal(b1.token_spans, b2.token_spans)
            np.testing.assert_array_equal(b1.char_spans, b2.char_spans)
        np.testing.assert_array_equal(r1.vectors["late"].vectors, r2.vectors["late"].vectors)


def test_cli_rejects_negative_sentence_workers(tmp_path):
    from typer.testing import CliRunner

    from latechunk.cli import app

    (tmp_path / "a.md").write_text("One. Two.", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(tmp_path / "a.md"), "--out", str(tmp_path / "out"),
                                   "--sentence-workers", "-1"])
    assert res.exit_code == 2
    assert "--sentence-workers" in res.output and "-1" in res.output
    assert not (tmp_path / "out").exists()  # failed before any work


# --- a long document (issue 36 section 4) --------------------------------------------------------------------


def test_sentences_of_a_long_paragraph_are_kept_as_int32_arrays():
    """A 20 MB single-line document held its sentences as a list of (start, end) tuples (about 120 bytes a
    sentence); now each paragraph's are an (n, 2) int32 array (8 bytes a sentence), with the same spans."""
    text = "First short sentence here. Dr. Smith arrived at 3.14 p.m. today! Did he? Yes. " * 400 + "\n\nTail."
    seg = SentenceSegmenter()
    spans = seg.char_spans(text)
    memo = seg._cache.get(text).memo
    assert set(memo) == {0, 1}
    assert all(isinstance(v, np.ndarray) and v.dtype == np.int32 and v.shape[1] == 2 for v in memo.values())
    np.testing.assert_array_equal(spans, sentences._segment_text(text))
    np.testing.assert_array_equal(np.concatenate([memo[0], memo[1]]), spans)
    assert spans.shape[0] > 1000 and not spans.flags.writeable


def test_a_paragraph_longer_than_a_task_is_segmented_in_this_thread_not_sent_to_a_worker(monkeypatch):
    """One 20 MB paragraph was one message to one worker: a copy of it in the pipe, and a run that could not stop
    until the worker was done. Now it is segmented here, between blocks, while the workers take the rest."""
    long_para = "Words of one long paragraph. It goes on and on. " * 300
    texts = ["Short one. Two.\n\n" + long_para + "\n\nShort again. End.", "Another short text. Fine."]
    expected = [SentenceSegmenter(0).char_spans(t).copy() for t in texts]
    sent: list[int] = []
    real_run = sentences._WorkerPool._run
    monkeypatch.setattr(sentences._WorkerPool, "_run",
                        lambda self, paras: sent.extend(map(len, paras)) or real_run(self, paras))
    with SentenceSegmenter(2, min_pool_chars=0, task_chars=2000) as seg:
        info = seg.presegment(texts)
        assert info["workers"] == 2 and info["paragraphs"] == 4
        for t, e in zip(texts, expected):
            np.testing.assert_array_equal(seg.char_spans(t), e)
    assert sent and max(sent) < len(long_para) and len(long_para.strip()) not in sent
