"""latechunk/ingest/ray_engine.py: ``embed --engine ray`` on a real local Ray cluster (``ray.init(num_cpus=2)``).

Default run: the small corpus of tests/corpus.py (tiny random BERT, about ten shards): an interrupted
single-process run's folder (shards 0, 1, 3 complete, shard 2 half written) finished by ``--engine ray --resume``
through the command line: the complete shards are kept untouched (their files are not rewritten), the others are
written, and the output equals the single-process run's (chunks.parquet byte for byte, vectors within 1e-6,
manifest accounts); the manifest records the engine and the cluster's resources. Without Ray the module is skipped.

Slow (``-m slow``): the same corpus with ``--engine ray`` from scratch, stopped after two new shards by the driver's
fault hook (``$LATECHUNK_RAY_STOP_AFTER``), then ``--resume``; and the full Chroma corpora with the bundled all-MiniLM-L6-v2, a ``--engine ray`` process killed
(SIGKILL, its whole process group) once its first shard is committed, then ``--resume``, against the single-process
run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.ingest.ray_engine import RAY_STOP_ENV, plan_actors
from latechunk.ingest.shards import complete_shards
from tests.corpus import ARGS, DATA, REPO, assert_same_output, make_corpus

runner = CliRunner()


# ---------------------------------------------------------------------------------------------- no cluster needed
def test_plan_actors():
    gpu = plan_actors({"CPU": 16.0, "GPU": 4.0})
    assert (gpu.actors, gpu.num_gpus, gpu.device) == (4, 1, "cuda")
    assert plan_actors({"CPU": 16.0, "GPU": 4.0}, actors=2).actors == 2
    cpu = plan_actors({"CPU": 8.0})
    assert (cpu.actors, cpu.num_gpus, cpu.device) == (4, 0, "cpu")
    assert plan_actors({"CPU": 16.0, "GPU": 4.0}, device="cpu").device == "cpu"
    with pytest.raises(ValueError, match="4 GPU"):
        plan_actors({"CPU": 16.0, "GPU": 4.0}, actors=5)
    with pytest.raises(ValueError, match="CPU stage"):
        plan_actors({"CPU": 2.0}, actors=2)
    with pytest.raises(ValueError, match="no GPU"):
        plan_actors({"CPU": 2.0}, device="cuda")
    with pytest.raises(ValueError, match=">= 1"):
        plan_actors({"CPU": 2.0}, actors=0)


@pytest.mark.parametrize("extra, message", [
    (["--engine", "spark"], "--engine must be local or ray"),
    (["--ray-actors", "2"], "apply to --engine ray"),
    (["--engine", "ray", "--dedup", "0.9"], "--dedup"),
    (["--engine", "ray", "--sentence-workers", "2"], "--sentence-workers"),
])
def test_engine_options_fail_before_the_model(tmp_path, extra, message):
    (tmp_path / "a.md").write_text("Some text.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(tmp_path / "a.md"), "--out", str(tmp_path / "out"), *extra])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------- a local cluster
@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    old = os.environ.get("PYTHONPATH")
    # the workers import latechunk from this checkout, as the driver does
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), old) if p)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory, "_ray")


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    corpus_dir, model = corpus
    out = tmp_path_factory.mktemp("ref_ray") / "out"
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def _shard_stamps(out: Path) -> dict[int, int]:
    return {k: (out / "shards" / f"{rec['name']}.json").stat().st_mtime_ns for k, rec in complete_shards(out).items()}


def test_ray_resume_keeps_complete_shards_and_equals_one_process(ray_cluster, corpus, reference, tmp_path):
    """An interrupted run's folder (shards 0, 1 and 3 complete, shard 2 half written, no assembly) finished with
    ``--engine ray --resume``: one Ray Data execution, the default-run test."""
    import shutil

    corpus_dir, model = corpus
    out = tmp_path / "out"
    (out / "shards").mkdir(parents=True)
    shutil.copy2(reference / "run.json", out / "run.json")
    n_ref = len(json.loads((reference / "manifest.json").read_text())["shards"])
    assert n_ref >= 5
    for f in (reference / "shards").iterdir():
        k = int(f.name.split(".")[0])
        if k in (0, 1, 3) or (k == 2 and f.suffix == ".parquet"):
            shutil.copy2(f, out / "shards" / f.name)
    (out / "shards" / "00002.npy.tmp").write_bytes(b"partial")
    kept = _shard_stamps(out)
    assert set(kept) == {0, 1, 3}
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS,
                              "--engine", "ray", "--resume"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    _assert_resumed(out, kept, n_ref, reference)
    assert not (out / "shards" / "00002.npy.tmp").exists()


def test_too_many_ray_actors_fail_before_the_output_folder_is_written(ray_cluster, corpus, tmp_path):
    """Trial finding: `--ray-actors 2` on a 2-CPU cluster failed after run.json and shards/ were written, and the
    corrected command was then refused ("exists and is not empty"); the actors are planned first now."""
    corpus_dir, model = corpus
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS,
                              "--engine", "ray", "--ray-actors", "2"])
    assert res.exit_code == 2 and "--ray-actors 2" in res.output, res.output
    assert not (out / "run.json").exists() and not (out / "shards").exists()


def _assert_resumed(out, kept, n_ref, reference):
    """The resumed folder reused the kept shards, wrote the others, and equals the single-process reference."""
    after = _shard_stamps(out)
    assert {k: after[k] for k in kept} == kept  # the complete shards were reused, not written again
    assert set(after) == set(range(n_ref))
    assert all(after[k] > max(kept.values()) for k in set(after) - set(kept))  # the others were written now
    assert (out / "chunks.parquet").read_bytes() == (reference / "chunks.parquet").read_bytes()
    assert_same_output(reference, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"] == "ray"
    assert manifest["cluster_resources"]["CPU"] == 2.0
    assert manifest["ray_actors"]["actors"] == 1 and manifest["ray_actors"]["device"] == "cpu"
    assert [s["doc_id"] for s in manifest["skipped"]] == ["empty.md"]  # the bad input is still listed


@pytest.mark.slow
def test_ray_stopped_midway_then_resumed_equals_one_process(ray_cluster, corpus, reference, tmp_path, monkeypatch):
    corpus_dir, model = corpus
    out = tmp_path / "out"
    cmd = ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS, "--engine", "ray"]
    monkeypatch.setenv(RAY_STOP_ENV, "2")
    res = runner.invoke(app, cmd)
    assert isinstance(res.exception, RuntimeError) and "stopped after 2" in str(res.exception), res.output
    assert not (out / "manifest.json").exists()
    kept = _shard_stamps(out)
    n_ref = len(json.loads((reference / "manifest.json").read_text())["shards"])
    assert 2 <= len(kept) < n_ref  # the two it received (and any in flight), not all

    monkeypatch.delenv(RAY_STOP_ENV)
    res = runner.invoke(app, [*cmd, "--resume"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    _assert_resumed(out, kept, n_ref, reference)


# ---------------------------------------------------------------------------------------------- slow: full corpora
@pytest.mark.slow
def test_ray_full_chroma_killed_then_resumed(tmp_path):
    pytest.importorskip("ray.data")
    if not DATA.is_dir():
        pytest.skip("../shared/data is not present")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               RAY_AUTH_MODE="disabled")
    env.pop(RAY_STOP_ENV, None)
    common = ["--device", "cpu", "--quiet", "--group-tokens", "32768"]
    ref = tmp_path / "ref"
    subprocess.run([sys.executable, "-m", "latechunk", "embed", str(DATA), "--out", str(ref), *common], cwd=REPO,
                   env=env, check=True, capture_output=True)
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "latechunk", "embed", str(DATA), "--out", str(out), *common, "--engine", "ray"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        t_end = time.monotonic() + 600
        while not complete_shards(out) and proc.poll() is None and time.monotonic() < t_end:
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local cluster it started
        proc.wait()
    assert not (out / "manifest.json").exists(), "the run finished before it could be killed"
    kept = _shard_stamps(out)
    assert kept
    res = subprocess.run([*cmd, "--resume"], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    after = _shard_stamps(out)
    assert {k: after[k] for k in kept} == kept
    assert (out / "chunks.parquet").read_bytes() == (ref / "chunks.parquet").read_bytes()
    assert_same_output(ref, out)


def test_an_unreachable_ray_address_fails_at_once_and_leaves_the_folder_alone(tmp_path):
    """Trial of issue 13: a wrong --ray-address hung for minutes in Ray's retries after --force emptied DIR."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("an earlier run", encoding="utf-8")
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--force", "--quiet", "--engine", "ray",
                              "--ray-address", "127.0.0.1:1"])
    assert res.exit_code == 2 and "cannot connect to 127.0.0.1:1" in res.output, res.output
    assert (out / "keep.txt").exists()
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--engine", "ray", "--ray-address", "nowhere"])
    assert res.exit_code == 2 and "HOST:PORT" in res.output


def test_ray_address_auto_without_a_running_cluster_fails_at_once(tmp_path, monkeypatch):
    """Trial of issue 15: `--ray-address auto` with no cluster printed nothing for minutes (Ray kept looking)."""
    pytest.importorskip("ray")
    from ray._private import services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        services.canonicalize_bootstrap_address("auto")
        pytest.skip("a Ray cluster is running on this machine")
    except ConnectionError:
        pass
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "out"), "--engine", "ray",
                              "--ray-address", "auto"])
    assert res.exit_code == 2 and "no running Ray cluster" in res.output, res.output
    assert not (tmp_path / "out").exists()
