"""latechunk/io.py: input files, JSONL and parquet as a stream of Document and Skipped (BOM-marked text in UTF-8,
UTF-16 and UTF-32, binary files skipped with a reason, sources relative to the input root, duplicate ids)."""

from __future__ import annotations

import codecs

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from latechunk.io import count_inputs, iter_inputs, read_text_file
from latechunk.types import Document, Skipped

TEXT = "Caf\u00e9 cr\u00e8me \u2014 \u65e5\u672c\u8a9e.\r\nThe river Nile flows north.\n\nSecond paragraph here.\n"
BOMS = {
    "utf-8": codecs.BOM_UTF8,
    "utf-16-le": codecs.BOM_UTF16_LE,
    "utf-16-be": codecs.BOM_UTF16_BE,
    "utf-32-le": codecs.BOM_UTF32_LE,
    "utf-32-be": codecs.BOM_UTF32_BE,
}


# --------------------------------------------------------------------------- BOM-marked and binary inputs
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


# --------------------------------------------------------------------------- JSONL, parquet, folders


def test_parquet_input_streams_rows_and_accounts_for_bad_ones(tmp_path):
    f = tmp_path / "docs.parquet"
    table = pa.table({"id": ["a", "b", "c", "a", None], "text": ["first text", "", "third", "dup", "orphan"],
                      "title": ["T", None, None, None, None]})
    pq.write_table(table, f, row_group_size=2)
    items = list(iter_inputs([tmp_path]))
    assert [type(i).__name__ for i in items] == ["Document", "Skipped", "Document", "Skipped", "Skipped"]
    assert items[0].text == "T\n\nfirst text" and items[0].metadata == {"source": "docs.parquet:0", "title": "T"}
    assert isinstance(items[1], Skipped) and "empty" in items[1].reason
    assert "duplicate" in items[3].reason and "docs.parquet:0" in items[3].reason and items[3].source == "docs.parquet:3"
    assert "id" in items[4].reason


