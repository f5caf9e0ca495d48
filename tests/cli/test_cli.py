"""latechunk/cli/: embed -> search on real data, bad input listed, bad parameters rejected before work, `chunk`
and `embed` hand out the same records (the callers' own slices, token spans covering them)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config import DEFAULT_STRATEGY
from latechunk.eval.datasets import data_root
from latechunk.models import resolve_model_path
from latechunk.tokenize import DocumentTokenizer
from tests.invariants import check_chunk_rows

DATA = data_root() / "chroma_chunking_eval" / "corpora"
runner = CliRunner()


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def sotu_index(tmp_path_factory):
    src = DATA / "state_of_the_union.md"
    if not src.exists():
        pytest.skip("../shared/data is not present")
    out = tmp_path_factory.mktemp("idx")
    res = _run("embed", src, "--out", out, "--device", "cpu", "--quiet")
    assert res.exit_code == 0, res.output
    return src, out


def test_embed_writes_consistent_index_table_manifest(sotu_index):
    import faiss

    src, out = sotu_index
    manifest = json.loads((out / "manifest.json").read_text())
    table = pq.read_table(out / "chunks.parquet").to_pylist()
    assert faiss.read_index(str(out / "index.faiss")).ntotal == len(table) == manifest["counts"]["chunks"]
    assert manifest["counts"]["documents_embedded"] == 1 and manifest["skipped"] == []
    text = src.read_bytes().decode("utf-8")  # the file as written (no newline translation)
    assert all(r["text"] == text[r["char_start"] : r["char_end"]] for r in table)
    assert [r["chunk_index"] for r in table] == list(range(len(table)))
    check_chunk_rows({src.name: text}, table, DocumentTokenizer.from_pretrained(resolve_model_path(None)))
    assert manifest["model"]["sha256"] and manifest["strategy"]["name"] == DEFAULT_STRATEGY.split(":")[0]


def test_search_finds_the_credit_card_fee_span(sotu_index):
    _, out = sotu_index
    res = _run("search", out, "How much is the administration cutting credit card late fees to?", "-k", 5, "--json")
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    assert any(h["char_start"] <= 27346 and h["char_end"] >= 27425 for h in hits)
    assert set(hits[0]) >= {"rank", "score", "doc_id", "chunk_index", "char_start", "char_end", "token_start",
                            "token_end", "heading_path", "text"}


def test_bad_inputs_are_skipped_with_reasons(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "good.md").write_text("# Title\n\nA real paragraph about rivers and the sea.\n", encoding="utf-8")
    (src / "empty.txt").write_text("   \n\t", encoding="utf-8")
    (src / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (src / "sub" / "binary.md").write_bytes(b"\x00\x01\x02binary")
    (src / "docs.jsonl").write_text('{"id": "j1", "text": "hello there"}\nnot json\n{"id": "j2", "text": ""}\n')
    out = tmp_path / "out"
    res = _run("embed", src, "--out", out, "--device", "cpu", "--quiet", "--strategy", "fixed:size=32")
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    reasons = {s["doc_id"]: s["reason"] for s in m["skipped"]}
    assert {d["doc_id"] for d in m["documents"]} == {"good.md", "j1"}
    assert "empty" in reasons["empty.txt"] and "UTF-8" in reasons["latin1.txt"]
    assert "binary" in reasons["sub/binary.md"] and "empty" in reasons["j2"]
    assert any("JSON" in r for r in reasons.values())
    assert m["counts"]["documents_in"] == m["counts"]["documents_embedded"] + m["counts"]["documents_skipped"] == 7


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--strategy", "nope"], "unknown strategy 'nope'"),
        (["--strategy", "fixed:size=8,overlap=8"], "8"),
        (["--strategy", "fixed:size=0"], "size"),
        (["--model", "./no/such/model"], "does not exist"),
        (["--mode", "early"], "late"),
    ],
)
def test_bad_parameters_fail_clearly(tmp_path, args, needle):
    doc = tmp_path / "a.md"
    doc.write_text("hello world", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--device", "cpu", *args])
    assert res.exit_code == 2
    assert needle in res.output
    assert not (tmp_path / "o" / "index.faiss").exists()


def test_existing_output_needs_force(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("hello world", encoding="utf-8")
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--device", "cpu"])
    assert res.exit_code == 2 and "--force" in res.output


def test_strategies_lists_all_five_with_parameters():
    res = _run("strategies")
    assert res.exit_code == 0
    for name in ("fixed", "recursive", "heading", "sentence_window", "semantic"):
        assert name in res.output
    assert "overlap" in res.output and "percentile" in res.output


def test_chunk_writes_jsonl_exact_slices(tmp_path):
    doc = tmp_path / "a.md"
    text = "# A\n\nFirst section text.\n\n## B\n\nSecond section text here.\n"
    doc.write_text(text, encoding="utf-8")
    out = tmp_path / "c.jsonl"
    res = _run("chunk", doc, "--strategy", "heading", "--out", out)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["text"] == text[r["char_start"] : r["char_end"]] for r in rows)
    assert rows[1]["heading_path"] == ["A", "B"]
    check_chunk_rows({"a.md": text}, rows, DocumentTokenizer.from_pretrained(resolve_model_path(None)))


def test_a_previous_index_inside_the_corpus_folder_is_not_read_as_documents(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha beta gamma delta. " * 20, encoding="utf-8")
    (docs / "b.md").write_text("Rivers flow to the sea. " * 20, encoding="utf-8")
    for name in ("idx_v1", "idx_v2"):
        res = _run("embed", docs, "--out", docs / name, "--device", "cpu", "--quiet", "--strategy", "fixed:size=16")
        assert res.exit_code == 0, res.output
        m = json.loads((docs / name / "manifest.json").read_text())
        assert {d["doc_id"] for d in m["documents"]} == {"a.md", "b.md"}
        # the output folders are listed as skipped, with that reason (issue 10: nothing dropped without a word)
        assert {s["doc_id"] for s in m["skipped"]} == {"idx_v1/", name + "/"}
        assert all(s["reason"].startswith("latechunk output folder") for s in m["skipped"])
    assert _run("verify", docs / "idx_v1").exit_code == 0


def test_force_refuses_to_delete_files_it_did_not_write(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("hello world", encoding="utf-8")
    out = tmp_path / "thesis"
    (out / "shards").mkdir(parents=True)
    (out / "shards" / "chapter1.tex").write_text("precious")
    (out / "manifest.json").write_text('{"mine": true}')
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--device", "cpu", "--force"])
    assert res.exit_code == 2 and "will not delete" in res.output
    assert (out / "shards" / "chapter1.tex").read_text() == "precious"


def test_verify_handles_a_run_ending_in_a_skipped_document(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("Some real text about rivers.", encoding="utf-8")
    (src / "z.txt").write_text("   ", encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", src, "--out", out, "--device", "cpu", "--quiet").exit_code == 0
    res = _run("verify", out)
    assert res.exit_code == 0, res.output


def test_missing_semantic_sentence_model_fails_before_work(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("One sentence. Another one.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--device", "cpu",
                              "--strategy", "semantic:source=/no/such/model"])
    assert res.exit_code == 2 and "does not exist" in res.output
    assert "its sentence model source='/no/such/model' does not load" in " ".join(res.output.split())  # not --model
    assert not (tmp_path / "o").exists()


def test_search_on_a_damaged_index_is_a_clear_error(sotu_index, tmp_path):
    import shutil

    _, out = sotu_index
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    data = (bad / "index.faiss").read_bytes()
    (bad / "index.faiss").write_bytes(data[: len(data) // 2])
    res = runner.invoke(app, ["search", str(bad), "query"])
    assert res.exit_code == 2 and "unreadable" in res.output


def test_chunk_with_bad_arguments_fails_clearly_and_keeps_existing_output(tmp_path):
    keep = tmp_path / "keep.jsonl"
    keep.write_text('{"old": 1}\n')
    res = runner.invoke(app, ["chunk", str(tmp_path / "nothere.md"), "--out", str(keep)])
    assert res.exit_code == 2 and "not found" in res.output
    assert keep.read_text() == '{"old": 1}\n'
    doc = tmp_path / "a.md"
    doc.write_text("hello world", encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(doc), "--out", str(tmp_path)])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "is a folder; chunk writes one JSONL file" in said, res.output
    res = runner.invoke(app, ["chunk", str(doc), "--out", str(tmp_path / "no" / "c.jsonl")])
    assert res.exit_code == 2 and "does not exist" in " ".join(res.output.split()), res.output
    res = runner.invoke(app, ["chunk", str(tmp_path), "--out", str(tmp_path / "c.jsonl")])  # inside the input
    assert res.exit_code == 2 and "is inside the input folder" in " ".join(res.output.split()), res.output
    assert not (tmp_path / "c.jsonl").exists() and not (tmp_path / "c.jsonl.tmp").exists()
    res = runner.invoke(app, ["chunk", str(doc), "--out", str(doc), "--force"])  # its own input: refused
    assert res.exit_code == 2 and "is the input file" in " ".join(res.output.split()), res.output
    assert doc.read_text(encoding="utf-8") == "hello world"
    res = runner.invoke(app, ["chunk", str(doc), "--model", "./no/such/model"])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_jsonl_records_with_bad_ids_or_text_are_skipped_with_the_reason(tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text('{"id": "  ", "text": "blank id"}\n{"id": {"a": 1}, "text": "dict id"}\n'
                   '{"id": "x", "text": 5}\n{"text": "no id"}\n{"id": 7, "text": "fine"}\n{"id": "t"}\n', encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", src, "--out", out, "--device", "cpu", "--quiet").exit_code == 0
    m = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in m["documents"]] == ["7"]
    reasons = " | ".join(s["reason"] for s in m["skipped"])
    assert "non-blank" in reasons and "'text' must be a string" in reasons and "no 'id'" in reasons
    assert "no 'text' field" in reasons
    assert len(m["skipped"]) == 5


def test_version():
    res = _run("--version")
    assert res.exit_code == 0 and res.output.startswith("latechunk ")


def test_search_snippet_shows_the_part_that_matches_the_query():
    from latechunk.cli import snippet

    text = ("Intro words that say nothing. " * 20) + "The late fee for credit cards drops to eight dollars. " + (
        "Closing words. " * 20)
    s = snippet(text, "How much is the credit card late fee?", width=120)
    assert "credit cards drops" in s and s.startswith("…") and s.endswith("…") and len(s) <= 122
    assert snippet("short text", "anything") == "short text"
    plain = snippet("x " * 300, "no match here", width=50)
    assert plain.startswith("x x") and plain.endswith("…")


def test_cli_messages_from_the_fresh_user_trial(tmp_path, monkeypatch):
    """Clear errors: a folder that is not a model, an empty query, a dataset name whose data is missing."""
    doc = tmp_path / "a.md"
    doc.write_text("Some text here.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--model", str(tmp_path)])
    assert res.exit_code == 2 and "no config.json" in res.output
    res = runner.invoke(app, ["search", str(tmp_path), "   "])
    assert res.exit_code == 2 and "query is empty" in res.output
    # a non-UTF-8 byte in the argument (os.fsdecode's \udcff) was the tokenizer's TypeError, after the model load
    res = runner.invoke(app, ["search", str(tmp_path), "caf\udcff"])
    assert res.exit_code == 2 and "holds a byte that is not UTF-8 (\\xff at character 3)" in res.output
    monkeypatch.setenv("LATECHUNK_DATA", str(tmp_path / "nowhere"))
    res = runner.invoke(app, ["compare", "--dataset", "chroma", "--out", str(tmp_path / "rep")])
    assert res.exit_code == 2 and "LATECHUNK_DATA" in res.output


def test_chunk_and_embed_give_the_same_token_spans_for_a_model_with_a_document_prompt(tmp_path):
    """`chunk` tokenizes exactly as `embed` does, the model's document prompt included (issue 9)."""
    from tests.models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "model")
    st = model / "config_sentence_transformers.json"
    cfg = json.loads(st.read_text()) if st.exists() else {}
    st.write_text(json.dumps({**cfg, "prompts": {"query": "query: ", "document": "passage: "}}))
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea and carve valleys over long ages. " * 6, encoding="utf-8")
    (src / "b.md").write_text("# Trains\n\nTrains run on rails between cities. " * 4, encoding="utf-8")
    args = ["--strategy", "fixed:size=16,overlap=4", "--model", model]
    assert _run("embed", src, "--out", tmp_path / "o", "--device", "cpu", "--quiet", *args).exit_code == 0
    assert _run("chunk", src, "--out", tmp_path / "c.jsonl", *args).exit_code == 0
    embedded = pq.read_table(tmp_path / "o" / "chunks.parquet").to_pylist()
    chunked = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(chunked) == len(embedded) > 4
    assert chunked == embedded  # every field: ids, char spans, token spans, text, heading path, strategy
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["model"]["document_prompt"] == "passage: "
    # the prompt's tokens come first ([CLS] passage : ...): a tokenization without it would start at token 1
    assert min(r["token_start"] for r in chunked) == 3
    originals = {p.name: p.read_bytes().decode("utf-8") for p in src.iterdir()}
    check_chunk_rows(originals, chunked, DocumentTokenizer.from_pretrained(str(model), prefix="passage: "))


