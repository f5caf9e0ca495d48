"""Issue 16, parts 2-5: real documentation markdown. Heading paths in plain text, admonitions and content tabs as
blocks, code fences kept whole when they fit, no markup-only chunks; and the test corpus
``tests/data/docs_site/`` (our own words) chunked with every strategy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from latechunk.io import iter_inputs
from latechunk.output import chunk_rows
from latechunk.strategies import get_strategy
from latechunk.strategies._common import join_markup_only
from latechunk.strategies._markdown import (
    block_units,
    content_counts,
    heading_plain_text,
    markdown_parser,
    markup_only,
)
from latechunk.titles import first_heading
from latechunk.types import Document
from tests.invariants import check_boundaries

DOCS_SITE = Path(__file__).parents[1] / "data" / "docs_site"
STRATEGIES = ["fixed", "recursive", "heading", "sentence_window", "semantic"]

UPGRADING = ('## Upgrading\n\nStop the service before you replace the binary on the host machine.\n\n'
             '!!! warning "Back up first"\n\n    Copy the data folder to another disk before you upgrade anything.\n')
BUILD = ("## Build steps\n\n1. Fetch the sources and unpack them into a fresh folder on your machine.\n\n"
         "   ```sh\n   ./configure --prefix=/opt/demo\n\n   make --jobs 4\n\n   make install\n   ```\n\n"
         "2. Run the tests.\n")


def hashed_vectors(doc, tok, spans):
    """Sentence vectors for ``semantic`` without a model: a hashed bag of the sentence's token ids (dim 16)."""
    out = np.zeros((len(spans), 16), dtype=np.float32)
    for i, (a, b) in enumerate(np.asarray(spans).tolist()):
        np.add.at(out[i], tok.input_ids[a:b] % 16, 1.0)
    return out


def md_doc(text: str, name: str = "page.md") -> Document:
    """A Document as the file reader makes it for a markdown file (``source`` with its suffix)."""
    return Document(name, text, {"source": name})


def chunk(spec, doc, tokenizer, budget=None):
    tok = tokenizer(doc)
    b = get_strategy(spec).split(doc, tok, hashed_vectors)
    check_boundaries(doc.text, tok, b, max_tokens=budget,
                     chunk_texts=[r["text"] for r in chunk_rows(doc, b, spec)])
    return tok, b


def spans(b) -> list[list[int]]:
    return b.char_spans.tolist()


# --- part 2: heading paths in plain text ------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "plain"), [
    ("Release 2.0 <small>May 2024</small> { #r2 }", "Release 2.0 May 2024"),
    ("The `--force` flag and [mirrors](mirrors.md)", "The --force flag and mirrors"),
    ("<!-- md:option cache.dir -->", ""),
    ("<!-- md:option cache.size --> { #cache-size }", "cache-size"),
    ("Changes to `*.html` files { data-search-exclude }", "Changes to *.html files"),
    ("Many folders? {: #many .faq data-toc-label=\"Many\" }", "Many folders?"),
    ("<img src=\"icon.png\" alt=\"\"> Who looks after it?", "Who looks after it?"),
    ("&nbsp;&amp; what about *large* files?", "& what about large files?"),
    ("A ![logo](logo.png) and **bold** text", "A and bold text"),
    ("Braces {like this} stay", "Braces {like this} stay"),
])
def test_heading_plain_text_rule(source, plain):
    """The rendering rule: tags, comments, attribute lists and link syntax dropped; an empty heading named by its
    #id, else empty."""
    assert heading_plain_text(source) == plain


