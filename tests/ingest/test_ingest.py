"""Sharded, resumable ingest (latechunk/ingest/: folder policy, streaming + resume, shards, assembly); the input
readers it streams from: tests/io/test_io.py; several ranks: tests/ingest/test_ranks.py.

The main test kills `python -m latechunk embed` with SIGKILL at three different points of one run over the Chroma
corpus, resumes each time, and checks that the result equals an uninterrupted run: same ids in the same order,
same chunk rows, vectors equal within 1e-6, same accounting; the chunk texts of ``chunks.parquet`` are the
callers' own slices. To keep CI fast the run uses the small corpus of tests/corpus.py (a tiny random BERT, two
small Chroma corpora cut into parts, a small group budget: about ten shards).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.tokenize import DocumentTokenizer
from tests.corpus import ARGS, PARTS, assert_same_output, make_corpus
from tests.invariants import check_chunk_rows

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_reference_run_is_sharded_and_accounts_for_every_input(corpus, reference):
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
    # the chunk texts of chunks.parquet are slices of the files as the caller wrote them
    originals = {d["doc_id"]: (corpus[0] / d["source"]).read_bytes().decode("utf-8") for d in m["documents"]}
    check_chunk_rows(originals, table.to_pylist(), DocumentTokenizer.from_pretrained(str(corpus[1])))


def test_sigkill_at_three_points_then_resume_equals_uninterrupted_run(corpus, reference, tmp_path):
    corpus_dir, model = corpus
    out = tmp_path / "out"

    # 1. killed from outside, by watching the shards folder: as soon as shard 1 is committed
    proc = _spawn(corpus_dir, model, out)
    while not (out / "shards" / "00001.json").exists():  # no clock: the loop ends with the shard or the process
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        time.sleep(0.005)  # a poll interval, not a time limit
    proc.send_signal(signal.SIGKILL)
    _wait_killed(proc)
    assert not (out / "manifest.json").exists()
    n_after_kill1 = len(list((out / "shards").glob("*.json")))
    assert n_after_kill1 < len(list((reference / "shards").glob("*.json")))

    # 2. resumed, then killed in the middle of writing a shard (parquet in place, vectors only at a temp name)
    _wait_killed(_spawn(corpus_dir, model, out, "--resume", kill_at="shard-00005-npy.tmp"))
    assert (out / "shards" / "00005.parquet").exists() and (out / "shards" / "00005.npy.tmp").exists()
    assert not (out / "shards" / "00005.json").exists() and not (out / "manifest.json").exists()

    # 3. resumed, then killed while assembling (index.faiss whole at its temp name, chunks.parquet half written)
    _wait_killed(_spawn(corpus_dir, model, out, "--resume", kill_at="assemble-chunks.tmp"))
    assert (out / "index.faiss.tmp").exists() and (out / "chunks.parquet.tmp").exists()
    assert not (out / "index.faiss").exists()
    assert not (out / "manifest.json").exists()

    # resume to the end: identical to the uninterrupted run, and it verifies
    _embed_inproc(corpus_dir, model, out, "--resume")
    assert_same_output(reference, out)
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
    # third trial: --force wrote an index among a folder of documents (which later runs then refused to read)
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--model", str(model), *ARGS, "--force"])
    assert res.exit_code == 2 and "is not a latechunk output folder" in res.output and "keep.txt" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    (out / "keep.txt").unlink()
    (out / ".gitignore").write_text("*\n")  # hidden files are no obstacle
    assert runner.invoke(app, ["embed", str(doc), "--out", str(out), "--model", str(model), *ARGS,
                               "--force"]).exit_code == 0
    (out / "keep.txt").write_text("x")  # a latechunk output with a file of the user's beside it
    (out / "shards" / "00007.npy").write_bytes(b"junk")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--model", str(model), *ARGS, "--force"])
    assert res.exit_code == 0, res.output
    assert (out / "keep.txt").read_text() == "x" and not (out / "shards" / "00007.npy").exists()
    assert (out / ".gitignore").exists()
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


def test_resume_refuses_changed_inputs(corpus, tmp_path):
    _, model = corpus
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3):
        (src / f"d{i}.md").write_text(f"Document {i} talks about topic {i}. " * 40, encoding="utf-8")
    out = tmp_path / "out"
    _embed_inproc(src, model, out, "--group-tokens", "100")
    assert len(list((out / "shards").glob("*.npy"))) == 3  # one shard per document
    (out / "manifest.json").unlink()  # interrupted while assembling: a finished folder is not resumed at all
    before = {f: f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}
    (src / "d1.md").write_text("Something else entirely.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), *ARGS, "--group-tokens",
                              "100", "--resume"])
    assert res.exit_code == 2 and "inputs changed" in res.output
    # the error names the first shard whose items differ and what is read there now
    assert "shard 1 consumed input items 1-1, and they now differ (the text of d1.md changed)" in \
        " ".join(res.output.split())
    assert {f: f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()} == before  # nothing touched
    (src / "d1.md").write_text("Document 1 talks about topic 1. " * 40, encoding="utf-8")  # as it was
    (src / "d0a.md").write_text("A new note between the two.", encoding="utf-8")  # sorted after d0.md
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), *ARGS, "--group-tokens",
                              "100", "--resume"])
    assert res.exit_code == 2 and "(d0a.md is new there)" in " ".join(res.output.split()), res.output


def test_embed_progress_bar_counts_every_input_item(tmp_path, capsys, monkeypatch):
    import sys

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from tests.models import minilm_encoder

    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"d{i}.md").write_text(f"Document {i} about rivers. " * 5, encoding="utf-8")
    (src / "bad.md").write_bytes(b"\x00\x01binary")
    config = EmbedConfig(inputs=(src,), out=tmp_path / "out",
                         pipeline=PipelineConfig(strategies=("fixed:size=16",), group_tokens=40))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar shows on a terminal only
    ingest(config, minilm_encoder(), progress=True)
    err = capsys.readouterr().err
    assert "embed" in err and "4/4" in err


def test_progress_counts_documents_only_no_longer_one_long_file_moves_in_text_bytes(tmp_path, monkeypatch):
    """Issue 10, fault 5: embed's bar counts bytes of document text (total: the input files' sizes, counted
    ahead), moved as each forward batch finishes: one long document moves it many times before its shard is
    written, and it ends at the total."""
    import tqdm.auto

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from tests.models import minilm_encoder

    bars = []

    class Recorder:
        def __init__(self, total=None, initial=0, unit="it", **kwargs):
            self.total, self.n, self.unit, self.updates, self.postfix = total, initial, unit, [], ""
            bars.append(self)

        def update(self, n=1):
            self.n += n
            self.updates.append(n)

        def set_postfix_str(self, s, refresh=True):
            self.postfix = s

        def refresh(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    src = tmp_path / "in"
    src.mkdir()
    text = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk, all was quiet." for i in range(80))
    (src / "long.txt").write_text(text, encoding="utf-8")
    config = EmbedConfig(inputs=(src,), out=tmp_path / "out",
                         pipeline=PipelineConfig(strategies=("fixed:size=64",), macro_window=64))
    shards_done = []
    ingest(config, minilm_encoder(batch_tokens=128), progress=True,
           on_shard=lambda rec: shards_done.append(len(bars[0].updates)))
    (bar,) = bars
    assert bar.unit == "B" and bar.total == len(text.encode()) == bar.n
    assert shards_done[0] > 5  # the one document moved the bar window batch by window batch before its shard
    assert bar.postfix == "1 embedded, 0 skipped (1/1 items)"


def test_a_resumed_runs_bar_starts_at_the_bytes_already_embedded_and_ends_at_its_total(tmp_path, monkeypatch):
    """The bar of a resumed run started at the consumed items' share of the bytes *by number*: after three short
    documents out of four (the fourth long), it started at 75% and grew past its total. It starts at the
    consumed documents' own bytes now."""
    import tqdm.auto

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from tests.models import minilm_encoder

    bars = []

    class Recorder:
        def __init__(self, total=None, initial=0, **kwargs):
            self.total, self.n, self.initial, self.high = total, initial, initial, initial
            bars.append(self)

        def update(self, n=1):
            self.n += n
            self.high = max(self.high, self.n)

        def set_postfix_str(self, s, refresh=True):
            pass

        def refresh(self):
            pass

        def close(self):
            pass

    src = tmp_path / "in"
    src.mkdir()
    short = [f"Short note {i} on rivers: the water rose at dawn, the banks held, and the ferry ran late." for i in range(3)]
    long = " ".join(f"Sentence {i} of the long report on the delta and its channels." for i in range(60))
    for i, t in enumerate([*short, long]):
        (src / f"{i}.txt").write_text(t, encoding="utf-8")
    out = tmp_path / "out"
    config = EmbedConfig(inputs=(src,), out=out, pipeline=PipelineConfig(strategies=("fixed:size=64",),
                                                                         group_tokens=16))
    ingest(config, minilm_encoder())
    shards = sorted((out / "shards").glob("*.npy"))
    assert len(shards) == 4
    (out / "manifest.json").unlink()
    shards[-1].unlink()  # the long document's shard: killed while writing it
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    ingest(EmbedConfig(inputs=(src,), out=out, resume=True, pipeline=config.pipeline), minilm_encoder(), progress=True)
    (bar,) = bars
    assert bar.initial == sum(len(t.encode()) for t in short)
    assert bar.total == sum(len(t.encode()) for t in [*short, long]) == bar.n == bar.high