TEXT = "Caf\u00e9 cr\u00e8me \u2014 \u65e5\u672c\u8a9e.\r\nThe river Nile flows north.\n\nSecond paragraph here.\n"


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


# (the macro-window plan's own checks: tests/test_macro_window.py, tests/encoder/test_encoder.py)
def test_cli_rejects_a_tiny_window_before_work(tmp_path):
    src = tmp_path / "a.md"
    src.write_text("Some text about rivers and the sea.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--device", "cpu", "--window", "3"])
    assert res.exit_code != 0 and "window=3" in res.output and "minimum" in res.output
    assert not (tmp_path / "o" / "manifest.json").exists()


# --------------------------------------------------------------------------- issue 10: fast checks, late pooling
_FRESH_CLI = r"""
import contextlib, io, json, sys
from latechunk.cli import app
results = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app(args, prog_name="latechunk")
            code = 0
        except SystemExit as exc:
            code = exc.code
    results.append({"code": code, "output": out.getvalue() + err.getvalue(),
                    "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules})
print(json.dumps(results))
"""


def _cli_in_a_fresh_process(*calls: list) -> list[dict]:
    """Run ``latechunk ARGS`` for each call, in order, in one new Python process; per call its exit code, output
    and whether torch / transformers had been imported by then."""
    import subprocess
    import sys

    arg = json.dumps([[str(a) for a in call] for call in calls])
    res = subprocess.run([sys.executable, "-c", _FRESH_CLI, arg], check=False, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cls_model(tmp_path_factory):
    """A tiny sentence-transformers folder whose Pooling config says cls."""
    from tests.models import save_tiny_pooled

    return save_tiny_pooled(tmp_path_factory.mktemp("cls") / "tiny-cls", pooling="cls")


def test_bad_options_fail_slowly_every_option_check_runs_before_torch_is_imported(tmp_path, cls_model):
    """Fault 6: a bad SPEC, a bad macro window (checked against the model's files), a bad --late-pooling, a CLS
    model in late mode and a non-empty output folder all fail (exit 2, the value named) with torch never imported."""
    doc = tmp_path / "a.md"
    doc.write_text("Rivers flow to the sea.\n", encoding="utf-8")
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine", encoding="utf-8")
    embed = ["embed", doc, "--out", tmp_path / "o"]
    cases = [
        ([*embed, "--strategy", "fixd:size=256"], "unknown strategy 'fixd'"),
        ([*embed, "--window", "3"], "macro_window=3 is too small: the minimum is 18 tokens"),
        ([*embed, "--macro-window", "600"], "macro_window=600 exceeds max_length=512"),
        ([*embed, "--window", "64", "--window-overlap", "62"], "macro_window_overlap=62 must be >= 0 and < 62"),
        ([*embed, "--late-pooling", "cls"], "--late-pooling) must be one of ['mean']"),
        ([*embed, "--model", cls_model], "--late-pooling mean"),
        (["embed", doc, "--out", full], "exists and is not empty"),
    ]
    results = _cli_in_a_fresh_process(*(args for args, _ in cases))
    for (args, needle), r in zip(cases, results):
        assert r["code"] == 2 and needle in " ".join(r["output"].split()), (args, r)
        assert not r["torch"] and not r["transformers"], args
    assert not (tmp_path / "o").exists() and sorted(p.name for p in full.iterdir()) == ["notes.txt"]


def test_bad_options_fail_slowly_help_imports_no_torch():
    """Fault 6: `latechunk`, `latechunk --help` and `latechunk embed --help` import no torch."""
    results = _cli_in_a_fresh_process([], ["--help"], ["embed", "--help"], ["compare", "--help"])
    assert results[0]["code"] in (0, 2) and "embed" in results[0]["output"]  # no command: the help (click's code)
    assert [r["code"] for r in results[1:]] == [0, 0, 0]
    assert "embed" in results[1]["output"] and "--late-pooling" in results[2]["output"]
    assert not any(r["torch"] or r["transformers"] for r in results)


def test_late_mode_with_a_cls_pooled_model_is_refused_naming_model_pooling_and_flag(tmp_path, cls_model):
    """Fault 7: late chunking is defined for mean-pooled models: embed and compare refuse a CLS-pooled one in late
    mode and say why."""
    doc = tmp_path / "a.md"
    doc.write_text("Rivers flow to the sea.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--model", str(cls_model)])
    msg = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and not (tmp_path / "o").exists()
    assert repr(str(cls_model)) in msg and "pools by 'cls'" in msg and "--late-pooling mean" in msg
    assert "Late chunking is defined for mean-pooled models" in msg
    res = runner.invoke(app, ["compare", "--dataset", str(tmp_path), "--model", str(cls_model), "--out",
                              str(tmp_path / "rep"), "--strategies", "fixed", "--modes", "late,naive", "--quiet"])
    msg = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and "pools by 'cls'" in msg and "--late-pooling mean" in msg, res.output


