"""Sharded, resumable ingest (latechunk/ingest/) and the input readers it streams from (latechunk/io.py).

The main test kills `python -m latechunk embed` with SIGKILL at three different points of one run over the Chroma
corpus, resumes each time, and checks that the result equals an uninterrupted run: same ids in the same order,
same chunk rows, vectors equal within 1e-6, same accounting. To keep CI fast the run uses a tiny random BERT saved
as a model folder (safetensors) and the two smallest Chroma corpora, each cut into parts at a line end or space, with a
small group budget so that the run writes about ten shards.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.eval.datasets import data_root
from tests.models import save_tiny_bert

REPO = Path(__file__).resolve().parents[1]
DATA = data_root() / "chroma_chunking_eval" / "corpora"
SMALL = ("chatlogs.md", "state_of_the_union.md")
PARTS = 6
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_thread")
ARGS = ["--strategy", "fixed:size=128", "--device", "cpu", "--quiet", "--group-tokens", "1500"]


def _split(text: str, parts: int) -> list[str]:
    """Cut ``text`` after a newline (else a space) into ``parts`` pieces of about equal length (their
    concatenation is ``text``)."""
    cuts, target = [0], len(text) / parts
    for i in range(1, parts):
        at = text.find("\n", int(i * target), int((i + 0.5) * target))
        at = at if at >= 0 else text.find(" ", int(i * target))
        if at < 0 or at <= cuts[-1]:
            break
        cuts.append(at + 1)
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


def make_corpus(tmp_path_factory, tag: str = "") -> tuple[Path, Path]:
    """``(corpus folder, model folder)``: the SMALL corpora cut into PARTS files each plus one empty file, and a
    tiny random BERT saved as a model folder (skips the test without ../shared/data)."""
    if not all((DATA / n).exists() for n in SMALL):
        pytest.skip("../shared/data is not present")
    root = tmp_path_factory.mktemp(f"chroma_small{tag}")
    for name in SMALL:
        folder = root / Path(name).stem
        folder.mkdir()
        for i, piece in enumerate(_split((DATA / name).read_text(encoding="utf-8"), PARTS)):
            (folder / f"part{i}.md").write_text(piece, encoding="utf-8")
    (root / "empty.md").write_text("  \n", encoding="utf-8")  # one skipped input, accounted for
    model = save_tiny_bert(tmp_path_factory.mktemp(f"tiny_bert{tag}"))
    return root, model


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory)


def _embed_inproc(corpus_dir: Path, model: Path, out: Path, *extra: str):
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS, *extra],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """An uninterrupted run."""
    corpus_dir, model = corpus
    out = tmp_path_factory.mktemp("ref") / "out"
    _embed_inproc(corpus_dir, model, out)
    return out


def _spawn(corpus_dir: Path, model: Path, out: Path, *extra: str, kill_at: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    env.pop("LATECHUNK_FAULT_KILL_AT", None)
    if kill_at:
        env["LATECHUNK_FAULT_KILL_AT"] = kill_at
    cmd = [sys.executable, "-m", "latechunk", "embed", str(corpus_dir), "--out", str(out), "--model", str(model),
           *ARGS, *extra]
    return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_killed(proc: subprocess.Popen, timeout: float = 120) -> None:
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == -signal.SIGKILL, f"expected SIGKILL, got {proc.returncode}: {err.decode()[-2000:]}"


def _index_vectors(out: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(out / "index.faiss"))
    return index.reconstruct_n(0, index.ntotal)


def _assert_same_output(out_ref: Path, out_new: Path) -> None:
    m_ref = json.loads((out_ref / "manifest.json").read_text())
    m_new = json.loads((out_new / "manifest.json").read_text())
    t_ref, t_new = pq.read_table(out_ref / "chunks.parquet"), pq.read_table(out_new / "chunks.parquet")
    assert t_new.column("doc_id").to_pylist() == t_ref.column("doc_id").to_pylist()  # same ids, same order
    assert t_new.equals(t_ref)  # same chunk rows
    v_ref, v_new = _index_vectors(out_ref), _index_vectors(out_new)
    assert v_new.shape == v_ref.shape
    np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=1e-6)
    for key in ("documents", "skipped", "counts", "dim", "index", "strategy"):
        if key == "counts":
            assert {k: v for k, v in m_new[key].items()} == m_ref[key]
        else:
            assert m_new[key] == m_ref[key], key
    assert [s["rows"] for s in m_new["shards"]] == [s["rows"] for s in m_ref["shards"]]


def test_reference_run_is_sharded_and_accounts_for_every_input(reference):
    m = json.loads((reference / "manifest.json").read_text())
    assert len(m["shards"]) >= 8, "the group budget should give several shards"
    assert m["counts"]["documents_in"] == 2 * PARTS + 1
    assert m["counts"]["documents_embedded"] == 2 * PARTS and m["counts"]["documents_skipped"] == 1
    assert m["skipped"] == [{"doc_id": "empty.md", "reason": "empty or whitespace-only", "source": "empty.md"}]
    assert all(d["chunks"] > 0 and len(d["sha256"]) == 64 for d in m["documents"])
    # sources are stored relative to the input root, never absolute
    assert all(not os.path.isabs(d["source"]) and d["source"] == d["doc_id"] for d in m["documents"])
    assert not any(os.path.isabs(p) for p in m["inputs_from_out"])
    table = pq.read_table(reference / "chunks.parquet")
    assert table.num_rows == m["counts"]["chunks"] == m["index"]["ntotal"]
    assert not list(reference.rglob("*.tmp"))


def test_sigkill_at_three_points_then_resume_equals_uninterrupted_run(corpus, reference, tmp_path):
    corpus_dir, model = corpus
    out = tmp_path / "out"

    # 1. killed from outside, by watching the shards folder: as soon as shard 1 is committed
    proc = _spawn(corpus_dir, model, out)
    deadline = time.time() + 120
    while not (out / "shards" / "00001.json").exists():
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.time() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    _wait_killed(proc)
    assert not (out / "manifest.json").exists()
    n_after_kill1 = len(list((out / "shards").glob("*.json")))
    assert n_after_kill1 < len(list((reference / "shards").glob("*.json")))

    # 2. resumed, then killed in the middle of writing a shard (parquet in place, vectors only at a temp name)
    _wait_killed(_spawn(corpus_dir, model, out, "--resume", kill_at="shard-00005-npy.tmp"))
    assert (out / "shards" / "00005.parquet").exists() and (out / "shards" / "00005.npy.tmp").exists()
    assert not (out / "shards" / "00005.json").exists() and not (out / "manifest.json").exists()

    # 3. resumed, then killed while assembling (index.faiss written, chunks.parquet half written)
    _wait_killed(_spawn(corpus_dir, model, out, "--resume", kill_at="assemble-chunks.tmp"))
    assert (out / "index.faiss").exists() and (out / "chunks.parquet.tmp").exists()
    assert not (out / "manifest.json").exists()

    # resume to the end: identical to the uninterrupted run, and it verifies
    _embed_inproc(corpus_dir, model, out, "--resume")
    _assert_same_output(reference, out)
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0, res.output


def test_existing_output_is_never_overwritten_without_force(corpus, reference, tmp_path):
    corpus_dir, model = corpus
    before = (reference / "manifest.json").read_bytes()
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(reference), "--model", str(model), *ARGS])
    assert res.exit_code == 2 and "--force" in res.output
    assert (reference / "manifest.json").read_bytes() == before
    # --resume with other settings is refused, naming the difference
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(reference), "--model", str(model),
                              *ARGS[:-1], "3000", "--resume"])
    assert res.exit_code == 2 and "group_tokens" in res.output
    assert (reference / "manifest.json").read_bytes() == before
    # --resume on a folder that is not a run is refused
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(other), "--model", str(model), *ARGS, "--resume"])
    assert res.exit_code == 2 and "run.json" in res.output
    assert (other / "notes.txt").read_text() == "mine"


def test_force_replaces_only_the_output_files(corpus, tmp_path):
    _, model = corpus
    doc = tmp_path / "a.md"
    doc.write_text("Alpha beta gamma. Delta epsilon.", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    (out / "shards").mkdir()
    (out / "shards" / "00007.npy").write_bytes(b"junk")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--model", str(model), *ARGS, "--force"])
    assert res.exit_code == 0, res.output
    assert (out / "keep.txt").read_text() == "x" and not (out / "shards" / "00007.npy").exists()
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


def test_resume_refuses_changed_inputs(corpus, tmp_path):
    _, model = corpus
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3):
        (src / f"d{i}.md").write_text(f"Document {i} talks about topic {i}. " * 40, encoding="utf-8")
    out = tmp_path / "out"
    _embed_inproc(src, model, out, "--group-tokens", "100")
    before = {f: f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}
    (src / "d0.md").write_text("Something else entirely.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), *ARGS, "--group-tokens",
                              "100", "--resume"])
    assert res.exit_code == 2 and "inputs changed" in res.output
    assert {f: f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()} == before  # nothing touched


def test_parquet_input_streams_rows_and_accounts_for_bad_ones(tmp_path):
    from latechunk.io import iter_inputs
    from latechunk.pipeline import Skipped

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
    from latechunk.io import iter_inputs

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
