"""latechunk/io/ edge cases of "nothing is lost": empty JSONL/parquet/Arrow files inside a folder, null or
ill-typed ids, non-string titles, markdown files of nothing but front matter, duplicate ids across input roots."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.io import count_inputs, iter_inputs, require_documents
from latechunk.types import Document, Skipped

runner = CliRunner()


def _embed(*args):
    from latechunk.cli import app

    return runner.invoke(app, ["embed", *[str(a) for a in args], "--device", "cpu", "-q", "--strategy",
                               "fixed:size=32"], catch_exceptions=False)


def _skipped(items) -> dict[str, str]:
    return {i.doc_id: i.reason for i in items if isinstance(i, Skipped)}


# --------------------------------------------------------------------------- 1. empty table files inside a folder
def test_empty_jsonl_parquet_and_arrow_files_in_a_folder_are_each_one_skipped_item(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.md").write_text("A real document.", encoding="utf-8")
    (src / "zero.jsonl").write_bytes(b"")
    (src / "sub" / "blank.jsonl").write_text("\n  \n\n", encoding="utf-8")
    (src / "bom.jsonl").write_bytes(b"\xef\xbb\xbf")
    schema = pa.schema([("id", pa.string()), ("text", pa.string())])
    pq.write_table(schema.empty_table(), src / "none.parquet")
    with pa.ipc.new_stream(str(src / "none.arrow"), schema):
        pass
    items = list(iter_inputs([src]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["a.md"]
    assert _skipped(items) == {
        "bom.jsonl": "empty file: no JSON lines",
        "none.arrow": "empty arrow file: no rows",
        "none.parquet": "empty parquet file: no rows",
        "sub/blank.jsonl": "empty file: no JSON lines",
        "zero.jsonl": "empty file: no JSON lines",
    }
    assert all(i.source == i.doc_id for i in items if isinstance(i, Skipped))
    assert count_inputs([src]) == len(items) == 6
    require_documents([src])  # the folder has a document: fine


def test_an_empty_table_given_alone_still_fails_naming_why(tmp_path):
    (tmp_path / "e.jsonl").write_bytes(b"")
    pq.write_table(pa.schema([("id", pa.string()), ("text", pa.string())]).empty_table(), tmp_path / "e.parquet")
    for name, why in (("e.jsonl", "empty file: no JSON lines"), ("e.parquet", "empty parquet file: no rows")):
        f = tmp_path / name
        assert count_inputs([f]) == len(list(iter_inputs([f]))) == 1
        with pytest.raises(ValueError, match="yielding no document") as err:
            require_documents([f])
        assert f"{f} (1 item(s), all skipped: {name}: {why})" in str(err.value)
    res = _embed(tmp_path / "e.jsonl", "--out", tmp_path / "o")
    assert res.exit_code == 2 and "yielding no document" in res.output and "empty file: no JSON lines" in res.output
    assert not (tmp_path / "o").exists()


def test_an_empty_dataset_split_is_one_skipped_item(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    full = datasets.Dataset.from_dict({"id": ["a"], "text": ["Alpha text."]})
    empty = datasets.Dataset.from_dict({"id": [], "text": []}, features=full.features)
    datasets.DatasetDict({"train": full, "test": empty}).save_to_disk(str(tmp_path / "dd"))
    items = list(iter_inputs([tmp_path / "dd"]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["a"]
    assert _skipped(items) == {"dd/test": "empty Hugging Face dataset: no rows"}
    assert count_inputs([tmp_path / "dd"]) == len(items) == 2


def test_an_empty_jsonl_in_a_folder_is_listed_in_the_manifest(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("A real document about rivers and their deltas.", encoding="utf-8")
    (src / "empty.jsonl").write_bytes(b"")
    out = tmp_path / "o"
    res = _embed(src, "--out", out)
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in m["documents"]] == ["a.md"]
    assert [(s["doc_id"], s["reason"]) for s in m["skipped"]] == [("empty.jsonl", "empty file: no JSON lines")]


# --------------------------------------------------------------------------- 2. null and ill-typed ids
@pytest.mark.parametrize(
    "line, reason",
    [
        ('{"id": null, "text": "hello"}', "'id' is null (an id must be a string or an integer)"),
        ('{"_id": null, "text": "hello"}', "'_id' is null (an id must be a string or an integer)"),
        ('{"id": [1, 2], "text": "hello"}', "'id' is a list [1, 2] (an id must be a string or an integer)"),
        ('{"id": {"a": 1}, "text": "hello"}', "'id' is an object {\"a\": 1} (an id must be a string or an integer)"),
        ('{"id": true, "text": "hello"}', "'id' is a boolean true (an id must be a string or an integer)"),
        ('{"id": 1.5, "text": "hello"}', "'id' is a float 1.5 (an id must be a string or an integer)"),
        ('{"id": 2.0, "text": "hello"}', "'id' is a float 2.0 (an id must be a string or an integer; write 2, not 2.0)"),
        ('{"id": "  ", "text": "hello"}', "'id' is blank (an id must be a non-blank string or an integer)"),
        ('{"text": "hello"}', ("no 'id' (or '_id', 'doc_id') field (its fields: 'text'; --id-field names the one "
                               "that holds the id)")),
    ],
)
def test_a_null_or_ill_typed_id_is_skipped_naming_the_field_and_its_type(tmp_path, line, reason):
    src = tmp_path / "d.jsonl"
    src.write_text(line + "\n", encoding="utf-8")
    (item,) = list(iter_inputs([src]))
    assert isinstance(item, Skipped) and item.reason == reason and item.doc_id == item.source == "d.jsonl:1"


def test_string_and_integer_ids_are_still_accepted_and_a_long_bad_id_is_shortened(tmp_path):
    src = tmp_path / "d.jsonl"
    src.write_text('{"id": "a", "text": "x"}\n{"_id": 7, "text": "y"}\n{"doc_id": "c", "text": "z"}\n'
                   + json.dumps({"id": list(range(100)), "text": "w"}) + "\n", encoding="utf-8")
    items = list(iter_inputs([src]))
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["a", "7", "c"]
    assert len(items[3].reason) < 120 and items[3].reason.startswith("'id' is a list [0, 1, 2")


def test_a_null_id_in_a_parquet_column_names_the_column(tmp_path):
    pq.write_table(pa.table({"doc_id": ["a", None], "text": ["x", "y"]}), tmp_path / "t.parquet")
    items = list(iter_inputs([tmp_path / "t.parquet"]))
    assert isinstance(items[1], Skipped) and items[1].reason == "'doc_id' is null (an id must be a string or an integer)"


# --------------------------------------------------------------------------- 3. non-string titles
def test_a_number_title_is_its_string_form_and_other_types_skip_the_record_naming_the_field(tmp_path):
    src = tmp_path / "d.jsonl"
    src.write_text('{"id": "i", "title": 5, "text": "body"}\n{"id": "f", "title": 2.5, "text": "body"}\n'
                   '{"id": "n", "title": null, "text": "body"}\n{"id": "l", "title": ["a", "b"], "text": "body"}\n'
                   '{"id": "d", "title": {"en": "x"}, "text": "body"}\n{"id": "b", "title": false, "text": "body"}\n',
                   encoding="utf-8")
    items = {i.doc_id: i for i in iter_inputs([src])}
    assert items["i"].text == "5\n\nbody" and items["i"].metadata["title"] == "5"
    assert items["i"].metadata["title_from"] == "record"
    assert items["f"].text == "2.5\n\nbody" and items["n"].text == "body" and "title" not in items["n"].metadata
    assert {k: (type(v).__name__, v.reason) for k, v in items.items() if isinstance(v, Skipped)} == {
        "l": ("Skipped", "'title' is a list [\"a\", \"b\"] (a title must be a string or a number)"),
        "d": ("Skipped", "'title' is an object {\"en\": \"x\"} (a title must be a string or a number)"),
        "b": ("Skipped", "'title' is a boolean false (a title must be a string or a number)"),
    }
    assert items["l"].source == "d.jsonl:4"


def test_parquet_title_columns_of_numbers_or_lists_follow_the_same_policy(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": ["x", "y", "z"], "title": [7, None, 9]}),
                   tmp_path / "n.parquet")
    pq.write_table(pa.table({"id": ["l"], "text": ["x"], "title": [["p", "q"]]}), tmp_path / "l.parquet")
    pq.write_table(pa.table({"id": ["nan"], "text": ["x"], "title": pa.array([float("nan")], pa.float64())}),
                   tmp_path / "f.parquet")
    items = {i.doc_id: i for i in iter_inputs([tmp_path])}
    assert items["a"].text == "7\n\nx" and items["b"].text == "y" and items["c"].metadata["title"] == "9"
    assert items["nan"].text == "x" and "title" not in items["nan"].metadata  # NaN: a missing value
    assert isinstance(items["l"], Skipped) and items["l"].reason.startswith("'title' is a list")


# --------------------------------------------------------------------------- 4. nothing but front matter
@pytest.mark.parametrize("text", ["---\ntitle: x\n---\n", "---\ntitle: x\n---", "+++\ntitle = 'x'\n+++\n\n  \n",
                                  "\ufeff---\n---\n\u200b\n"])
def test_a_markdown_file_of_nothing_but_front_matter_is_skipped(tmp_path, text):
    src = tmp_path / "in"
    src.mkdir()
    (src / "fm.md").write_text(text, encoding="utf-8")
    (src / "ok.md").write_text("---\ntitle: y\n---\nBody text.\n", encoding="utf-8")
    items = list(iter_inputs([src]))
    assert _skipped(items) == {"fm.md": "nothing but front matter (no text after it)"}
    assert [i.doc_id for i in items if isinstance(i, Document)] == ["ok.md"]
    assert count_inputs([src]) == len(items)


def test_front_matter_alone_in_a_text_file_is_still_its_text(tmp_path):
    (tmp_path / "fm.txt").write_text("---\ntitle: x\n---\n", encoding="utf-8")  # .txt has no front matter
    (item,) = list(iter_inputs([tmp_path / "fm.txt"]))
    assert isinstance(item, Document)


def test_embed_lists_a_front_matter_only_markdown_file_as_skipped(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "fm.md").write_text("---\ntitle: x\n---\n", encoding="utf-8")
    (src / "ok.md").write_text("A document about harbours and their lanterns.", encoding="utf-8")
    out = tmp_path / "o"
    res = _embed(src, "--out", out)
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in m["documents"]] == ["ok.md"]
    assert [(s["doc_id"], s["reason"]) for s in m["skipped"]] == [
        ("fm.md", "nothing but front matter (no text after it)")]
    res = _embed(src / "fm.md", "--out", tmp_path / "o2")
    assert res.exit_code == 2 and "nothing but front matter" in res.output


# --------------------------------------------------------------------------- 5. duplicate ids across input roots
def test_a_file_id_repeated_under_another_input_root_says_how_to_keep_both(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    for d in (a, b):
        d.mkdir()
        (d / "README.md").write_text(f"Readme of {d.name}.", encoding="utf-8")
    items = list(iter_inputs([a, b]))
    assert isinstance(items[0], Document) and isinstance(items[1], Skipped)
    assert items[1].reason == (
        f"duplicate doc_id: README.md (input {str(b)!r}) repeats the id first seen in README.md (input {str(a)!r}) "
        "(ids are paths relative to each input: give the folders' common parent as one input to keep both)")
    both = [i.doc_id for i in iter_inputs([tmp_path])]
    assert both == ["A/README.md", "B/README.md"]


def test_duplicate_hints_only_where_they_help(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    for d in (a, b):
        d.mkdir()
        (d / "r.jsonl").write_text('{"id": "x", "text": "one"}\n{"id": "x", "text": "two"}\n', encoding="utf-8")
    reasons = [i.reason for i in iter_inputs([a, b]) if isinstance(i, Skipped)]
    assert len(reasons) == 3 and not any("(ids are paths" in r for r in reasons)  # record ids are no paths
    (a / "n.md").write_text("Note.", encoding="utf-8")
    again = [i.reason for i in iter_inputs([a, tmp_path / "B" / ".." / "A"]) if isinstance(i, Skipped)]
    assert any(r.startswith("duplicate doc_id: n.md") and r.endswith("(the same input is given twice)") for r in again)
    within = [i.reason for i in iter_inputs([a]) if isinstance(i, Skipped)]
    assert len(within) == 1 and not any("(ids are" in r or "twice" in r for r in within)


def test_a_dataset_dict_listing_no_splits_is_one_skipped_item(tmp_path):
    dd = tmp_path / "in" / "dd"
    dd.mkdir(parents=True)
    (dd / "dataset_dict.json").write_text('{"splits": []}', encoding="utf-8")
    items = list(iter_inputs([tmp_path / "in"]))
    assert _skipped(items) == {"dd": "Hugging Face DatasetDict folder lists no splits (dataset_dict.json)"}
    assert count_inputs([tmp_path / "in"]) == len(items) == 1


def test_a_lone_surrogate_in_jsonl_skips_that_record_and_embed_goes_on(tmp_path):
    r"""User trial: `{"text": "lone \ud800 here"}` is valid JSON and decodes to a lone surrogate, which no UTF-8
    encoder takes: the whole embed stopped ("surrogates not allowed", no file or id named) in the input digest.
    The record is skipped with its reason; so is an id holding one; the other records are embedded."""
    from latechunk.cli import app

    src = tmp_path / "s.jsonl"
    src.write_text('{"id": "surr", "text": "lone surrogate \\ud800 here"}\n'
                   '{"id": "ok", "text": "Herons wait by the reeds."}\n'
                   '{"id": "a\\udc00b", "text": "x"}\n'
                   '{"id": "pair", "text": "a real pair \\ud83d\\ude00 is fine"}\n', encoding="utf-8")
    items = list(iter_inputs([src]))
    reasons = {getattr(x, "reason", None) for x in items if isinstance(x, Skipped)}
    assert {x.doc_id for x in items if not isinstance(x, Skipped)} == {"ok", "pair"}
    assert any(r.startswith("text holds a lone surrogate U+D800 at character 15") for r in reasons), reasons
    assert any(r.startswith("'id' holds a lone surrogate U+DC00") for r in reasons), reasons
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    assert "embedded 2/4 documents" in res.output


def test_a_lone_surrogate_given_in_python_is_named_as_such():
    """LateChunker.map with such a str: the tokenizer's TypeError ("TextEncodeInput must be Union[...]") was the
    reason logged; the document is skipped saying what is wrong with its text."""
    import logging

    from latechunk.api import LateChunker

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("latechunk")
    logger.addHandler(handler)
    try:
        out = list(LateChunker(strategy="fixed:size=16", device="cpu").map(["bad \ud800 text", "Herons wait."]))
    finally:
        logger.removeHandler(handler)
    assert out[0] == [] and len(out[1]) == 1
    assert any("lone surrogate U+D800" in r.getMessage() for r in records), [r.getMessage() for r in records]


def test_folders_nested_past_the_path_limit_are_one_skipped_entry_not_a_crash(tmp_path):
    """User trial: 1,200 nested folders crashed embed with `OSError: [Errno 36] File name too long` (from the
    output-folder check); the folder the file system cannot name is listed as unreadable, the rest is read."""
    import os

    for pad in range(7):  # a level is 7 characters: 7 root lengths put the limit at every check on a found folder
        root = tmp_path / ("deep" + "x" * pad)
        root.mkdir()
        (root / "a.md").write_text("Herons wait by the reeds.", encoding="utf-8")
        fd = os.open(root, os.O_RDONLY)
        try:
            for _ in range(600):  # 600 x "dd0000/" = 4,200 characters, past Linux's 4,096
                os.mkdir("dd0000", dir_fd=fd)
                nxt = os.open("dd0000", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = nxt
        finally:
            os.close(fd)
        items = list(iter_inputs([root]))
        assert [x.doc_id for x in items if isinstance(x, Document)] == ["a.md"], pad
        (bad,) = [x for x in items if isinstance(x, Skipped)]
        assert bad.reason.startswith("unreadable folder:") and bad.doc_id.startswith("dd0000/dd0000/"), (pad, bad)
        assert count_inputs([root]) == len(items)


def test_folders_with_long_names_nested_past_the_path_limit_are_listed_not_a_crash(tmp_path):
    """Trial: 20 nested folders of 243-character names crashed embed (`is_dir()` on the entry the walk had
    already found unreadable). Each level holds a short and a 200-character file name, so the limit falls on a
    file as well as on a folder: every entry is a document or listed as unreadable, none lost."""
    import os

    root = tmp_path / "in"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    names = []
    try:
        for level in range(20):
            name = chr(ord("a") + level) * 243
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            names.append(name)
            for file in ("doc.txt", "f" * 196 + ".txt"):
                w = os.open(file, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(w, f"Herons wait at level {level}.".encode())
                os.close(w)
    finally:
        os.close(fd)
    items = list(iter_inputs([root]))
    docs = [x for x in items if isinstance(x, Document)]
    skipped = [x for x in items if isinstance(x, Skipped)]
    assert docs and skipped and len(items) == count_inputs([root])
    assert all(x.reason.startswith("unreadable") for x in skipped), [x.reason for x in skipped]
    folders = [x for x in skipped if x.doc_id.endswith("/")]
    assert len(folders) == 1 and folders[0].reason.startswith("unreadable folder: File name too long")
    depth = folders[0].doc_id.count("/") - 1  # the levels above the unreadable folder were read
    assert len(docs) == 2 * depth - sum(1 for x in skipped if not x.doc_id.endswith("/"))
    assert {d.doc_id.rsplit("/", 1)[0] for d in docs} <= {"/".join(names[: k + 1]) for k in range(depth)}


def test_another_projects_run_json_does_not_make_a_folder_a_latechunk_output(tmp_path):
    """An ML experiment folder with its own run.json was skipped whole as a "latechunk output folder"."""
    root = tmp_path / "in"
    (root / "exp").mkdir(parents=True)
    (root / "exp" / "run.json").write_text('{"lr": 0.001, "epochs": 3}', encoding="utf-8")
    (root / "exp" / "notes.md").write_text("The run diverged at epoch two.", encoding="utf-8")
    (root / "idx").mkdir()
    (root / "idx" / "run.json").write_text('{"format": "latechunk-run/1", "settings": {}}', encoding="utf-8")
    items = list(iter_inputs([root]))
    assert [x.doc_id for x in items if isinstance(x, Document)] == ["exp/notes.md"]
    assert [(x.doc_id, x.reason.split(" (")[0]) for x in items if isinstance(x, Skipped)] == \
        [("exp/run.json", "unsupported type .json"), ("idx/", "latechunk output folder")]


def test_a_missing_text_field_and_a_null_text_have_their_own_reasons(tmp_path):
    """Both read "no 'text' field (or it is null)"; the reason now says which."""
    src = tmp_path / "t.jsonl"
    src.write_text('{"id": "a"}\n{"id": "b", "text": null}\n{"id": "c", "text": "Herons wait."}\n', encoding="utf-8")
    reasons = {x.doc_id: x.reason for x in iter_inputs([src]) if isinstance(x, Skipped)}
    assert reasons["b"] == "'text' is null" and reasons["a"].startswith("no 'text' field (its fields: 'id';")
    assert set(reasons) == {"a", "b"}


def test_a_record_without_text_names_its_fields_and_how_to_rename_one(tmp_path):
    """Trial finding: a corpus whose text field is `body` or `contents` read "no 'text' field" on every line; the
    reason now lists the record's fields and names the first one that is not an id/title/url for --text-field."""
    src = tmp_path / "t.jsonl"
    src.write_text('{"_id": "a", "title": "Rivers", "contents": "Herons wait.", "lang": "en"}\n', encoding="utf-8")
    (skip,) = [x for x in iter_inputs([src]) if isinstance(x, Skipped)]
    assert skip.doc_id == "a" and skip.reason == (
        "no 'text' field (its fields: '_id', 'title', 'contents', 'lang'; give the field that holds the text: "
        "--text-field contents)")


