"""Tests of eval/datasets/ on hand-made miniatures (tests/data/eval_mini/) and on the real shared data."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from latechunk.eval.datasets import (
    DATA_ENV_VAR,
    EvalDataset,
    Query,
    data_root,
    load_beir,
    load_chroma,
    load_dataset,
    load_squad,
)
from latechunk.types import Document

MINI = Path(__file__).parents[1] / "data" / "eval_mini"
REAL = data_root()


# ---------------------------------------------------------------- Chroma


def test_load_chroma_mini():
    ds = load_chroma(MINI / "chroma", id_prefix="")  # the bundled set's bare ids (load_dataset("chroma"))
    assert ds.name == "chroma"
    assert [d.doc_id for d in ds.documents] == ["alpha", "beta"]
    assert ds.document("beta").text == "Café owners open early. Naïve bakers burn bread."
    assert [q.query_id for q in ds.queries] == ["0", "1", "2"]
    # "Café owners open early." is 23 chars (é is 1 code point, 2 bytes), a space, then "Naïve" at 24.
    assert ds.queries[1].spans == (("beta", 24, 48),)
    assert ds.queries[2].spans == (("beta", 0, 23), ("beta", 37, 41))
    assert ds.span_text(("beta", 37, 41)) == "burn"
    assert ds.qrels is None
    assert ds.doc_qrels() == {"0": {"alpha": 1}, "1": {"beta": 1}, "2": {"beta": 1}}


def test_load_chroma_keeps_crlf(tmp_path):
    root = tmp_path / "c"
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "x.md").write_bytes(b"line one\r\nline two\r\n")
    refs = [{"content": "line two", "start_index": 10, "end_index": 18}]  # offsets count the "\r"
    with open(root / "questions_df.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["question", "references", "corpus_id"], ["q?", json.dumps(refs), "x"]])
    ds = load_chroma(root)
    assert ds.document("x").text == "line one\r\nline two\r\n"
    assert ds.queries[0].spans == (("x", 10, 18),)


def test_load_chroma_bad_span_names_query(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(MINI / "chroma", root)
    with open(root / "questions_df.csv", "a", newline="", encoding="utf-8") as f:
        bad = [{"content": "Dogs", "start_index": 0, "end_index": 4}]  # text[0:4] is "Cats"
        csv.writer(f).writerow(["Where are the dogs?", json.dumps(bad), "alpha"])
    with pytest.raises(ValueError, match=r"query 'c:3'.*\[0, 4\)"):
        load_chroma(root)


def test_load_chroma_unknown_corpus(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(MINI / "chroma", root)
    (root / "corpora" / "beta.md").unlink()
    with pytest.raises(ValueError, match="beta"):
        load_chroma(root)


def test_load_chroma_reads_plain_text_corpora_and_names_the_files_it_does_not_read(tmp_path):
    """Trial finding: a `.txt` in corpora/ was ignored without a word and the question naming it failed with
    "has only [...]"; renaming it to .md changed its chunking (parsed as markdown). .txt is read as plain text."""
    root = tmp_path / "c"
    shutil.copytree(MINI / "chroma", root)
    (root / "corpora" / "beta.md").rename(root / "corpora" / "beta.txt")
    ds = load_chroma(root)
    assert ds.document("beta").metadata["source"] == "beta.txt"
    assert [d.doc_id for d in ds.documents] == sorted(d.doc_id for d in ds.documents)
    (root / "corpora" / "beta.txt").rename(root / "corpora" / "beta.rst")
    with pytest.raises(ValueError, match=r"read from \.md, \.markdown, \.txt files; not read: beta\.rst"):
        load_chroma(root)
    (root / "corpora" / "beta.rst").rename(root / "corpora" / "beta.txt")
    shutil.copy(root / "corpora" / "beta.txt", root / "corpora" / "beta.md")
    with pytest.raises(ValueError, match="two files named 'beta'"):
        load_chroma(root)


# ---------------------------------------------------------------- SQuAD


def test_load_squad_mini():
    ds = load_squad(MINI / "squad_mini.json")
    assert ds.name == "squad_mini"
    rivers = ds.document("Rivers")
    assert rivers.text == "The Nile is long.\n\nThe Amazon is wide."
    assert rivers.metadata["paragraph_char_spans"] == [[0, 17], [19, 38]]
    spans = ds.spans_by_query()
    # "Nile" at paragraph offset 4; "Amazon" at 4 in paragraph 2, shifted by len("The Nile is long.")+2 = 19
    assert spans == {"r1": (("Rivers", 4, 8),), "r2": (("Rivers", 23, 29),), "h1": (("Hills", 9, 14),)}
    assert ds.span_text(spans["r2"][0]) == "Amazon"


def test_load_squad_all_answers_dedups():
    ds = load_squad(MINI / "squad_mini.json", answers="all")
    # three listed answers, two distinct spans: "Amazon" [23, 29) twice and "The Amazon" [19, 29)
    assert ds.spans_by_query()["r2"] == (("Rivers", 23, 29), ("Rivers", 19, 29))


def test_load_squad_bad_offset_and_unanswerable(tmp_path):
    payload = json.loads((MINI / "squad_mini.json").read_text())
    payload["data"][1]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 8
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match="h1"):
        load_squad(bad)
    payload = json.loads((MINI / "squad_mini.json").read_text())
    payload["data"][1]["paragraphs"][0]["qas"].append(
        {"id": "h2", "question": "Unanswerable?", "answers": [], "is_impossible": True}
    )
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(payload))
    with pytest.raises(ValueError, match="h2"):
        load_squad(v2)
    kept = load_squad(v2, skip_unanswerable=True)
    assert [q.query_id for q in kept.queries] == ["r1", "r2", "h1"]
    assert kept.notes == ("1 of 4 questions left out: no answer (SQuAD v2.0 unanswerable; a span metric needs one)",)
    assert load_squad(MINI / "squad_mini.json", skip_unanswerable=True).notes == ()  # nothing left out, no note
    assert load_dataset(str(v2)).notes == kept.notes  # compare and train load it so


# ---------------------------------------------------------------- BEIR


def test_load_beir_mini():
    ds = load_beir(MINI / "beir")
    assert ds.name == "beir"
    assert ds.document("d1").text == "Tea\n\nGreen tea has caffeine."
    assert ds.document("d2").text == "Water has none."  # empty title: body only
    assert ds.document("d1").metadata["title"] == "Tea"
    assert [q.query_id for q in ds.queries] == ["q1", "q2"]  # q3 is only in train qrels
    assert all(q.spans == () for q in ds.queries)
    assert ds.qrels == {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1, "d1": 0}}
    assert ds.doc_qrels() == ds.qrels and ds.doc_qrels() is not ds.qrels
    train = load_beir(MINI / "beir", split="train")
    assert [q.query_id for q in train.queries] == ["q3"]
    assert ds.notes == ()  # every relevant document is in the corpus


def test_load_beir_notes_relevant_documents_missing_from_the_corpus(tmp_path):
    """Trial finding: qrels naming documents the corpus lacks were accepted silently, and R@100 stayed capped
    below 1 with nothing in the report to say why; the dataset's notes say it (compare prints them)."""
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    with open(root / "qrels" / "test.tsv", "a", encoding="utf-8") as f:
        f.write("q2\tgone-7\t1\nq2\tgone-8\t0\n")  # a judged non-relevant one does not count
    (note,) = load_beir(root).notes
    assert note.startswith("1 relevant document(s) in the qrels are not in corpus.jsonl (e.g. 'gone-7'), for 1 of 2 "
                           "queries"), note