def test_heading_paths_are_plain_text(minilm_tokenizer):
    """A heading path is what a reader sees; an empty heading with an anchor is named by it, without one it is
    left out of the path (its section still starts there)."""
    text = ("# Guide\n\nIntro words for the guide.\n\n## Release 2.0 <small>May 2024</small> { #r2 }\n\n"
            "Release notes here.\n\n### <!-- md:option cache.dir -->\n\nWhere the cache lives.\n\n"
            "### <!-- md:option cache.size --> { #cache-size }\n\nHow big the cache may grow.\n\n"
            "### The `--force` flag and [mirrors](mirrors.md)\n\nRebuild everything.\n")
    for doc in (md_doc(text), Document("plain", text)):
        _, b = chunk("heading:max_tokens=64", doc, minilm_tokenizer, 64)
        by_start = {doc.text[s:e].split("\n")[0]: p for (s, e), p in zip(spans(b), b.heading_paths)}
        assert by_start["## Release 2.0 <small>May 2024</small> { #r2 }"] == ("Guide", "Release 2.0 May 2024")
        assert by_start["### <!-- md:option cache.dir -->"] == ("Guide", "Release 2.0 May 2024")
        assert by_start["### <!-- md:option cache.size --> { #cache-size }"] == (
            "Guide", "Release 2.0 May 2024", "cache-size")
        assert by_start["### The `--force` flag and [mirrors](mirrors.md)"] == (
            "Guide", "Release 2.0 May 2024", "The --force flag and mirrors")


@pytest.mark.parametrize(("source", "plain"), [
    (("Thread-pool Controls [![Build Status](https://github.com/joblib/threadpoolctl/actions/workflows/test.yml/"
      "badge.svg)](https://github.com/joblib/threadpoolctl/actions) [![codecov](https://codecov.io/gh/joblib/"
      "threadpoolctl/branch/master/graph/badge.svg)](https://codecov.io/gh/joblib/threadpoolctl)"),
     "Thread-pool Controls"),
    ("![logo](docs/logo.png) Pond", "Pond"),
    ("See [the docs](https://example.org/docs) [![PyPI](https://img.shields.io/pypi/v/pond.svg)](https://pypi.org)",
     "See the docs"),
    ("[**Pond** ![icon](i.png) tools](https://example.org)", "Pond tools"),
    ('Pond <img src="badge.svg" alt="CI">', "Pond"),
])
def test_badge_images_are_not_in_heading_paths(source, plain):
    """Issue 36: a README heading with badges (``# Thread-pool Controls [![Build Status](...svg)](...)
    [![codecov](...)](...)``) gave the path ``Thread-pool Controls Build Status codecov``. An image, or a link
    whose only content is an image, gives nothing; a plain link keeps its text."""
    assert heading_plain_text(source) == plain


def test_badge_heading_path_from_a_readme(minilm_tokenizer):
    """The same through ``heading``: the README's heading path is its text alone."""
    text = ("# Thread-pool Controls [![Build Status](https://ci.example/badge.svg)](https://ci.example) "
            "[![codecov](https://codecov.io/badge.svg)](https://codecov.io)\n\nPython helpers to limit the number "
            "of threads.\n\n## Usage\n\nCall it in a with block.\n")
    _, b = chunk("heading:max_tokens=64", md_doc(text, "README.md"), minilm_tokenizer, 64)
    assert set(b.heading_paths) == {("Thread-pool Controls",), ("Thread-pool Controls", "Usage")}


def test_first_heading_title_is_plain_text():
    """titles.py takes the first heading's plain text (the heading paths' rule), passing over an empty one."""
    assert first_heading("# The *x* flag { #x }\n\nBody.\n") == "The x flag"
    assert first_heading("# <!-- md:version -->\n\n## Real `title` here\n\nBody.\n") == "Real title here"
    assert first_heading("---\ntitle: FM\n---\n\n# Welcome <small>v3</small>\n") == "Welcome v3"


def test_front_matter_is_not_in_heading_paths(minilm_tokenizer):
    """Front matter is no heading (its closing --- is no setext underline) with the admonition parser on too."""
    text = "---\ntitle: Pond\ntags: [a, b]\n---\n\n# Frogs\n\nFrogs call after rain.\n"
    _, b = chunk("heading:max_tokens=8", md_doc(text), minilm_tokenizer, 8)
    assert all("title" not in " ".join(p) and "tags" not in " ".join(p) for p in b.heading_paths)


# --- part 3: admonitions and content tabs -----------------------------------------------------------------------