def test_jsonl_and_file_sources_are_relative_to_the_input_root(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("hello", encoding="utf-8")
    (tmp_path / "sub" / "c.jsonl").write_text('{"id": "j", "text": "x"}\n{"id": "sub/a.md", "text": "y"}\n')
    items = list(iter_inputs([tmp_path]))
    assert items[0].metadata["source"] == "sub/a.md"
    assert items[1].metadata["source"] == "sub/c.jsonl:1"
    # a duplicate id is skipped with a reason naming both sources
    assert items[2].source == "sub/c.jsonl:2" and "sub/a.md" in items[2].reason and "sub/c.jsonl:2" in items[2].reason
    single = list(iter_inputs([tmp_path / "sub" / "a.md"]))
    assert single[0].doc_id == "a.md" and single[0].metadata["source"] == "a.md"


def test_count_inputs_matches_what_iter_inputs_yields(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "good.md").write_text("# Title\n\nA paragraph.\n", encoding="utf-8")
    (src / "empty.txt").write_text("   ", encoding="utf-8")
    (src / "sub" / "binary.md").write_bytes(b"\x00\x01\x02binary")
    (src / "skip.csv").write_text("not an input", encoding="utf-8")
    (src / "docs.jsonl").write_text('{"id": "j1", "text": "hi"}\n\nnot json\n{"id": "j2", "text": ""}\n')
    pq.write_table(pa.table({"id": ["p1", "p2", "p3"], "text": ["a", "b", "c"]}), src / "rows.parquet")
    one = tmp_path / "one.txt"
    one.write_text("single file", encoding="utf-8")
    inputs = [src, one]
    # 11: skip.csv is listed as skipped (unsupported type), no longer dropped without a word (issue 10)
    assert count_inputs(inputs) == len(list(iter_inputs(inputs))) == 11


# --------------------------------------------------------------------------- issue 10: nothing dropped without a word
def test_a_folder_holding_only_docx_or_pdf_lists_each_file_as_skipped_with_its_type(tmp_path):
    (tmp_path / "notes.docx").write_bytes(b"PK\x03\x04 not text")
    (tmp_path / "manual.pdf").write_bytes(b"%PDF-1.4 raw pdf bytes")
    (tmp_path / "README").write_text("no suffix", encoding="utf-8")
    items = list(iter_inputs([tmp_path]))
    assert all(isinstance(i, Skipped) for i in items)
    reasons = {i.doc_id: i.reason for i in items}
    assert reasons["notes.docx"].startswith("unsupported type .docx")
    assert reasons["manual.pdf"].startswith("unsupported type .pdf")
    assert reasons["README"].startswith("unsupported type (no suffix)")
    assert count_inputs([tmp_path]) == 3


def test_symlinked_folders_and_symlink_loops_are_listed_not_dropped(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.md").write_text("A real document.", encoding="utf-8")
    (src / "linked").symlink_to(src / "sub", target_is_directory=True)
    (src / "sub" / "up").symlink_to(src, target_is_directory=True)  # a loop through a folder link
    (src / "loop").symlink_to(src / "loop")  # a link to itself
    (src / "broken.md").symlink_to(src / "nowhere.md")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main", encoding="utf-8")
    items = list(iter_inputs([src]))
    reasons = {i.doc_id: i.reason for i in items if isinstance(i, Skipped)}
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["sub/a.md"]  # read once, never through a link
    assert reasons["linked/"].startswith("symlinked folder not followed")
    assert reasons["sub/up/"].startswith("symlinked folder not followed")
    assert reasons["loop"].startswith("symlink loop")
    assert reasons["broken.md"].startswith("broken symlink")
    assert reasons[".git/"].startswith("version-control folder")
    assert count_inputs([src]) == len(items) == 6


def test_a_previous_output_folder_inside_the_corpus_is_listed_as_skipped(tmp_path):
    (tmp_path / "a.md").write_text("A document.", encoding="utf-8")
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "run.json").write_text("{}", encoding="utf-8")
    (tmp_path / "idx" / "notes.md").write_text("inside an output folder", encoding="utf-8")
    items = list(iter_inputs([tmp_path]))
    assert [(i.doc_id, type(i).__name__) for i in items] == [("a.md", "Document"), ("idx/", "Skipped")]
    assert "latechunk output folder" in items[1].reason


def test_a_file_named_on_the_command_line_follows_the_folder_suffix_policy(tmp_path):
    pdf = tmp_path / "manual.pdf"
    pdf.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n")  # valid UTF-8: used to be embedded as text
    docx = tmp_path / "notes.docx"
    docx.write_bytes(b"PK\x03\x04\x00\x00binary zip")  # used to be "binary file (... byte-order mark)"
    for f in (pdf, docx):
        (named,) = list(iter_inputs([f]))
        found = next(i for i in iter_inputs([tmp_path]) if i.doc_id == f.name)
        assert isinstance(named, Skipped) and named.reason == found.reason
        assert named.reason.startswith(f"unsupported type {f.suffix}") and "binary" not in named.reason
    (tmp_path / "upper.MD").write_text("Upper-case suffix.", encoding="utf-8")
    assert isinstance(next(iter(iter_inputs([tmp_path / "upper.MD"]))), Document)


def test_an_input_that_yields_no_document_fails_naming_the_input(tmp_path):
    from latechunk.io import require_documents

    empty, only_pdf, good = tmp_path / "empty", tmp_path / "pdfs", tmp_path / "good"
    for d in (empty, only_pdf, good):
        d.mkdir()
    (only_pdf / "manual.pdf").write_bytes(b"%PDF-1.4")
    (good / "a.md").write_text("A document.", encoding="utf-8")
    require_documents([good])
    with pytest.raises(ValueError) as err:
        require_documents([good, empty, only_pdf, only_pdf / "manual.pdf"])
    msg = str(err.value)
    assert f"{empty} (an empty folder)" in msg and f"{only_pdf} (1 item(s)" in msg
    assert "unsupported type .pdf" in msg and str(good) not in msg.replace(str(tmp_path), "")


def test_jsonl_bad_line_reason_gives_the_column_not_the_decoders_line(tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text('{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n{"id": "c", "text": }\n', encoding="utf-8")
    bad = [i for i in iter_inputs([src]) if isinstance(i, Skipped)]
    assert [b.doc_id for b in bad] == ["docs.jsonl:3"]
    assert bad[0].reason == "bad JSON line: Expecting value at column 21 of line 3"  # the "}" after "text":


def test_ids_1_and_string_1_are_the_same_id(tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text('{"id": 1, "text": "integer id"}\n{"id": "1", "text": "string id"}\n', encoding="utf-8")
    first, second = list(iter_inputs([src]))
    assert isinstance(first, Document) and first.doc_id == "1"
    assert isinstance(second, Skipped) and second.reason.startswith("duplicate doc_id")