def test_load_beir_leaves_out_and_counts_qrels_queries_missing_from_queries_jsonl(tmp_path):
    """Trial finding: one qrels line naming a query absent from queries.jsonl made the whole dataset fail; the
    others are evaluated and the note says how many were left out. Qrels of another dataset still fail."""
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    with open(root / "qrels" / "test.tsv", "a", encoding="utf-8") as f:
        f.write("q-gone\td1\t1\n")
    ds = load_beir(root)
    assert [q.query_id for q in ds.queries] == ["q1", "q2"] and set(ds.qrels) == {"q1", "q2"}
    (note,) = ds.notes
    assert note == "1 of the 3 queries in test.tsv are not in queries.jsonl (e.g. 'q-gone') and are left out"
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nx1\td1\t1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="none of the 1 queries of test.tsv is in queries.jsonl"):
        load_beir(root)


def test_load_beir_falls_back_to_first_qrels(tmp_path):
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    (root / "qrels" / "test.tsv").unlink()
    assert [q.query_id for q in load_beir(root).queries] == ["q3"]


# ---------------------------------------------------------------- dispatch and validation


def test_load_dataset_dispatch(monkeypatch, tmp_path):
    assert load_dataset(str(MINI / "chroma")).name == "chroma"
    # a BEIR folder is read by load_beir, its test split (train.tsv judges q3 only)
    assert load_dataset(MINI / "beir").qrels == {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1, "d1": 0}}
    assert load_dataset(MINI / "squad_mini.json").name == "squad_mini"
    with pytest.raises(ValueError, match="not a known name"):
        load_dataset(str(tmp_path))
    data = tmp_path / "data"
    shutil.copytree(MINI / "chroma", data / "chroma_chunking_eval")
    monkeypatch.setenv(DATA_ENV_VAR, str(data))
    assert data_root() == data
    assert len(load_dataset("chroma").queries) == 3
    with pytest.raises(FileNotFoundError, match=DATA_ENV_VAR):
        load_dataset("xquad")


