"""The low-severity CLI faults a fresh-user trial found (issue 36): each test is named for its fault and failed
before the fix."""

from __future__ import annotations

import re
from typing import ClassVar

from typer.testing import CliRunner

from latechunk.cli import app

runner = CliRunner()


def _help_raw(command: str) -> str:
    """``latechunk COMMAND --help`` as printed, 200 columns wide."""
    res = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}, prog_name="latechunk")
    assert res.exit_code == 0, res.output
    return res.output


def _help(command: str) -> str:
    """``latechunk COMMAND --help`` as one line of words (wrapping undone)."""
    return " ".join(_help_raw(command).split())


def _option_help(command: str, option: str) -> str:
    """The help of ``option`` of ``command`` as one line: its option line and the continuation lines under it."""
    lines = _help_raw(command).splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s+(?:-\w, )?{re.escape(option)}\b", line))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.strip() or re.match(r"\s{1,4}-", line):  # the next option, or the end of the options
            break
        block.append(line)
    return " ".join(" ".join(block).split())


def test_help_never_says_a_setting_of_the_run():
    """Fault 6: `--id-field`, `--encoding-errors`, `--metadata-fields` and `--dedup` ended their help with "A
    setting of the run.", which tells a reader nothing: each now says what it means (run.json records the value,
    and which of --resume, --append and --reuse keep it)."""
    names = [c.name or c.callback.__name__ for c in app.registered_commands if not c.hidden]
    for name in names:
        assert "setting of the run" not in _help(name).lower(), name
    for option in ("--id-field", "--encoding-errors", "--metadata-fields", "--dedup"):
        assert "Recorded in run.json: --resume" in _option_help("embed", option), option


def test_chunk_help_describes_chunk_not_embed():
    """Fault 5: `latechunk chunk --help` spoke of manifest.json, `search --where`, export and "a setting of the
    run" (run.json), which belong to embed's output folder. It describes chunk's own output now: one JSONL record
    per chunk with its char and token spans, and what each shared option does in chunk."""
    text = _help("chunk")
    for word in ("manifest", "--where", "export", "run.json", "Index.search", "chunk table"):
        assert word not in text, word
    assert "JSONL" in text and "char_start, char_end" in text and "token_start, token_end" in text
    assert "metadata object" in _option_help("chunk", "--metadata-fields")
    assert "doc_id" in _option_help("chunk", "--id-field")
    assert "semantic" in _option_help("chunk", "--device")
    assert "tokenizer" in _option_help("chunk", "--model")
    # embed keeps its own help for the same options
    assert "search --where" in _option_help("embed", "--metadata-fields")
    assert "manifest.json" in _option_help("embed", "--encoding-errors")


#: UTF-8 text with one stray 0xFF byte (read with U+FFFD under --encoding-errors replace)
_STRAY = "# Prices\n\nThe café’s tea — 3 € — is très bon.\n\n".encode() + b"Broken \xff here.\n"


def test_quiet_prints_no_degraded_line(tmp_path):
    """Fault 1: under --quiet, embed still printed "degraded: N document(s) read with U+FFFD ..." and chunk a note
    per such document (--encoding-errors replace). --quiet prints nothing but errors now; embed's manifest keeps
    the list (degraded), and without --quiet both commands still say it."""
    import json

    from tests.models import save_tiny_bert

    src = tmp_path / "in"
    src.mkdir()
    (src / "prices.md").write_bytes(_STRAY)
    (src / "fine.md").write_text("# Fine\n\nAll of it is UTF-8.\n", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model", layers=1)
    common = ["--device", "cpu", "--model", str(model), "--encoding-errors", "replace"]
    loud = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "loud"), *common])
    assert loud.exit_code == 0, loud.output
    assert "degraded: 1 document(s)" in loud.output
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "q"), *common, "--quiet"])
    assert res.exit_code == 0, res.output
    assert "degraded" not in res.stderr and "U+FFFD" not in res.output, res.output
    manifest = json.loads((tmp_path / "q" / "manifest.json").read_text(encoding="utf-8"))
    assert [d["doc_id"] for d in manifest["degraded"]] == ["prices.md"]

    loud = runner.invoke(app, ["chunk", str(src), "--out", str(tmp_path / "c.jsonl"), *common])
    assert loud.exit_code == 0 and "note: prices.md: 1 byte not UTF-8" in loud.stderr, loud.output
    res = runner.invoke(app, ["chunk", str(src), "--out", str(tmp_path / "q.jsonl"), *common, "-q"])
    assert res.exit_code == 0, res.output
    assert "U+FFFD" not in res.stderr and "note:" not in res.stderr, res.stderr
    assert (tmp_path / "q.jsonl").read_text(encoding="utf-8") == (tmp_path / "c.jsonl").read_text(encoding="utf-8")


