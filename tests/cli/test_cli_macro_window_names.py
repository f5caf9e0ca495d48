"""Errors about the macro window name it as the user sets it: ``macro_window=`` / ``macro_window_overlap=`` (the
options --macro-window / --macro-window-overlap), never the old ``window=`` / ``window_overlap=``."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.macro_window import MacroWindow

runner = CliRunner()


def _said(res) -> str:
    return " ".join(res.output.split())


def test_embed_macro_window_too_small_names_macro_window(tmp_path):
    doc = tmp_path / "small.md"
    doc.write_text("Rivers flow to the sea.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--macro-window", "5"])
    said = _said(res)
    assert res.exit_code == 2 and "macro_window=5 is too small" in said, res.output
    assert not re.search(r"(?<!macro_)window=5", said), said


def test_macro_window_overlap_error_names_macro_window_overlap():
    with pytest.raises(ValueError) as err:
        MacroWindow(64, 80).check(2, 512)
    msg = str(err.value)
    assert msg.startswith("macro_window_overlap=80 must be >= 0 and < 62") and "(macro_window=64 minus 2" in msg
    assert not re.search(r"(?<!macro_)window(_overlap)?=", msg), msg


def test_compare_list_errors_name_the_macro_window_options():
    from eval.config import CompareConfig

    with pytest.raises(ValueError, match="^--macro-window-overlap: 'x' is not an integer"):
        CompareConfig.from_options(dataset="x", macro_window_overlap="0|x")
    with pytest.raises(ValueError, match="^--macro-window: 'y' is not an integer"):
        CompareConfig.from_options(dataset="x", macro_window="128|y")