def test_eval_dataset_validation():
    doc = Document("a", "hello")
    with pytest.raises(ValueError, match="exceeds"):
        EvalDataset("x", (doc,), (Query("q", "?", (("a", 0, 6),)),))
    with pytest.raises(ValueError, match="unknown document"):
        EvalDataset("x", (doc,), (Query("q", "?", (("b", 0, 1),)),))
    with pytest.raises(ValueError, match="duplicate doc_id"):
        EvalDataset("x", (doc, doc), ())
    with pytest.raises(ValueError, match="duplicate query_id"):
        EvalDataset("x", (doc,), (Query("q", "?"), Query("q", "!")))
    with pytest.raises(ValueError, match="unknown queries"):
        EvalDataset("x", (doc,), (Query("q", "?"),), {"z": {"a": 1}})
    with pytest.raises(ValueError, match="char_start < char_end"):
        Query("q", "?", (("a", 3, 3),))


# ---------------------------------------------------------------- real data


@pytest.mark.skipif(
    not (REAL / "chroma_chunking_eval" / "questions_df.csv").is_file(), reason="shared data missing"
)
def test_real_chroma_counts():
    ds = load_dataset("chroma")
    assert len(ds.documents) == 5
    assert len(ds.queries) == 472
    assert sum(len(q.spans) for q in ds.queries) == 790
    assert len(ds.document("finance").text) == 737_905
    assert ds.span_text(("state_of_the_union", 27346, 27425)) == (
        "My administration announced we’re cutting credit card late fees from $32 to $8."
    )


@pytest.mark.skipif(not (REAL / "xquad_en" / "xquad.en.json").is_file(), reason="shared data missing")
def test_real_xquad_counts():
    ds = load_dataset("xquad")
    assert ds.name == "xquad"
    assert len(ds.documents) == 48
    assert len(ds.queries) == 1190
    assert all(len(q.spans) == 1 for q in ds.queries)
    assert sum(len(d.metadata["paragraph_char_spans"]) for d in ds.documents) == 240
    assert ds.span_text(ds.spans_by_query()["56beb4343aeaaa14008c925b"][0]) == "308"


# ---------------------------------------------------------------- issue 10


def test_a_chroma_format_folder_is_named_after_its_folder_and_its_query_ids_are_namespaced(tmp_path):
    root = tmp_path / "my_docs"
    shutil.copytree(MINI / "chroma", root)
    ds = load_dataset(str(root))
    assert ds.name == "my_docs"  # was "chroma" whatever the folder's name
    assert [q.query_id for q in ds.queries] == ["my_docs:0", "my_docs:1", "my_docs:2"]  # never the real set's ids
    assert set(ds.doc_qrels()) == {"my_docs:0", "my_docs:1", "my_docs:2"}
    assert load_chroma(root, name="other").queries[0].query_id == "other:0"