def _chunk_documents_that_stop(monkeypatch, error: BaseException):
    """Make chunk's chunk_documents raise ``error`` after its first document (Ctrl-C or a failure mid-run)."""
    import latechunk.pipeline

    real = latechunk.pipeline.chunk_documents

    def stopping(*args, **kwargs):
        for i, item in enumerate(real(*args, **kwargs)):
            if i == 1:
                raise error
            yield item

    monkeypatch.setattr(latechunk.pipeline, "chunk_documents", stopping)


def test_interrupted_chunk_leaves_no_tmp_file(tmp_path, monkeypatch):
    """Fault 3: Ctrl-C during `latechunk chunk ... --out F` left F.tmp behind. The temporary file is removed on an
    interrupt or an error, F is not created, and an F that existed (--force) keeps its content."""
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"d{i}.md").write_text(f"# Doc {i}\n\nHerons wait by the reeds at dawn, number {i}.\n",
                                      encoding="utf-8")
    out = tmp_path / "chunks.jsonl"
    for error in (KeyboardInterrupt(), RuntimeError("disk gone")):
        with monkeypatch.context() as m:
            _chunk_documents_that_stop(m, error)
            res = runner.invoke(app, ["chunk", str(src), "--out", str(out), "-q", "--strategy", "recursive"])
        assert res.exit_code != 0, res.output
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in"], (error, list(tmp_path.iterdir()))
    out.write_text("the earlier run's chunks\n", encoding="utf-8")
    with monkeypatch.context() as m:
        _chunk_documents_that_stop(m, KeyboardInterrupt())
        res = runner.invoke(app, ["chunk", str(src), "--out", str(out), "--force", "-q", "--strategy", "recursive"])
    assert res.exit_code != 0
    assert out.read_text(encoding="utf-8") == "the earlier run's chunks\n"
    assert not out.with_name(out.name + ".tmp").exists()
    # uninterrupted, the file is written and the temporary one renamed
    res = runner.invoke(app, ["chunk", str(src), "--out", str(out), "--force", "-q", "--strategy", "recursive"])
    assert res.exit_code == 0, res.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunks.jsonl", "in"]