def test_a_folder_that_cannot_be_written_is_one_clear_error(tmp_path):
    """Trial of issue 15: `--append` to a read-only folder printed an OSError traceback from the lock file."""
    from latechunk.ingest.folder import writer_lock

    blocker = tmp_path / "a_file"
    blocker.write_text("x", encoding="utf-8")
    # its parent is a file: mkdir fails as on a read-only file system
    with pytest.raises(ValueError, match="cannot write to the output folder .*need a writable folder"), \
            writer_lock(blocker / "out"):
        pass


def test_write_json_streams_an_indented_file_with_the_same_bytes(tmp_path):
    """An indented JSON file (the manifest lists every document) is written piece by piece: the bytes of
    ``OutputFolder.json_bytes``, with Python memory far below the file's size (``json.dumps`` of an indented dump
    holds the encoder's pieces, some six times the text, then the text and its UTF-8 copy: 0.5 GB at 320,000
    documents); a value JSON cannot encode leaves no temp file."""
    import tracemalloc

    from latechunk.ingest import files
    from latechunk.output import OutputFolder

    docs = [{"doc_id": f"d{i} \u00e9\u4e2d\U0001f600", "chunks": i % 7, "sha256": f"{i:064x}", "source": f"c.jsonl:{i}",
             "tokens": i, "score": i / 3, "nested": {"empty": {}, "list": [], "none": None, "flag": i % 2 == 0}}
            for i in range(20000)]
    obj = {"format": "x", "documents": docs, "seconds": {"total": 1.5, "nan": float("nan")}}
    for indent in (None, 1, 2):
        path = tmp_path / f"m{indent}.json"
        tracemalloc.start()
        files.write_json(path, obj, indent=indent)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        data = path.read_bytes()
        assert data == OutputFolder.json_bytes(obj, indent)
        if indent is not None:
            assert peak < len(data) // 2, (indent, peak, len(data))
    bad = tmp_path / "bad.json"
    with pytest.raises(TypeError):
        files.write_json(bad, {"documents": docs[:10] + [{"x": object()}]}, indent=2)
    assert not bad.exists() and not files.tmp_path(bad).exists()


