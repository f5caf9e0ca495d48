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