def test_late_mode_with_a_cls_pooled_model_runs_with_late_pooling_mean_given_explicitly(tmp_path, cls_model):
    doc = tmp_path / "a.md"
    doc.write_text("Rivers flow to the sea. They carve valleys over long ages.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = _run("embed", doc, "--out", out, "--model", cls_model, "--device", "cpu", "--quiet",
               "--strategy", "fixed:size=8", "--late-pooling", "mean")
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["pooling"] == "cls" and manifest["counts"]["chunks"] >= 2
    assert json.loads((out / "run.json").read_text())["settings"]["late_pooling"] == "mean"
    # naive mode uses the model's own pooling: no flag needed
    res = _run("embed", doc, "--out", tmp_path / "n", "--model", cls_model, "--device", "cpu", "--quiet",
               "--strategy", "fixed:size=8", "--mode", "naive")
    assert res.exit_code == 0, res.output


# ---------------------------------------------------------------------------------------------- issue 10
def test_search_on_an_index_with_0_vectors_prints_no_traceback(tmp_path):
    """Every document skipped (too long, macro windows off): the output is complete with 0 vectors, embed exits 1
    naming the input, search gives an empty result (no pyarrow traceback), verify passes; an index type that
    needs training (IVF) is left empty and untrained instead of failing to train on no vectors."""
    src = tmp_path / "long"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea. " * 40, encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet",
                              "--long-documents", "skip", "--window", "64", "--index", "IVF4,Flat"])
    assert res.exit_code == 1 and "no document was embedded" in res.output and str(src) in res.output
    assert json.loads((out / "manifest.json").read_text())["counts"]["chunks"] == 0
    for extra in ([], ["--json"]):
        res = runner.invoke(app, ["search", str(out), "valve", *extra])
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert res.exit_code == 0 and "Traceback" not in res.output and "holds 0 vectors" in res.output
    assert runner.invoke(app, ["search", str(out), "valve", "--json"]).stdout.strip() == "[]"
    assert _run("verify", out).exit_code == 0


