"""latechunk/strategies/heading.py: the ``heading`` strategy's invariants, heading paths and levels, and the
markdown cases of ``../shared/cases/README.md``: BR-006 (a # in a code fence), BR-007 (setext headings), BR-008
(a table split between rows with its header as context), BR-022 (front matter), BR-025 (a leading BOM); a run of
headings at small budgets. The rules every strategy holds: ``test_common.py``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latechunk.strategies import get_strategy
from latechunk.strategies.heading import Heading
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.strategies.strategy_helpers import SETTINGS, _split, handed_out, spans, split, texts

# --- properties -----------------------------------------------------------------------------------------------


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


# --- examples -------------------------------------------------------------------------------------------------


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
