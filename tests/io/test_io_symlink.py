"""A symlink to a file that is also embedded directly was embedded twice under two ids (issue 36, section 5): the
target is read once, the link listed as skipped ("same file as ..."); the same for one file reached through two
inputs (a folder and a symlink to it, or a folder and its sub-folder)."""

from __future__ import annotations

import os

from latechunk.io import count_inputs, is_not_read, iter_inputs
from latechunk.types import Document, Skipped


def _kinds(inputs) -> dict:
    return {i.doc_id: (i if isinstance(i, Skipped) else "D") for i in iter_inputs(inputs)}


def test_a_symlink_to_a_file_also_embedded_directly_is_embedded_once(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nText.\n", encoding="utf-8")
    os.symlink("guide.md", docs / "a_link.md")  # sorted before its target
    os.symlink(docs / "guide.md", docs / "z_link.md")
    (tmp_path / "other.md").write_text("# Other\n\nMore.\n", encoding="utf-8")
    os.symlink(tmp_path / "other.md", docs / "outside.md")  # its target is not read otherwise: read as itself
    items = _kinds([docs])
    assert items["guide.md"] == "D" and items["outside.md"] == "D"
    for link in ("a_link.md", "z_link.md"):
        assert items[link].reason == "same file as guide.md (read once, under that id)", items[link]
        assert is_not_read(items[link].reason)
    assert len(items) == 4 and count_inputs([docs]) == 4


def test_a_file_reached_through_a_symlinked_folder_or_a_sub_folder_input_is_embedded_once(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    (docs / "sub" / "b.md").write_text("# B\n\nText.\n", encoding="utf-8")
    os.symlink(docs, tmp_path / "docs_link", target_is_directory=True)
    items = list(iter_inputs([docs, tmp_path / "docs_link"]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["a.md", "sub/b.md"]
    again = [i for i in items if isinstance(i, Skipped)]
    assert [i.doc_id for i in again] == ["a.md", "sub/b.md"]
    assert again[0].reason.startswith("duplicate doc_id") and again[0].reason.endswith("(the same input is given twice)")
    # a folder and its own sub-folder as two inputs: b.md under two ids was embedded twice
    items = list(iter_inputs([docs, docs / "sub"]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["a.md", "sub/b.md"]
    (skip,) = [i for i in items if isinstance(i, Skipped)]
    assert skip.doc_id == "b.md" and skip.reason.startswith("same file as sub/b.md")


def test_a_symlinked_folder_inside_a_walked_folder_is_still_not_followed(tmp_path):
    docs = tmp_path / "docs"
    (docs / "real").mkdir(parents=True)
    (docs / "real" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    os.symlink(docs / "real", docs / "linked", target_is_directory=True)
    items = _kinds([docs])
    assert items["real/a.md"] == "D" and items["linked/"].reason.startswith("symlinked folder not followed")
