"""``embed --reuse OLD``: the daily update of a corpus whose documents change and go away (a trial: ``--append``
kept deleted and edited documents searchable and only a full re-embed fixed it). The new folder equals a fresh
run over today's corpus, but only new and changed documents are encoded."""

from __future__ import annotations

import json

import faiss
import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.verify import verify_output

runner = CliRunner()
V1 = [{"id": f"d{i}", "text": f"Note {i} is about topic {i % 5}. " * (2 + i % 3), "lang": "en",
       "url": f"https://example.org/{i}"} for i in range(12)]


def _v2():
    docs = [dict(r) for r in V1 if r["id"] not in ("d5", "d9")]  # two deleted
    for r in docs:
        if r["id"] == "d3":
            r["text"] = "Changed: a zebra quartet played in Reykjavik."  # changed text
        if r["id"] == "d7":
            r["lang"], r["url"] = "fr", "https://example.org/moved"  # same text, new metadata and url
    return docs + [{"id": "n1", "text": "A new note about owls at night.", "lang": "en"}]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _embed(*args):
    return runner.invoke(app, ["embed", *map(str, args), "-q", "--device", "cpu", "--sentence-workers", "0"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reuse")
    corpus = tmp / "corpus.jsonl"
    _write(corpus, V1)
    res = _embed(corpus, "--out", tmp / "old", "--dtype", "float32", "--metadata-fields", "lang",
                 "--strategy", "fixed:size=16,overlap=4")
    assert res.exit_code == 0, res.output
    _write(corpus, _v2())
    reused = _embed(corpus, "--out", tmp / "new", "--reuse", tmp / "old")  # the other options are OLD's
    assert reused.exit_code == 0, reused.output
    fresh = _embed(corpus, "--out", tmp / "fresh", "--dtype", "float32", "--metadata-fields", "lang",
                   "--strategy", "fixed:size=16,overlap=4")
    assert fresh.exit_code == 0, fresh.output
    return tmp, reused


def test_the_new_folder_is_todays_corpus_as_a_fresh_run_makes_it(runs):
    tmp, _ = runs
    new, fresh = pq.read_table(tmp / "new" / "chunks.parquet"), pq.read_table(tmp / "fresh" / "chunks.parquet")
    assert new.equals(fresh)  # every row, metadata and url included
    rows = new.to_pylist()
    assert {r["doc_id"] for r in rows} == {r["id"] for r in _v2()}  # deleted ones gone, new one in
    d7 = next(r for r in rows if r["doc_id"] == "d7")
    assert json.loads(d7["metadata"]) == {"lang": "fr"} and d7["url"] == "https://example.org/moved"
    a, b = faiss.read_index(str(tmp / "new" / "index.faiss")), faiss.read_index(str(tmp / "fresh" / "index.faiss"))
    assert a.ntotal == b.ntotal and np.abs(a.reconstruct_n(0, a.ntotal) - b.reconstruct_n(0, b.ntotal)).max() < 1e-5
    assert verify_output(tmp / "new")[0] == []


def test_only_new_and_changed_documents_are_encoded(runs):
    tmp, res = runs
    manifest = json.loads((tmp / "new" / "manifest.json").read_text())
    reused = {d["doc_id"] for d in manifest["documents"] if d.get("reused")}
    assert reused == {r["id"] for r in _v2()} - {"d3", "n1"}  # d7's text is unchanged: reused, rows made again
    assert "reused 9 unchanged document(s)" in res.output and "encoded 2 new or changed" in res.output
    fresh = json.loads((tmp / "fresh" / "manifest.json").read_text())
    assert manifest["counts"]["tokens_encoded"] < fresh["counts"]["tokens_encoded"] / 3
    assert json.loads((tmp / "new" / "run.json").read_text())["settings"]["strategy"] == "fixed:size=16,overlap=4"
    # the bundled model keeps its name (a trial: the reused folder named it by its site-packages path)
    assert manifest["model"]["name"] == fresh["model"]["name"] == "all-MiniLM-L6-v2"


def test_settings_that_change_vectors_or_chunks_are_refused(runs, tmp_path):
    tmp, _ = runs
    corpus = tmp / "corpus.jsonl"
    res = _embed(corpus, "--out", tmp_path / "o1", "--reuse", tmp / "old", "--strategy", "fixed:size=32")
    assert res.exit_code == 2 and "strategy" in res.output and "give other chunks or vectors" in res.output
    assert not (tmp_path / "o1" / "index.faiss").exists()
    res = _embed(corpus, "--out", tmp_path / "o2", "--reuse", tmp / "old", "--index", "hnsw")  # the index may differ
    assert res.exit_code == 0, res.output
    res = _embed(corpus, "--out", tmp / "old", "--reuse", tmp / "old", "--force")
    assert res.exit_code == 2 and "is --out itself" in res.output
    res = _embed(corpus, "--out", tmp / "old", "--reuse", tmp / "new", "--append")
    assert res.exit_code == 2 and "does not combine with --append" in res.output
    res = _embed(corpus, "--out", tmp_path / "o3", "--reuse", tmp_path)
    assert res.exit_code == 2 and "not a finished output folder" in res.output


def test_append_of_the_same_snapshot_names_vanished_documents_and_points_at_reuse(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    _write(corpus, V1)
    assert _embed(corpus, "--out", tmp_path / "o").exit_code == 0
    _write(corpus, _v2())
    res = _embed(corpus, "--out", tmp_path / "o", "--append")
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "2 indexed document(s) are no longer in the inputs: d5, d9" in text and "--reuse" in text
    # the folder copied to another depth (its inputs, recorded relative to it, resolve elsewhere now): still said
    import shutil

    (tmp_path / "deeper").mkdir()
    shutil.copytree(tmp_path / "o", tmp_path / "deeper" / "o")
    _write(corpus, _v2()[1:])  # one more document gone
    res = _embed(corpus, "--out", tmp_path / "deeper" / "o", "--append")
    # (exit 1: nothing new could be appended, d3's new text among the reasons)
    assert "no longer in the inputs: d0, d5, d9" in " ".join(res.output.split()), res.output
    # another input appended: the folder's other documents are not expected in it, no such warning
    other = tmp_path / "more.jsonl"
    _write(other, [{"id": "m1", "text": "More notes about herons."}])
    res = _embed(other, "--out", tmp_path / "o", "--append")
    assert res.exit_code == 0 and "no longer in the inputs" not in res.output, res.output


def test_an_old_folder_with_dedup_is_refused(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    _write(corpus, V1)
    assert _embed(corpus, "--out", tmp_path / "old", "--dedup", "0.99").exit_code == 0
    res = _embed(corpus, "--out", tmp_path / "new", "--reuse", tmp_path / "old")
    assert res.exit_code == 2 and "embedded with --dedup" in " ".join(res.output.split()), res.output


def test_reused_documents_fill_shards_of_the_usual_size_and_a_resume_reuses_again(tmp_path):
    """Trial findings: reused documents weighed nothing, so every run of them went into one shard (memory and
    the work a kill loses grew with the corpus); a killed --reuse run resumed without reusing."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    corpus = tmp_path / "corpus.jsonl"
    records = [{"id": f"d{i}", "text": f"Note {i} is about topic {i % 7} and the river. " * 6} for i in range(40)]
    _write(corpus, records)
    assert _embed(corpus, "--out", tmp_path / "old", "--group-tokens", "300", "--dtype", "float32").exit_code == 0
    old = json.loads((tmp_path / "old" / "manifest.json").read_text())
    assert len(old["shards"]) >= 5
    records[20]["text"] = "A changed note about owls."
    _write(corpus, records)
    assert _embed(corpus, "--out", tmp_path / "new", "--reuse", tmp_path / "old").exit_code == 0
    new = json.loads((tmp_path / "new" / "manifest.json").read_text())
    assert len(new["shards"]) >= len(old["shards"]) - 1  # not one shard of every reused document
    # killed after its first shard, then resumed without --reuse: run.json names OLD, so it reuses again
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1", LATECHUNK_FAULT_KILL_AT="shard-00001-json")
    cmd = [sys.executable, "-m", "latechunk", "embed", str(corpus), "--out", str(tmp_path / "k"), "--reuse",
           str(tmp_path / "old"), "-q", "--device", "cpu", "--sentence-workers", "0"]
    proc = subprocess.run(cmd, check=False, env=env, cwd=repo, capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    # OLD moved meanwhile: the resume says so (a trial: it went on encoding everything), and takes its new place
    os.rename(tmp_path / "old", tmp_path / "old_moved")
    res = _embed(corpus, "--out", tmp_path / "k", "--resume")
    assert res.exit_code != 0 and "no longer there" in res.output and "--resume --reuse OLD" in res.output
    res = _embed(corpus, "--out", tmp_path / "k", "--resume", "--reuse", tmp_path / "old_moved")
    assert res.exit_code == 0, res.output
    resumed = json.loads((tmp_path / "k" / "manifest.json").read_text())
    assert sum(1 for d in resumed["documents"] if d.get("reused")) == 39
    assert pq.read_table(tmp_path / "k" / "chunks.parquet").equals(pq.read_table(tmp_path / "new" / "chunks.parquet"))
    assert verify_output(tmp_path / "k")[0] == []