def test_admonitions_and_tabs_parse_as_blocks():
    text = ('!!! note "A"\n\n    body a\n\n??? tip\n    body b\n\n???+ example "C"\n    body c\n\n'
            '=== "Tab one"\n\n    tab body\n\n    ```sh\n    x\n\n    y\n    ```\n\n=== "Tab two"\n    more\n\nafter\n')
    kinds = [(t.type, t.map) for t in markdown_parser().parse(text) if t.level == 0 and t.nesting >= 0]
    assert [k for k, _ in kinds] == ["admonition_open"] * 3 + ["content_tab_open"] * 2 + ["paragraph_open"]
    code, containers = block_units(text)
    assert containers == [(0, 4), (4, 7), (7, 10), (10, 20), (20, 23)]
    assert code == [(14, 19)]


def test_admonition_title_stays_with_its_body(minilm_tokenizer):
    """The issue's example: [0:81] and [83:181] with heading:max_tokens=26 (before: [0:110] ending with the title
    line, [116:181] the body alone); recursive cuts the same way."""
    for spec in ("heading:max_tokens=26", "recursive:max_tokens=26"):
        _, b = chunk(spec, md_doc(UPGRADING), minilm_tokenizer, 26)
        assert spans(b) == [[0, 81], [83, 181]], spec


@pytest.mark.parametrize("marker", ['!!! warning "Back up first"', "??? warning", '???+ note "Back up first"',
                                    '=== "Back up first"'])
def test_admonition_title_never_ends_a_chunk_when_it_fits_with_its_body(minilm_tokenizer, marker):
    """Every marker (admonition, collapsible, open collapsible, content tab), at budgets from tight to loose: no
    chunk ends with the title line while title and first body line fit together."""
    text = UPGRADING.replace('!!! warning "Back up first"', marker)
    title_start = text.index(marker)
    title_end = title_start + len(marker)
    body_end = text.index("anything.") + len("anything.")
    for budget in range(8, 40, 3):
        for spec in (f"heading:max_tokens={budget}", f"recursive:max_tokens={budget}"):
            tok, b = chunk(spec, md_doc(text), minilm_tokenizer, budget)
            starts = tok.offsets[tok.content_start : tok.content_end, 0]
            together = int(((starts >= title_start) & (starts < body_end)).sum())
            if together <= budget:
                assert title_end not in b.char_spans[:, 1].tolist(), (spec, spans(b))


def test_admonition_longer_than_the_budget_is_cut_at_its_paragraphs(minilm_tokenizer):
    """A container that alone exceeds the budget is cut at its own paragraphs, its title kept with the first."""
    text = ('!!! note "Three notes"\n\n    First paragraph of the note, with a few words.\n\n'
            '    Second paragraph of the note, with a few more words.\n\n    Third paragraph, the last one.\n')
    _, b = chunk("recursive:max_tokens=24", md_doc(text), minilm_tokenizer, 24)
    first = text[b.char_spans[0, 0]:b.char_spans[0, 1]]
    assert first.startswith('!!! note "Three notes"') and "First paragraph" in first
    assert all(text[e - 1] in ".\"" for _, e in spans(b))  # cut at paragraph ends, not inside lines


# --- issue 36: what was left on real MkDocs pages -----------------------------------------------------------------

TAB_FENCE = ('Intro words before the tabs, a few of them.\n\n=== "Now"\n\n    The index holds each page once.\n\n'
             '=== "Before"\n\n    ``` json\n    {\n      "location": "page/",\n      "title": "Example",\n'
             '      "text": "Example text"\n    }\n    ```\n\nAfter the tabs.\n')


@pytest.mark.parametrize("budget", [30, 35, 38, 40])
def test_tab_title_stays_with_a_first_block_that_fits_alone_but_not_with_it(minilm_tokenizer, budget):
    """Issue 36 (mkdocs-material's blog post on search, its upgrade guide): a tab whose first body block, a fence
    of 35 tokens, fits the budget alone but not with the 6-token title line: the fence was kept whole and the title
    ended the chunk before it. The title now starts the chunk of the fence's first lines (the fence is cut at a
    line: no boundary outside it keeps the title with its body)."""
    title = '=== "Before"'
    for spec in (f"heading:max_tokens={budget}", f"recursive:max_tokens={budget}"):
        _, b = chunk(spec, md_doc(TAB_FENCE), minilm_tokenizer, budget)
        texts = [TAB_FENCE[s:e] for s, e in spans(b)]
        assert not any(t.endswith(title) for t in texts), (spec, texts)
        assert any(t.startswith(title + "\n\n    ``` json\n    {") for t in texts), (spec, texts)


