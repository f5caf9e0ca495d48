"""Regression tests: BOM-marked text inputs (UTF-8/16/32), the CLI's macro-window minimum, and the removal of
stale pickle files from the dataset cache. (The macro-window checks themselves: tests/test_macro_window.py and
tests/test_encoder.py; failing fast on an unreachable Hugging Face hub: tests/test_models.py.)"""

from __future__ import annotations

import codecs
import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.io import iter_inputs, read_text_file
from latechunk.types import Document, Skipped

TEXT = "Caf\u00e9 cr\u00e8me \u2014 \u65e5\u672c\u8a9e.\r\nThe river Nile flows north.\n\nSecond paragraph here.\n"
BOMS = {
    "utf-8": codecs.BOM_UTF8,
    "utf-16-le": codecs.BOM_UTF16_LE,
    "utf-16-be": codecs.BOM_UTF16_BE,
    "utf-32-le": codecs.BOM_UTF32_LE,
    "utf-32-be": codecs.BOM_UTF32_BE,
}


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


# --------------------------------------------------------------------------- 1. BOM-marked inputs
@pytest.mark.parametrize("codec", sorted(BOMS))
def test_bom_text_file_is_decoded_without_its_bom(tmp_path, codec):
    f = tmp_path / f"{codec}.txt"
    f.write_bytes(BOMS[codec] + TEXT.encode(codec))
    text, reason = read_text_file(f)
    assert reason == "" and text == TEXT  # BOM gone, no newline translation
    (item,) = list(iter_inputs([f]))
    assert isinstance(item, Document) and item.text == TEXT


@pytest.mark.parametrize(
    "data,needle",
    [
        (b"\x00\x01\x02binary", "NUL bytes"),
        ("plain UTF-16 without a mark".encode("utf-16-le"), "byte-order mark"),
        (codecs.BOM_UTF16_LE + b"a\x00\x00\xd8b\x00", "not valid UTF-16LE"),  # a lone surrogate
        (codecs.BOM_UTF16_LE + b"a\x00b", "not valid UTF-16LE"),  # odd length: truncated
        (codecs.BOM_UTF32_BE + b"\x00\x11\x00\x00", "not valid UTF-32BE"),  # beyond U+10FFFF
        (codecs.BOM_UTF16_BE + "abc\x00def".encode("utf-16-be"), "NUL characters"),
        (codecs.BOM_UTF16_LE + bytes(range(0xE0, 0xF8)) * 8, "non-text"),  # private-use code points
    ],
)
def test_binary_files_are_still_skipped_with_a_reason(tmp_path, data, needle):
    f = tmp_path / "x.txt"
    f.write_bytes(data)
    text, reason = read_text_file(f)
    assert text is None and "binary" in reason and needle in reason
    (item,) = list(iter_inputs([f]))
    assert isinstance(item, Skipped) and item.reason == reason


def test_jsonl_with_a_bom_keeps_its_first_line(tmp_path):
    lines = '{"id": "a", "text": "first doc"}\r\n{"id": "b", "text": "second \u00e9"}\n'
    (tmp_path / "u8.jsonl").write_bytes(codecs.BOM_UTF8 + lines.encode("utf-8"))
    (tmp_path / "u16.jsonl").write_bytes(codecs.BOM_UTF16_LE + lines.replace('"a"', '"c"').replace('"b"', '"d"')
                                         .encode("utf-16-le"))
    (tmp_path / "bad16.jsonl").write_bytes(codecs.BOM_UTF16_BE + b"\xdc\x00\x00a")
    items = list(iter_inputs([tmp_path]))
    docs = {i.doc_id: i.text for i in items if isinstance(i, Document)}
    assert docs == {"a": "first doc", "b": "second \u00e9", "c": "first doc", "d": "second \u00e9"}
    (bad,) = [i for i in items if isinstance(i, Skipped)]
    assert bad.source == "bad16.jsonl:1" and "UTF-16BE" in bad.reason


def test_utf16_file_is_embedded_and_verifies(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "le.md").write_bytes(codecs.BOM_UTF16_LE + ("# Rivers\n\n" + TEXT).encode("utf-16-le"))
    (src / "be.txt").write_bytes(codecs.BOM_UTF16_BE + ("Bread rises. " + TEXT).encode("utf-16-be"))
    (src / "bin.txt").write_bytes(codecs.BOM_UTF16_LE + b"a\x00\x00\xd8")
    out = tmp_path / "out"
    res = _run("embed", src, "--out", out, "--device", "cpu", "--quiet", "--strategy", "fixed:size=16")
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert {d["doc_id"] for d in m["documents"]} == {"le.md", "be.txt"}
    assert [(s["doc_id"], "binary" in s["reason"]) for s in m["skipped"]] == [("bin.txt", True)]
    assert m["counts"]["documents_in"] == 3
    assert _run("verify", out).exit_code == 0


# --------------------------------------------------------------------------- 2. macro-window minimum (CLI)
# (the plan's own checks: tests/test_macro_window.py, tests/test_encoder.py)
def test_cli_rejects_a_tiny_window_before_work(tmp_path):
    src = tmp_path / "a.md"
    src.write_text("Some text about rivers and the sea.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--device", "cpu", "--window", "3"])
    assert res.exit_code != 0 and "window=3" in res.output and "minimum" in res.output
    assert not (tmp_path / "o" / "manifest.json").exists()


# (3. hub model ids offline: tests/test_models.py)


# --------------------------------------------------------------------------- 4. stale pickles in the cache
def test_dataset_cache_removes_stale_pickles(tmp_path, monkeypatch, caplog):
    from latechunk.eval.cache import load_cached

    squad = tmp_path / "tiny_squad.json"
    ctx = "The Nile flows north. The Amazon is wide."
    squad.write_text(json.dumps({"version": "1.1", "data": [{"title": "rivers", "paragraphs": [{
        "context": ctx,
        "qas": [{"id": "q1", "question": "Which way does the Nile flow?",
                 "answers": [{"text": "north", "answer_start": ctx.index("north")}]}]}]}]}), encoding="utf-8")
    cache = tmp_path / "lc"
    folder = cache / "datasets"
    folder.mkdir(parents=True)
    for name in ("0a1b.pkl", "old-dataset.pkl"):
        (folder / name).write_bytes(b"\x80\x04not to be unpickled")
    (folder / "notes.txt").write_text("kept")
    monkeypatch.setenv("LATECHUNK_CACHE", str(cache))
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        ds, info = load_cached(squad)
    assert not list(folder.glob("*.pkl")) and (folder / "notes.txt").is_file()
    assert Path(info["cache_file"]).parent == folder and Path(info["cache_file"]).is_file()
    lines = [r.getMessage() for r in caplog.records if "pickle" in r.getMessage()]
    assert len(lines) == 1 and "removed 2" in lines[0]
    assert len(ds.queries) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        _, again = load_cached(squad)
    assert again["cache_hit"] and not [r for r in caplog.records if "pickle" in r.getMessage()]
