"""latechunk/io/: input files, JSONL and parquet as a stream of Document and Skipped (BOM-marked text in UTF-8,
UTF-16 and UTF-32, binary files skipped with a reason, sources relative to the input root, duplicate ids)."""

from __future__ import annotations

import codecs

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from latechunk.io import count_inputs, is_not_read, iter_inputs, read_text_file
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
    assert items[0].text == "T\n\nfirst text" and items[0].metadata == {"source": "docs.parquet:0", "title": "T", "title_from": "record"}
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


def test_hidden_folders_are_listed_not_walked_unless_named(tmp_path):
    """Fresh-user trial: `.venv/` and `.cache/` inside an input folder were read as the corpus (a repository's
    virtualenv: thousands of .py files embedded). A hidden folder found inside an input folder is now one skipped
    entry with its reason; named as an input itself it is read, and a hidden file of a supported type still is."""
    src = tmp_path / "repo"
    (src / ".venv" / "lib").mkdir(parents=True)
    (src / ".venv" / "lib" / "site.py").write_text("import os\n", encoding="utf-8")
    (src / ".cache").mkdir()
    (src / ".cache" / "note.md").write_text("A cached page.", encoding="utf-8")
    (src / "docs").mkdir()
    (src / "docs" / "guide.md").write_text("The guide.", encoding="utf-8")
    (src / ".notes.md").write_text("A hidden file.", encoding="utf-8")
    items = list(iter_inputs([src]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == [".notes.md", "docs/guide.md"]
    reasons = {i.doc_id: i.reason for i in items if isinstance(i, Skipped)}
    assert set(reasons) == {".venv/", ".cache/"}
    assert all(r.startswith("hidden folder (not read; name it as an input") and is_not_read(r) for r in reasons.values())
    assert count_inputs([src]) == len(items) == 4
    named = list(iter_inputs([src / ".cache"]))  # named itself: read
    assert [i.doc_id for i in named if isinstance(i, Document)] == ["note.md"]
    # named beside its parent folder it is read once, so embed takes both (trial 2: refused as "read twice")
    from latechunk.config import _nested_input

    assert _nested_input((src, src / ".cache")) == ""
    assert "inside the input folder" in _nested_input((src, src / "docs"))


def test_a_previous_output_folder_inside_the_corpus_is_listed_as_skipped(tmp_path):
    (tmp_path / "a.md").write_text("A document.", encoding="utf-8")
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "run.json").write_text('{"format": "latechunk-run/1", "settings": {}}', encoding="utf-8")
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


# --------------------------------------------------------------------------- issue 11: Hugging Face datasets folders, .arrow
WORDS = ("river", "delta", "harbour", "engine", "ledger", "orchard", "signal", "lantern", "meadow", "quarry",
         "compass", "glacier", "furnace", "archive", "canal", "beacon")


def _sentence(i: int, j: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(6 + (i + j) % 5)).capitalize() + "."


@pytest.fixture(scope="module")
def hf_rows():
    """Eight rows (id, text, title) of different lengths, two titled."""
    texts = [" ".join(_sentence(i, j) for j in range(8 + 9 * (i % 3))) for i in range(8)]
    return {"id": [f"doc-{i}" for i in range(8)], "text": texts,
            "title": ["Harbour notes" if i == 2 else ("Glacier log" if i == 5 else None) for i in range(8)]}


@pytest.fixture(scope="module")
def hf_inputs(hf_rows, tmp_path_factory):
    """The same rows as JSONL, a Dataset folder (3 shards), a DatasetDict folder (train: 3 shards, test: 1) and a
    bare .arrow file (the IPC file format), all written by the real libraries."""
    import json

    import datasets

    datasets.disable_progress_bars()
    root = tmp_path_factory.mktemp("hf")
    (root / "rows.jsonl").write_text("".join(json.dumps({k: v for k, v in zip(hf_rows, r) if v is not None}) + "\n"
                                             for r in zip(*hf_rows.values())), encoding="utf-8")
    ds = datasets.Dataset.from_dict(hf_rows)
    ds.save_to_disk(str(root / "ds"), num_shards=3)
    datasets.DatasetDict({"train": ds.select(range(6)), "test": ds.select(range(6, 8))}).save_to_disk(
        str(root / "dd"), num_shards={"train": 3, "test": 1})
    with pa.OSFile(str(root / "rows.arrow"), "wb") as sink, pa.ipc.new_file(sink, pa.table(hf_rows).schema) as w:
        w.write_table(pa.table(hf_rows), max_chunksize=3)
    return root


def _docs(items):
    return [(i.doc_id, i.text, i.metadata.get("title")) for i in items if isinstance(i, Document)]


def test_dataset_folders_and_arrow_files_read_the_same_documents_as_jsonl(hf_rows, hf_inputs):
    from latechunk.io import count_input_bytes, hf_dataset_kind

    want = _docs(iter_inputs([hf_inputs / "rows.jsonl"]))
    assert len(want) == 8 and want[2][1].startswith("Harbour notes\n\n")
    assert hf_dataset_kind(hf_inputs / "ds") == "dataset" and hf_dataset_kind(hf_inputs / "dd") == "dataset_dict"
    assert hf_dataset_kind(hf_inputs) == ""
    assert len(list((hf_inputs / "ds").glob("data-*-of-00003.arrow"))) == 3  # really sharded
    text_bytes = sum(len(t.encode("utf-8")) for t in hf_rows["text"])
    for name in ("ds", "dd", "rows.arrow"):
        items = list(iter_inputs([hf_inputs / name]))
        assert _docs(items) == want and len(items) == 8, name
        assert count_inputs([hf_inputs / name]) == 8
        assert count_input_bytes([hf_inputs / name]) == text_bytes
    sources = [i.metadata["source"] for i in iter_inputs([hf_inputs / "dd"])]
    assert sources == [f"dd/train:{r}" for r in range(6)] + ["dd/test:0", "dd/test:1"]
    assert [i.metadata["source"] for i in iter_inputs([hf_inputs / "ds"])][-1] == "ds:7"  # 0-based over all shards
    # one split: its sub-folder is itself a Dataset folder
    assert [i.metadata["source"] for i in iter_inputs([hf_inputs / "dd" / "test"])] == ["test:0", "test:1"]


def test_a_row_with_null_text_is_skipped_under_its_own_id(tmp_path):
    import datasets

    datasets.disable_progress_bars()
    datasets.Dataset.from_dict({"id": ["a", "b", "3"], "text": ["Alpha text.", "Beta text.", None]}).save_to_disk(
        str(tmp_path / "hf_odd"))
    (tmp_path / "r.jsonl").write_text('{"id": 9, "text": 5}\n', encoding="utf-8")
    skipped = [i for i in iter_inputs([tmp_path / "hf_odd", tmp_path / "r.jsonl"]) if not isinstance(i, Document)]
    assert [(s.doc_id, s.source) for s in skipped] == [("3", "hf_odd:2"), ("9", "r.jsonl:1")]
    assert "null" in skipped[0].reason and "must be a string" in skipped[1].reason


def test_a_dataset_folder_inside_a_folder_is_one_input_never_walked(hf_inputs, tmp_path):
    import shutil

    src = tmp_path / "corpus"
    src.mkdir()
    shutil.copytree(hf_inputs / "dd", src / "hf" / "dd")
    (src / "a.md").write_text("A note beside the dataset.", encoding="utf-8")
    (src / "stray.arrow").write_bytes(b"not arrow at all")
    items = list(iter_inputs([src]))
    skipped = {i.doc_id: i.reason for i in items if isinstance(i, Skipped)}
    # the dataset's .json and .arrow files are not listed: only the damaged stray .arrow is
    assert list(skipped) == ["stray.arrow:0"] and "arrow file rows from 0 on unreadable (stray.arrow" in skipped["stray.arrow:0"]
    docs = [i for i in items if isinstance(i, Document)]
    assert [d.metadata["source"] for d in docs] == ["a.md"] + [f"hf/dd/train:{r}" for r in range(6)] + [
        "hf/dd/test:0", "hf/dd/test:1"]
    assert count_inputs([src]) == len(items) == 10


def test_ids_repeated_across_splits_are_skipped_as_duplicates(tmp_path):
    import datasets

    datasets.disable_progress_bars()
    a = datasets.Dataset.from_dict({"_id": [1, 2], "text": ["one", "two"]})
    b = datasets.Dataset.from_dict({"_id": [2, 3], "text": ["again", "three"]})
    datasets.DatasetDict({"corpus": a, "extra": b}).save_to_disk(str(tmp_path / "dd"))
    items = list(iter_inputs([tmp_path / "dd"]))
    assert [(i.doc_id, type(i).__name__) for i in items] == [("1", "Document"), ("2", "Document"),
                                                              ("2", "Skipped"), ("3", "Document")]
    assert items[2].source == "dd/extra:0" and "dd/corpus:1" in items[2].reason


def test_a_dataset_folder_without_text_fails_naming_its_columns(tmp_path):
    import datasets

    from latechunk.io import require_documents

    datasets.disable_progress_bars()
    datasets.Dataset.from_dict({"id": ["a"], "body": ["no text column"]}).save_to_disk(str(tmp_path / "ds"))
    pa.ipc.new_stream(str(tmp_path / "t.arrow"), pa.schema([("doc_id", pa.string())])).close()
    (item,) = list(iter_inputs([tmp_path / "ds"]))
    assert isinstance(item, Skipped) and item.doc_id == "ds"
    assert count_inputs([tmp_path / "ds"]) == 1
    with pytest.raises(ValueError) as err:
        require_documents([tmp_path / "ds", tmp_path / "t.arrow"])
    msg = str(err.value)
    assert f"{tmp_path / 'ds'} (1 item(s), all skipped: ds: Hugging Face dataset needs an 'id'" in msg
    assert "'text' column, has ['body', 'id']" in msg and "has ['doc_id']" in msg


def test_a_damaged_dataset_folder_is_listed_not_raised(hf_inputs, tmp_path):
    import shutil

    ds = tmp_path / "ds"
    shutil.copytree(hf_inputs / "ds", ds)
    (ds / "data-00001-of-00003.arrow").write_bytes(b"\xff\xff\xff\xff garbage")  # the second of three shards
    items = list(iter_inputs([ds]))
    n_first = len(_docs(items))
    assert 0 < n_first < 8 and isinstance(items[-1], Skipped)
    assert items[-1].doc_id == f"ds:{n_first}" and "data-00001-of-00003.arrow" in items[-1].reason
    (ds / "data-00002-of-00003.arrow").unlink()
    (item,) = list(iter_inputs([ds]))
    assert "data-00002-of-00003.arrow" in item.reason and "lacks data file" in item.reason


# ---- embed over datasets inputs: the same chunks and vectors as JSONL; verify --inputs; --resume
EMBED_ARGS = ["--strategy", "fixed:size=48", "--device", "cpu", "--quiet", "--group-tokens", "400"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tests.models import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert_io"))


def _embed(inp, out, model, *extra):
    from typer.testing import CliRunner

    from latechunk.cli import app

    res = CliRunner().invoke(app, ["embed", str(inp), "--out", str(out), "--model", str(model), *EMBED_ARGS, *extra])
    assert res.exit_code == 0, res.output
    return out


def _vectors(out):
    import faiss

    index = faiss.read_index(str(out / "index.faiss"))
    return index.reconstruct_n(0, index.ntotal)


@pytest.fixture(scope="module")
def jsonl_run(hf_inputs, tiny_model, tmp_path_factory):
    return _embed(hf_inputs / "rows.jsonl", tmp_path_factory.mktemp("emb") / "jsonl", tiny_model)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", ["ds", "dd", "rows.arrow"])
def test_embed_of_a_dataset_folder_or_arrow_file_equals_embed_of_the_same_rows_as_jsonl(
        name, hf_inputs, tiny_model, jsonl_run, tmp_path):
    import json
    import shutil

    import numpy as np
    from typer.testing import CliRunner

    from latechunk.cli import app

    out = _embed(hf_inputs / name, tmp_path / "out", tiny_model)
    ref, got = pq.read_table(jsonl_run / "chunks.parquet"), pq.read_table(out / "chunks.parquet")
    # same ids, order, spans, texts and titles; only each row's source (file:row vs file:line) differs
    assert got.num_rows > 8 and got.drop_columns(["source"]).equals(ref.drop_columns(["source"]))
    np.testing.assert_allclose(_vectors(out), _vectors(jsonl_run), rtol=0, atol=1e-6)
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"]["documents_in"] == m["counts"]["documents_embedded"] == 8 and m["skipped"] == []
    assert len(m["shards"]) >= 3  # the small group budget gives several shards (used by the resume test)
    # verify --inputs: the input moved elsewhere, named where it is now
    moved = tmp_path / "moved" / name
    if (hf_inputs / name).is_dir():
        shutil.copytree(hf_inputs / name, moved)
    else:
        moved.parent.mkdir()
        shutil.copy(hf_inputs / name, moved)
    res = CliRunner().invoke(app, ["verify", str(out), "--inputs", str(moved)])
    assert res.exit_code == 0, res.output


@pytest.mark.usefixtures("one_thread")
def test_embed_resume_over_a_dataset_dict_folder_equals_an_uninterrupted_run(hf_inputs, tiny_model, jsonl_run,
                                                                              tmp_path, monkeypatch):
    import numpy as np
    from typer.testing import CliRunner

    from latechunk.cli import app
    from latechunk.ingest import shards

    class Interrupted(Exception):
        pass

    real = shards.fault

    def fault(event: str) -> None:
        if event == "shard-00001-json":  # after the second shard is committed
            raise Interrupted(event)
        real(event)

    out = tmp_path / "out"
    monkeypatch.setattr(shards, "fault", fault)
    res = CliRunner().invoke(app, ["embed", str(hf_inputs / "dd"), "--out", str(out), "--model", str(tiny_model),
                                   *EMBED_ARGS])
    assert isinstance(res.exception, Interrupted) and not (out / "manifest.json").exists()
    kept = {f.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in sorted((out / "shards").iterdir())}
    assert {"00000.json", "00001.json"} <= set(kept) and "00002.json" not in kept
    monkeypatch.setattr(shards, "fault", real)
    _embed(hf_inputs / "dd", out, tiny_model, "--resume")
    st = (out / "shards" / "00000.npy").stat()
    assert (st.st_ino, st.st_mtime_ns) == kept["00000.npy"]  # kept, not rewritten (a commit renames a new file)
    assert pq.read_table(out / "chunks.parquet").drop_columns(["source"]).equals(  # row sources differ by form
        pq.read_table(jsonl_run / "chunks.parquet").drop_columns(["source"]))
    np.testing.assert_allclose(_vectors(out), _vectors(jsonl_run), rtol=0, atol=1e-6)
    assert CliRunner().invoke(app, ["verify", str(out)]).exit_code == 0


def test_latin1_text_is_skipped_with_a_hint_to_convert_it(tmp_path):
    """Trial finding: a Latin-1 / Windows-1252 .txt was skipped as "invalid UTF-8 at byte 3" with no word of what
    to do; the reason now says it reads as Windows-1252 text and how to convert it. A damaged binary gets no such
    hint."""
    (tmp_path / "cafe.txt").write_bytes("Le café est très bon à Paris.\n".encode("cp1252"))
    text, reason = read_text_file(tmp_path / "cafe.txt")
    assert text is None and reason.startswith("invalid UTF-8 at byte 6") and "Windows-1252" in reason, reason
    assert "iconv" in reason and "mv FILE.tmp FILE" in reason
    (tmp_path / "blob.txt").write_bytes(b"ok \xff\x81\x8d\x8f\x90\x9d junk")  # bytes cp1252 leaves undefined
    text, reason = read_text_file(tmp_path / "blob.txt")
    assert text is None and reason == ("invalid UTF-8 at byte 3: 6 bytes not UTF-8 (at bytes 3, 4, 5, 6, 7, ...); "
                                       "--encoding-errors replace reads it with U+FFFD for each invalid byte"), reason
