"""The strategy side of the cases BR-001..BR-010 (``/work/shared/cases/README.md``), with their exact expectations.

Tokenization: the bundled all-MiniLM-L6-v2 tokenizer (uncased BERT WordPiece), ``[CLS]`` at position 0.
"""

from __future__ import annotations

import threading
from itertools import pairwise

import numpy as np
import pytest

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.invariants import check_boundaries

STRATEGIES = ["fixed", "recursive", "heading", "sentence_window", "semantic"]


def split(spec, text, tokenizer, embed=None):
    doc = Document("case", text)
    tok = tokenizer(doc)
    b = get_strategy(spec).split(doc, tok, embed)
    check_boundaries(text, tok, b)
    return tok, b


class CountingEmbedder:
    """A fake sentence embedder that records its calls (deterministic hashed bag of token ids)."""

    def __init__(self):
        self.calls = []

    def __call__(self, doc, tok, spans):
        spans = np.asarray(spans)
        self.calls.append(spans.copy())
        out = np.zeros((spans.shape[0], 16), dtype=np.float32)
        for i, (a, b) in enumerate(spans.tolist()):
            np.add.at(out[i], tok.input_ids[a:b] % 16, 1.0)
        return out


def spans(arr) -> list[tuple[int, int]]:
    return [tuple(x) for x in np.asarray(arr).tolist()]


def stripped_spans(text, b) -> list[tuple[int, int]]:
    out = []
    for s, e in b.char_spans.tolist():
        chunk = text[s:e]
        lead = len(chunk) - len(chunk.lstrip())
        out.append((s + lead, s + lead + len(chunk.strip())))
    return out


def run_with_timeout(fn, seconds):
    """Run fn in a thread; fail if it does not return within ``seconds`` (the case harness's hang check)."""
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as err:  # noqa: BLE001  (re-raised in the test thread)
            result["error"] = err

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not return within {seconds} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


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


@pytest.mark.parametrize("name", ["fixed", "recursive"])
@pytest.mark.parametrize("size, overlap", [(8, 8), (8, 9), (0, 0), (8, -1)])
def test_br003_bad_size_overlap_raise(name, size, overlap):
    def build():
        with pytest.raises(ValueError) as err:
            get_strategy(f"{name}:chunk_size={size},chunk_overlap={overlap}")
        return str(err.value)

    message = run_with_timeout(build, 2)
    assert f"={size}" in message and f"overlap={overlap}" in message


@pytest.mark.parametrize(
    "text",
    [
        # the case: one 640-char word; BERT WordPiece maps a word over 100 chars to one [UNK]
        "9f3b7c1e" * 80,
        "9f3b7c1e" * 12,  # same kind, short enough to be wordpieces: the token-level fallback does the work
        " ".join(["9f3b7c1e" * 12] * 20),
    ],
)
def test_br003_separator_free_text_returns_fast(minilm_tokenizer, text):
    doc = Document("case", text)
    tok = minilm_tokenizer(doc)
    strategy = get_strategy("recursive:chunk_size=16,chunk_overlap=4")
    b = run_with_timeout(lambda: strategy.split(doc, tok), 2)
    check_boundaries(text, tok, b)
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
