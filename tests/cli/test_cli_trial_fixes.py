"""CLI faults a fresh-user trial found: chunk's input check, compare's ``--dedup 0.95``, plurals in summary lines,
train's macro window checked before the corpus is read. Each test is named for its fault."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from latechunk.cli import app

runner = CliRunner()

_DOC = "# Title\n\nA short document about storage and caches, with one more sentence to read.\n"


def _folder(tmp_path):
    src = tmp_path / "small"
    src.mkdir()
    (src / "doc1.md").write_text(_DOC, encoding="utf-8")
    return src


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("shape", ["given_twice", "file_inside_folder"])
def test_chunk_refuses_an_input_read_twice_as_embed_does(tmp_path, shape):
    src = _folder(tmp_path)
    inputs = [src / "doc1.md", src / "doc1.md"] if shape == "given_twice" else [src, src / "doc1.md"]
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["chunk", *map(str, inputs), "-s", "heading", "--out", str(out)])
    assert res.exit_code == 2, res.output
    want = (f"input {inputs[1]} is the input {inputs[0]} given again" if shape == "given_twice"
            else f"input {inputs[1]} is inside the input folder {inputs[0]}: its documents would be read twice")
    assert want in _words(res.output), res.output
    assert "duplicate doc_id" not in res.output and not out.exists()  # refused before any work
    embed = runner.invoke(app, ["embed", *map(str, inputs), "--out", str(tmp_path / "idx")])
    assert embed.exit_code == 2 and want in _words(embed.output), embed.output  # the same check, the same words


def test_chunk_still_reads_a_folder_and_a_file_outside_it(tmp_path):
    src = _folder(tmp_path)
    (tmp_path / "other.md").write_text(_DOC, encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(src), str(tmp_path / "other.md"), "-s", "heading", "--out",
                              str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    assert "2 chunks from 2 documents (0 skipped)" in res.output


@pytest.mark.parametrize("args", [["--dedup", "0.95"], ["-s", "fixed", "--dedup", "0.95"], ["-s", "0.95"]])
def test_compare_dedup_followed_by_a_number_names_dedup_threshold(args):
    res = runner.invoke(app, ["compare", "-d", "chroma", *args])
    assert res.exit_code == 2, res.output
    text = _words(res.output)
    assert ("--dedup in compare is an overlap filter switch (now --dedup-overlap); for a cosine threshold use "
            "--dedup-threshold 0.95") in text, res.output
    assert "unknown strategy" not in text and "unexpected extra argument" not in text


def test_compare_a_word_that_is_no_number_is_still_an_unknown_strategy():
    res = runner.invoke(app, ["compare", "-d", "chroma", "-s", "nan"])
    assert res.exit_code == 2 and "unknown strategy 'nan'" in res.output, res.output


def test_chunk_summary_says_1_chunk_from_1_document(tmp_path):
    src = _folder(tmp_path)
    res = runner.invoke(app, ["chunk", str(src), "-s", "heading", "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    assert "1 chunk from 1 document (0 skipped) -> " in res.output, res.output


def test_embed_summary_says_1_chunk(tmp_path):
    src = _folder(tmp_path)
    res = runner.invoke(app, ["embed", str(src), "-s", "heading", "--out", str(tmp_path / "idx"), "-q"])
    assert res.exit_code == 0, res.output
    assert "embedded 1/1 documents -> 1 chunk (" in res.output, res.output


def test_one_byte_not_utf8_is_not_called_their(tmp_path):
    src = tmp_path / "bad"
    src.mkdir()
    (src / "a.md").write_bytes(b"# A\n\ncaf\xc3\xa9 and one bad \xff byte in valid UTF-8 text.\n")
    (src / "b.md").write_text(_DOC, encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(src), "-s", "heading", "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    text = _words(res.output)
    assert "1 byte not UTF-8 (at byte " in text, res.output
    assert "in their place" not in text
    assert "--encoding-errors replace reads it with U+FFFD for each invalid byte" in text


def test_train_checks_the_macro_window_before_reading_the_corpus(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from latechunk.train import loop

    src = _folder(tmp_path)
    read = []
    monkeypatch.setattr(loop, "_examples", lambda *a, **k: read.append(a) or ([], ""))
    res = runner.invoke(app, ["train", "--out", str(tmp_path / "o"), "--ict", str(src), "--macro-window", "5"])
    assert res.exit_code == 2, res.output
    assert "too small" in res.output and "16 content tokens" in res.output, res.output
    assert read == []  # the corpus was never read