ADMONITION_LIST = ('Some words before the note.\n\n!!! note "On [extra data](#extra-data) behavior with '
                   '[`model_construct()`][pydantic.main.BaseModel.model_construct]"\n\n'
                   "    * Models with extra set to allow store the data in the extra dictionary.\n"
                   "    * Models with extra set to ignore drop the data silently.\n"
                   "    * Models with extra set to forbid do not raise here either.\n\nAfter the note.\n")


def test_admonition_title_stays_with_a_first_list_that_fits_alone_but_not_with_it(minilm_tokenizer):
    """Issue 36 (pydantic's models page): a long admonition title and a list that fits the budget alone but not
    with the title: the title ended a chunk. Now the list is cut at its items and the title keeps the first."""
    tok = minilm_tokenizer(md_doc(ADMONITION_LIST))
    starts = tok.offsets[tok.content_start : tok.content_end, 0]
    title_at = ADMONITION_LIST.index("!!!")
    list_at = ADMONITION_LIST.index("    *")
    list_end = ADMONITION_LIST.index("\n\nAfter")
    n_title = int(((starts >= title_at) & (starts < list_at)).sum())
    n_list = int(((starts >= list_at) & (starts < list_end)).sum())
    budget = n_list + n_title // 2  # the list fits alone, not with the title
    for spec in (f"heading:max_tokens={budget}", f"recursive:max_tokens={budget}"):
        _, b = chunk(spec, md_doc(ADMONITION_LIST), minilm_tokenizer, budget)
        texts = [ADMONITION_LIST[s:e] for s, e in spans(b)]
        assert not any(t.endswith('model_construct]"') for t in texts), (spec, texts)
        assert any(t.startswith("!!! note") and "* Models with extra set to allow" in t for t in texts), (spec, texts)


NESTED_TABS = ('Some words before the example.\n\n!!! example "Adding a tags index"\n    === "Basic tag index"\n\n'
               "        Add a tags_file entry to the configuration of the tags plugin.\n\n\n"
               '    === "Insider Edition"\n\n        Add a placeholder in a Markdown file to tell the plugin where the '
               "index goes.\n\n        Scopes keep the tags of the blog apart.\n\nAfter the example.\n")


def test_admonition_body_runs_over_two_blank_lines(minilm_tokenizer):
    """Issue 36 (mkdocs-material's blog navigation tutorial): two blank lines ended an admonition or a tab in the
    parse (markdown-it-admon's rule), so a second tab after them, indented 4, was an indented code block whose
    title line ended a chunk. Python-Markdown runs the body over blank lines to the first line indented less:
    both tabs are in the admonition, and the second tab's title stays with its body."""
    tokens = markdown_parser().parse(NESTED_TABS)
    assert [(t.type, t.map) for t in tokens if t.type in ("admonition_open", "content_tab_open")] == [
        ("admonition_open", [2, 14]), ("content_tab_open", [3, 8]), ("content_tab_open", [8, 14])]
    assert not any(t.type == "code_block" for t in tokens)
    title = '=== "Insider Edition"'
    for budget in (16, 20, 24, 30):
        for spec in (f"heading:max_tokens={budget}", f"recursive:max_tokens={budget}"):
            _, b = chunk(spec, md_doc(NESTED_TABS), minilm_tokenizer, budget)
            texts = [NESTED_TABS[s:e] for s, e in spans(b)]
            assert not any(t.endswith(title) for t in texts), (spec, texts)
            assert any(title + "\n\n        Add a" in t for t in texts), (spec, texts)


# --- part 4: code fences ----------------------------------------------------------------------------------------


