"""One stray byte loses a whole file, and the advice corrupts it (issue 36, section 3).

A file that is UTF-8 except for a few bytes is told apart from a legacy 8-bit file: its reason names the bytes'
offsets and offers ``--encoding-errors replace`` (never a Windows-1252 conversion, which garbles its correct
characters); only a legacy file is advised to be converted. With ``replace`` the file (JSONL line, table row) is
read with U+FFFD in place of those bytes and listed in the manifest's ``degraded``. One bad JSONL line or table
value loses only its own record.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.io import iter_inputs, read_text_file
from latechunk.types import Document, RecordFields, Skipped
from tests.models import save_tiny_bert

runner = CliRunner()

GOOD = "# Prices\n\nThe café’s tea — 3 € — is très bon.\n\n"
#: UTF-8 text with one stray 0xFF byte at offset BAD_AT
STRAY = GOOD.encode("utf-8") + b"Broken \xff here.\n" + "Naïve ending.\n".encode()
BAD_AT = len(GOOD.encode("utf-8")) + len(b"Broken ")
REPLACE = RecordFields(encoding_errors="replace")


def _items(path, fields=None) -> dict:
    return {i.doc_id: i for i in iter_inputs([path], fields)}


def test_one_stray_byte_in_utf8_text_is_not_called_windows_1252(tmp_path):
    (tmp_path / "prices.md").write_bytes(STRAY)
    text, reason = read_text_file(tmp_path / "prices.md")
    assert text is None
    assert reason.startswith(f"invalid UTF-8 at byte {BAD_AT}: 1 byte not UTF-8 (at byte {BAD_AT})"), reason
    assert "otherwise valid UTF-8" in reason and "--encoding-errors replace" in reason
    assert "Windows-1252" not in reason and "iconv" not in reason  # that advice turns every — into â€”


def test_stray_bytes_are_named_by_offset_first_few_and_count(tmp_path):
    data = GOOD.encode() + b"".join(b"x\xfe" for _ in range(7))
    (tmp_path / "many.txt").write_bytes(data)
    _, reason = read_text_file(tmp_path / "many.txt")
    first = len(GOOD.encode()) + 1
    shown = ", ".join(str(first + 2 * k) for k in range(5))
    assert f"7 bytes not UTF-8 (at bytes {shown}, ...)" in reason, reason
    # a byte-order mark counts in the offsets: they are the file's
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + STRAY)
    assert f"(at byte {BAD_AT + 3})" in read_text_file(tmp_path / "bom.txt")[1]


def test_a_legacy_8bit_file_is_still_advised_to_be_converted(tmp_path):
    (tmp_path / "cafe.txt").write_bytes("Le café est très bon à Paris.\n".encode("cp1252"))
    text, reason = read_text_file(tmp_path / "cafe.txt")
    assert text is None and reason.startswith("invalid UTF-8 at byte 6: 3 bytes not UTF-8 (at bytes 6, 14, 21)")
    assert "Windows-1252" in reason and "iconv" in reason and "otherwise valid UTF-8" not in reason


def test_encoding_errors_replace_reads_a_stray_byte_as_u_fffd_and_marks_it_degraded(tmp_path):
    (tmp_path / "prices.md").write_bytes(STRAY)
    (tmp_path / "fine.md").write_text(GOOD, encoding="utf-8")
    items = _items(tmp_path, REPLACE)
    doc = items["prices.md"]
    assert isinstance(doc, Document)
    assert doc.text == STRAY.decode("utf-8", "replace") and "Broken \ufffd here." in doc.text
    assert "— 3 € —" in doc.text and "Naïve" in doc.text  # the correct characters stay correct
    assert doc.metadata["degraded"] == f"1 byte not UTF-8 (at byte {BAD_AT}) read as U+FFFD"
    assert "degraded" not in items["fine.md"].metadata
    # the default is today's: skipped, the rest read
    strict = _items(tmp_path)
    assert isinstance(strict["prices.md"], Skipped) and isinstance(strict["fine.md"], Document)


def test_encoding_errors_must_be_strict_or_replace():
    with pytest.raises(ValueError, match="--encoding-errors must be strict or replace, got 'ignore'"):
        RecordFields(encoding_errors="ignore")
    assert RecordFields().to_dict() == {}  # folders written before the setting read the same
    assert REPLACE.to_dict() == {"encoding_errors": "replace"}
    assert RecordFields.from_dict(REPLACE.to_dict()) == REPLACE


def test_one_bad_jsonl_line_is_named_by_its_byte_offsets_not_called_a_legacy_file(tmp_path):
    lines = [json.dumps({"id": "a", "text": "café — one"}, ensure_ascii=False).encode(),
             b'{"id": "b", "text": "bad \xff byte"}',
             json.dumps({"id": "c", "text": "naïve three"}, ensure_ascii=False).encode()]
    (tmp_path / "c.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    at = len(lines[0]) + 1 + lines[1].index(b"\xff")
    items = _items(tmp_path / "c.jsonl")
    assert isinstance(items["a"], Document) and isinstance(items["c"], Document)
    bad = items["c.jsonl:2"]
    assert isinstance(bad, Skipped)
    assert bad.reason == (f"invalid UTF-8 in line 2: 1 byte not UTF-8 (at byte {at}) in otherwise valid UTF-8 text; "
                          "--encoding-errors replace reads it with U+FFFD for each invalid byte")
    items = _items(tmp_path / "c.jsonl", REPLACE)
    assert items["b"].text == "bad \ufffd byte"
    assert items["b"].metadata["degraded"] == f"line 2: 1 byte not UTF-8 (at byte {at}) read as U+FFFD"
    assert "degraded" not in items["a"].metadata


def test_a_legacy_jsonl_file_is_advised_to_be_converted(tmp_path):
    data = '{"id": "a", "text": "Le café"}\n{"id": "b", "text": "plain"}\n'
    (tmp_path / "old.jsonl").write_bytes(data.encode("cp1252"))
    items = _items(tmp_path / "old.jsonl")
    assert isinstance(items["b"], Document)
    reason = items["old.jsonl:1"].reason
    assert reason.startswith(f"invalid UTF-8 in line 1: 1 byte not UTF-8 (at byte {data.index('é')})"), reason
    assert "the file reads as Windows-1252" in reason and "iconv" in reason


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_one_bad_table_value_loses_only_its_row(tmp_path, kind):
    text = pa.array([b"caf\xc3\xa9 one", b"bad \xff two", b"three"], type=pa.binary()).view(pa.string())
    table = pa.table({"id": ["a", "b", "c"], "text": text})
    path = tmp_path / f"t.{kind}"
    if kind == "parquet":
        pq.write_table(table, path)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    items = _items(path)
    assert [type(i).__name__ for i in items.values()] == ["Document", "Skipped", "Document"]  # c was lost before
    assert items[f"t.{kind}:1"].reason == ("invalid UTF-8 in column 'text': 1 byte not UTF-8 (at byte 4); "
                                           "--encoding-errors replace reads it with U+FFFD for each invalid byte")
    items = _items(path, REPLACE)
    assert items["b"].text == "bad \ufffd two" and items["c"].text == "three" and items["a"].text == "café one"
    assert items["b"].metadata["degraded"] == "column 'text': 1 byte not UTF-8 (at byte 4) read as U+FFFD"


def test_an_html_page_with_stray_bytes_names_them_and_reads_with_replace(tmp_path):
    page = "<html><body><h1>Café</h1><p>Tea — 3 €</p><p>bad ".encode() + b"\xff" + b"</p></body></html>"
    (tmp_path / "p.html").write_bytes(page)
    at = page.index(b"\xff")
    reason = _items(tmp_path)["p.html"].reason
    assert reason.startswith(f"invalid utf-8 at byte {at} (no byte-order mark and no <meta charset>"), reason
    assert f"1 byte not utf-8 (at byte {at}); --encoding-errors replace" in reason
    doc = _items(tmp_path, REPLACE)["p.html"]
    assert doc.text.startswith("# Café\n\nTea — 3 €\n\nbad \ufffd")
    assert doc.metadata["degraded"].startswith(f"1 byte not utf-8 (at byte {at}) read as U+FFFD")


def test_embed_encoding_errors_replace_lists_the_file_as_degraded_in_the_manifest(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "prices.md").write_bytes(STRAY)
    (src / "fine.md").write_text(GOOD, encoding="utf-8")
    save_tiny_bert(tmp_path / "model", layers=1)
    common = ["--device", "cpu", "--quiet", "--model", str(tmp_path / "model")]
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "strict"), *common])
    assert res.exit_code == 0, res.output
    m = json.loads((tmp_path / "strict" / "manifest.json").read_text())
    assert [s["doc_id"] for s in m["skipped"]] == ["prices.md"] and m["degraded"] == []
    assert f"(at byte {BAD_AT}) in otherwise valid UTF-8 text" in m["skipped"][0]["reason"]

    out = tmp_path / "replace"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--encoding-errors", "replace", *common])
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [] and m["counts"]["documents_embedded"] == 2
    assert m["degraded"] == [{"doc_id": "prices.md", "reason": f"1 byte not UTF-8 (at byte {BAD_AT}) read as U+FFFD",
                              "source": "prices.md"}]
    assert m["settings"]["record_fields"] == {"encoding_errors": "replace"}
    assert "degraded:" not in res.output  # --quiet: the manifest lists it (issue 36, CLI fault 1)
    chunks = pq.read_table(out / "chunks.parquet").to_pylist()
    assert any("Broken \ufffd here." in r["text"] for r in chunks)
    # --resume of the finished folder takes the setting from run.json; verify reads the inputs as the run did
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0

    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "bad"), "--encoding-errors", "ignore",
                              *common])
    assert res.exit_code != 0 and "--encoding-errors must be strict or replace" in res.output


def test_chunk_encoding_errors_replace(tmp_path):
    (tmp_path / "prices.md").write_bytes(STRAY)
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["chunk", str(tmp_path / "prices.md"), "--out", str(out), "--encoding-errors", "replace"])
    assert res.exit_code == 0, res.output
    assert f"note: prices.md: 1 byte not UTF-8 (at byte {BAD_AT}) read as U+FFFD" in res.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    doc = STRAY.decode("utf-8", "replace")
    assert all(r["text"] == doc[r["char_start"]:r["char_end"]] for r in rows)
    res = runner.invoke(app, ["chunk", str(tmp_path / "prices.md"), "--out", str(tmp_path / "s.jsonl")])
    assert res.exit_code != 0 and f"(at byte {BAD_AT}) in otherwise valid UTF-8 text" in res.output