def test_a_records_url_is_kept_from_jsonl_and_tables_and_a_bad_one_skips_the_record(tmp_path):
    """Trial: a lone surrogate in a JSONL `url` killed the whole run at the chunk table's write; a parquet `url`
    column was ignored. A bad url (lone surrogate, not a string) now skips its record with the reason."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "a", "text": "Herons wait.", "url": "https://x.org/\\ud800"}\n'
                   '{"id": "b", "text": "Herons wait.", "url": 5}\n'
                   '{"id": "c", "text": "Herons wait.", "url": " https://x.org/c "}\n'
                   '{"id": "d", "text": "Herons wait.", "url": null}\n', encoding="utf-8")
    items = {x.doc_id: x for x in iter_inputs([src])}
    assert "'url' holds a lone surrogate U+D800" in items["a"].reason
    assert items["b"].reason == "'url' is an integer 5 (a url must be a string)"
    assert items["c"].metadata["url"] == "https://x.org/c" and "url" not in items["d"].metadata
    table = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["p", "q"], "text": ["Herons wait.", "Egrets too."],
                             "url": ["https://x.org/p", None]}), table)
    rows = {x.doc_id: x for x in iter_inputs([table])}
    assert rows["p"].metadata["url"] == "https://x.org/p" and "url" not in rows["q"].metadata


def test_a_beir_folder_gives_its_corpus_not_its_queries(tmp_path):
    """Trial: `embed BEIR_DIR` embedded queries.jsonl's questions as documents beside corpus.jsonl's; they are
    listed as skipped with the reason; the file named alone is still read (the user asked for it)."""
    root = tmp_path / "scifact"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "Herons wait."}\n', encoding="utf-8")
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "Do herons wait?"}\n', encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    items = list(iter_inputs([root]))
    assert [x.doc_id for x in items if isinstance(x, Document)] == ["d1"]
    skipped = {x.doc_id: x.reason for x in items if isinstance(x, Skipped)}
    assert skipped["queries.jsonl"].startswith("BEIR queries file beside corpus.jsonl")
    assert count_inputs([root]) == len(items)
    assert [x.doc_id for x in iter_inputs([root / "queries.jsonl"])] == ["q1"]


def test_one_empty_file_among_named_inputs_is_skipped_not_fatal(tmp_path):
    """Trial finding: `latechunk embed docs/*.md` failed when one of the files was empty ("input yielding no
    document"), while the same file inside a folder is skipped; a named file now is too, when another input has
    a document. An empty folder input, or inputs with no document at all, still fail before any work."""
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    (tmp_path / "a.md").write_text("Rivers flow to the sea.", encoding="utf-8")
    (tmp_path / "nothing").mkdir()
    require_documents([tmp_path / "empty.md", tmp_path / "a.md"])
    with pytest.raises(ValueError, match="yielding no document: .*empty.md"):
        require_documents([tmp_path / "empty.md"])
    with pytest.raises(ValueError, match="yielding no document: .*nothing .an empty folder."):
        require_documents([tmp_path / "a.md", tmp_path / "nothing"])
    res = _embed(tmp_path / "empty.md", tmp_path / "a.md", "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert m["counts"]["documents_embedded"] == 1
    assert [(s["doc_id"], s["reason"]) for s in m["skipped"]] == [("empty.md", "empty or whitespace-only")]


def test_a_missing_readme_data_path_says_where_the_data_folder_is(monkeypatch):
    """Trial finding: the README's first command, run from a checkout elsewhere, said only "input path(s) not
    found: ../shared/data/..."; with $LATECHUNK_DATA set the message gives the path under it."""
    from latechunk.io import missing_inputs_message

    monkeypatch.setenv("LATECHUNK_DATA", "/data/")
    assert missing_inputs_message(["../shared/data/chroma/corpora"]).endswith(
        "from elsewhere give the data folder's path: /data/chroma/corpora)")
    monkeypatch.delenv("LATECHUNK_DATA")
    assert "DATA/chroma/corpora" in missing_inputs_message(["../shared/data/chroma/corpora"])
    assert missing_inputs_message(["notes/"]) == "input path(s) not found: notes/"
    with pytest.raises(ValueError, match="from elsewhere give"):
        list(iter_inputs(["../shared/data/none-such"]))


def test_a_broken_symlink_or_loop_named_as_an_input_is_called_that(tmp_path):
    """Trial finding: inside a folder they are skipped as "broken symlink"/"symlink loop", named directly they read
    "input path(s) not found"."""
    from latechunk.io import missing_inputs_message

    (tmp_path / "bl").symlink_to(tmp_path / "nowhere")
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    msg = missing_inputs_message([str(tmp_path / "bl"), str(tmp_path / "l1"), str(tmp_path / "gone")])
    assert f"bl (a broken symlink to {tmp_path / 'nowhere'})" in msg and "l1 (a symlink loop)" in msg
    assert msg.endswith(f"{tmp_path / 'gone'}")


def test_a_json_line_giving_its_text_or_id_twice_is_skipped_saying_so(tmp_path):
    """Trial finding: `{"text": "first", "text": "second"}` embedded "second" silently (json keeps the last value);
    a record that gives its id, text, title or url twice is skipped with that reason; other repeated keys, and
    repeated keys of nested objects, do not matter to latechunk and are read as json reads them."""
    src = tmp_path / "r.jsonl"
    src.write_text('{"id": "a", "text": "first", "text": "second"}\n'
                   '{"id": "b", "id": "b2", "text": "one"}\n'
                   '{"id": "c", "text": "ok", "x": 1, "x": 2}\n'
                   '{"id": "d", "meta": {"k": 1, "k": 2}, "text": "nested"}\n', encoding="utf-8")
    items = list(iter_inputs([src]))
    assert [(i.source, i.reason) for i in items if isinstance(i, Skipped)] == [
        ("r.jsonl:1", "the JSON object gives 'text' twice (which value is meant is unknown)"),
        ("r.jsonl:2", "the JSON object gives 'id' twice (which value is meant is unknown)")]
    assert [d.doc_id for d in items if isinstance(d, Document)] == ["c", "d"]
