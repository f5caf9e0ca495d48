"""A document's title: front matter, first heading, record title, file name, in that order (issue 12)."""

from __future__ import annotations

import json

import pytest

from latechunk.io import iter_inputs
from latechunk.titles import document_title, first_heading
from latechunk.types import Document


@pytest.mark.parametrize(
    "text, heading",
    [
        ("# Pond survey\n\ntext\n", "Pond survey"),
        ("intro\n\nSetext title\n============\n\nbody\n", "Setext title"),
        ("---\ntitle: x\n---\n\n## Second level   first\n", "Second level first"),
        ("```\n# not a heading\n```\n\n# Real\n", "Real"),
        ("no heading at all\n", None),
        ("#\n\n# Named\n", "Named"),  # an empty heading is passed over
    ],
)
def test_first_heading(text, heading):
    assert first_heading(text) == heading


def test_document_title_order(tmp_path):
    """Front matter beats the first heading, which beats a record's title field, which beats the file name."""
    (tmp_path / "fm.md").write_text("---\ntitle: From front matter\n---\n\n# A heading\n\ntext\n")
    (tmp_path / "head.md").write_text("# The heading\n\ntext\n")
    (tmp_path / "plain_notes.txt").write_text("just text, no heading\n")
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"id": "r1", "title": "Record title", "text": "body text"}) + "\n"
        + json.dumps({"id": "r2", "text": "untitled body"}) + "\n"
    )
    (tmp_path / "page.html").write_text("<html><head><title>Page title</title></head><body><p>Only a paragraph "
                                        "of text.</p></body></html>")
    titles = {d.doc_id: document_title(d) for d in iter_inputs([tmp_path])}
    assert titles["fm.md"] == ("From front matter", "front_matter")
    assert titles["head.md"] == ("The heading", "heading")
    assert titles["plain_notes.txt"] == ("plain_notes", "file_name")
    assert titles["r1"] == ("Record title", "record")
    assert titles["r2"] == ("", "none")  # a JSONL line's source names no file of its own
    assert titles["page.html"] == ("Page title", "html")


def test_document_title_from_the_python_api():
    assert document_title(Document("d", "text", {"title": "Given"})) == ("Given", "record")
    assert document_title(Document("d", "# Heading\n\ntext", {"title": "Given"})) == ("Heading", "heading")
    assert document_title(Document("d", "text")) == ("", "none")


def test_contextual_header():
    from latechunk.titles import contextual_header

    assert contextual_header("Guide", ("Install", "Linux")) == "[Guide > Install > Linux]"
    assert contextual_header("Guide", ("Guide", "Install")) == "[Guide > Install]"  # title said once
    assert contextual_header("", ("Install",)) == "[Install]"
    assert contextual_header("", ()) == ""
    assert contextual_header("T", ()) == "[T]"


def test_a_code_files_comment_is_no_title_and_long_texts_parse_a_prefix():
    code = Document("tool.py", "# helper script\n\ndef main():\n    pass\n", {"source": "src/tool.py"})
    assert document_title(code) == ("tool", "file_name")
    long = "para " * 3000 + "\n\n# Late heading\n\ntext\n"  # beyond the first prefixes
    assert first_heading(long) == "Late heading"
    fence = "```\n" + "# not a heading\n" * 600 + "```\n\n# Real\n"  # a fence longer than the first prefix
    assert first_heading(fence) == "Real"


def test_a_caption_over_a_setext_underline_is_no_title():
    """Chroma's pubmed file: a long figure caption over ``---`` parses as a heading; it is no title."""
    caption = "Figure 1. " + "The response of the cells to the treatment over time in three groups " * 4
    text = caption + "\n" + "more caption\n---\n\n## Methods\n\nbody\n"
    assert first_heading(text) == "Methods"
    assert first_heading("A" * 121 + "\n===\n") is None
