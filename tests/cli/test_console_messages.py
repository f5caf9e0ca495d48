"""What embed and compare say on the console (issue 36, section 5): the progress bar's counts, the unknown-token
summary, the Ctrl-C message, compare's table at a terminal's width, and `embed --strict`'s exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from typer.testing import CliRunner

from latechunk.cli import app

runner = CliRunner()


class _Bar:
    """tqdm's part that :func:`latechunk.ingest.stream.stream` uses, recorded."""

    bars: ClassVar[list[_Bar]] = []

    def __init__(self, total=None, initial=0, **kwargs):
        self.total, self.n, self.postfixes = total, initial, []
        _Bar.bars.append(self)

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, s, refresh=True):
        self.postfixes.append(s)

    def refresh(self):
        pass

    def close(self):
        pass


def _corpus_with_skips(root: Path) -> Path:
    """Three documents and three items that are skipped (an empty file, a bad JSON line, a record without text)."""
    src = root / "in"
    src.mkdir()
    for i in range(3):
        (src / f"doc{i}.md").write_text(f"# Note {i}\n\nHerons wait by the reeds at dawn, number {i}.\n",
                                        encoding="utf-8")
    (src / "empty.txt").write_text("  \n", encoding="utf-8")
    (src / "records.jsonl").write_text('not json\n{"id": "r1", "text": ""}\n', encoding="utf-8")
    return src


def test_progress_counts_skipped_items_apart(tmp_path, monkeypatch):
    """A trial's bar said "items written 17/17" while 14 were embedded and 3 skipped: the postfix counts the
    embedded and the skipped items apart, on a fresh run and on a resumed one (whose kept shards held skips)."""
    import tqdm.auto

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from tests.models import minilm_encoder

    src = _corpus_with_skips(tmp_path)
    encoder = minilm_encoder()  # loaded before tqdm is replaced (huggingface_hub subclasses it on import)
    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.bars = []
    out = tmp_path / "out"
    config = EmbedConfig(inputs=(src,), out=out, pipeline=PipelineConfig(strategies=("fixed:size=32",),
                                                                         group_tokens=16))
    manifest = ingest(config, encoder, progress=True)
    assert manifest["counts"]["documents_embedded"] == 3 and len(manifest["skipped"]) == 3
    (bar,) = _Bar.bars
    assert bar.postfixes[-1] == "3 embedded, 3 skipped (6/6 items)", bar.postfixes
    assert not any("written" in p for p in bar.postfixes)
    # resumed after the shards of the first items: the kept shards' skips count from the start
    shards = sorted((out / "shards").glob("*.json"))
    assert len(shards) > 2
    (out / "manifest.json").unlink()
    for f in (out / "shards").glob(f"{shards[-1].stem}.*"):
        f.unlink()
    _Bar.bars = []
    ingest(EmbedConfig(inputs=(src,), out=out, resume=True, pipeline=config.pipeline), encoder, progress=True)
    (bar,) = _Bar.bars
    assert bar.postfixes[-1] == "3 embedded, 3 skipped (6/6 items)", bar.postfixes


def test_unknown_tokens_summary_is_one_line(tmp_path):
    """A trial got one 250-character `unknown tokens:` line per document, under --quiet too: one line now (how many
    documents, their characters in all, where each is listed), the details in the manifest; none with --quiet."""
    src = tmp_path / "in"
    src.mkdir()
    for i, n in enumerate((150, 120, 110)):
        (src / f"blob{i}.md").write_text(f"Herons wait by the reeds. The key is {'Q' * n} and nothing else.\n",
                                         encoding="utf-8")
    (src / "plain.md").write_text("Herons wait by the reeds. They strike fast.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if "unknown token" in line]
    want = (f"unknown tokens: 3 document(s) with 380 character(s) in all read as the tokenizer's unknown token, in "
            "no vector (long words such as URLs, or characters outside its vocabulary): each is listed in "
            f"{out / 'manifest.json'} (unknown_tokens)")
    assert lines == [want], lines
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(u["doc_id"], u["unknown_chars"]) for u in manifest["unknown_tokens"]] == [
        ("blob0.md", 150), ("blob1.md", 120), ("blob2.md", 110)]
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(tmp_path / "q"), "--device", "cpu", "--quiet"])
    assert res.exit_code == 0 and "unknown token" not in res.output, res.output


def test_ctrl_c_message_is_the_same_fresh_and_resumed(tmp_path):
    """A trial stopped a fresh run and a `--resume` run in the same state and was told "nothing is kept: run again
    with --force" by one and "complete shards are kept: --resume" by the other. One message now, for the folder's
    state: what is kept and the exact command that goes on (which then finishes the run)."""
    import shlex

    from latechunk.cli import interrupted_message

    src = _corpus_with_skips(tmp_path)
    out = tmp_path / "out"
    opts = ["--strategy", "fixed:size=32", "--group-tokens", "16", "--device", "cpu", "-q"]
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), *opts])
    assert res.exit_code == 0, res.output
    shards = sorted((out / "shards").glob("*.json"))
    kept = [json.loads(p.read_text()) for p in shards[:2]]
    (out / "manifest.json").unlink()  # stopped while the third shard was written
    for p in shards[2:]:
        for f in (out / "shards").glob(f"{p.stem}.*"):
            f.unlink()
    fresh = ["embed", str(src), "--out", str(out), *opts]
    resumed = ["embed", str(src), "--out", str(out), "--resume", *opts]
    forced = ["embed", str(src), "--force", "--out", str(out), *opts]
    message = interrupted_message(fresh)
    assert message == interrupted_message(resumed) == interrupted_message(forced)
    command = shlex.join(["latechunk", "embed", str(src), "--out", str(out), *opts, "--resume"])
    items, chunks = kept[-1]["inputs"][1], sum(r["rows"] for r in kept)
    assert message == (f"interrupted (Ctrl-C); kept in {out}: 2 complete shard(s): the first {items} input items, "
                       f"{chunks} chunks; to continue: {command}"), message
    res = runner.invoke(app, shlex.split(command)[1:])  # the command it gives finishes the run
    assert res.exit_code == 0 and "the whole run, its interrupted part included" in res.output, res.output
    # stopped before any shard was complete: the same message again from either, and its command starts over
    (out / "manifest.json").unlink()
    for f in (out / "shards").iterdir():
        f.unlink()
    message = interrupted_message(fresh)
    assert message == interrupted_message(resumed) == interrupted_message(forced)
    assert message.startswith(f"interrupted (Ctrl-C); nothing is kept in {out} (no shard was complete yet")
    assert message.endswith(f"; to start again: {command}"), message
    res = runner.invoke(app, shlex.split(command)[1:])
    assert res.exit_code == 0 and json.loads((out / "manifest.json").read_text())["counts"]["documents_embedded"] == 3


