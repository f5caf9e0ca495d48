"""``export`` and ``export --sync`` show their progress bar on stderr only when it is a terminal (as ``embed``'s):
stderr redirected to a file holds no carriage-return bar lines, and ``progress=False`` shows none either way."""

from __future__ import annotations

import sys

import pytest

from latechunk.config import EmbedConfig, PipelineConfig
from latechunk.export import export_folder
from latechunk.ingest import ingest
from tests.models import minilm_encoder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("bar")
    src = root / "src"
    src.mkdir()
    (src / "rivers.md").write_text("# Rivers\n\nRivers flow to the sea. They carve valleys.\n", encoding="utf-8")
    (src / "trains.md").write_text("# Trains\n\nTrains run on rails between cities.\n", encoding="utf-8")
    out = root / "out"
    ingest(EmbedConfig(inputs=(src,), out=out, pipeline=PipelineConfig(("fixed:size=8",))), minilm_encoder())
    return out


@pytest.mark.parametrize("tty", [False, True])
def test_export_and_sync_bars_only_on_a_terminal(folder, tmp_path, capsys, monkeypatch, tty):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    capsys.readouterr()
    export_folder(folder, f"qdrant:{tmp_path / 'db'}", progress=True)
    err = capsys.readouterr().err
    assert ("export qdrant" in err) is tty, err
    assert ("\r" in err) is tty, err
    export_folder(folder, f"qdrant:{tmp_path / 'db'}", progress=True, sync=True)
    err = capsys.readouterr().err
    assert ("sync qdrant" in err) is tty, err
    export_folder(folder, f"qdrant:{tmp_path / 'db2'}", progress=False)  # not asked: never, terminal or not
    assert "export qdrant" not in capsys.readouterr().err
