"""HTML text that markdown would read as syntax (issue 36, section 2): only ``<h1>``..``<h6>`` (and ``<title>`` for
the title) make headings of an ``.html`` page; a paragraph's ``# 1 rule``, a ``<br>`` and a line of ``=`` under it,
a ``> quote`` or ``1. item`` written as text stay text, and chunk spans index the converted markdown exactly."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from latechunk.convert import html_to_markdown
from latechunk.io import iter_inputs
from latechunk.models import resolve_model_path
from latechunk.strategies._markdown import markdown_parser
from latechunk.titles import document_title
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document
from tests.invariants import check_chunk_rows, chunk_file_rows

runner = CliRunner()

PAGE = """<html><head><title>Fee   schedule</title></head><body>
<p># Not a heading, a paragraph about hash tags</p>
<h1>Fees</h1>
<p>Total due<br>=====</p>
<p>Monthly
# still the paragraph's text
</p>
<h2>Late payments</h2>
<p>Overdue<br>---</p>
<p>&gt; a quoted remark, written as text</p>
<p>1. not a list, a sentence that starts with a number</p>
<p>```not a fence</p>
<div>!!! note written as text</div>
<p>== "Tab" written as text</p>
<p>Prose then <b>bold</b> # a hash mid-line stays as written</p>
<pre><code># a comment in code
===
</code></pre>
</body></html>
"""


def _headings(markdown: str) -> list[tuple[str, str]]:
    """(tag, source line) of every heading markdown-it finds in ``markdown`` (the parse the strategies share)."""
    tokens = markdown_parser().parse(markdown)
    lines = markdown.split("\n")
    return [(t.tag, lines[t.map[0]]) for t in tokens if t.type == "heading_open"]


def test_html_paragraph_text_is_not_a_heading(tmp_path):
    (tmp_path / "fees.html").write_text(PAGE, encoding="utf-8")
    (doc,) = list(iter_inputs([tmp_path]))
    assert isinstance(doc, Document)
    # the page's headings are its <h1> and <h2>, nothing that a paragraph's text says
    assert _headings(doc.text) == [("h1", "# Fees"), ("h2", "## Late payments")]
    assert document_title(doc) == ("Fees", "heading")  # the first heading, not the paragraph's "# Not a heading"
    assert doc.metadata["title"] == "Fee schedule"  # <title>
    # the words are kept (a backslash before the syntax only), code untouched, mid-line text as written
    for words in ("Not a heading, a paragraph about hash tags", "Total due", "=====", "still the paragraph's text",
                  "a quoted remark", "not a list", "not a fence", "note written as text",
                  "**bold** # a hash mid-line stays as written", "```\n# a comment in code\n===\n```"):
        assert words in doc.text, words


def test_html_paragraph_text_is_not_a_heading_in_heading_paths(tmp_path):
    rows = chunk_file_rows(tmp_path / "fees.html", PAGE)
    paths = [tuple(r["heading_path"]) for r in rows]
    assert set(paths) <= {(), ("Fees",), ("Fees", "Late payments")}, paths
    assert ("Fees", "Late payments") in paths
    # char spans index the converted markdown (the Document's text) exactly
    check_chunk_rows({"fees.html": html_to_markdown(PAGE).markdown}, rows,
                     DocumentTokenizer.from_pretrained(resolve_model_path(None)))


@pytest.mark.parametrize("text", ["# x", "###### x", "#", "=", "===", "---", "--", "- x", "+ x", "* x", "***",
                                  "_ _ _", "1. x", "2) x", "> x", "```", "~~~ x", "<div> x", "</p>", "<!-- x",
                                  "!!! note", "???+ note", '=== "Tab"', "   # x"])
@pytest.mark.parametrize("where", ["<p>{}</p>", "<p>Line<br>{}</p>", "<p>Line\n{}\nmore</p>", "<li>{}</li>",
                                   "<td>{}</td>", "<div><span>{}</span></div>", "<p>a<br><em>{}</em></p>"])
def test_html_text_never_reads_as_block_syntax(text, where):
    """Each piece of line-start syntax, written as HTML text in each place a line starts: markdown-it reads the
    converted page as the same blocks as the page with plain words there (no heading, no extra block)."""
    from html import escape

    html = "<h2>Real</h2>" + where.format(escape(text)) + "<p>after</p>"
    md = html_to_markdown(html).markdown
    plain = html_to_markdown("<h2>Real</h2>" + where.format("words") + "<p>after</p>").markdown
    assert _headings(md) == [("h2", "## Real")], md
    kinds = [t.type for t in markdown_parser().parse(md) if t.nesting >= 0]
    assert kinds == [t.type for t in markdown_parser().parse(plain) if t.nesting >= 0], (md, plain)
    assert text.strip() in md.replace("\\", "")  # the text stays, a backslash before its syntax only
