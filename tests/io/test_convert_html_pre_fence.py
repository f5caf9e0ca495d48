"""Issue 36: an HTML ``<pre>`` holding a ``` fence (or any run of backticks) stays one code block.

markdownify fences a ``<pre>`` with three backticks whatever it holds, so a ```` ``` ```` line inside closed the
block early and the rest of the code was read as markdown (false headings in heading paths). The fence convert
writes is longer than every backtick run inside (CommonMark: a closing fence is at least as long as the opening
one), or tildes when the language holds a backtick; a code span's line breaks never start a markdown line.
"""

from __future__ import annotations

from html import escape

import pytest

from latechunk.convert import html_to_markdown
from latechunk.models import resolve_model_path
from latechunk.strategies._markdown import markdown_parser
from latechunk.tokenize import DocumentTokenizer
from tests.invariants import check_chunk_rows, chunk_file_rows

PAGE = ("<h1>Real One</h1><p>a</p><h2>Real Two</h2><p>b</p><pre>```\n# in pre with fence\n```\noutside?</pre> "
        "<h3># Hash inside h3</h3>")


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """(type, content) of markdown-it's headings (their inline text) and fences (their code)."""
    tokens = markdown_parser().parse(markdown)
    out = []
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            out.append((t.tag, tokens[i + 1].content))
        elif t.type in ("fence", "code_block"):
            out.append(("code", t.content))
    return out


def test_html_pre_fence_heading_paths_come_from_h1_to_h6_only(tmp_path):
    rows = chunk_file_rows(tmp_path / "page.html", PAGE)
    paths = {tuple(r["heading_path"]) for r in rows}
    # the h3's text is literally "# Hash inside h3": a heading, but its words, not a nested heading
    assert paths <= {("Real One",), ("Real One", "Real Two"), ("Real One", "Real Two", "# Hash inside h3")}, paths
    assert ("Real One", "Real Two", "# Hash inside h3") in paths
    assert not any("in pre with fence" in p or "outside?" in p for path in paths for p in path)
    check_chunk_rows({"page.html": html_to_markdown(PAGE).markdown}, rows,
                     DocumentTokenizer.from_pretrained(resolve_model_path(None)))


def test_html_pre_fence_is_one_code_block():
    md = html_to_markdown(PAGE).markdown
    assert _blocks(md) == [("h1", "Real One"), ("h2", "Real Two"), ("code", "```\n# in pre with fence\n```\noutside?\n"),
                           ("h3", "\\# Hash inside h3")], md


@pytest.mark.parametrize("code", ["```\n# x\n```", "````\n# x\n````\n```", "``` python\n# x", "~~~\n# x\n~~~",
                                  "a `` b ``` c\n# x", "```\n```\n# x\n=====", "`\n# x\n``"])
@pytest.mark.parametrize("where", ["{}", "<ul><li>item{}</li></ul>", "<blockquote>{}</blockquote>",
                                   "<div><div>{}</div></div>"])
@pytest.mark.parametrize("lang", ["", ' class="language-py"', ' class="language-a`b"'])
def test_html_pre_fence_of_any_backtick_run_holds_the_code(code, where, lang):
    """Whatever backtick or tilde runs a ``<pre>`` holds, wherever it is, markdown-it reads one code block whose
    code is the ``<pre>``'s text, and no heading but the page's own."""
    pre = f"<pre{lang}>{escape(code)}</pre>"
    md = html_to_markdown("<h2>Real</h2>" + where.format(pre) + "<p>after</p>").markdown
    assert _blocks(md) == [("h2", "Real"), ("code", code + "\n")], md


def test_html_pre_fence_empty_pre_and_plain_code_unchanged():
    assert html_to_markdown("<p>a</p><pre></pre>").markdown == "a\n"
    assert html_to_markdown('<pre><code class="language-py">x = 1</code></pre>').markdown == "```py\nx = 1\n```\n"


@pytest.mark.parametrize("code", ["x\n# not heading", "x\n===", "x\n- item", "x\n```"])
def test_html_pre_fence_code_span_line_break_starts_no_block(code):
    """A ``<code>`` outside ``<pre>`` is a code span: its line breaks (spaces in CommonMark's rendering) never
    start a markdown line, so its text makes no heading, list or fence."""
    md = html_to_markdown(f"<h2>Real</h2><p>see <code>{escape(code)}</code> there</p>").markdown
    blocks = [t.type for t in markdown_parser().parse(md) if t.nesting >= 0]
    assert blocks == ["heading_open", "inline", "paragraph_open", "inline"], md
    assert " ".join(code.split()) in md