def test_compare_dataset_folder_holding_one_squad_json_loads(tmp_path):
    folder = tmp_path / "my_squad"
    folder.mkdir()
    shutil.copy(MINI / "squad_mini.json", folder / "dev.json")
    ds = load_dataset(str(folder))
    assert ds.name == "my_squad"
    assert [q.query_id for q in ds.queries] == [q.query_id for q in load_squad(MINI / "squad_mini.json").queries]
    shutil.copy(MINI / "squad_mini.json", folder / "train.json")
    with pytest.raises(ValueError, match="2 .json files"):
        load_dataset(str(folder))


# ---------------------------------------------------------------- fresh-user trial: loaders (fix F)


def _chroma_copy(tmp_path, name="c"):
    root = tmp_path / name
    shutil.copytree(MINI / "chroma", root)
    return root


def _append_rows(root, *rows):
    with open(root / "questions_df.csv", "a", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def test_a_user_folder_named_chroma_gets_prefixed_ids_only_the_bundled_set_is_bare(tmp_path, monkeypatch):
    """Trial finding: a user folder named `chroma` got the bundled set's bare ids `0...` (README: never)."""
    root = _chroma_copy(tmp_path, "chroma")
    ds = load_dataset(str(root))
    assert ds.name == "chroma"
    assert [q.query_id for q in ds.queries] == ["chroma:0", "chroma:1", "chroma:2"]
    data = tmp_path / "data"
    shutil.copytree(MINI / "chroma", data / "chroma_chunking_eval")
    monkeypatch.setenv(DATA_ENV_VAR, str(data))
    assert [q.query_id for q in load_dataset("chroma").queries] == ["0", "1", "2"]  # Chroma's own ids


def test_blank_questions_are_left_out_and_counted(tmp_path):
    """Trial finding: a blank question ("  ", "", a BEIR line with "question" for "text") was scored as a query."""
    root = _chroma_copy(tmp_path)
    ok = json.dumps([{"content": "Cats sleep a lot.", "start_index": 0, "end_index": 17}])
    _append_rows(root, ["  ", ok, "alpha"])
    ds = load_chroma(root)
    assert [q.query_id for q in ds.queries] == ["c:0", "c:1", "c:2"]
    assert ds.notes == ("1 of 4 questions left out: blank question (line 5)",)

    payload = json.loads((MINI / "squad_mini.json").read_text())
    payload["data"][1]["paragraphs"][0]["qas"][0]["question"] = ""
    squad = tmp_path / "blank.json"
    squad.write_text(json.dumps(payload))
    ds = load_dataset(str(squad))
    assert [q.query_id for q in ds.queries] == ["r1", "r2"]
    assert ds.notes == ("1 of 3 questions left out: blank question ('h1')",)

    beir = tmp_path / "b"
    shutil.copytree(MINI / "beir", beir)
    (beir / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "caffeine in tea"}\n{"_id": "q2", "question": "where?"}\n'
        '{"_id": "q60", "text": ""}\n', encoding="utf-8")
    with open(beir / "qrels" / "test.tsv", "a", encoding="utf-8") as f:
        f.write("q60\td1\t1\n")
    ds = load_beir(beir)
    assert [q.query_id for q in ds.queries] == ["q1"]
    assert ds.notes == (
        "1 of 3 queries of test.tsv left out: no 'text' field in queries.jsonl ('q2' at queries.jsonl:2)",
        "1 of 3 queries of test.tsv left out: a blank 'text' in queries.jsonl ('q60' at queries.jsonl:3)",
    )