def test_fence_in_a_list_item_is_one_unit(minilm_tokenizer):
    """The issue's example: [0:89] and [94:194] with heading:max_tokens=40 (before: [0:133] ending inside the
    fence and [138:194]); recursive keeps the fence whole too."""
    for spec in ("heading:max_tokens=40", "recursive:max_tokens=40"):
        _, b = chunk(spec, md_doc(BUILD), minilm_tokenizer, 40)
        assert spans(b) == [[0, 89], [94, 194]], spec


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_fences_that_fit_are_never_cut(minilm_tokenizer, fence):
    """Fenced code (backticks, tildes, nested in a list and a quote) is held whole by one chunk at every budget
    that fits it; one that alone exceeds the budget is cut at line ends only."""
    code = "\n\n".join(f"    step_{i} --with-option {i}" for i in range(4))
    text = (f"Intro paragraph with enough words to fill a chunk.\n\n- item\n\n    {fence}sh\n{code}\n    {fence}\n\n"
            f"> quoted\n>\n> {fence}\n> echo quoted\n>\n> echo again\n> {fence}\n\nOutro paragraph.\n")
    units, _ = block_units(text)
    assert len(units) == 2
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for budget in (12, 20, 30, 45, 80):
        for spec in (f"heading:max_tokens={budget}", f"recursive:max_tokens={budget}"):
            tok, b = chunk(spec, md_doc(text), minilm_tokenizer, budget)
            for l0, l1 in units:
                a, e = starts[l0], starts[l1] - 1
                a += len(text[a:e]) - len(text[a:e].lstrip())
                e = len(text[:e].rstrip())
                n = int(((tok.offsets[:, 0] >= a) & (tok.offsets[:, 1] <= e) & (tok.offsets[:, 1] > tok.offsets[:, 0])).sum())
                if n <= budget:
                    assert any(s <= a and e <= t for s, t in spans(b)), (spec, text[a:e], spans(b))
                else:
                    for s, t in spans(b):
                        if a < t < e:
                            assert text[t] == "\n" or text[t:t + 1].isspace(), (spec, text[s:t])


# --- part 5: no markup-only chunks ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("---\n", True), ("***\n\n___", True), ("```sh\n", True), ("~~~\n", True),
    ("[a]: https://x.org\n[b]: ./b.md \"B\"\n", True), ("<!-- a\ncomment -->\n", True), ("</div>\n", True),
    ("{ .annotate }\n", True), ("| --- | :-: |\n", True),
    ("Words.\n---\n", False), ("```sh\nmake\n```\n", False), ("[a] is a link\n", False), ("!!! note\n", False),
])
def test_markup_only_rule(text, expected):
    assert markup_only(text, 0, len(text)) is expected


def test_front_matter_and_split_comments_count_as_markup():
    """Front matter is markup; so is a piece of an HTML comment that a sentence splitter cut off."""
    text = "---\ntitle: T\n---\n\n***\n\nBody.\n\n<!-- md:option a.b -->\n"
    assert markup_only(text, 0, text.index("Body"))
    assert not markup_only(text, 0, len(text))
    assert markup_only(text, text.index("-- md"), len(text)) and markup_only(text, text.index("<!"), text.index("-- md"))


def prefix(content_tokens):
    """Prefix counts from a 0/1 list: does token p carry content."""
    return np.concatenate([[0], np.cumsum(content_tokens)]).astype(np.int64)


def test_join_markup_only_respects_the_budget():
    sp = np.array([[0, 10], [10, 12], [12, 20]])
    content = prefix([1] * 10 + [0] * 2 + [1] * 8)  # tokens 10..12 are markup
    assert join_markup_only(sp, content, 20)[0].tolist() == [[0, 10], [10, 20]]
    assert join_markup_only(sp, content, 20)[1].tolist() == [0, 2]
    assert join_markup_only(sp, content, None)[0].tolist() == [[0, 10], [10, 20]]
    sp2 = np.array([[0, 4], [4, 6], [6, 20]])
    content2 = prefix([1] * 4 + [0] * 2 + [1] * 14)
    assert join_markup_only(sp2, content2, 8)[0].tolist() == [[0, 6], [6, 20]]  # the next one has no room
    assert join_markup_only(sp2, content2, 5)[0].tolist() == sp2.tolist()  # neither has: it stays
    # neither fits whole: the previous chunk hands over its tail from a cut, with content on both sides
    sp3 = np.array([[0, 10], [10, 14]])
    content3 = prefix([1] * 10 + [0] * 4)
    assert join_markup_only(sp3, content3, 10, cuts=(np.array([3, 8]),))[0].tolist() == [[0, 8], [8, 14]]
    assert join_markup_only(sp3, content3, 5, cuts=(np.array([3, 8]),))[0].tolist() == sp3.tolist()


