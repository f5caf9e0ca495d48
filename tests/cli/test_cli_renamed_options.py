"""One name, one meaning on the command line (issue 37 §4): every renamed option
(latechunk.config.names.RENAMED_OPTIONS) keeps working under its old spelling, hidden from --help, with one
deprecation line on stderr naming the new one; its value reaches the command's config; both spellings together
are refused."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config.names import RENAMED_OPTIONS

runner = CliRunner()


class Stop(Exception):
    """Raised by a stand-in for the function a command calls, once it has the config."""


@pytest.fixture
def captured(monkeypatch):
    """The config each command builds: compare's and train's from the function they call, embed's from its plan
    (latechunk.ingest.plan.plan_embed, run for real); the command then stops."""
    import latechunk.eval.harness
    import latechunk.ingest.plan
    import latechunk.train

    seen = {}
    plan_embed = latechunk.ingest.plan.plan_embed

    def record_plan(*args, **kwargs):
        seen["embed"] = plan_embed(*args, **kwargs).config
        raise Stop

    def record(name):
        def stand_in(config, **kwargs):
            seen[name] = config
            raise Stop
        return stand_in

    monkeypatch.setattr(latechunk.ingest.plan, "plan_embed", record_plan)
    monkeypatch.setattr(latechunk.eval.harness, "run_compare", record("compare"))
    monkeypatch.setattr(latechunk.train, "train", record("train"))
    return seen


def _invoke(tmp_path, command: str, *options: str):
    doc = tmp_path / "a.md"
    doc.write_text("Herons wait by the reeds.\n", encoding="utf-8")
    args = {"embed": [str(doc), "--out", str(tmp_path / "o")],
            "compare": ["--dataset", "chroma", "--out", str(tmp_path / "report")],
            "train": ["--dataset", "chroma", "--out", str(tmp_path / "model")]}[command]
    return runner.invoke(app, [command, *args, *options])


#: "COMMAND --old" -> (the value given, how the config holds it)
CASES = {
    "embed --window": ("128", lambda c: c.pipeline.macro_window == 128),
    "embed --window-overlap": ("16", lambda c: c.pipeline.macro_window_overlap == 16),
    "compare --window": ("128|256", lambda c: c.macro_windows == (128, 256)),
    "compare --window-overlap": ("0|32", lambda c: c.macro_window_overlaps == (0, 32)),
    "compare --dedup": (None, lambda c: c.dedup is True),
    "train --window": ("128", lambda c: c.macro_window == 128),
    "train --window-overlap": ("16", lambda c: c.macro_window_overlap == 16),
    "train --precision": ("bfloat16", lambda c: c.dtype == "bfloat16"),
}


def test_every_renamed_option_is_tested():
    assert set(CASES) == set(RENAMED_OPTIONS)


@pytest.mark.parametrize("renamed", sorted(RENAMED_OPTIONS))
def test_the_old_spelling_works_and_warns(renamed, tmp_path, captured):
    command, old = renamed.split()
    value, holds = CASES[renamed]
    res = _invoke(tmp_path, command, old, *([] if value is None else [value]))
    assert isinstance(res.exception, Stop), res.output
    assert holds(captured[command]), captured[command]
    new = RENAMED_OPTIONS[renamed]
    lines = [line for line in res.stderr.splitlines() if "deprecated" in line]
    assert lines == [(f"warning: {command} {old} is deprecated: it is called {new} now (the old name works until "
                     "the next release)")], res.stderr
    # the new spelling: the same config, no warning
    again = _invoke(tmp_path, command, new, *([] if value is None else [value]))
    assert isinstance(again.exception, Stop) and "deprecated" not in again.stderr, again.output
    assert holds(captured[command])


@pytest.mark.parametrize("renamed", sorted(RENAMED_OPTIONS))
def test_both_spellings_together_are_refused(renamed, tmp_path, captured):
    command, old = renamed.split()
    value, _ = CASES[renamed]
    new = RENAMED_OPTIONS[renamed]
    values = [] if value is None else [value]
    res = _invoke(tmp_path, command, new, *values, old, *values)
    assert res.exit_code == 2 and f"{new} and {old} (its old name) were both given" in res.output, res.output
    assert command not in captured


@pytest.mark.parametrize("command", ["embed", "compare", "train"])
def test_help_shows_the_new_names_only(command):
    text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    options = re.findall(r"^ {2}(?:-\w, )?(--[\w-]+)", text, flags=re.MULTILINE)  # the option column
    old = {r.split()[1] for r in RENAMED_OPTIONS if r.startswith(f"{command} ")}
    new = {n for r, n in RENAMED_OPTIONS.items() if r.startswith(f"{command} ")}
    assert new <= set(options) and not old & set(options), options


def test_the_two_dedups_have_two_names():
    """embed --dedup is a cosine threshold on chunk vectors (as compare --dedup-threshold); compare's filter of
    overlapping results is --dedup-overlap."""
    embed = " ".join(runner.invoke(app, ["embed", "--help"], env={"COLUMNS": "200"}).output.split())
    compare = " ".join(runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "--dedup THRESHOLD Drop a chunk whose cosine" in embed
    assert "--dedup-overlap Drop a retrieved chunk that overlaps" in compare
    assert "--dedup-threshold THRESHOLD Also score every system on the index `embed --dedup THRESHOLD`" in compare
