"""latechunk/convert.py and the HTML side of latechunk/io/ (issue 12, item 3): an ``.html`` page is read as the
markdown of its content (headings, lists, tables, code kept; scripts, styles, navigation dropped), the conversion is
recorded in the Document's metadata and the manifest's document record, and ``heading`` cuts it by ``<h1>``-``<h6>``.
"""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.convert import html_to_markdown
from latechunk.io import iter_inputs
from latechunk.models import resolve_model_path
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document, Skipped
from tests.invariants import check_chunk_rows, chunk_file_rows
from tests.models import save_tiny_bert

runner = CliRunner()

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Widget   manual</title>
  <style>body { font-family: sans-serif; } .secret-style { color: red; }</style>
  <script>window.trackingSecret = "tracker-7f3a";</script>
</head>
<body>
  <header><a href="/">ACME home</a><nav><ul><li><a href="/shop">Shop menu</a></li></ul></nav></header>
  <div role="navigation">Breadcrumb trail</div>
  <main>
    <article>
      <header><h1>Widget manual</h1></header>
      <p>The widget turns <em>snake_case</em> names into parts.</p>
      <h2>Installing</h2>
      <p>Unpack the box and plug the widget in.</p>
      <ol><li>Unpack</li><li>Plug in<ul><li>Use the red cable</li></ul></li></ol>
      <h2>Prices</h2>
      <table>
        <thead><tr><th>Part</th><th>Price</th></tr></thead>
        <tbody><tr><td>bolt</td><td>1.50</td></tr><tr><td>nut</td><td>0.25</td></tr></tbody>
      </table>
      <h2>Scripting</h2>
      <p>Call it from Python:</p>
      <pre><code class="language-python">def run(widget):
    return widget.start()  # &lt;starts&gt;
</code></pre>
      <aside>Related: the gadget manual</aside>
    </article>
  </main>
  <footer>Copyright ACME footer</footer>
  <script>console.log("late-script-secret")</script>
  <noscript>Enable JavaScript please</noscript>
