"""Issue 36: ``--encoding-errors replace`` never blanks a legacy 8-bit file's accents.

``replace`` is for UTF-8 text with a few invalid bytes (read with U+FFFD in their place, listed as degraded). A file
identified as legacy 8-bit text (Windows-1252 / Latin-1: no valid UTF-8 multi-byte character, and it reads as
Windows-1252) was read under ``replace`` with U+FFFD for every accented letter; it is skipped instead, with the
reason that advises converting it (iconv), under ``replace`` as under ``strict``. The same for JSONL lines and HTML
pages, which identify legacy files too.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from latechunk.io import LEGACY_UNDER_REPLACE, iter_inputs, read_text_file
from latechunk.types import Document, RecordFields, Skipped

REPLACE = RecordFields(encoding_errors="replace")
GOOD = "# Prix\n\nLe thé — 3 € — est très bon.\n\n"
#: UTF-8 text with one stray byte: read degraded under replace
STRAY = GOOD.encode("utf-8") + b"Cass\xe9 ici.\n" + "Naïve fin.\n".encode()
STRAY_AT = len(GOOD.encode("utf-8")) + len(b"Cass")
#: a legacy Windows-1252 file with many accents: skipped under replace too
LEGACY_TEXT = "Le café est très bon à Paris, près de l'église ; « déjà vu » — naïve señor, Müller, œuvre.\n" * 3
LEGACY = LEGACY_TEXT.encode("cp1252")
ICONV = "iconv -f WINDOWS-1252 -t UTF-8"


def _items(path, fields=None) -> dict:
    return {i.doc_id: i for i in iter_inputs([path], fields)}


def test_encoding_errors_replace_reads_mostly_utf8_text_degraded(tmp_path):
    (tmp_path / "prix.md").write_bytes(STRAY)
    text, note = read_text_file(tmp_path / "prix.md", encoding_errors="replace")
    assert text == STRAY.decode("utf-8", "replace") and "Cass\ufffd ici." in text and "très" in text
    assert note == f"1 byte not UTF-8 (at byte {STRAY_AT}) read as U+FFFD"
    doc = _items(tmp_path, REPLACE)["prix.md"]
    assert isinstance(doc, Document) and doc.metadata["degraded"] == note


def test_encoding_errors_replace_skips_a_legacy_8bit_file_with_the_iconv_advice(tmp_path):
    (tmp_path / "cafe.md").write_bytes(LEGACY)
    strict_text, strict = read_text_file(tmp_path / "cafe.md")
    text, reason = read_text_file(tmp_path / "cafe.md", encoding_errors="replace")
    assert strict_text is None and text is None  # was: read with U+FFFD for each of its accented letters
    assert reason == strict + LEGACY_UNDER_REPLACE
    assert reason.startswith(f"invalid UTF-8 at byte {LEGACY_TEXT.index('é')}: ")
    assert "Windows-1252 / Latin-1" in reason and ICONV in reason and "\ufffd" not in reason
    item = _items(tmp_path, REPLACE)["cafe.md"]
    assert isinstance(item, Skipped) and item.reason == reason
    # after the advised conversion the file is read, every accent intact
    (tmp_path / "cafe.md").write_bytes(LEGACY.decode("cp1252").encode("utf-8"))
    assert _items(tmp_path, REPLACE)["cafe.md"].text == LEGACY_TEXT


def test_encoding_errors_replace_skips_legacy_jsonl_lines_and_reads_mostly_utf8_ones(tmp_path):
    legacy = ('{"id": "a", "text": "Le café est très bon"}\n{"id": "b", "text": "plain"}\n'
              '{"id": "c", "text": "déjà vu, naïve"}\n')
    (tmp_path / "old.jsonl").write_bytes(legacy.encode("cp1252"))
    items = _items(tmp_path / "old.jsonl", REPLACE)
    assert isinstance(items["b"], Document) and "a" not in items and "c" not in items
    for key in ("old.jsonl:1", "old.jsonl:3"):
        reason = items[key].reason
        assert reason.startswith(f"invalid UTF-8 in line {key[-1]}: ") and reason.endswith(LEGACY_UNDER_REPLACE)
        assert "the file reads as Windows-1252" in reason and ICONV in reason, reason
    strict = _items(tmp_path / "old.jsonl")
    assert items["old.jsonl:1"].reason == strict["old.jsonl:1"].reason + LEGACY_UNDER_REPLACE

    lines = [json.dumps({"id": "a", "text": "thé — un"}, ensure_ascii=False).encode(),
             b'{"id": "b", "text": "cass\xe9"}']
    (tmp_path / "new.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    items = _items(tmp_path / "new.jsonl", REPLACE)
    assert items["b"].text == "cass\ufffd" and items["b"].metadata["degraded"].endswith("read as U+FFFD")


def test_encoding_errors_replace_skips_a_legacy_html_page_with_the_declare_or_convert_advice(tmp_path):
    page = f"<html><body><h1>Café</h1><p>{LEGACY_TEXT}</p></body></html>".encode("cp1252")
    (tmp_path / "p.html").write_bytes(page)
    at = page.index(b"\xe9")
    for fields, tail in ((None, ""), (REPLACE, LEGACY_UNDER_REPLACE)):
        item = _items(tmp_path, fields)["p.html"]
        assert isinstance(item, Skipped), item
        assert item.reason.startswith(f"invalid utf-8 at byte {at} (no byte-order mark and no "
                                      "<meta charset>"), item.reason
        assert '<meta charset="windows-1252">' in item.reason and ICONV in item.reason
        assert item.reason.endswith(tail) and "--encoding-errors replace reads it" not in item.reason
    # declared, the same bytes are read as the page says
    (tmp_path / "p.html").write_bytes(b'<meta charset="windows-1252">' + page)
    assert "Le café est très bon" in _items(tmp_path, REPLACE)["p.html"].text


def test_encoding_errors_replace_chunk_lists_a_legacy_file_as_skipped(tmp_path):
    from latechunk.cli import app

    src = tmp_path / "in"
    src.mkdir()
    (src / "cafe.md").write_bytes(LEGACY)
    (src / "prix.md").write_bytes(STRAY)
    out = tmp_path / "c.jsonl"
    res = CliRunner().invoke(app, ["chunk", str(src), "--out", str(out), "--encoding-errors", "replace"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["doc_id"] for r in rows} == {"prix.md"}
    assert not any("\ufffd" in r["text"] and "caf" in r["text"] for r in rows)
    assert "cafe.md" in res.output and ICONV in res.output
