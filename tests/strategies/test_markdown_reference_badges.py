"""Issue 36: reference-style badges in a heading left the raw markdown in heading paths and titles.

``# threadpoolctl [![Build Status][build-img]][build-url] [![codecov][cov-img]][cov-url]`` with the link reference
definitions at the end of the README gave the heading path and the title
``threadpoolctl [![Build Status][build-img]][build-url] ...``: the heading's inline text was parsed without the
document's definitions, so no reference resolved. Reference-style links and images now behave as inline ones (an
image, or a link whose only content is an image, gives nothing; a link keeps its text), wherever the definitions
are; an undefined reference stays text, as a renderer shows it.
"""

from __future__ import annotations

import pytest

from latechunk.strategies import get_strategy
from latechunk.strategies._markdown import heading_plain_text, link_references
from latechunk.titles import first_heading
from latechunk.types import Document
from tests.invariants import check_boundaries, chunk_file_rows

THREADPOOLCTL = (
    "# threadpoolctl [![Build Status][build-img]][build-url] [![codecov][cov-img]][cov-url]\n\n"
    "Python helpers to limit the number of threads used in the threadpool-backed of common native libraries.\n\n"
    "## Installation\n\nInstall the latest release with pip.\n\n"
    "## Usage\n\nUse the threadpool_limits context manager around the code that calls BLAS.\n\n"
    "[build-img]: https://dev.azure.com/joblib/threadpoolctl/_apis/build/status/joblib.threadpoolctl?branchName=master\n"
    "[build-url]: https://dev.azure.com/joblib/threadpoolctl/_build/latest?definitionId=1&branchName=master\n"
    "[cov-img]: https://codecov.io/gh/joblib/threadpoolctl/branch/master/graph/badge.svg\n"
    "[cov-url]: https://codecov.io/gh/joblib/threadpoolctl\n"
)

DEFINITIONS = (
    "\n\n[img]: https://img.shields.io/pypi/v/pond.svg\n[PyPI]: https://img.shields.io/pypi/v/pond.svg\n[url]: https://pypi.org/project/pond\n"
    "[docs]: https://example.org/docs\n[pond]: https://example.org\n[logo]: docs/logo.png\n"
)


@pytest.mark.parametrize(("heading", "plain"), [
    ("Pond [![PyPI][img]][url]", "Pond"),  # a full reference badge
    ("Pond [![PyPI]][url]", "Pond"),  # its image a shortcut reference
    ("Pond [![img][]][url]", "Pond"),  # its image a collapsed reference
    ("![logo][logo] Pond", "Pond"),  # a reference image alone
    ("![logo] Pond", "Pond"),  # a shortcut reference image
    ("See [the docs][docs] [![PyPI][img]][url]", "See the docs"),  # a full reference link keeps its text
    ("See [docs][] here", "See docs here"),  # a collapsed reference link
    ("See [docs] and [Pond]", "See docs and Pond"),  # shortcut links, labels matched without case
    ("[**Pond** ![icon][img] tools][pond]", "Pond tools"),
    ("Options [deprecated]", "Options [deprecated]"),  # no such definition: text, as a renderer shows it
    ("Pond [![CI][ci-img]][ci-url]", "Pond [![CI][ci-img]][ci-url]"),  # undefined: text too
])
def test_reference_style_badges_in_headings(heading, plain):
    """Each reference form gives what its inline form gives, with the definitions from the same document."""
    references = link_references("# " + heading + DEFINITIONS)
    assert heading_plain_text(heading, references=references) == plain


def test_reference_style_badges_without_definitions_are_text():
    """Without the document's definitions the same source is literal text (the fault, seen from the function)."""
    assert heading_plain_text("Pond [![PyPI][img]][url]") == "Pond [![PyPI][img]][url]"
    assert link_references("# Pond\n\nNo definitions here.\n") == {}


def test_reference_style_badges_heading_path_and_title(minilm_tokenizer):
    """``heading`` and the title: the threadpoolctl README's heading is ``threadpoolctl``; the title reads the
    definitions also when they come after the prefix that ``first_heading`` parses (4,096 characters)."""
    doc = Document("README.md", THREADPOOLCTL, {"source": "README.md"})
    tok = minilm_tokenizer(doc)
    b = get_strategy("heading:max_tokens=64").split(doc, tok)
    check_boundaries(doc.text, tok, b, max_tokens=64)
    assert sorted(set(b.heading_paths)) == [
        ("threadpoolctl",), ("threadpoolctl", "Installation"), ("threadpoolctl", "Usage")]
    assert first_heading(THREADPOOLCTL) == "threadpoolctl"
    long_body = THREADPOOLCTL.replace("## Usage", "## Notes\n\n" + "Some more words here. " * 400 + "\n\n## Usage")
    assert len(long_body) > 8192
    assert first_heading(long_body) == "threadpoolctl"


def test_reference_style_badges_from_latechunk_chunk(tmp_path):
    """The issue's repro: ``latechunk chunk README.md --strategy heading`` gives the path and title
    ``threadpoolctl``, not the raw heading line."""
    rows = chunk_file_rows(tmp_path / "README.md", THREADPOOLCTL, "heading")
    assert [r["heading_path"][0] for r in rows] == ["threadpoolctl"] * len(rows)
    assert {r["title"] for r in rows} == {"threadpoolctl"}
    assert len(rows) == 3