class _Bar:
    """The part of tqdm that embed's and chunk's progress bars use, recorded (shown as if on a terminal)."""

    bars: ClassVar[list[_Bar]] = []

    def __init__(self, total=None, initial=0, **kwargs):
        self.total, self.n, self.kwargs, self.postfixes, self.totals = total, initial, kwargs, [], [total]
        _Bar.bars.append(self)

    def __setattr__(self, name, value):
        if name == "total" and "totals" in self.__dict__:
            self.totals.append(value)
        super().__setattr__(name, value)

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, s, refresh=True):
        self.postfixes.append(s)

    def refresh(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _corpus_with_skips(root):
    """Three documents and three items that are skipped (an empty file, a bad JSON line, a record without text)."""
    src = root / "in"
    src.mkdir()
    for i in range(3):
        (src / f"doc{i}.md").write_text(f"# Note {i}\n\nHerons wait by the reeds at dawn, number {i}.\n",
                                        encoding="utf-8")
    (src / "empty.txt").write_text("  \n", encoding="utf-8")
    (src / "records.jsonl").write_text('not json\n{"id": "r1", "text": ""}\n', encoding="utf-8")
    return src


def test_chunk_progress_counts_skipped_items(tmp_path, monkeypatch):
    """Fault 7: chunk's bar counted documents only ("3 doc"), with no total and no word of the items skipped.
    It counts the input items as embed's does: total counted ahead, chunked and skipped apart."""
    import tqdm.auto

    src = _corpus_with_skips(tmp_path)
    # a first run loads the tokenizer's libraries before tqdm is replaced (huggingface_hub subclasses it on import)
    assert runner.invoke(app, ["chunk", str(src), "--out", str(tmp_path / "first.jsonl"), "-q"]).exit_code == 0
    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.bars = []
    res = runner.invoke(app, ["chunk", str(src), "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0, res.output
    (bar,) = _Bar.bars
    assert bar.postfixes[-1] == "3 chunked, 3 skipped (6/6 items)", bar.postfixes
    assert bar.total == 6 and bar.n == 6
    assert "(3 skipped)" in res.stderr  # the summary line, as before


def test_embed_progress_total_does_not_shrink_when_inputs_are_skipped(tmp_path, monkeypatch):
    """Fault 2: embed's bar set its total to the bytes done at the end, so with skipped inputs (an empty file, a
    bad JSONL line) the total shrank (206 -> 170 bytes here). The total stays what was found ahead: skipped items
    count as done (and as skipped in the postfix), the bar ends full."""
    import tqdm.auto

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from latechunk.io import count_input_bytes
    from tests.models import minilm_encoder

    src = _corpus_with_skips(tmp_path)
    encoder = minilm_encoder()  # loaded before tqdm is replaced (huggingface_hub subclasses it on import)
    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.bars = []
    config = EmbedConfig(inputs=(src,), out=tmp_path / "out", pipeline=PipelineConfig(strategies=("fixed:size=32",),
                                                                                      group_tokens=16))
    manifest = ingest(config, encoder, progress=True)
    assert len(manifest["skipped"]) == 3
    (bar,) = _Bar.bars
    found = count_input_bytes([src])
    assert bar.totals == [found], bar.totals  # never changed, so never shrank
    assert bar.n == found
    assert bar.postfixes[-1] == "3 embedded, 3 skipped (6/6 items)", bar.postfixes


def test_embed_progress_bar_only_on_a_terminal(tmp_path, capsys, monkeypatch):
    """Fault 4: embed wrote its progress bar (carriage returns, "embed: 40%|...") into stderr redirected to a
    file, although its help says the bar shows on a terminal only. It shows only when stderr is a TTY; the
    summary lines are printed either way."""
    import sys

    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.ingest import ingest
    from tests.models import minilm_encoder, save_tiny_bert

    src = _corpus_with_skips(tmp_path)
    model = save_tiny_bert(tmp_path / "model", layers=1)
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--device", "cpu", "--model",
                              str(model)])  # stderr is not a terminal here
    assert res.exit_code == 0, res.output
    assert "\r" not in res.stderr and "%|" not in res.stderr and "B/s" not in res.stderr, res.stderr
    assert "skipped empty.txt" in res.stderr and res.stdout.startswith("embedded 3/6 documents")

    encoder = minilm_encoder()
    for tty in (False, True):
        capsys.readouterr()
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        config = EmbedConfig(inputs=(src,), out=tmp_path / f"tty{tty}",
                             pipeline=PipelineConfig(strategies=("fixed:size=32",)))
        ingest(config, encoder, progress=True)
        err = capsys.readouterr().err
        assert ("3 embedded, 3 skipped (6/6 items)" in err) is tty, err


def test_ctrl_c_exits_at_once_without_the_interpreters_teardown(monkeypatch, capsys):
    """Fault 8: after Ctrl-C the message came at once but the process took ~2.5 s to exit under load. What ran
    then was CPython's finalisation (a full collection and the freeing of torch, transformers and the model: gdb
    showed finalize_modules -> gc_collect_main), not a thread join. After the message the console script now
    runs the atexit callbacks (the sentence workers' pipes closed, logs flushed), flushes stdout/stderr and ends
    with os._exit(130), skipping the teardown. Other exits (an error's 2, --strict's 3) are left as they were."""
    import atexit
    import logging
    import os
    import sys
    import warnings

    import pytest

    from latechunk import cli

    class Exited(Exception):
        pass

    calls = []

    def fake_exit(code):
        calls.append(("os._exit", code))
        raise Exited

    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # main() sets it for the process
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append(("atexit",)))
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(sys, "argv", ["latechunk", "chunk", "docs"])
    for stop in (KeyboardInterrupt(), SystemExit(130)):  # Ctrl-C, or typer's exit 130 for it

        def interrupted(stop=stop):
            raise stop

        monkeypatch.setattr(cli, "app", interrupted)
        calls.clear()
        with pytest.raises(Exited):
            cli.main()
        assert calls == [("atexit",), ("os._exit", 130)], calls
        assert "interrupted (Ctrl-C)" in capsys.readouterr().err
    for code in (0, 2, 3):

        def ends(code=code):
            raise SystemExit(code)

        monkeypatch.setattr(cli, "app", ends)
        calls.clear()
        with pytest.raises(SystemExit) as info:
            cli.main()
        assert info.value.code == code and calls == []


def test_ctrl_c_exit_keeps_atexit_and_buffered_output():
    """Fault 8, in a real process: exit status 130, the atexit callbacks ran, and what stdout had buffered is out."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import atexit, sys\n"
        "import latechunk.cli as cli\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "def app():\n"
        "    sys.stdout.write('buffered line')\n"
        "    raise KeyboardInterrupt\n"
        "cli.app = app\n"
        "sys.argv = ['latechunk', 'chunk', 'docs']\n"
        "cli.main()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 130, res.stderr
    assert res.stdout == "buffered line"
    assert res.stderr.splitlines()[-2:] == ["interrupted (Ctrl-C)", "atexit ran"], res.stderr