def test_an_input_with_nothing_embeddable_fails_naming_the_input(tmp_path):
    only = tmp_path / "only"
    only.mkdir()
    (only / "notes.docx").write_bytes(b"PK\x03\x04 zip")
    (only / "manual.pdf").write_bytes(b"%PDF-1.4 raw")
    empty = tmp_path / "empty"
    empty.mkdir()
    for src in (only, empty, only / "manual.pdf"):
        res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--device", "cpu", "--quiet"])
        assert res.exit_code == 2 and str(src) in res.output and "yielding no document" in res.output, res.output
        assert not (tmp_path / "o").exists()
        res = runner.invoke(app, ["chunk", str(src), "--out", str(tmp_path / "c.jsonl")])
        assert res.exit_code == 2 and str(src) in res.output and not (tmp_path / "c.jsonl").exists()
    res = runner.invoke(app, ["embed", str(only), "--out", str(tmp_path / "o"), "--device", "cpu"])
    assert "notes.docx: unsupported type .docx" in res.output and "manual.pdf: unsupported type .pdf" in res.output


def test_every_file_not_embedded_is_listed_in_skipped_and_the_output_verifies(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.md").write_text("Rivers flow to the sea and carve valleys.", encoding="utf-8")
    (src / "notes.docx").write_bytes(b"PK\x03\x04 zip")
    (src / "linked").symlink_to(src / "sub", target_is_directory=True)
    (src / "loop").symlink_to(src / "loop")
    (src / "manual.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n")  # valid UTF-8, not text
    out = tmp_path / "o"
    res = _run("embed", src, "--out", out, "--device", "cpu", "--quiet", "--strategy", "fixed:size=16")
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in m["documents"]] == ["sub/a.md"]
    reasons = {s["doc_id"]: s["reason"] for s in m["skipped"]}
    assert set(reasons) == {"notes.docx", "linked/", "loop", "manual.pdf"}
    assert reasons["manual.pdf"].startswith("unsupported type .pdf") and "linked/" in res.output
    assert _run("verify", out).exit_code == 0
    res = _run("chunk", src)  # chunk prints the same skipped items
    assert res.exit_code == 0 and "skipped notes.docx: unsupported type .docx" in res.output