def test_a_resumed_runs_earlier_seconds_are_its_wall_time_not_the_sum_of_overlapping_stages(tmp_path):
    """Scale trial: seconds.total of a resumed 25 s run said 41 s: the earlier part counted the larger of
    progress.json's wall seconds and the *sum* of every stage, though tokenizing and splitting run beside the
    encoder. It is progress.json's wall time; without one, the largest single stage (a lower bound)."""
    from latechunk.ingest import _earlier_seconds
    from latechunk.ingest.files import write_json
    from latechunk.output import OutputFolder

    folder = OutputFolder(tmp_path)
    records = [{"stats": {"seconds": {"tokenize": 5.0, "split": 4.0, "late_encode": 10.0}}}] * 2
    write_json(folder.progress_path, {"shards": 2, "seconds": 24.5})
    assert _earlier_seconds(folder, records) == 24.5
    folder.progress_path.unlink()
    assert _earlier_seconds(folder, records) == 20.0
    assert _earlier_seconds(folder, []) == 0.0


def test_seconds_assemble_counts_the_parse_alarms_and_the_manifest_build(corpus, tmp_path, monkeypatch):
    """Scale trial: seconds.assemble stopped before the parse alarms and the shard hashes (about 2 s at 320,000
    documents, counted nowhere). Only the manifest's own write, which records it, is left out."""
    import importlib

    assemble = importlib.import_module("latechunk.ingest.assemble")  # the package's `assemble` is the function
    real = assemble.parse_alarms

    def slow(rows):
        time.sleep(0.5)
        return real(rows)

    monkeypatch.setattr(assemble, "parse_alarms", slow)
    corpus_dir, model = corpus
    _embed_inproc(corpus_dir, model, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["seconds"]["assemble"] >= 0.5


def test_verify_after_a_killed_append_says_what_left_the_extra_shards(corpus, reference, tmp_path):
    """Fresh-user trial: after a SIGKILLed `--append`, verify listed each shard file beyond the manifest and
    exited 1 with no word of what to do; it now says an interrupted append left them, and the same append again
    repairs the folder (verify passes)."""
    import shutil

    _, model = corpus
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    new = tmp_path / "new"
    new.mkdir()
    for i in range(3):
        (new / f"extra{i}.md").write_text(f"# Extra {i}\n\n" + "A new note on harbours and tides. " * 60, encoding="utf-8")
    first_new = len(json.loads((out / "manifest.json").read_text())["shards"])
    proc = _spawn(new, model, out, "--append", kill_at=f"shard-{first_new:05d}-json")
    _wait_killed(proc)
    # many leftovers (more than verify prints of one kind): the explanation still comes, first
    for k in range(first_new + 1, first_new + 12):
        for ext in ("json", "parquet", "npy"):
            (out / "shards" / f"{k:05d}.{ext}").write_bytes(b"left by a killed append")
    (out / "shards" / "notes.txt").write_text("mine", encoding="utf-8")  # not latechunk's: never removed
    res = runner.invoke(app, ["verify", str(out)])
    lines = [x for x in res.output.splitlines() if x.startswith("problem:")]
    assert res.exit_code == 1 and "an interrupted `--append` (or Index.add) left them" in lines[0], res.output
    assert "shard file(s) beyond the manifest" in lines[0]
    assert f"shards/{first_new:05d}.json is not part of the manifest" in res.output, res.output
    _embed_inproc(new, model, out, "--append")
    assert (out / "shards" / "notes.txt").read_text(encoding="utf-8") == "mine"
    (out / "shards" / "notes.txt").unlink()
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output


def _append_files(tmp_path: Path) -> Path:
    new = tmp_path / "new"
    new.mkdir()
    for i in range(3):
        (new / f"extra{i}.md").write_text(f"# Extra {i}\n\n" + "A new note on harbours and tides. " * 60, encoding="utf-8")
    return new


def test_an_append_killed_while_assembling_leaves_the_folder_serving_its_last_state(corpus, reference, tmp_path):
    """Fresh-user trial: a SIGKILL during an append's assembly replaced index.faiss before chunks.parquet and the
    manifest, so search and Index.load refused the folder ("index has 1831 vectors but chunks.parquet has 1468
    rows") until the next append. Every assembled file is now whole under its temp name before any is renamed:
    killed before the commit journal, the folder serves its last state; the next append carries on."""
    import shutil

    from latechunk.output import read_output

    _, model = corpus
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    before = {n: (out / n).read_bytes() for n in ("index.faiss", "chunks.parquet", "manifest.json")}
    new = _append_files(tmp_path)
    for point in ("assemble-index.tmp", "assemble-chunks.tmp", "assemble-manifest.tmp"):
        _wait_killed(_spawn(new, model, out, "--append", kill_at=point))
        assert {n: (out / n).read_bytes() for n in before} == before, point
        index, table, manifest = read_output(out)  # searchable, in its last finished state
        assert index.ntotal == table.num_rows == manifest["counts"]["chunks"]
        assert not (out / "commit.json").exists()
    assert (out / "manifest.json.tmp").exists()  # the last kill: every file whole, no journal yet
    res = runner.invoke(app, ["search", str(out), "harbours and tides", "-k", "3"])
    assert res.exit_code == 0, res.output
    _embed_inproc(new, model, out, "--append")
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output
    appended = json.loads((out / "manifest.json").read_text())
    assert appended["counts"]["documents_embedded"] == json.loads(before["manifest.json"])["counts"][
        "documents_embedded"] + 3


def test_an_append_killed_between_its_renames_is_finished_by_the_next_reader(corpus, reference, tmp_path):
    """Killed after the commit journal, with only chunks.parquet renamed: the folder's new state was decided, and
    the next reader (search, Index.load, verify) finishes the renames, so it answers from the appended folder
    and verify passes; the result equals an append that was never killed."""
    import shutil

    from latechunk.output import read_output

    _, model = corpus
    new = _append_files(tmp_path)
    whole = tmp_path / "whole"
    shutil.copytree(reference, whole)
    _embed_inproc(new, model, whole, "--append")
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    _wait_killed(_spawn(new, model, out, "--append", kill_at="commit-renamed-1"))
    assert (out / "commit.json").exists() and (out / "index.faiss.tmp").exists()
    assert not (out / "chunks.parquet.tmp").exists()  # renamed first: the index alone is still the old one
    index, table, manifest = read_output(out)
    assert not (out / "commit.json").exists() and not list(out.glob("*.tmp"))
    assert index.ntotal == table.num_rows == manifest["counts"]["chunks"]
    assert_same_output(whole, out)
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output


def test_a_commit_interrupted_in_a_read_only_folder_says_how_to_finish_it(reference, tmp_path, monkeypatch):
    """A folder whose commit was interrupted, opened where it cannot be written (a read-only mount: os.replace
    fails): a clear error naming what to do, not a traceback; opened writable, the commit is finished."""
    import shutil

    from latechunk.output import OutputFolder, _identity, read_output

    out = tmp_path / "out"
    shutil.copytree(reference, out)
    folder = OutputFolder(out)
    shutil.copy(out / "index.faiss", out / "index.faiss.tmp")
    journal = {"rename": {"index.faiss": _identity(out / "index.faiss.tmp")}, "remove": {}}
    (out / "commit.json").write_text(json.dumps(journal), encoding="utf-8")

    def refuse(src, dst):
        raise PermissionError(30, "Read-only file system", str(src))

    with monkeypatch.context() as m:
        m.setattr(os, "replace", refuse)
        with pytest.raises(ValueError, match="killed while committing its files.*open the folder once where it is writable"):
            read_output(out)
    assert (out / "commit.json").exists()
    assert folder.finish_commit() and not (out / "commit.json").exists() and not (out / "index.faiss.tmp").exists()
    assert not folder.finish_commit()  # nothing left to finish
    (out / "commit.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="commit journal of an interrupted assembly.*unreadable"):
        folder.read_manifest()
    with pytest.raises(ValueError, match="only"):
        folder.begin_commit(["progress.json"])  # run.json is committed by reindex; progress.json never


def test_a_journal_finished_late_never_moves_a_newer_assemblys_temp_files(reference, tmp_path):
    """Fresh-user trial (a race read from the code): a reader that reads an old journal, stalls, and finishes it
    after a newer assembly has begun writing ``index.faiss.tmp`` would rename that half-written file into place.
    The journal names each file by its size and mtime: a temp file of the same name that is not the journal's,
    or an ``index.ivfdata`` the journal did not see, is left alone."""
    import shutil

    from latechunk.output import OutputFolder, _identity

    out = tmp_path / "out"
    shutil.copytree(reference, out)
    folder = OutputFolder(out)
    shutil.copy(out / "index.faiss", out / "index.faiss.tmp")
    stale = {"rename": {"index.faiss": _identity(out / "index.faiss.tmp")}, "remove": {"index.ivfdata": [1, 2]}}
    os.replace(out / "index.faiss.tmp", out / "index.faiss")  # the old commit's rename, done long ago
    index_before = (out / "index.faiss").read_bytes()
    (out / "index.faiss.tmp").write_bytes(b"half of a newer assembly's index")  # a newer assembly writes its own
    (out / "index.ivfdata").write_bytes(b"a newer IVF index's lists")
    (out / "commit.json").write_text(json.dumps(stale), encoding="utf-8")
    assert folder.finish_commit()
    assert (out / "index.faiss").read_bytes() == index_before  # not replaced by the newer temp file
    assert (out / "index.faiss.tmp").read_bytes() == b"half of a newer assembly's index"
    assert (out / "index.ivfdata").exists() and not (out / "commit.json").exists()


def test_a_folder_copied_mid_commit_is_finished_or_refused_never_left_half_done(reference, tmp_path):
    """Fresh-user trial 2: a copy (cp -a, rsync, tar) of a folder killed between the commit's renames gets new
    inodes, the journal matched nothing, readers dropped it and kept a half-renamed folder ("index has 80 vectors
    but chunks.parquet has 86 rows"; an IVF copy crashed in search). A copy that keeps file times now finishes the
    commit; one that lost them is refused with what to do, and an append (which rebuilds) drops the journal."""
    import shutil

    from latechunk.output import OutputFolder, _identity, read_output

    src = tmp_path / "src"
    shutil.copytree(reference, src)
    shutil.copy2(src / "index.faiss", src / "index.faiss.tmp")
    shutil.copy2(src / "chunks.parquet", src / "chunks.parquet.tmp")
    journal = {"rename": {n: _identity(src / (n + ".tmp")) for n in ("chunks.parquet", "index.faiss")},
               "remove": {}}
    (src / "commit.json").write_text(json.dumps(journal), encoding="utf-8")
    os.replace(src / "chunks.parquet.tmp", src / "chunks.parquet")  # killed after the first rename
    kept = tmp_path / "copy_a"
    shutil.copytree(src, kept)  # copy2: times kept, inodes new
    index, table, _ = read_output(kept)
    assert index.ntotal == table.num_rows  # the commit finished: index and chunk table of one assembly
    assert not (kept / "commit.json").exists() and not (kept / "index.faiss.tmp").exists()
    lost = tmp_path / "copy_plain"
    shutil.copytree(src, lost, copy_function=shutil.copyfile)  # times lost
    with pytest.raises(ValueError, match=r"names chunks\.parquet, index\.faiss as files that are not here as it recorded them.*"
                                         r"--append` \(or Index.add\) on it again"):
        read_output(lost)
    assert (lost / "commit.json").exists()  # kept for the writer, never silently dropped by a reader
    res = runner.invoke(app, ["verify", str(lost)])
    assert res.exit_code == 1 and "copied mid-commit" in " ".join(res.output.split()), res.output
    assert OutputFolder(lost).finish_commit(repair=True) and not (lost / "commit.json").exists()


def test_an_index_that_cannot_be_trained_is_replaced_on_resume_without_encoding_again(corpus, tmp_path):
    """Trial finding: `--index PQ384x4` on a few vectors failed after every document was encoded, and the folder
    could not be finished (--resume --index Flat was refused as a changed setting, reindex needs a manifest):
    only --force, encoding everything again. The index is built from the shards, so --resume may change it."""
    src, model = corpus
    out = tmp_path / "out"
    base = ["embed", str(src), "--out", str(out), "--model", str(model), *ARGS]
    res = runner.invoke(app, [*base, "--index", "PQ16x8"])
    assert res.exit_code == 2 and "cannot train index 'PQ16x8'" in res.output, res.output
    assert "--resume and --index Flat" in " ".join(res.output.split())
    shards = sorted((out / "shards").iterdir())
    stamps = {p.name: p.stat().st_mtime_ns for p in shards}
    res = runner.invoke(app, [*base, "--resume", "--strategy", "fixed:size=7"])  # other settings: still refused
    assert res.exit_code == 2 and "differ" in res.output, res.output
    res = runner.invoke(app, [*base, "--resume", "--index", "Flat"])
    assert res.exit_code == 0, res.output
    assert {p.name: p.stat().st_mtime_ns for p in sorted((out / "shards").iterdir())} == stamps  # not encoded again
    assert json.loads((out / "run.json").read_text())["settings"]["index"]["factory"] == "Flat"
    assert json.loads((out / "manifest.json").read_text())["index"]["factory"] == "Flat"
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


def test_an_append_that_fails_leaves_no_shard_behind(corpus, tmp_path):
    """Trial finding: an append whose index could not be trained left its shards beyond the manifest, and verify
    then failed, calling it an interrupted append; the error now removes them and points at reindex."""
    src, model = corpus
    empty = tmp_path / "unk"
    empty.mkdir()
    (empty / "w.txt").write_text("z" * 5000, encoding="utf-8")  # one word over the tokenizer's limit: all [UNK]
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(empty), "--out", str(out), "--model", str(model), *ARGS, "--index", "PQ8"])
    assert res.exit_code == 1, res.output  # nothing to embed: a folder with 0 vectors, and an untrained PQ index
    before = sorted(p.name for p in (out / "shards").iterdir())
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), *ARGS, "--append"])
    assert res.exit_code == 2 and "cannot train index 'PQ8'" in res.output, res.output
    assert "reindex" in res.output and "Nothing was appended" in " ".join(res.output.split())
    assert sorted(p.name for p in (out / "shards").iterdir()) == before
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0