def test_compare_table_fits_the_terminal(tmp_path, monkeypatch):
    """A trial's `compare` table was ~240 characters wide, folded into a column of letters on an 80-column
    terminal. At COLUMNS=80 and 120 every line fits: columns are left out (the costs and the metrics beyond the
    headline first, the metrics at the main k last), the line under the table names them and says that report.md
    has every column; a wide terminal gets the whole table."""
    import io

    from rich.console import Console

    import latechunk.eval.harness
    from latechunk.eval.report import load_result, print_table

    result = load_result(Path(__file__).resolve().parents[2] / "results" / "chroma_full")
    monkeypatch.setattr(latechunk.eval.harness, "run_compare", lambda *args, **kwargs: result)
    for columns in (80, 120):
        out = tmp_path / f"rep{columns}"
        res = runner.invoke(app, ["compare", "--dataset", "chroma", "--out", str(out), "-q"],
                            env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, res.output
        lines = [line for line in res.output.splitlines() if not line.startswith("report: ")]  # a path
        assert max(len(line) for line in lines) <= columns, "\n".join(lines)
        text = " ".join(res.output.split())
        assert "AR@5" in text and "SpanRecall@5" in text and "sentence_window" in text
        assert f"left out to fit {columns} columns" in text and f"every column is in {out / 'report.md'}" in text
        rows = [line for line in lines if line.startswith("│ fixed")]
        assert [r.split("│")[2].strip() for r in rows] == ["late", "naive"]  # one line per row: nothing folded
    assert "SpanRecall@10" in res.output  # 120 columns hold the other k too
    buf = io.StringIO()
    print_table(result, console=Console(file=buf, width=260, color_system=None))
    assert "left out" not in buf.getvalue() and "s (enc. + pool)" in buf.getvalue()


def test_embed_strict_exits_nonzero_when_an_input_is_skipped(tmp_path):
    """For CI jobs: `embed --strict` exits 3 (STRICT_EXIT_CODE) when a document was skipped, saying how many and
    where the list is, with the output written all the same; without --strict the exit stays 0. Entries never read
    as documents (a .pdf) do not count, and neither does a document an --append finds already indexed."""
    from latechunk.cli import STRICT_EXIT_CODE

    assert STRICT_EXIT_CODE not in (0, 1, 2, 130)
    src = _corpus_with_skips(tmp_path)
    (src / "paper.pdf").write_bytes(b"%PDF-1.4")
    opts = ["--strategy", "fixed:size=32", "--device", "cpu", "-q"]
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "plain"), *opts])
    assert res.exit_code == 0, res.output
    out = tmp_path / "strict"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--strict", *opts])
    assert res.exit_code == STRICT_EXIT_CODE, res.output
    assert (f"error: --strict: 3 input document(s) were skipped (each is listed above and in {out / 'manifest.json'}"
            "'s skipped list, with its reason)") in " ".join(res.output.split()).replace(" '", "'"), res.output
    assert json.loads((out / "manifest.json").read_text())["counts"]["documents_embedded"] == 3
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.md").write_text("# A\n\nHerons wait by the reeds.\n", encoding="utf-8")
    (clean / "paper.pdf").write_bytes(b"%PDF-1.4")  # not a document: not a skip for --strict
    res = runner.invoke(app, ["embed", str(clean), "--out", str(tmp_path / "c"), "--strict", *opts])
    assert res.exit_code == 0, res.output
    # --append: a document already in the index is no skip; an empty one is
    res = runner.invoke(app, ["embed", str(clean), "--out", str(tmp_path / "c"), "--append", "--strict", "-q"])
    assert res.exit_code == 0, res.output
    (clean / "b.md").write_text("# B\n\nEgrets stand still.\n", encoding="utf-8")
    (clean / "empty.md").write_text("\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(clean), "--out", str(tmp_path / "c"), "--append", "--strict", "-q"])
    assert res.exit_code == STRICT_EXIT_CODE and "--strict: 1 input document(s) were skipped" in res.output, res.output


def test_append_of_an_unchanged_folder_with_a_pdf_is_nothing_to_do(tmp_path):
    """Seen while testing --strict: appending an up-to-date folder again (a daily cron job) exited 1, "nothing
    appended: none of the 2 input items was embedded", because the folder also held a .pdf, which is never read
    as a document. It is "nothing new to append", exit 0, as without the .pdf."""
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("# A\n\nHerons wait by the reeds.\n", encoding="utf-8")
    (src / "paper.pdf").write_bytes(b"%PDF-1.4")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--append", "-q"])
    assert res.exit_code == 0 and "nothing new to append" in res.output, res.output