def test_chunk_out_file_is_not_overwritten_without_force(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nSome text about rivers.\n", encoding="utf-8")
    out = tmp_path / "c.jsonl"
    out.write_text('{"old": 1}\n')
    res = runner.invoke(app, ["chunk", str(doc), "--out", str(out)])
    assert res.exit_code == 2 and "--force" in res.output and out.read_text() == '{"old": 1}\n'
    assert _run("chunk", doc, "--out", out, "--force").exit_code == 0
    assert json.loads(out.read_text().splitlines()[0])["doc_id"] == "a.md"


def test_compare_strategies_takes_several_words_after_the_flag(monkeypatch):
    from latechunk.eval import harness

    seen = {}

    def fake_run_compare(config, **kwargs):
        seen["specs"] = config.specs()
        raise ValueError("stop here")

    monkeypatch.setattr(harness, "run_compare", fake_run_compare)
    res = runner.invoke(app, ["compare", "--dataset", "chroma", "--strategies", "fixed", "recursive",
                              "--modes", "late", "-q"])
    assert res.exit_code == 2 and "stop here" in res.output, res.output
    assert [s.split(":")[0] for s in seen["specs"]] == ["fixed", "recursive"]
    res = runner.invoke(app, ["compare", "--dataset", "chroma", "fixed"])  # words without --strategies
    assert res.exit_code == 2 and "--strategies" in res.output


def test_compare_sentence_workers_minus_1_names_the_option():
    res = runner.invoke(app, ["compare", "--dataset", "chroma", "--sentence-workers", "-1"])
    assert res.exit_code == 2 and "--sentence-workers" in res.output


def test_resume_seconds_total_covers_the_interrupted_run(tmp_path):
    """After --resume, seconds.total counts the interrupted run too (it was smaller than late_encode)."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"{i}.md").write_text(f"Document {i} about rivers and the sea. " * 30, encoding="utf-8")
    out = tmp_path / "o"
    args = ["--device", "cpu", "--quiet", "--strategy", "fixed:size=32", "--group-tokens", "256"]
    assert _run("embed", src, "--out", out, *args).exit_code == 0
    before = json.loads((out / "manifest.json").read_text())
    assert len(before["shards"]) > 1
    (out / "manifest.json").unlink()  # as if killed while assembling, after every shard was written
    progress = json.loads((out / "progress.json").read_text())
    assert progress["seconds"] >= sum(before["seconds"][k] for k in before["seconds"] if k not in ("total", "assemble"))
    (out / "progress.json").write_text(json.dumps({**progress, "seconds": 1000.0}))  # a long interrupted run
    assert _run("embed", src, "--out", out, "--resume", *args).exit_code == 0
    after = json.loads((out / "manifest.json").read_text())
    assert after["seconds"]["total"] >= 1000.0
    # every shard was kept, so none was written: progress.json (which --resume's clean-up removes) is written again
    progress = json.loads((out / "progress.json").read_text())
    assert progress["shards"] == len(after["shards"]) and progress["chunks"] == after["counts"]["chunks"]
    assert after["seconds"]["total"] >= after["seconds"].get("late_encode", 0.0)


def test_resume_alone_takes_the_interrupted_runs_options_from_run_json(tmp_path):
    """`embed IN --out DIR --resume` with no other option continues a fused fixed:size=32 run (before, it took
    embed's defaults, late and recursive, and failed on the settings diff); an option given must still equal it."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"{i}.md").write_text(f"Document {i} about rivers and the sea. " * 30, encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", src, "--out", out, "--device", "cpu", "-q", "--mode", "fused", "--strategy",
                "fixed:size=32", "--macro-window", 128, "--group-tokens", 256).exit_code == 0
    before = pq.read_table(out / "chunks.parquet").to_pylist()
    shards = sorted((out / "shards").iterdir())
    assert len(shards) > 1
    (out / "manifest.json").unlink()  # killed before the last shard and the assembly
    shards[-1].unlink()
    res = _run("embed", src, "--out", out, "--device", "cpu", "-q", "--resume")
    assert res.exit_code == 0, res.output
    assert "the whole run, its interrupted part included" in " ".join(res.output.split())  # tokens and seconds
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["strategy"]["name"] == "fixed" and manifest["strategy"]["size"] == 32, manifest["strategy"]
    assert json.loads((out / "run.json").read_text())["settings"]["mode"] == "fused"
    after = pq.read_table(out / "chunks.parquet").to_pylist()
    assert [(r["doc_id"], r["char_start"], r["char_end"]) for r in after] == \
        [(r["doc_id"], r["char_start"], r["char_end"]) for r in before]
    (out / "manifest.json").unlink()
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q", "--resume",
                                   "--mode", "late"])
    assert res.exit_code != 0 and "mode" in res.output
    # nothing to continue (killed before run.json): a new run, and stderr says so
    res = _run("embed", src, "--out", tmp_path / "new", "--device", "cpu", "-q", "--resume")
    assert res.exit_code == 0 and "holds no run to continue" in res.output
    assert "interrupted part" not in res.output  # nothing was interrupted


