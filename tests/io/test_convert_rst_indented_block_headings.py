"""Issue 36: a line inside an indented RST block (a ``::`` literal block, a ``.. code-block::`` or other
directive's body, a block quote) never becomes a heading.

RST section titles are never indented, so they were never read from such lines; but the converted text is read as
markdown, where ``   # comment`` (a Python comment 3 spaces into a code block) is an ATX heading and ``  Inner`` over
``  =====`` a setext heading. Converted, such a line gets a backslash before its heading syntax, everything else of
the block stays verbatim, and char spans index the converted text.
"""

from __future__ import annotations

import pytest

from latechunk.convert import rst_to_markdown
from latechunk.io import iter_inputs
from latechunk.models import resolve_model_path
from latechunk.strategies._markdown import markdown_parser
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document
from tests.invariants import check_chunk_rows, chunk_file_rows

RST = """\
Guide
=====

Run it::

  Inner title
  -----------

  # a shell comment

.. code-block:: python

   # set up the pool
   pool = make()

.. note:: Mind the
   Underlined note
   ===============

.. code-block:: rst

   Section in an example
   =====================

Usage
-----

- item

  .. code-block:: python

     # nested comment
     x = 1

.. code-block:: markdown

   ```python
   never closed

Next
----

Done.
"""


def _headings(markdown: str) -> list[tuple[str, str]]:
    """(tag, text) of every heading markdown-it reads in ``markdown``, at any nesting (list items, quotes)."""
    tokens = markdown_parser().parse(markdown)
    return [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def test_rst_indented_block_headings_only_section_titles_are_headings():
    md = rst_to_markdown(RST)
    assert _headings(md) == [("h1", "Guide"), ("h2", "Usage"), ("h2", "Next")], md
    # the blocks' words stay, a backslash before the heading syntax only
    for words in ("  Inner title\n  \\-----------\n", "  \\# a shell comment\n", "   \\# set up the pool\n",
                  "   pool = make()\n", ".. note:: Mind the\n   Underlined note\n   \\===============\n",
                  "   Section in an example\n   \\=====================\n", "     \\# nested comment\n",
                  "   \\```python\n   never closed\n"):
        assert words in md, words
    # and nothing else changed: without the backslashes, the RST with its three titles as ATX lines
    titles = RST.replace("Guide\n=====", "# Guide").replace("Usage\n-----", "## Usage").replace("Next\n----", "## Next")
    assert md.replace("\\", "") == titles


def test_rst_indented_block_headings_heading_paths(tmp_path):
    rows = chunk_file_rows(tmp_path / "guide.rst", RST)
    paths = {tuple(r["heading_path"]) for r in rows}
    assert paths == {("Guide",), ("Guide", "Usage"), ("Guide", "Next")}, paths
    check_chunk_rows({"guide.rst": rst_to_markdown(RST)}, rows,
                     DocumentTokenizer.from_pretrained(resolve_model_path(None)))


def test_rst_indented_block_headings_read_by_iter_inputs(tmp_path):
    (tmp_path / "guide.rst").write_text(RST, encoding="utf-8")
    (doc,) = list(iter_inputs([tmp_path]))
    assert isinstance(doc, Document)
    assert doc.text == rst_to_markdown(RST)
    assert _headings(doc.text) == [("h1", "Guide"), ("h2", "Usage"), ("h2", "Next")]


@pytest.mark.parametrize("body", ["# comment", "## two", "Title\n=====", "Title\n---", "- Title\n  =====",
                                  "> # quoted", "1. # listed", "text\n\n# after a blank", "a\n=\n"])
@pytest.mark.parametrize("opener", ["Example::", ".. code-block:: python", ".. note::", ".. note:: text",
                                    "- item\n\n  Example::", "Quote:"])
@pytest.mark.parametrize("indent", [1, 2, 3, 4, 5])
def test_rst_indented_block_headings_no_body_line_is_a_heading(body, opener, indent):
    """Every heading-like body, under every kind of indented block, at every indentation: markdown-it reads no
    heading but the section titles, and the text differs from the RST only by backslashes."""
    extra = 2 if opener.startswith("- item") else 0  # a list item's body is indented from its text
    pad = " " * (indent + extra)
    block = "\n".join(pad + ln if ln else "" for ln in body.split("\n"))
    sep = "\n" if opener == ".. note:: text" else "\n\n"  # a directive's body may follow its first line
    rst = f"Top\n===\n\n{opener}{sep}{block}\n\nEnd\n===\n\nlast\n"
    md = rst_to_markdown(rst)
    assert _headings(md) == [("h1", "Top"), ("h1", "End")], md
    assert md.replace("\\", "") == rst.replace("\\", "").replace("Top\n===", "# Top").replace("End\n===", "# End")


def test_rst_indented_block_headings_code_kept_verbatim_when_markdown_reads_it_as_code():
    # indented 4 after a blank line: markdown reads it as code, nothing is escaped
    text = "Top\n===\n\nExample::\n\n    # comment\n    Title\n    =====\n"
    assert rst_to_markdown(text) == "# Top\n\nExample::\n\n    # comment\n    Title\n    =====\n"
    plain = "No titles.\n\n    # code\n"
    assert rst_to_markdown(plain) is plain
