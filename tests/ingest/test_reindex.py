"""`latechunk reindex DIR` (latechunk.ingest.reindex): the index built again from the shards with other settings,
equal to an `embed` run with those settings; run.json and the manifest follow, so verify, search and --append go
on; nothing is written when the settings do not change, and settings the vectors cannot take are refused."""

from __future__ import annotations

import json
import shutil

import faiss
import numpy as np
import pytest
from typer.testing import CliRunner

import latechunk
from latechunk.cli import app
from latechunk.config import IndexConfig
from latechunk.ingest.reindex import reindex
from latechunk.output import OutputFolder
from latechunk.verify import verify_output
from tests.api.test_api import _embed

runner = CliRunner()
DOCS = {
    "rivers.md": "# Rivers\n\nThe Danube flows through ten countries to the Black Sea. The Nile flows north.\n\n"
                 "## Deltas\n\nA delta forms where a river meets the sea and drops its sediment.\n",
    "bread.md": "# Bread\n\nSourdough rises because wild yeast ferments the dough. A starter is fed daily.\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    src = tmp_path_factory.mktemp("corpus")
    for name, text in DOCS.items():
        (src / name).write_text(text, encoding="utf-8")
    return src


@pytest.fixture(scope="module")
def flat(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("flat") / "out"
    _embed(corpus, "--out", out, "--strategy", "fixed:size=12")
    return out


def _index_bytes(out) -> bytes:
    return faiss.serialize_index(faiss.read_index(str(out / "index.faiss"))).tobytes()


@pytest.mark.parametrize("options", [["--index", "hnsw", "--precision", "int8"], ["--precision", "float16"],
                                     ["--truncate-dim", "128"]])
def test_reindex_equals_an_embed_with_those_settings(flat, corpus, tmp_path, options):
    out = tmp_path / "out"
    shutil.copytree(flat, out)
    res = runner.invoke(app, ["reindex", str(out), *options])
    assert res.exit_code == 0 and "reindexed" in res.output and "Flat float32 ->" in res.output, res.output
    direct = tmp_path / "direct"
    _embed(corpus, "--out", direct, "--strategy", "fixed:size=12", *options)
    m, d = OutputFolder(out).read_manifest(), OutputFolder(direct).read_manifest()
    assert m["index"] == d["index"] and m["settings"] == {**d["settings"], "inputs_from_out": m["inputs_from_out"]}
    assert json.loads((out / "run.json").read_text())["settings"]["index"] == d["settings"]["index"]
    assert _index_bytes(out) == _index_bytes(direct)  # the same index, built from the same vectors
    assert m["reindexed"][-1]["from"] == {"factory": "Flat", "metric": "ip"} and m["reindexed"][-1]["to"] == \
        d["settings"]["index"]
    assert verify_output(out)[0] == []
    hits = latechunk.Index.load(out, device="cpu").search("Which river reaches the Black Sea?", k=1)
    assert hits[0].doc_id == "rivers.md"


def test_reindex_back_and_append_go_on_with_the_new_settings(flat, corpus, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(flat, out)
    before = _index_bytes(out)
    manifest, old, built = reindex(out, IndexConfig.from_option("hnsw", hnsw_m=8))
    assert built and old == {"factory": "Flat", "metric": "ip"} and manifest["index"]["factory"] == "HNSW8"
    more = tmp_path / "more"
    more.mkdir()
    (more / "alps.md").write_text("Glaciers in the Alps lose ice every summer.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(more), "--out", str(out), "--append", "-q", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    m = OutputFolder(out).read_manifest()
    assert m["index"]["factory"] == "HNSW8" and m["counts"]["documents_embedded"] == 3 and len(m["reindexed"]) == 1
    assert isinstance(faiss.downcast_index(faiss.read_index(str(out / "index.faiss"))), faiss.IndexHNSWFlat)
    assert verify_output(out)[0] == []
    # back to flat: the same index as the first run's over the first run's vectors plus the appended ones
    reindex(out, IndexConfig())
    n = m["counts"]["chunks"]
    idx = faiss.read_index(str(out / "index.faiss"))
    assert idx.ntotal == n and len(OutputFolder(out).read_manifest()["reindexed"]) == 2
    first = faiss.read_index(str(flat / "index.faiss"))
    np.testing.assert_array_equal(idx.reconstruct_n(0, first.ntotal), first.reconstruct_n(0, first.ntotal))
    assert before != _index_bytes(out) and verify_output(out)[0] == []


def test_unchanged_settings_write_nothing_and_bad_ones_are_refused(flat, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(flat, out)
    stamp = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file() and p.name != ".latechunk.lock"}
    res = runner.invoke(app, ["reindex", str(out), "--index", "flat"])
    assert res.exit_code == 0 and "nothing to do" in res.output, res.output
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file() and p.name != ".latechunk.lock"} == stamp
    for options, said in ((["--truncate-dim", "4096"], "exceeds the model's vector dimension 384"),
                          (["--index", "hnsw", "--precision", "ubinary"], "cannot be combined"),
                          (["--ef-search", "64"], "HNSW index"),
                          (["--precision", "int4"], "--precision must be one of"),
                          (["--index", "IDMap,Flat"], "an ID map is not needed"),  # second trial: a traceback
                          (["--index", "hnsw", "--ef-search", "0"], "ef_search must be an integer >= 1")):
        res = runner.invoke(app, ["reindex", str(out), *options])
        assert res.exit_code == 2 and said in " ".join(res.output.split()), (options, res.output)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file() and p.name != ".latechunk.lock"} == stamp
    res = runner.invoke(app, ["reindex", str(tmp_path / "none")])
    assert res.exit_code == 2 and "not a folder" in res.output
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no manifest.json"):
        reindex(tmp_path / "empty", IndexConfig())


@pytest.mark.parametrize("kill_at, state", [("assemble-manifest.tmp", "old"), ("commit-renamed-1", "new")])
def test_a_killed_reindex_leaves_the_old_state_or_the_new_one(flat, tmp_path, kill_at, state):
    """SIGKILL before the commit journal: the folder is as it was; after its first rename: the next reader
    finishes the commit, run.json included (the journal renames it with the index and the manifest)."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "out"
    shutil.copytree(flat, out)
    env = {**os.environ, "LATECHUNK_FAULT_KILL_AT": kill_at}
    proc = subprocess.run([sys.executable, "-m", "latechunk", "reindex", str(out), "--index", "hnsw"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    problems, _ = verify_output(out)  # a reader: finishes a decided commit first
    # before the journal the temp files are left (verify names them; the next writer overwrites them)
    assert all(p.startswith("stray temp file") for p in problems) and bool(problems) == (state == "old"), problems
    m = OutputFolder(out).read_manifest()
    run = json.loads((out / "run.json").read_text())
    want = "Flat" if state == "old" else "HNSW32"
    assert m["index"]["factory"] == run["settings"]["index"]["factory"] == want
    assert faiss.read_index(str(out / "index.faiss")).ntotal == m["counts"]["chunks"]
    reindex(out, IndexConfig.from_option("hnsw"))  # the same command again ends in the new state
    assert verify_output(out)[0] == [] and OutputFolder(out).read_manifest()["index"]["factory"] == "HNSW32"


def test_a_missing_or_damaged_index_is_built_again_with_the_same_settings(flat, tmp_path):
    """Second trial: with index.faiss lost, search said to --resume, --resume said there was nothing to continue,
    and reindex said "nothing to do". reindex now builds it again; temp files of a killed write are removed."""
    out = tmp_path / "out"
    shutil.copytree(flat, out)
    want = _index_bytes(out)
    (out / "index.faiss").unlink()
    (out / "chunks.parquet.tmp").write_bytes(b"half")  # a killed write's leftover
    res = runner.invoke(app, ["reindex", str(out)])
    assert res.exit_code == 0 and "index.faiss was missing or damaged" in " ".join(res.output.split()), res.output
    assert _index_bytes(out) == want and not (out / "chunks.parquet.tmp").exists()
    assert verify_output(out)[0] == []
    (out / "index.faiss").write_bytes((out / "index.faiss").read_bytes()[:100])  # truncated
    assert reindex(out, IndexConfig())[2] and _index_bytes(out) == want
    assert not reindex(out, IndexConfig())[2]  # whole now: nothing written


def test_hnsw_beams_are_the_folders_unless_given(corpus, tmp_path):
    """Second trial: `reindex --index HNSW16` on a folder built with --ef-search 64 reset it to 128."""
    out = tmp_path / "out"
    _embed(corpus, "--out", out, "--strategy", "fixed:size=12", "--index", "hnsw", "--ef-search", "64",
           "--ef-construction", "100")
    res = runner.invoke(app, ["reindex", str(out), "--index", "HNSW16"])
    assert res.exit_code == 0, res.output
    idx = OutputFolder(out).read_manifest()["index"]
    assert (idx["factory"], idx["ef_search"], idx["ef_construction"]) == ("HNSW16", 64, 100)
    res = runner.invoke(app, ["reindex", str(out), "--ef-search", "32"])
    assert "ef_search 64 -> HNSW16 float32 ef_construction 100 ef_search 32" in " ".join(res.output.split()), \
        res.output