def test_text_read_as_the_unknown_token_is_listed_and_printed(tmp_path):
    """A 150-letter word is one [UNK] for MiniLM's WordPiece (its word limit is 100 characters): the document is
    embedded, and the manifest and stderr say how many of its characters are in no vector."""
    src = tmp_path / "in"
    src.mkdir()
    blob = "Q" * 150
    (src / "blob.md").write_text(f"Herons wait by the reeds. The key is {blob} and nothing else.\n", encoding="utf-8")
    (src / "plain.md").write_text("Herons wait by the reeds. They strike fast.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(u["doc_id"], u["unknown_chars"]) for u in manifest["unknown_tokens"]] == [("blob.md", 150)]
    records = {d["doc_id"]: d for d in manifest["documents"]}
    assert records["plain.md"]["unknown_chars"] == 0 and records["blob.md"]["chunks"] >= 1
    assert "unknown tokens" not in res.output  # --quiet: the manifest says it
    assert _run("verify", out).exit_code == 0
    # an append says only its own documents' notes (fresh-user trial: each append re-printed blob.md's, and the
    # list grew with the folder); its own document with unknown text is said
    new = tmp_path / "new"
    new.mkdir()
    (new / "more.md").write_text(f"Egrets stand still. The code is {'Z' * 120} here.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(new), "--out", str(out), "--append"])
    assert res.exit_code == 0, res.output
    assert "unknown tokens: 1 document(s) with 120 character(s)" in res.output, res.output


def test_hnsw_options_for_an_index_they_do_not_set_are_refused(tmp_path):
    """Fresh-user trial: `--ef-search 64` with the flat default was accepted and recorded nowhere (run.json:
    Flat). Each HNSW option given for an index it does not set is refused before any work, naming it."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("Herons wait by the reeds.\n", encoding="utf-8")
    for extra, words in ((["--ef-search", "64"], "--ef-search sets an HNSW index, but the index is Flat"),
                         (["--index", "flat", "--ef-construction", "80", "--ef-search", "64"],
                          "--ef-construction and --ef-search set an HNSW index"),
                         # --hnsw-m's rule is EmbedConfig.with_overrides' (issue 37 §1)
                         (["--index", "HNSW16", "--hnsw-m", "8"], ("(--hnsw-m) sets M of index 'hnsw' (--index hnsw), "
                                                                  "but the index is HNSW16")),
                         (["--hnsw-m", "8"], "(--hnsw-m) sets M of index 'hnsw' (--index hnsw), but the index is Flat")):
        out = tmp_path / "o"
        res = _run("embed", src, "--out", out, "--device", "cpu", "-q", *extra)
        assert res.exit_code == 2 and words in " ".join(res.output.split()), (extra, res.output)
        assert not out.exists()


def test_a_file_name_that_is_not_utf8_is_skipped_by_name_and_the_rest_embedded(tmp_path):
    """A name with a byte 0xff (os.fsdecode gives a surrogate) crashed the run in the input digest
    ("surrogates not allowed", no file named); it is listed as skipped, named with a \\x escape."""
    import os

    src = tmp_path / "in"
    src.mkdir()
    (src / "good.md").write_text("Herons wait by the reeds. They strike fast.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(src), b"bad\xff.md"), "wb") as f:
        f.write(b"Otters float on their backs.\n")
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in manifest["documents"]] == ["good.md"]
    assert [(s["doc_id"], "not valid UTF-8" in s["reason"]) for s in manifest["skipped"]] == [("bad\\xff.md", True)]
    assert "skipped bad\\xff.md" in res.output
    # the file named alone: no document, and the error names it one way (\xff), not also as a surrogate
    bad = os.fsdecode(os.path.join(os.fsencode(src), b"bad\xff.md"))
    res = CliRunner().invoke(app, ["embed", bad, "--out", str(tmp_path / "o2"), "--device", "cpu", "-q"])
    assert res.exit_code == 2 and "bad\\xff.md' is not valid UTF-8" in res.output and "udcff" not in res.output, \
        res.output


def test_out_equal_to_the_input_folder_is_refused_before_any_write(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("Herons wait by the reeds. They strike fast.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(tmp_path / "in" / "."), "--force", "-q"])
    assert res.exit_code != 0 and "is the input folder" in res.output
    assert sorted(p.name for p in src.iterdir()) == ["a.md"]


def test_a_bad_index_factory_string_fails_before_any_output_is_written(tmp_path):
    src = tmp_path / "a.md"
    src.write_text("Herons wait by the reeds. They strike fast.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q", "--index", "nonsense"])
    assert res.exit_code == 2 and "nonsense" in res.output
    assert not out.exists() or not any(out.iterdir())  # nothing written: the same command without --index works


def test_resume_of_a_finished_folder_says_so_and_leaves_it_as_it_is(tmp_path):
    """`--resume` on a folder whose run finished (manifest.json written) re-assembled it, deleted progress.json and
    moved seconds.total; it now says the run is finished, exits 0 and changes no file."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(2):
        (src / f"{i}.md").write_text(f"Document {i} about rivers and the sea. " * 20, encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", src, "--out", out, "--device", "cpu", "-q", "--strategy", "fixed:size=32").exit_code == 0
    before = {p.relative_to(out): (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    res = _run("embed", src, "--out", out, "--device", "cpu", "-q", "--resume")
    assert res.exit_code == 0, res.output
    assert "holds a finished run (2 documents" in res.output and "--append" in res.output
    after = {p.relative_to(out): (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    assert after == before
    # an option given is still checked against run.json: the same one says "finished", another is refused
    res = _run("embed", src, "--out", out, "--device", "cpu", "-q", "--resume", "--strategy", "fixed:size=32")
    assert res.exit_code == 0 and "holds a finished run" in res.output, res.output
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q", "--resume",
                                   "--strategy", "fixed:size=64"])
    assert res.exit_code == 2 and "strategy" in res.output, res.output
    assert "finished run with settings that differ" in " ".join(res.output.split())
    # ... refused before torch is imported or the model loads (it took 8-18 s)
    (fresh,) = _cli_in_a_fresh_process(["embed", str(src), "--out", str(out), "--device", "cpu", "-q", "--resume",
                                        "--strategy", "fixed:size=64"])
    assert fresh["code"] == 2 and "strategy (--strategy) was" in fresh["output"] and not fresh["torch"], fresh
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".latechunk.lock"} \
        == {k: v[0] for k, v in before.items() if k.name != ".latechunk.lock"}


def test_summary_counts_documents_not_the_output_folder_inside_the_input(tmp_path):
    """`embed DIR --out DIR/index`: the output folder, found inside the input by --resume or a later run, is an
    input entry never read as documents; the summary's "E/N documents" counts documents only and names the rest."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.md").write_text("Rivers run to the sea. " * 20, encoding="utf-8")
    (src / "notes.docx").write_bytes(b"PK\x03\x04")
    out = src / "index"
    res = _run("embed", src, "--out", out, "--device", "cpu", "-q", "--strategy", "fixed:size=32")
    assert res.exit_code == 0, res.output
    assert "embedded 1/1 documents (2 input entries not read as documents, listed with the skipped items on " \
        "stderr)" in " ".join(res.output.split())
    assert "skipped index/: latechunk output folder" in res.output and "skipped notes.docx" in res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["documents_in"] == 3  # the manifest still counts every input item


def test_a_document_of_nothing_but_unknown_tokens_is_skipped_not_embedded(tmp_path):
    """One 200,000-letter word is one [UNK] for MiniLM: its vector was the [UNK] vector, the same for every such
    document, with nothing of its text; it is skipped with its reason (a zero-width-only document already was)."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "blob.txt").write_text("x" * 200_000, encoding="utf-8")
    (src / "ok.md").write_text("Herons wait by the reeds. " + "y" * 150 + " They strike fast.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = _run("embed", src, "--out", out, "--device", "cpu", "-q", "--strategy", "fixed:size=32")
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert [d["doc_id"] for d in manifest["documents"]] == ["ok.md"]  # some [UNK] among real words: embedded
    (skip,) = manifest["skipped"]
    assert skip["doc_id"] == "blob.txt" and "nothing the model can read" in skip["reason"]
    # chunk skips it too, with embed's reason: its JSONL rows are embed's chunk table (fresh-user trial: chunk
    # wrote the [UNK] chunk and said "0 skipped")
    rows_out = tmp_path / "c.jsonl"
    res = _run("chunk", src, "--strategy", "fixed:size=32", "--out", rows_out)
    assert res.exit_code == 0 and "skipped blob.txt: nothing the model can read" in res.output, res.output
    rows = [json.loads(x) for x in rows_out.read_text(encoding="utf-8").splitlines()]
    assert {r["doc_id"] for r in rows} == {"ok.md"} and "(1 skipped)" in res.output


def test_an_append_that_adds_nothing_counts_the_reasons_it_cannot_point_to(tmp_path):
    """Fresh-user trial: re-running a finished append printed 50 skipped lines, then "... and 70 more skipped
    items (all listed in the messages above)": they were listed nowhere (the folder is unchanged, its manifest
    records none of them). The rest are now counted by reason."""
    rows = tmp_path / "notes.jsonl"
    rows.write_text("".join(json.dumps({"id": f"n{i}", "text": f"Note {i} on herons and reeds."}) + "\n"
                            for i in range(60)), encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", rows, "--out", out, "--device", "cpu", "-q").exit_code == 0
    res = _run("embed", rows, "--out", out, "--append", "-q")
    text = " ".join(res.output.split())
    # an up-to-date folder appended again is success (a daily cron job exited 1 every day with nothing new)
    assert res.exit_code == 0 and "nothing new to append" in text and "unchanged" in text, res.output
    # the 60 already in the index are one line now (fourth trial: re-appending a big folder printed 50 lines)
    assert "skipped 60 document(s) already in the index (same id and text)" in text, res.output
    assert "listed in the messages above" not in text
    # one input that cannot be embedded among them, nothing added: that is a failure, exit 1, and says why
    (tmp_path / "more.jsonl").write_text(json.dumps({"id": "n0", "text": "A new text for an old id."}) + "\n",
                                         encoding="utf-8")
    res = _run("embed", rows, tmp_path / "more.jsonl", "--out", out, "--append", "-q")
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "nothing appended" in text and "n0" in text, res.output


def test_batch_budget_is_recorded_not_compared(tmp_path, monkeypatch):
    """issue 15: the CPU default budget is 4096 (latechunk.encoder.default_batch_tokens); a folder records the budget
    it used (a number: older readers need one), and since it never changes a vector, --append and --resume take
    their own (the device's default or --batch-tokens) without comparing: a folder that recorded 16384 (every folder
    written before) appends at 4096 on the CPU, or at any budget asked for."""
    from latechunk.encoder import Encoder

    seen = []
    real_init = Encoder.__init__

    def spy(self, *a, **k):
        real_init(self, *a, **k)
        seen.append(self.batch_tokens)

    monkeypatch.setattr(Encoder, "__init__", spy)
    doc, more, third = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "c.md"
    doc.write_text("Late chunking pools token states per chunk. " * 30, encoding="utf-8")
    more.write_text("A second document about macro windows. " * 20, encoding="utf-8")
    third.write_text("A third document about token budgets. " * 20, encoding="utf-8")
    new, old = tmp_path / "new", tmp_path / "old"
    assert _run("embed", doc, "--out", new, "--device", "cpu", "--quiet").exit_code == 0
    assert json.loads((new / "run.json").read_text())["settings"]["model"]["batch_tokens"] == 4096
    assert seen[-1] == 4096
    assert _run("embed", doc, "--out", old, "--device", "cpu", "--quiet", "--batch-tokens", 16384).exit_code == 0
    assert json.loads((old / "run.json").read_text())["settings"]["model"]["batch_tokens"] == 16384
    res = runner.invoke(app, ["embed", str(more), "--out", str(old), "--append", "--quiet"])
    assert res.exit_code == 0, res.output
    assert seen[-1] == 4096  # this run's device default, not the folder's 16384
    res = runner.invoke(app, ["embed", str(third), "--out", str(old), "--append", "--quiet", "--batch-tokens", "512"])
    assert res.exit_code == 0, res.output
    assert seen[-1] == 512
    res = runner.invoke(app, ["verify", str(old)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["embed", str(doc), "--out", str(old), "--resume", "--batch-tokens", "2048"])
    assert res.exit_code == 0, res.output  # a finished run: nothing to do, and the budget is no difference


def test_settings_diff_leaves_the_batch_budget_out():
    from latechunk.ingest.folder import diff_settings

    a = {"model": {"batch_tokens": 16384, "dtype": "float32"}, "mode": "late"}
    assert diff_settings(a, {"model": {"batch_tokens": 4096, "dtype": "float32"}, "mode": "late"}) == []
    assert diff_settings(a, {"model": {"dtype": "float32"}, "mode": "late"}) == []
    assert diff_settings(a, {"model": {"batch_tokens": 4096, "dtype": "bfloat16"}, "mode": "late"}) == [
        "model.dtype (--dtype) was 'float32', now 'bfloat16'"]


def test_interrupted_message_says_how_to_go_on(sotu_index, tmp_path):
    """Trial finding: after Ctrl-C in `embed --append` the message said to run it again with --resume, which
    --append refuses; an append is continued by running it again. Third trial: "complete shards are kept" was said
    of a folder with no complete shard (a corpus under one shard of 262,144 tokens), and --resume started over."""
    import shutil

    from latechunk.cli import interrupted_message

    append = interrupted_message(["embed", "new", "--out", "idx", "--append"])
    assert "--resume" not in append and append.endswith("to append: latechunk embed new --out idx --append")
    done = tmp_path / "done"
    shutil.copytree(sotu_index[1] / "shards", done / "shards")  # its shards, without the manifest: interrupted
    for out in (["--out", str(done)], ["-o", str(done)], [f"--out={done}"]):
        message = interrupted_message(["embed", "docs", *out])
        assert "1 complete shard(s)" in message and message.endswith(f"latechunk embed docs {' '.join(out)} --resume")
    (tmp_path / "o" / "shards").mkdir(parents=True)
    for out in (tmp_path / "o", tmp_path / "missing"):
        message = interrupted_message(["embed", "docs", "--out", str(out), "--quiet"])
        assert "nothing is kept" in message and "no shard was complete" in message, message
    assert "no checkpoint" in interrupted_message(["train", "--dataset", "xquad", "--out", str(tmp_path / "m")])
    assert interrupted_message([]) == interrupted_message(["search"]) == "interrupted (Ctrl-C)"


@pytest.mark.skipif(not Path("/proc/self/fd/1").exists(), reason="standard output's file is told through /proc")
def test_chunk_refuses_stdout_redirected_into_its_input_folder(tmp_path):
    """Trial finding: `latechunk chunk DIR > DIR/out.jsonl` read its own output while writing it (533 'duplicate
    doc_id: out.jsonl:N' lines); it is refused as --out inside the input folder is. Outside the folder it runs."""
    import subprocess
    import sys as _sys

    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers reach the sea. Lakes stay put.\n", encoding="utf-8")
    cmd = [_sys.executable, "-m", "latechunk", "chunk", str(src), "--strategy", "fixed:size=8", "--quiet"]
    with open(src / "out.jsonl", "w") as fh:
        res = subprocess.run(cmd, check=False, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=300)
    assert res.returncode == 2 and "standard output, redirected to" in res.stderr, res.stderr
    assert "inside the input folder" in " ".join(res.stderr.split()) and "remove the empty out.jsonl" in res.stderr
    with open(tmp_path / "out.jsonl", "w") as fh:
        res = subprocess.run(cmd, check=False, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])["doc_id"] == "a.md"


def test_chunk_prints_at_most_fifty_skipped_items_then_counts(tmp_path):
    """Trial finding: `chunk` printed one stderr line per skipped item (300 for 300 duplicate ids) where embed
    stops at 50 and counts the rest."""
    from latechunk.cli import _MAX_SKIPPED_SHOWN

    rows = [{"id": "same", "text": f"Text number {i} about rivers."} for i in range(_MAX_SKIPPED_SHOWN + 31)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(tmp_path / "docs.jsonl"), "--strategy", "fixed:size=8", "--quiet",
                              "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skipped ")]
    assert len(lines) == _MAX_SKIPPED_SHOWN
    assert "... and 30 more skipped items: 30 duplicate doc_id" in res.stderr, res.stderr
    assert "(80 skipped)" in res.stderr


def test_force_with_resume_is_refused_before_any_note(tmp_path):
    """Trial finding: on a new folder `--force --resume` first printed "--resume: ... starting a new run", then
    refused the pair."""
    doc = tmp_path / "a.md"
    doc.write_text("Rivers flow to the sea.", encoding="utf-8")
    res = _run("embed", doc, "--out", tmp_path / "o", "--force", "--resume")
    assert res.exit_code == 2 and "exclude each other" in res.output and "starting a new run" not in res.output


def test_a_folder_holding_only_hidden_files_is_an_empty_output_folder(tmp_path):
    """Fifth trial: an --out folder holding only a .gitignore needed --force ("exists and is not empty")."""
    doc = tmp_path / "a.md"
    doc.write_text("Rivers flow to the sea.", encoding="utf-8")
    out = tmp_path / "o"
    out.mkdir()
    (out / ".gitignore").write_text("*\n", encoding="utf-8")
    res = _run("embed", doc, "--out", out, "--device", "cpu", "--quiet")
    assert res.exit_code == 0, res.output
    assert (out / ".gitignore").read_text() == "*\n" and (out / "index.faiss").exists()
    assert _run("verify", out).exit_code == 0


def test_resume_after_an_interrupted_append_points_at_the_append(tmp_path):
    """A trial killed an --append, then ran --resume: it was refused with "--force to start over", which would have
    thrown the whole index away; running the append again is what finishes it."""
    src = tmp_path / "a.md"
    src.write_text("# Herons\n\nHerons wait in the reeds.\n", encoding="utf-8")
    out = tmp_path / "o"
    assert _run("embed", src, "--out", out, "-q").exit_code == 0
    (out / "shards" / "00001.parquet.tmp").write_bytes(b"a shard an append was writing when it was killed")
    res = _run("embed", src, "--out", out, "--resume", "-q")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "interrupted" in text and "--append` again" in text, res.output
    assert "--force to start over" not in text
