"""reStructuredText inputs (issue 36, section 5): ``.rst`` files are read (no longer skipped as an unsupported
type), their section titles become markdown headings so ``heading`` gives heading paths, the body stays verbatim
and char spans index the converted text; an RST file renamed ``.txt`` never gets its overline rows in a heading."""

from __future__ import annotations

from typer.testing import CliRunner

from latechunk.convert import RST_CONVERTER, rst_to_markdown
from latechunk.io import iter_inputs
from latechunk.models import resolve_model_path
from latechunk.strategies import get_strategy
from latechunk.titles import document_title, first_heading
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document
from tests.invariants import check_chunk_rows, chunk_file_rows

runner = CliRunner()

RST = """\
=================
 Thread controls
=================

Limit the threads of native libraries.

Installation
============

Install it with pip::

    pip install threadctl
    =====================

Usage
=====

Call ``limit()``.

Options
-------

*Keyword* arguments.

----

Changes
=======

Old notes.
"""


def test_rst_files_are_read_with_section_titles_as_headings(tmp_path):
    (tmp_path / "README.rst").write_text(RST, encoding="utf-8")
    (doc,) = list(iter_inputs([tmp_path]))
    assert isinstance(doc, Document)  # was: skipped, unsupported type .rst
    assert doc.metadata == {"source": "README.rst", "converted_from": "rst", "converter": RST_CONVERTER}
    assert doc.text == rst_to_markdown(RST)
    assert doc.text.startswith("# Thread controls\n\nLimit the threads of native libraries.\n\n## Installation\n")
    assert "\n## Usage\n\nCall ``limit()``.\n\n### Options\n\n*Keyword* arguments.\n\n----\n\n## Changes\n" in doc.text
    # the body is verbatim: an indented literal block with an adornment-like line is no title
    assert "    pip install threadctl\n    =====================\n" in doc.text
    assert document_title(doc) == ("Thread controls", "heading")


def test_rst_heading_paths_from_the_heading_strategy(tmp_path):
    rows = chunk_file_rows(tmp_path / "README.rst", RST)
    assert [r["heading_path"] for r in rows] == [
        ["Thread controls"], ["Thread controls", "Installation"], ["Thread controls", "Usage"],
        ["Thread controls", "Usage", "Options"], ["Thread controls", "Changes"]]
    check_chunk_rows({"README.rst": rst_to_markdown(RST)}, rows,
                     DocumentTokenizer.from_pretrained(resolve_model_path(None)))


def test_rst_title_rules():
    # a style's level is the order it first appears; an underline shorter than its title (and under 4) is no title
    assert rst_to_markdown("A\n~\n\nB\n*\n\nC\n~\n") == "# A\n\n## B\n\n# C\n"
    assert rst_to_markdown("Long title\n--\n\ntext\n") == "Long title\n--\n\ntext\n"
    # a title after a paragraph line (no blank line before it) is no title; a transition is no title either
    assert rst_to_markdown("para\nTitle\n=====\n") == "para\nTitle\n=====\n"
    assert rst_to_markdown("a\n\n-----\n\nb\n") == "a\n\n-----\n\nb\n"
    # an overline must match its underline; CRLF line breaks are kept
    assert rst_to_markdown("=====\nTitle\n-----\n\nx\n") == "=====\nTitle\n-----\n\nx\n"
    assert rst_to_markdown("Title\r\n=====\r\nx\r\n") == "# Title\r\nx\r\n"
    text = "No titles at all.\n\n    indented\n    ========\n"
    assert rst_to_markdown(text) is text


def test_rst_renamed_txt_never_gets_its_overline_in_a_heading_path():
    tok = DocumentTokenizer.from_pretrained(resolve_model_path(None))
    doc = Document("README.txt", RST, {"source": "README.txt", "markdown": True})  # .txt read as markdown
    b = get_strategy("heading").split(doc, tok(doc), None)
    paths = {p for p in b.heading_paths if p}
    assert ("Thread controls",) in paths, paths
    assert not any("=" in h for p in paths for h in p), paths
    assert first_heading(RST) == "Thread controls"
