"""latechunk/ingest/ranks.py: several processes on one machine (``torchrun`` / ``accelerate launch``, WORLD_SIZE > 1).

Two ``python -m latechunk embed`` processes run on the CPU with ``RANK=0/1 WORLD_SIZE=2 LOCAL_RANK=0/1`` (what the
launchers set) over the small corpus of tests/corpus.py (tiny random BERT, small group budget: about ten shards),
and the result is compared with a single-process run: same ids and rows, vectors within 1e-6, `latechunk verify`
passes. A rank killed mid-run makes rank 0 fail with a message naming it, and both ranks with ``--resume`` then
finish the run, equal to the single-process one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.ingest import dist_env
from tests.corpus import ARGS, assert_same_output, make_corpus

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory, "_mp")


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """A single-process run."""
    corpus_dir, model = corpus
    out = tmp_path_factory.mktemp("ref_mp") / "out"
    res = runner.invoke(app, ["embed", str(corpus_dir), "--out", str(out), "--model", str(model), *ARGS],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal ``(master, slave)`` 120 columns wide (a progress bar shows on a terminal's stderr only)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    return master, slave


def _drain(fd: int, into: list[bytes]) -> None:
    """Read a pseudo-terminal's master end until its process has closed the other end."""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: no process holds the terminal any more
            return
        if not data:
            return
        into.append(data)


def _spawn_ranks(corpus_dir: Path, model: Path, out: Path, *extra: str, world: int = 2,
                 kill_at: dict[int, str] | None = None, extra_by_rank: dict[int, list[str]] | None = None,
                 quiet: bool = True):
    """Run ``world`` ranks of embed; without ``quiet`` each one's stderr is a terminal, so that rank 0 can show
    its progress bar. Returns ``(exit status, stdout + stderr)`` per rank."""
    import threading

    procs, terminals = [], []
    args = ARGS if quiet else [a for a in ARGS if a not in ("--quiet", "-q")]
    for rank in range(world):
        env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_RANK=str(rank), LATECHUNK_RANK_TIMEOUT="60")
        env.pop("LATECHUNK_FAULT_KILL_AT", None)
        if kill_at and rank in kill_at:
            env["LATECHUNK_FAULT_KILL_AT"] = kill_at[rank]
        cmd = [sys.executable, "-m", "latechunk", "embed", str(corpus_dir), "--out", str(out), "--model", str(model),
               *args, *extra, *(extra_by_rank or {}).get(rank, [])]
        if quiet:
            procs.append(subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            continue
        master, slave = _terminal()
        procs.append(subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=slave))
        os.close(slave)
        chunks: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(master, chunks), daemon=True)
        reader.start()
        terminals.append((len(procs) - 1, master, reader, chunks))
    results = []
    for p in procs:
        o, e = p.communicate(timeout=120)
        results.append([p.returncode, o.decode() + (e or b"").decode()])
    for i, master, reader, chunks in terminals:  # the terminal's output, read to its end
        reader.join(timeout=10)
        os.close(master)
        results[i][1] += b"".join(chunks).decode(errors="replace")
    return [tuple(r) for r in results]


def test_dist_env():
    assert dist_env({}) == (0, 1, 0)
    assert dist_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == (3, 4, 1)
    for bad in ({"RANK": "2", "WORLD_SIZE": "2"}, {"WORLD_SIZE": "x"}, {"WORLD_SIZE": "0"}):
        with pytest.raises(ValueError):
            dist_env(bad)


def test_two_ranks_equal_a_single_process_run(corpus, reference, tmp_path):
    corpus_dir, model = corpus
    out = tmp_path / "out"
    results = _spawn_ranks(corpus_dir, model, out, quiet=False)
    for rc, log in results:
        assert rc == 0, log[-3000:]
    assert "rank 1 of 2" in results[1][1] and "embedded" in results[0][1]
    # rank 0 shows the progress bar, the others none (trial: under torchrun no rank showed one)
    assert "embed:" in results[0][1] and "embed:" not in results[1][1], results[0][1][-2000:]
    assert_same_output(reference, out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["world_size"] == 2 and len(m["shards"]) >= 4
    # each shard was written by its rank: the shard files are those of the single-process run, byte for byte
    for s_ref, s_new in zip(json.loads((reference / "manifest.json").read_text())["shards"], m["shards"]):
        assert pq.read_table(reference / "shards" / f"{s_ref['name']}.parquet").equals(
            pq.read_table(out / "shards" / f"{s_new['name']}.parquet"))
    assert not (out / "ranks").exists() and not list(out.rglob("*.tmp"))
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0, res.output


@pytest.mark.slow  # two processes, started twice: about a minute on 2 cores
def test_a_killed_rank_fails_rank_0_and_resume_finishes(corpus, reference, tmp_path):
    corpus_dir, model = corpus
    out = tmp_path / "out"
    # rank 1 writes shards 1, 3, 5, ...: SIGKILL it right after shard 3 is committed
    (rc0, log0), (rc1, _) = _spawn_ranks(corpus_dir, model, out, kill_at={1: "shard-00003-json"})
    assert rc1 == -signal.SIGKILL
    assert rc0 == 1, log0[-3000:]
    assert "rank 1" in log0 and "exited without finishing" in log0 and "--resume" in log0
    assert not (out / "manifest.json").exists()
    assert (out / "shards" / "00003.json").exists() and not (out / "shards" / "00005.json").exists()

    # both ranks again with --resume: the complete shards are kept, the rest is written, rank 0 assembles
    kept = {f.name: f.stat().st_mtime_ns for f in (out / "shards").glob("*.json")}
    # the interrupted run's wall time, as progress.json records it (a trial: a resumed torchrun's seconds.total
    # left out the interrupted part); a large value the resumed part alone cannot reach
    (out / "progress.json").write_text(json.dumps({"shards": len(kept), "seconds": 1000.0}), encoding="utf-8")
    for rc, log in _spawn_ranks(corpus_dir, model, out, "--resume"):
        assert rc == 0, log[-3000:]
    assert json.loads((out / "manifest.json").read_text())["seconds"]["total"] >= 1000.0
    assert all((out / "shards" / name).stat().st_mtime_ns == t for name, t in kept.items())
    assert_same_output(reference, out)
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


@pytest.mark.slow  # two processes: about half a minute on 2 cores
def test_a_rank_started_with_other_options_fails_both(corpus, tmp_path):
    corpus_dir, model = corpus
    out = tmp_path / "out"
    (rc0, log0), (rc1, log1) = _spawn_ranks(corpus_dir, model, out,
                                            extra_by_rank={1: ["--strategy", "fixed:size=64"]})
    assert rc1 == 2 and "other options than rank 0" in log1 and "strategy" in log1, log1[-3000:]
    assert rc0 == 1 and "rank 1 failed" in log0, log0[-3000:]
    assert not (out / "manifest.json").exists()