MARKUP_TAIL = ("# Notes\n\nThe pond was quiet in the morning and loud after the rain came in the evening.\n\n"
               "---\n\nHerons stood in the reeds and waited for the fish to come close to the bank.\n\n"
               "<!-- checked by the survey team -->\n\n[survey]: https://example.org/survey\n"
               "[pond]: https://example.org/pond\n")


@pytest.mark.parametrize("spec", ["fixed:size=64", "recursive:max_tokens=64", "heading:max_tokens=64",
                                  "sentence_window:window=0", "semantic:max_tokens=64,min_tokens=0"])
def test_markup_only_chunks_join_a_neighbour(minilm_tokenizer, spec):
    """On markdown input no chunk is only a thematic break, a comment or link definitions; text that is not
    markdown input is cut as written; every character is kept (check_boundaries: coverage, exact slices)."""
    budget = None if spec.startswith("sentence") else int(spec.split("=")[1].split(",")[0])
    _, b = chunk(spec, md_doc(MARKUP_TAIL), minilm_tokenizer, budget)
    assert not [MARKUP_TAIL[s:e] for s, e in spans(b) if markup_only(MARKUP_TAIL, s, e)]
    if spec.startswith("sentence_window"):  # plain text is cut as written: "---" stays a sentence of its own
        _, plain = chunk(spec, Document("notes", MARKUP_TAIL), minilm_tokenizer, budget)
        assert any(markup_only(MARKUP_TAIL, s, e) for s, e in spans(plain))


# --- the docs_site corpus with every strategy -------------------------------------------------------------------


def docs_site() -> list[Document]:
    docs = [d for d in iter_inputs([str(DOCS_SITE)]) if isinstance(d, Document)]
    assert len(docs) == 5
    return docs


def _budget(strategy):
    if strategy.name == "semantic":
        return strategy.limit
    return getattr(strategy, "max_tokens", None) or getattr(strategy, "size", None)


@pytest.mark.parametrize("spec", STRATEGIES + ["recursive:max_tokens=64", "heading:max_tokens=64",
                                               "fixed:size=64,overlap=8", "semantic:max_tokens=64"])
def test_docs_site_with_every_strategy(minilm_tokenizer, spec):
    """The test corpus (front matter, admonitions, tabs, nested and indented fences, tables, HTML headings,
    attribute lists, link definitions): exact slices and coverage; heading paths in plain text; no fence or
    admonition split that the budget allowed to keep (heading, recursive); no markup-only chunk that a neighbour
    had room for (with the default budgets: none at all)."""
    strategy = get_strategy(spec).for_model(510)
    budget = _budget(strategy)
    for doc in docs_site():
        tok, b = chunk(strategy, doc, minilm_tokenizer, budget)
        text, cs = doc.text, spans(b)
        for path in b.heading_paths:
            for title in path:
                assert title.strip() and not any(m in title for m in ("<", "{", "](", "`", "<!--")), (doc.doc_id, path)
        counts = content_counts(text)
        ntok = b.token_spans[:, 1] - b.token_spans[:, 0]
        for i, (s, e) in enumerate(cs):
            if markup_only(text, s, e, counts):
                assert budget is not None and ":" in spec, (doc.doc_id, text[s:e])  # defaults: never
                lone = [int(ntok[j]) + int(ntok[i]) for j in (i - 1, i + 1) if 0 <= j < len(cs)]
                assert min(lone) > budget, (doc.doc_id, text[s:e])
        if strategy.name not in ("heading", "recursive"):
            continue
        starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"] + [len(text) + 1]
        code, containers = block_units(text)
        for l0, l1 in code + containers:
            a, e = starts[l0], starts[min(l1, len(starts) - 1)] - 1
            seg = text[a:e]
            a, e = a + len(seg) - len(seg.lstrip()), a + len(seg.rstrip())
            c0, c1 = tok.content_start, tok.content_end
            n = int(((tok.offsets[c0:c1, 0] >= a) & (tok.offsets[c0:c1, 0] < e)).sum())
            if n <= budget:
                assert any(s <= a and e <= t for s, t in cs), (spec, doc.doc_id, text[a:e][:60])