</body>
</html>
"""

DROPPED = ["trackingSecret", "secret-style", "late-script-secret", "ACME home", "Shop menu", "Breadcrumb trail",
           "Copyright ACME footer", "Related: the gadget manual", "Enable JavaScript"]


@pytest.fixture(scope="module")
def page_md():
    return html_to_markdown(PAGE)


def test_structure_survives_and_furniture_is_dropped(page_md):
    md = page_md.markdown
    for word in DROPPED:
        assert word not in md, word
    assert md.startswith("# Widget manual\n")  # the article's own header stays
    assert "\n## Installing\n" in md and "\n## Prices\n" in md and "\n## Scripting\n" in md
    assert "| Part | Price |\n| --- | --- |\n| bolt | 1.50 |\n| nut | 0.25 |" in md
    assert "```python\ndef run(widget):\n    return widget.start()  # <starts>\n```" in md
    assert "1. Unpack\n2. Plug in\n" in md and "- Use the red cable" in md
    assert "snake_case" in md  # no markdown escapes inside words
    assert page_md.title == "Widget manual"
    assert page_md.metadata == {"converted_from": "html", "converter": f"markdownify {version('markdownify')}"}
    assert html_to_markdown(PAGE) == page_md  # deterministic


def test_a_table_without_th_takes_its_first_row_as_header_and_inline_images_keep_alt_text():
    md = html_to_markdown('<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>'
                          '<p>Logo: <img alt="ACME logo" src="data:image/png;base64,iVBORw0KGgo="></p>').markdown
    assert "| a | b |\n| --- | --- |\n| 1 | 2 |" in md
    assert "ACME logo" in md and "base64" not in md


def test_html_files_are_read_as_markdown_with_the_conversion_recorded(tmp_path, page_md):
    (tmp_path / "manual.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "empty.htm").write_text("<html><head><script>x()</script></head><body><nav>menu</nav></body></html>",
                                        encoding="utf-8")
    items = {i.doc_id: i for i in iter_inputs([tmp_path])}
    doc = items["manual.html"]
    assert isinstance(doc, Document) and doc.text == page_md.markdown
    assert doc.metadata == {"source": "manual.html", "converted_from": "html",
                            "converter": f"markdownify {version('markdownify')}", "title": "Widget manual",
                            "title_from": "html"}
    assert isinstance(items["empty.htm"], Skipped) and "empty after HTML" in items["empty.htm"].reason


def test_chunk_cli_cuts_html_by_its_h2_sections(tmp_path, page_md):
    rows = chunk_file_rows(tmp_path / "manual.html", PAGE)
    assert [r["heading_path"] for r in rows] == [["Widget manual"], ["Widget manual", "Installing"],
                                                 ["Widget manual", "Prices"], ["Widget manual", "Scripting"]]
    # offsets index the markdown (the Document's text), and the chunks are its exact slices
    check_chunk_rows({"manual.html": page_md.markdown}, rows,
                     DocumentTokenizer.from_pretrained(resolve_model_path(None)))
    assert rows[2]["text"].startswith("## Prices\n\n| Part | Price |")
    assert "```python" in rows[3]["text"]
    assert not any(word in r["text"] for r in rows for word in DROPPED)


def test_the_manifest_records_the_conversion(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "manual.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "in" / "notes.md").write_text("# Notes\n\nPlain markdown.\n", encoding="utf-8")
    save_tiny_bert(tmp_path / "model", layers=1)  # the vectors do not matter here: a tiny random model
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(tmp_path / "in"), "--out", str(out), "--device", "cpu", "--quiet",
                              "--strategy", "heading", "--model", str(tmp_path / "model")])
    assert res.exit_code == 0, res.output
    docs = {d["doc_id"]: d for d in json.loads((out / "manifest.json").read_text())["documents"]}
    assert docs["manual.html"]["converted_from"] == "html" and docs["manual.html"]["title"] == "Widget manual"
    assert docs["manual.html"]["converter"] == f"markdownify {version('markdownify')}"
    assert "converted_from" not in docs["notes.md"] and "converter" not in docs["notes.md"]


def test_elements_hidden_by_inline_style_or_aria_are_dropped():
    md = html_to_markdown(
        '<p>Shown first.</p><div style="display:none">Also hidden</div>'
        '<div style="color: red; DISPLAY : None !important">Hidden too</div>'
        '<span style="visibility:hidden">Invisible</span><p aria-hidden="true">Aria hidden</p>'
        '<p style="display: block">Shown block.</p><p style="x-display:none">Shown odd.</p>'
        '<p aria-hidden="false">Shown aria.</p>').markdown
    for word in ("Also hidden", "Hidden too", "Invisible", "Aria hidden"):
        assert word not in md, word
    for word in ("Shown first.", "Shown block.", "Shown odd.", "Shown aria."):
        assert word in md, word


def test_a_page_is_decoded_by_its_bom_else_its_declared_charset_else_utf8(tmp_path):
    body = "<html><head>{meta}<title>Crème</title></head><body><p>Crème brûlée costs 5 €.</p></body></html>"
    (tmp_path / "latin.html").write_bytes(body.format(meta="<meta charset='iso-8859-1'>").encode("windows-1252"))
    (tmp_path / "equiv.htm").write_bytes(body.format(
        meta='<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-15">').replace("€", "¤")
        .encode("iso-8859-1"))  # 0xA4 is the euro sign in ISO-8859-15
    (tmp_path / "bom.html").write_bytes(b"\xef\xbb\xbf" + body.format(meta="<meta charset='iso-8859-1'>").encode())
    (tmp_path / "utf16.html").write_bytes(b"\xff\xfe" + body.format(meta="").encode("utf-16-le"))
    (tmp_path / "plain.html").write_bytes(body.format(meta="").encode("utf-8"))
    (tmp_path / "bad.html").write_bytes(body.format(meta="").encode("windows-1252"))
    (tmp_path / "unknown.html").write_bytes(body.format(meta="<meta charset='no-such-charset'>").encode("windows-1252"))
    items = {i.doc_id: i for i in iter_inputs([tmp_path])}
    for name in ("latin.html", "equiv.htm", "bom.html", "utf16.html", "plain.html"):
        doc = items[name]
        assert isinstance(doc, Document), (name, doc)
        assert doc.text == "Crème brûlée costs 5 €.\n" and doc.metadata["title"] == "Crème", name
    assert isinstance(items["bad.html"], Skipped)
    assert items["bad.html"].reason.startswith("invalid utf-8 at byte ") and "no <meta charset>" in items["bad.html"].reason
    # a declaration Python does not know was reported as no declaration at all (trial)
    assert "declares 'no-such-charset', an encoding Python does not know" in items["unknown.html"].reason


def test_deeply_nested_html_converts_and_embeds(tmp_path):
    """5,000 nested <div>s and 400 unclosed <font>s (a RecursionError in markdownify stopped the whole run): the
    deep elements are unwrapped, the text kept, and the run finishes with every file."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "deep.html").write_text("<html><body><h1>Tower</h1>" + "<div>" * 5000 + "Deep text at the top."
                                   + "</div>" * 5000 + "<p>After the tower.</p></body></html>", encoding="utf-8")
    (src / "font.html").write_text("<html><body>" + "<font size=2>" * 400 + "An old page.</body></html>",
                                   encoding="utf-8")
    (src / "notes.md").write_text("# Notes\n\nPlain markdown.\n", encoding="utf-8")
    items = {i.doc_id: i for i in iter_inputs([src])}
    assert items["deep.html"].text == "# Tower\n\nDeep text at the top.\n\nAfter the tower.\n"
    assert items["font.html"].text == "An old page.\n"
    save_tiny_bert(tmp_path / "model", layers=1)
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet",
                              "--model", str(tmp_path / "model")])
    assert res.exit_code == 0, res.output
    docs = {d["doc_id"] for d in json.loads((out / "manifest.json").read_text())["documents"]}
    assert docs == {"deep.html", "font.html", "notes.md"}


def test_a_page_that_still_recurses_too_deep_is_skipped_with_its_reason(tmp_path, monkeypatch):
    import latechunk.io.text as io_module  # the module that converts an HTML page (html_to_markdown)

    def recurse(html):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(io_module, "html_to_markdown", recurse)
    (tmp_path / "deep.html").write_text("<div><div>x</div></div>", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nPlain.\n", encoding="utf-8")
    items = {i.doc_id: i for i in iter_inputs([tmp_path])}
    assert isinstance(items["notes.md"], Document)
    assert isinstance(items["deep.html"], Skipped)
    assert items["deep.html"].reason == "HTML nested too deeply to convert (RecursionError)"