def test_beir_duplicate_query_or_document_id_is_an_error_naming_both_lines(tmp_path):
    """Trial finding: a repeated BEIR query id silently overwrote the first (SQuAD refuses a duplicate)."""
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    with open(root / "queries.jsonl", "a", encoding="utf-8") as f:
        f.write('{"_id": "q1", "text": "tea again"}\n')
    with pytest.raises(ValueError, match=r"queries\.jsonl:4: duplicate query id 'q1' \(first at line 1\)"):
        load_beir(root)
    shutil.copy(MINI / "beir" / "queries.jsonl", root / "queries.jsonl")
    with open(root / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write('{"_id": "d1", "text": "again"}\n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl:4: duplicate document id 'd1' \(first at line 1\)"):
        load_beir(root)


def test_chroma_row_without_references_and_repeated_rows_are_left_out_and_counted(tmp_path):
    """Trial findings: a row with references [] was dropped without a word; a repeated row was scored twice."""
    root = _chroma_copy(tmp_path)
    ok = json.dumps([{"content": "Cats sleep a lot.", "start_index": 0, "end_index": 17}])
    _append_rows(root, ["Nothing?", "[]", "alpha"], ["How much do cats sleep?", ok, "alpha"])
    ds = load_chroma(root)
    assert [q.query_id for q in ds.queries] == ["c:0", "c:1", "c:2"]
    assert ds.notes == ("1 of 5 questions left out: no references (an empty list: nothing to score) (line 5)",
                        ("1 of 5 questions left out: repeats an earlier row's question, corpus and references "
                         "(line 6 = line 2)"))


def test_malformed_records_are_errors_naming_file_and_line(tmp_path):
    """Trial findings: a reference without end_index and a BEIR corpus line without _id were KeyError tracebacks."""
    root = _chroma_copy(tmp_path)
    _append_rows(root, ["Where?", json.dumps([{"content": "Cats", "start_index": 0}]), "alpha"])
    with pytest.raises(ValueError, match=r"questions_df\.csv:5: query 'c:3': reference 0 lacks end_index"):
        load_chroma(root)

    beir = tmp_path / "b"
    shutil.copytree(MINI / "beir", beir)
    (beir / "corpus.jsonl").write_text(
        '{"id": "d1", "title": "Tea", "text": "Green tea has caffeine."}\n{"_id": "d2", "text": "Water has none."}\n'
        '{"doc_id": "d3", "text": "Coffee has more."}\n', encoding="utf-8")
    assert [d.doc_id for d in load_beir(beir).documents] == ["d1", "d2", "d3"]  # id fields as embed reads them
    with open(beir / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write('{"key": "d4", "text": "no id"}\n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl:4: no id field \(_id / id / doc_id\); its keys: 'key'"):
        load_beir(beir)


def test_span_mismatch_names_the_csv_line(tmp_path):
    root = _chroma_copy(tmp_path)
    _append_rows(root, ["Where are the dogs?", json.dumps([{"content": "Dogs", "start_index": 0, "end_index": 4}]),
                        "alpha"])
    with pytest.raises(ValueError, match=r"questions_df\.csv:5: query 'c:3'"):
        load_chroma(root)


def test_decode_errors_name_the_file_byte_and_line(tmp_path):
    """Trial finding: cp1252 / UTF-16 files failed with a bare UnicodeDecodeError naming no file."""
    root = _chroma_copy(tmp_path)
    (root / "corpora" / "beta.md").unlink()
    (root / "corpora" / "beta.txt").write_bytes("Café owners open early.\nNaïve".encode("cp1252"))
    with pytest.raises(ValueError, match=r"beta\.txt:1: invalid UTF-8 at byte 3 .*Windows-1252"):
        load_chroma(root)
    shutil.copy(MINI / "chroma" / "corpora" / "beta.md", root / "corpora" / "beta.txt")
    csv_path = root / "questions_df.csv"
    csv_path.write_bytes(csv_path.read_text(encoding="utf-8").encode("cp1252"))
    with pytest.raises(ValueError, match=r"questions_df\.csv:4: invalid UTF-8 at byte \d+"):
        load_chroma(root)
    csv_path.write_bytes((MINI / "chroma" / "questions_df.csv").read_text(encoding="utf-8").encode("utf-16-le"))
    with pytest.raises(ValueError, match=r"questions_df\.csv:1: NUL byte at byte 1: .*byte-order mark"):
        load_chroma(root)


def test_a_byte_order_mark_is_read_as_embed_reads_it(tmp_path):
    """Trial finding: a UTF-8 BOM broke questions_df.csv's header, queries.jsonl's first line and the qrels
    header, and stayed in a corpus document as U+FEFF (every offset one off from embed's)."""
    bom = b"\xef\xbb\xbf"
    root = _chroma_copy(tmp_path)
    for p in (root / "questions_df.csv", root / "corpora" / "beta.md"):
        p.write_bytes(bom + p.read_bytes())
    ds = load_chroma(root)
    assert ds.document("beta").text == (MINI / "chroma" / "corpora" / "beta.md").read_text(encoding="utf-8")
    assert [q.query_id for q in ds.queries] == ["c:0", "c:1", "c:2"]
    csv_path = root / "questions_df.csv"  # UTF-16 with its BOM, as Excel writes "Unicode text"
    csv_path.write_bytes((MINI / "chroma" / "questions_df.csv").read_text(encoding="utf-8").encode("utf-16"))
    assert len(load_chroma(root).queries) == 3

    beir = tmp_path / "b"
    shutil.copytree(MINI / "beir", beir)
    for p in (beir / "queries.jsonl", beir / "corpus.jsonl"):
        p.write_bytes(bom + p.read_bytes())
    qrels = beir / "qrels" / "test.tsv"
    qrels.write_bytes(bom + qrels.read_bytes().replace(b"\n", b"\r\n"))
    ds = load_beir(beir)
    assert ds.qrels == load_beir(MINI / "beir").qrels
    assert ds.document("d1").text == "Tea\n\nGreen tea has caffeine."


def test_beir_query_without_a_relevant_document_is_left_out(tmp_path):
    """Trial finding: a query judged only score 0 was kept and scored 0 by every system."""
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    with open(root / "qrels" / "test.tsv", "a", encoding="utf-8") as f:
        f.write("q3\td1\t0\nq3\td2\t0\n")
    ds = load_beir(root)
    assert [q.query_id for q in ds.queries] == ["q1", "q2"]
    assert ds.qrels == {"q1": {"d1": 2, "d3": 1}, "q2": {"d2": 1, "d1": 0}}  # q2's judged non-relevant d1 kept
    assert ds.notes == (("1 of 3 queries of test.tsv left out: no relevant document (every judgment in the qrels "
                         "has score 0) ('q3')"),)


def test_beir_qrels_errors_say_tab_separated_and_name_conflicting_judgments(tmp_path):
    root = tmp_path / "b"
    shutil.copytree(MINI / "beir", root)
    qrels = root / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8").replace("\t", " "), encoding="utf-8")
    with pytest.raises(ValueError, match="must be tab-separated"):
        load_beir(root)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d3 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"test\.tsv:3: expected 3 columns.*must be tab-separated"):
        load_beir(root)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"test\.tsv:3: query 'q1' and document 'd1' are judged 2 here and 1 at "
                                         r"line 2"):
        load_beir(root)


def test_a_stray_byte_in_utf8_dataset_text_is_named_not_called_windows_1252(tmp_path):
    """Issue 36, section 3, for compare's datasets: UTF-8 text with one bad byte was called Windows-1252 with iconv
    advice that garbles its correct characters; now the bad byte is named and only a legacy file gets the advice."""
    from eval.datasets import _read_text

    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes("caf\u00e9 \u2014 ok\n".encode() + b"bad \xff here\n")
    with pytest.raises(ValueError, match=r"1 byte not UTF-8 \(at byte 17\) in otherwise valid UTF-8 text") as got:
        _read_text(mixed, "test")
    assert "iconv" not in str(got.value) and "Windows-1252" not in str(got.value)
    legacy = tmp_path / "legacy.txt"
    legacy.write_bytes("caf\u00e9 na\u00efve\n".encode("cp1252"))
    with pytest.raises(ValueError, match=r"Windows-1252.*iconv"):
        _read_text(legacy, "test")
