"""Issue 36: of two paths to one file, the real file is read and the link listed as skipped, whatever the order.

``latechunk embed link_to_a.md a.md`` (or a folder holding a symlink to a file also given directly, the folder
first) read the link under its own id and listed the real file as skipped ("same file as link_to_a.md"); the
resolved, non-symlink path is the one read now, and the link is the one listed.
"""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from latechunk.io import count_inputs, iter_inputs
from latechunk.types import Document, Skipped
from tests.models import save_tiny_bert

SAME = "(read once, under that id)"


def _split(inputs) -> tuple[list[str], dict[str, str]]:
    items = list(iter_inputs(inputs))
    return ([i.doc_id for i in items if isinstance(i, Document)],
            {i.doc_id: i.reason for i in items if isinstance(i, Skipped)})


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nText of a.\n", encoding="utf-8")
    os.symlink("a.md", tmp_path / "link_to_a.md")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nText.\n", encoding="utf-8")
    os.symlink(tmp_path / "a.md", docs / "outside.md")
    return tmp_path


@pytest.mark.parametrize("order", [("link_to_a.md", "a.md"), ("a.md", "link_to_a.md")])
def test_symlink_keeps_real_file_given_with_its_link(tree, order):
    inputs = [tree / name for name in order]
    docs, skipped = _split(inputs)
    assert docs == ["a.md"]  # was, link first: link_to_a.md read, a.md skipped
    assert skipped == {"link_to_a.md": f"same file as a.md (input {str(tree / 'a.md')!r}) {SAME}"}
    assert count_inputs(inputs) == 2


@pytest.mark.parametrize("folder_first", [True, False])
def test_symlink_keeps_real_file_given_beside_a_folder_holding_a_link_to_it(tree, folder_first):
    inputs = [tree / "docs", tree / "a.md"] if folder_first else [tree / "a.md", tree / "docs"]
    docs, skipped = _split(inputs)
    assert sorted(docs) == ["a.md", "guide.md"]
    assert skipped == {"outside.md": f"same file as a.md (input {str(tree / 'a.md')!r}) {SAME}"}


def test_symlink_keeps_real_file_over_a_path_through_a_symlinked_folder(tree):
    os.symlink(tree / "docs", tree / "docs_link", target_is_directory=True)
    real, linked = tree / "docs" / "guide.md", tree / "docs_link" / "guide.md"
    for inputs in ([linked, real], [real, linked]):
        docs, skipped = _split(inputs)
        assert docs == ["guide.md"]
        if inputs[0] == linked:  # the path through the link comes first: it is the one listed
            assert skipped == {"guide.md": f"same file as guide.md (input {str(real)!r}) {SAME}"}
        else:  # the same id again after the real file: the duplicate-id check names it
            assert skipped["guide.md"].startswith("duplicate doc_id")


def test_symlink_keeps_real_file_in_one_folder_whatever_the_names_sort(tmp_path):
    for target, link in (("b.md", "a_link.md"), ("a.md", "z_link.md")):
        d = tmp_path / target[0]
        d.mkdir()
        (d / target).write_text("# T\n\nText.\n", encoding="utf-8")
        os.symlink(target, d / link)
        docs, skipped = _split([d])
        assert docs == [target] and skipped == {link: f"same file as {target} {SAME}"}


def test_symlink_keeps_real_file_embed_manifest(tree):
    """``embed docs/ a.md``, where docs/ holds a link to a.md and is walked first: a.md is embedded, the link is
    the manifest's skipped entry (``embed link_to_a.md a.md`` itself is refused: one input given again)."""
    save_tiny_bert(tree / "model", layers=1)
    from latechunk.cli import app

    out = tree / "out"
    res = CliRunner().invoke(app, ["embed", str(tree / "docs"), str(tree / "a.md"), "--out", str(out),
                                   "--device", "cpu", "--quiet", "--model", str(tree / "model")])
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [s["doc_id"] for s in m["skipped"]] == ["outside.md"]
    assert m["skipped"][0]["reason"] == f"same file as a.md (input {str(tree / 'a.md')!r}) {SAME}"
    assert m["counts"]["documents_embedded"] == 2


def test_symlink_keeps_real_file_chunk_link_first(tree):
    """``chunk docs/ a.md`` (docs/ holds a link to a.md and is read first) keeps a.md and names the link skipped;
    ``chunk link_to_a.md a.md`` is refused before any work, as ``embed`` refuses it (one input given again)."""
    from latechunk.cli import app

    out = tree / "c.jsonl"
    res = CliRunner().invoke(app, ["chunk", str(tree / "docs"), str(tree / "a.md"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert "a.md" in {r["doc_id"] for r in rows} and "outside.md" not in {r["doc_id"] for r in rows}
    assert "outside.md" in res.output and "same file as a.md" in res.output
    twice = CliRunner().invoke(app, ["chunk", str(tree / "link_to_a.md"), str(tree / "a.md"),
                                     "--out", str(tree / "d.jsonl")])
    assert twice.exit_code == 2 and "given again" in twice.output, twice.output
    assert not (tree / "d.jsonl").exists()
