"""scripts/bench_segment.py: corpus cutting and one child measurement on a tiny corpus (the numbers themselves are
benchmarks, recorded in results/segment.md, never asserted)."""

from __future__ import annotations

import argparse
import json

from tests.scripts import load_script


def test_cut_ends_at_a_blank_line():
    bench = load_script("bench_segment")
    text = "one two.\n\nthree four.\n\nfive six."
    assert bench._cut(text, 100) == text
    assert bench._cut(text, 15) == "one two."
    assert bench._cut("no blank line here", 5) == "no bl"


def test_child_measures_each_corpus(tmp_path, monkeypatch, capsys):
    """One child pass over a tiny corpus: tokens counted, every measure timed, boundaries hashed, no vector
    lookup missed (semantic's precomputed vectors fit its sentences)."""
    bench = load_script("bench_segment")
    (tmp_path / "chatlogs.md").write_text(
        "# Notes\n\nDr. Ames met the U.S. team, e.g. at 3 p.m. It rained. Then it stopped!\n\n- one\n- two\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(bench, "CHROMA", tmp_path)
    args = argparse.Namespace(root=str(bench.REPO), corpora=["chatlogs"], max_chars=10_000, workers=0)
    bench.child(args)
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["chatlogs"]
    assert row["docs"] == 1 and row["tokens"] > 20 and row["sentences"] >= 5
    # each measure is the CPU seconds of its work (a measure not taken would be 0.0, or missing); no worker
    # measures without --workers
    assert isinstance(row["segment"], float) and isinstance(row["five"], float)
    assert 0 < row["segment"] < 60 and 0 < row["five"] < 60
    assert set(row) == {"tokens", "chars", "docs", "segment", "sentences", "five", "five_hash",
                        "semantic_vector_misses"}
    assert row["semantic_vector_misses"] == 0 and len(row["five_hash"]) == 16
