"""Tests of the compare harness (eval/harness.py), its report (eval/report/) and the parse cache (eval/cache.py);
CompareConfig: tests/eval/test_eval_config.py.

A tiny Chroma-format dataset is written to a temp folder: three documents of a few hundred tokens each and a
dozen questions whose answers are whole sentences. The bundled all-MiniLM-L6-v2 runs on the CPU.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from latechunk.eval.cache import dataset_sha256, load_cached
from latechunk.eval.harness import CompareConfig, chunk_records_sha256, run_compare
from latechunk.eval.report import REPORT_FILES, write_report
from tests.models import ForwardRecorder, minilm_encoder

TOPICS = {
    "cats": [
        "Cats sleep for about fifteen hours every day.",
        "A group of cats is called a clowder.",
        "The oldest known pet cat lived on Cyprus nine thousand years ago.",
        "Cats have five toes on their front paws and four on the back.",
        "A cat's purr vibrates at a frequency between twenty-five and one hundred fifty hertz.",
        "Most cats do not like water because their fur dries slowly.",
        "House cats share most of their genome with tigers.",
        "Kittens open their eyes about a week after birth.",
    ],
    "rivers": [
        "The Nile flows north through eleven countries into the Mediterranean Sea.",
        "The Amazon carries more water than the next seven largest rivers combined.",
        "The Danube passes through four national capitals on its way to the Black Sea.",
        "The Mississippi delta grows as the river deposits silt into the Gulf of Mexico.",
        "The Yangtze is the longest river that lies entirely within one country.",
        "The Rhine was an important border of the Roman Empire.",
        "The Volga is the longest river in Europe.",
        "The Thames once froze hard enough for winter fairs on the ice.",
    ],
    "baking": [
        "Bread rises because yeast releases carbon dioxide into the dough.",
        "Croissants are made by folding butter into the dough many times.",
        "Sourdough starter is a culture of wild yeast and lactic acid bacteria.",
        "Baking soda needs an acid such as buttermilk to release gas.",
        "An oven thermometer shows that many home ovens run hot.",
        "Gluten forms when flour proteins meet water and are kneaded.",
        "Resting pastry dough in the fridge keeps the butter firm.",
        "A hot baking stone gives pizza a crisp crust.",
    ],
}
QUESTIONS = [
    ("cats", 0, "How long do cats sleep each day?"),
    ("cats", 1, "What is a group of cats called?"),
    ("cats", 4, "At what frequency does a cat purr?"),
    ("cats", 7, "When do kittens open their eyes?"),
    ("rivers", 0, "Which way does the Nile flow?"),
    ("rivers", 2, "Which river passes four capitals?"),
    ("rivers", 4, "Which is the longest river within one country?"),
    ("rivers", 7, "Did the Thames ever freeze?"),
    ("baking", 0, "Why does bread rise?"),
    ("baking", 3, "What does baking soda need to release gas?"),
    ("baking", 5, "How does gluten form?"),
    ("baking", 7, "How do you get a crisp pizza crust?"),
]


def _write_dataset(root: Path) -> Path:
    (root / "corpora").mkdir(parents=True)
    texts = {}
    for name, sentences in TOPICS.items():
        paragraphs = [" ".join(sentences[i : i + 2]) for i in range(0, len(sentences), 2)]
        filler = [f"Paragraph {j} about {name} adds some neutral words so the text spans several windows." for j in range(6)]
        text = "\n\n".join(p for pair in zip(paragraphs, filler) for p in pair) + "\n"
        texts[name] = text
        (root / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
    with open(root / "questions_df.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["question", "references", "corpus_id"])
        for name, i, question in QUESTIONS:
            sentence = TOPICS[name][i]
            start = texts[name].index(sentence)
            refs = [{"content": sentence, "start_index": start, "end_index": start + len(sentence)}]
            w.writerow([question, json.dumps(refs), name])
    return root


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory) -> Path:
    return _write_dataset(tmp_path_factory.mktemp("tiny") / "tiny_chroma")


def _config(root: Path, tmp: Path, **kw) -> CompareConfig:
    base = {"dataset": str(root), "strategies": ("fixed:size=24", "sentence_window", "semantic"), "ks": (1, 3),
                "n_resamples": 200, "device": "cpu", "cache_dir": str(tmp / "cache")}
    base.update(kw)
    return CompareConfig(**base)


@pytest.fixture(scope="module")
def sweep(tiny_root, tmp_path_factory):
    """One run with a window sweep (64 then 512 tokens): three strategies, late and naive, k = 1, 3."""
    cfg = _config(tiny_root, tmp_path_factory.mktemp("cache"), windows=(64, 512))
    return run_compare(cfg, encoder=minilm_encoder(), command="latechunk compare --dataset tiny")


def test_late_and_naive_get_identical_chunk_records(sweep):
    res = sweep.embeds[(64, 0)]  # the first window's embed() call made both modes
    for spec in ("fixed:size=24,overlap=0", "sentence_window:window=1,stride=1", "semantic"):
        run = res.run(spec)
        late, naive = run.vectors["late"], run.vectors["naive"]
        assert late.doc_ids == naive.doc_ids
        np.testing.assert_array_equal(late.chunk_index, naive.chunk_index)
        np.testing.assert_array_equal(late.cu_chunks, naive.cu_chunks)
        assert chunk_records_sha256(run.boundaries, late) == chunk_records_sha256(run.boundaries, naive)
    for spec in sweep.config.specs():
        late, naive = sweep.system(spec, "late", 64), sweep.system(spec, "naive")
        assert late.chunks_sha256 == naive.chunks_sha256
        assert late.costs["chunks"] == naive.costs["chunks"] > 0
        # strategy-level figures do not depend on the mode
        assert late.aggregates["PrecisionOmega"] == naive.aggregates["PrecisionOmega"]
        assert late.aggregates["FactsProtected"] == naive.aggregates["FactsProtected"]
    # the vectors differ (the comparison is not vacuous)
    run = res.run("fixed:size=24")
    assert not np.allclose(run.vectors["late"].vectors, run.vectors["naive"].vectors)
    # every query scored, same query ids for every system
    ids = {frozenset(s.per_query["AR@1"]) for s in sweep.systems}
    assert ids == {frozenset(f"tiny_chroma:{i}" for i in range(len(QUESTIONS)))}  # a Chroma-format folder's ids


def test_two_runs_give_identical_numbers(sweep):
    again = run_compare(sweep.config, encoder=minilm_encoder())
    assert again.numbers() == sweep.numbers()
    assert again.manifest["dataset"]["cache_hit"]  # the second run used the cached parse


def test_report_folder(sweep, tmp_path):
    out = tmp_path / "report"
    write_report(sweep, out)
    for name in REPORT_FILES:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    data = json.loads((out / "results.json").read_text())
    assert data["manifest"]["command"] == "latechunk compare --dataset tiny"
    assert {s["label"] for s in data["systems"]} >= {"late w=64", "late w=512", "naive"}
    kinds = {c["kind"] for c in data["comparisons"]}
    assert kinds == {"late-naive", "strategy", "window"}
    with open(out / "per_query.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(sweep.systems) * len(QUESTIONS)
    assert float(rows[0]["AR@3"]) in (0.0, 1.0)
    md = (out / "report.md").read_text()
    assert "characters" in md and "| strategy | mode |" in md and "**" in md and "Window sweep" in md
    # the report is a function of the result
    write_report(sweep, tmp_path / "again", plot=False)
    assert (tmp_path / "again" / "report.md").read_text() == md


def test_sweep_reuses_one_late_pass(tiny_root, tmp_path):
    rows = {}
    calls = {}
    for name, strategies in (("one", ("fixed:size=16",)), ("sweep", ("fixed:size=16|32|48", "semantic:percentile=5|20"))):
        enc = minilm_encoder()
        rec = ForwardRecorder(enc)
        result = run_compare(_config(tiny_root, tmp_path, strategies=strategies, modes=("late",)), encoder=enc)
        rows[name], calls[name] = rec.rows, rec.calls
        late_calls = result.manifest["windows"][0]["late_forward_calls"]
        assert len(result.systems) == len(result.config.specs())
    # five strategies cost exactly the forward passes of one: same rows sent to the model (queries + documents)
    assert rows["sweep"] == rows["one"] and calls["sweep"] == calls["one"]
    assert late_calls >= 1
    # a window sweep: one late pass per window, naive once (plus semantic's own naive per further window)
    enc = minilm_encoder()
    rec = ForwardRecorder(enc)
    result = run_compare(_config(tiny_root, tmp_path, strategies=("fixed:size=16",), modes=("late",),
                                 windows=(64, 128, 512)), encoder=enc)
    late_rows = sum(w["late_forward_calls"] for w in result.manifest["windows"])
    assert [w["window"] for w in result.manifest["windows"]] == [64, 128, 512]
    assert all(w["late_forward_calls"] >= 1 for w in result.manifest["windows"])
    assert rec.calls == late_rows + 1  # + the one query batch
    # smaller windows mean more (overlapping) model inputs
    n_rows = [w["late_tokens"] for w in result.manifest["windows"]]
    assert n_rows[0] > n_rows[2]


def test_window_sweep_keeps_chunks_fixed_except_state_dependent(sweep):
    fixed = [s for s in sweep.systems if s.strategy.startswith("fixed")]
    assert {s.label for s in fixed} == {"late w=64", "late w=512", "naive"}
    assert len({s.chunks_sha256 for s in fixed}) == 1
    sem = [s for s in sweep.systems if s.strategy.startswith("semantic")]
    assert {s.label for s in sem} == {"late w=64", "late w=512", "naive (w=64 cuts)", "naive (w=512 cuts)"}
    for w in (64, 512):
        pair = [s for s in sem if s.window == w]
        assert len({s.chunks_sha256 for s in pair}) == 1
    assert [w["window"] for w in sweep.manifest["windows"]] == [64, 512]
    assert sweep.manifest["windows"][0]["late_tokens"] > sweep.manifest["windows"][1]["late_tokens"]


def test_dedup_scores_deeper_lists(tiny_root, tmp_path):
    plain = run_compare(_config(tiny_root, tmp_path, strategies=("sentence_window",), modes=("naive",)),
                        encoder=minilm_encoder())
    dedup = run_compare(_config(tiny_root, tmp_path, strategies=("sentence_window",), modes=("naive",), dedup=True),
                        encoder=minilm_encoder())
    a, b = plain.systems[0], dedup.systems[0]
    assert a.aggregates["Dup@3"] == b.aggregates["Dup@3"] > 0  # duplicates counted before dropping
    assert dedup.manifest["index"]["span_depth"] == 3 * 10
    # a deduplicated list holds at least as many distinct answer characters
    assert b.aggregates["SpanRecall@3"] >= a.aggregates["SpanRecall@3"]
    assert b.aggregates["AR@1"] == a.aggregates["AR@1"]  # the top chunk is never dropped


def test_parse_cache_keys_on_content(tiny_root, tmp_path):
    ds1, info1 = load_cached(tiny_root, tmp_path / "c")
    ds2, info2 = load_cached(tiny_root, tmp_path / "c")
    assert not info1["cache_hit"] and info2["cache_hit"] and info1["sha256"] == info2["sha256"]
    assert [q.spans for q in ds1.queries] == [q.spans for q in ds2.queries]
    import shutil

    copy = tmp_path / "elsewhere" / tiny_root.name
    shutil.copytree(tiny_root, copy)
    assert dataset_sha256(copy) == info1["sha256"]  # the key is the content and the name, not the path
    p = copy / "corpora" / "cats.md"
    p.write_text(p.read_text() + " ", encoding="utf-8")
    assert dataset_sha256(copy) != info1["sha256"]


def test_parse_cache_keys_on_the_name_a_copy_gets_its_own_name_and_ids(tiny_root, tmp_path):
    """Trial finding: `cp -r ds/chroma ds/harbor` then `compare --dataset ds/harbor` reported the old name and
    ids (`chroma`, `0, 1, ...`): the name and the id prefix are in the parse, so they are in the key."""
    import shutil

    ds1, info1 = load_cached(tiny_root, tmp_path / "c")
    harbor = tmp_path / "harbor"
    shutil.copytree(tiny_root, harbor)
    ds2, info2 = load_cached(harbor, tmp_path / "c")
    assert not info2["cache_hit"] and info2["sha256"] != info1["sha256"]
    assert ds2.name == "harbor" and ds2.queries[0].query_id == "harbor:0"
    assert ds1.name == tiny_root.name and ds1.queries[0].query_id == f"{tiny_root.name}:0"
    assert load_cached(harbor, tmp_path / "c")[1]["cache_hit"]


def test_cli_compare(tiny_root, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from latechunk.cli import app

    monkeypatch.setenv("LATECHUNK_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "cli"
    r = CliRunner().invoke(app, ["compare", "--dataset", str(tiny_root), "--out", str(out), "--device", "cpu",
                                 "--strategies", "fixed:size=24 recursive:max_tokens=48", "--modes", "late,naive",
                                 "--k", "1,3", "--resamples", "100", "--max-queries", "6", "--quiet"])
    assert r.exit_code == 0, r.output
    assert "latechunk compare" in r.output and "report:" in r.output
    for name in REPORT_FILES:
        assert (out / name).is_file()
    data = json.loads((out / "results.json").read_text())
    assert data["manifest"]["dataset"]["queries"] == 6
    assert len(data["systems"]) == 4
    again = CliRunner().invoke(app, ["compare", "--dataset", str(tiny_root), "--out", str(out), "--quiet"])
    assert again.exit_code == 2 and "--force" in again.output  # an existing report is never overwritten silently


def test_document_level_dataset(tmp_path):
    """A BEIR-style dataset (qrels, no spans): only the document-level measures, still paired late vs naive."""
    beir = Path(__file__).parents[1] / "data" / "eval_mini" / "beir"
    out = tmp_path / "beir"
    result = run_compare(_config(beir, tmp_path, strategies=("fixed:size=8",), ks=(1,)), out_dir=out,
                         encoder=minilm_encoder())
    assert result.headline == ["nDCG@10", "R@100", "RR@10"]
    for s in result.systems:
        assert set(s.per_query) == {"nDCG@10", "R@100", "RR@10"}
        assert 0.0 <= s.aggregates["nDCG@10"] <= 1.0
    assert {c["metric"] for c in result.comparisons if c["kind"] == "late-naive"} == {"nDCG@10", "R@100", "RR@10"}
    for name in REPORT_FILES:
        assert (out / name).is_file()


def test_compare_late_mode_with_a_model_that_does_not_mean_pool_needs_late_pooling_mean(tiny_root, tmp_path):
    """Issue 10, fault 7: compare refuses late mode for a CLS-pooled model before any work, and runs it when
    late_pooling='mean' is given explicitly."""
    import dataclasses

    from latechunk.encoder import Encoder
    from tests.models import minilm_loaded

    loaded = minilm_loaded()
    enc = Encoder(dataclasses.replace(loaded, settings=dataclasses.replace(loaded.settings, pooling="cls")),
                  device="cpu")
    kw = {"strategies": ("fixed:size=24",), "ks": (1,), "n_resamples": 20, "max_queries": 3}
    with pytest.raises(ValueError, match=r"pools by 'cls'.*--late-pooling mean"):
        run_compare(_config(tiny_root, tmp_path, **kw), encoder=enc)
    res = run_compare(_config(tiny_root, tmp_path, late_pooling="mean", **kw), encoder=enc)
    assert {(s.strategy, s.mode) for s in res.systems} == {("fixed:size=24,overlap=0", "late"),
                                                            ("fixed:size=24,overlap=0", "naive")}


@pytest.mark.parametrize("texts", [(), ("   \n ",)], ids=["no documents", "every document skipped"])
def test_compare_on_a_dataset_with_0_documents_to_embed_is_a_clear_error(tmp_path, texts):
    """Issue 10: 0 documents reached a metric that assumes content tokens ("the corpus has no content tokens")."""
    from latechunk.eval.datasets import EvalDataset, Query
    from latechunk.types import Document

    docs = tuple(Document(f"d{i}", t) for i, t in enumerate(texts))
    ds = EvalDataset("hollow", docs, (Query("q", "what?"),), {"q": {"d0": 1}})
    with pytest.raises(ValueError, match=r"dataset 'hollow': no document to embed \((0 documents|1 documents, all "
                                         r"skipped: d0: empty)"):
        run_compare(_config(tmp_path, tmp_path, strategies=("fixed:size=8",), ks=(1,)), encoder=minilm_encoder(),
                    dataset=ds)


def test_compare_scores_each_precision_and_truncation_beside_float32(tiny_root, tmp_path, monkeypatch):
    """`--precision float32,float16,int8,ubinary --truncate-dim all,128`: one index per setting over the same
    vectors; float32 (the first, main setting) gives the system's own numbers; float16 keeps its top-k; index
    bytes shrink with precision; the report gains the compact-vector table and results.json reads back."""
    from typer.testing import CliRunner

    from latechunk.cli import app
    from latechunk.eval.report import load_result, markdown_report

    monkeypatch.setenv("LATECHUNK_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "cli"
    r = CliRunner().invoke(app, ["compare", "--dataset", str(tiny_root), "--out", str(out), "--device", "cpu",
                                 "--strategies", "fixed:size=24", "--modes", "late", "--k", "1,3",
                                 "--resamples", "100", "--quiet", "--precision", "float32,float16,int8,ubinary",
                                 "--truncate-dim", "all,128"])
    assert r.exit_code == 0, r.output
    result = load_result(out)
    (system,) = result.systems
    labels = ["float32", "float16", "int8", "ubinary", "float32@128", "float16@128", "int8@128", "ubinary@128"]
    assert list(system.compact) == labels
    main = system.compact["float32"]
    assert main["metrics"]["AR@3"] == pytest.approx(system.aggregates["AR@3"])  # the main index is the system's
    assert main["index_bytes"] == system.costs["index_bytes"] and main["overlap_with_main"] == 1.0
    assert system.compact["float16"]["overlap_with_main"] >= 0.95
    b = {label: c["index_bytes"] for label, c in system.compact.items()}
    assert b["ubinary"] < b["int8"] < b["float16"] < b["float32"]
    assert b["float32@128"] < b["float32"] and b["ubinary@128"] < b["ubinary"]
    assert system.compact["ubinary"]["faiss_factory"] == "BFlat" and system.compact["int8"]["faiss_factory"] == "SQ8"
    report = (out / "report.md").read_text()
    assert "## Compact vectors" in report and "| `fixed:size=24` | late | `ubinary@128` | `BFlat` |" in report
    assert markdown_report(result) == report  # read back, rendered the same
    bad = CliRunner().invoke(app, ["compare", "--dataset", str(tiny_root), "--out", str(tmp_path / "bad"),
                                   "--precision", "float32,int4", "--quiet"])
    assert bad.exit_code == 2 and "--precision must be one of" in bad.output and not (tmp_path / "bad").exists()


def test_squad_v2_file_compares_without_its_unanswerable_questions(tmp_path, capsys):
    """Trial finding: a SQuAD v2.0 file (questions with no answer) could not be compared from the command line:
    load_squad's error asked for a Python keyword. load_dataset leaves them out, and says so on stderr and in
    the report; the parse cache keeps the note."""
    payload = json.loads((Path(__file__).parents[1] / "data" / "eval_mini" / "squad_mini.json").read_text())
    payload["data"][1]["paragraphs"][0]["qas"].append(
        {"id": "h2", "question": "Unanswerable?", "answers": [], "is_impossible": True})
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(payload))
    note = "1 of 4 questions left out: no answer"
    for _ in range(2):  # parsed, then from the parse cache
        ds, info = load_cached(str(v2), tmp_path / "cache")
        assert [q.query_id for q in ds.queries] == ["r1", "r2", "h1"] and note in ds.notes[0]
    assert info["cache_hit"]
    out = tmp_path / "report"
    run_compare(_config(v2, tmp_path, strategies=("fixed:size=8",), ks=(1,), n_resamples=50), out_dir=out,
                encoder=minilm_encoder())
    assert note in capsys.readouterr().err
    assert note in (out / "report.md").read_text()


# ---------------------------------------------------------------- fresh-user trial: report (fix F)


def test_per_query_csv_holds_the_question_and_the_top_hits_and_reads_back(sweep, tmp_path):
    """Trial finding: per_query.csv named queries by id only and nothing in the folder showed what was retrieved."""
    import re

    from latechunk.eval.report import load_result

    out = tmp_path / "report"
    write_report(sweep, out, plot=False)
    with open(out / "per_query.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    questions = {f"{sweep.dataset.name}:{i}": q for i, (_, _, q) in enumerate(QUESTIONS)}
    assert all(r["question"] == questions[r["query_id"]] for r in rows)
    ds = sweep.dataset
    for r in rows:
        hits = r["top_hits"].split(" | ")
        assert len(hits) == 3  # the largest k
        for hit in hits:
            doc, start, end = re.fullmatch(r"(.+):(\d+)-(\d+)", hit).groups()
            assert 0 <= int(start) < int(end) <= len(ds.document(doc).text)
        if r["AR@1"] == "1.0":  # the first hit holds the answer: checkable from the file alone
            doc, start, end = re.fullmatch(r"(.+):(\d+)-(\d+)", hits[0]).groups()
            (span,) = ds.spans_by_query()[r["query_id"]]
            assert doc == span[0] and int(start) <= span[1] and span[2] <= int(end)
    again = load_result(out)
    assert again.metric_names == sweep.metric_names  # the new columns are no metrics
    write_report(again, tmp_path / "again", plot=False)
    assert (tmp_path / "again" / "per_query.csv").read_text() == (out / "per_query.csv").read_text()


def test_late_passes_table_names_what_a_further_window_re_encodes(sweep):
    """Trial finding: with --window "64|512" the w=512 row said "modes encoded: late" beside naive tokens (semantic
    is re-cut and re-encoded per window), and the hash list showed `semantic` twice with no window."""
    from latechunk.eval.report import markdown_report

    md = markdown_report(sweep)
    w512 = next(line for line in md.splitlines() if line.startswith("| 512 |"))
    assert "late, naive (of `semantic` only: its cuts depend on the window)" in w512
    assert sweep.manifest["windows"][1]["recut"] == {"naive": [s for s in sweep.manifest["strategies"]
                                                               if s.startswith("semantic")]}
    hashes = [s.chunks_sha256[:8] for s in sweep.systems if s.strategy.startswith("semantic") and s.mode == "late"]
    assert f"`semantic` w=64 {hashes[0]}" in md and f"`semantic` w=512 {hashes[1]}" in md
    assert "`fixed:size=24` w=" not in md  # one chunk-record set: no window named


def test_content_sha256_covers_the_qrels():
    """Trial finding: the report's content sha256 left the qrels out: two qrels files hashed alike."""
    from latechunk.eval.datasets import EvalDataset, Query
    from latechunk.eval.harness import _dataset_content_sha256
    from latechunk.types import Document

    docs, queries = (Document("a", "alpha"), Document("b", "beta")), (Query("q", "which?"),)
    one = EvalDataset("x", docs, queries, {"q": {"a": 1}})
    other = EvalDataset("x", docs, queries, {"q": {"b": 1}})
    assert _dataset_content_sha256(one) != _dataset_content_sha256(other)
    # without qrels (Chroma, SQuAD) the hash is what it was: recorded runs still merge (plots.merge_results)
    assert _dataset_content_sha256(EvalDataset("x", docs, queries)) == _old_content_sha256(docs, queries)


def _old_content_sha256(docs, queries) -> str:
    import hashlib

    h = hashlib.sha256()
    for d in docs:
        h.update(d.doc_id.encode() + b"\0" + d.text.encode("utf-8") + b"\1")
    for q in queries:
        h.update(q.query_id.encode() + b"\0" + q.text.encode("utf-8") + repr(q.spans).encode() + b"\1")
    return h.hexdigest()
