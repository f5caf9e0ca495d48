"""scripts/bench_peers.py (issue 15 part 1): a dry run on a tiny model and two small documents writes the table."""

from __future__ import annotations

import pytest

pytest.importorskip("chonkie")
pytest.importorskip("sentence_transformers")

from tests.models import save_tiny_bert
from tests.scripts import load_script


def _script():
    return load_script("bench_peers")


def test_dry_run_writes_every_system(tmp_path):
    bench = _script()
    data = tmp_path / "corpora"
    data.mkdir()
    (data / "a.md").write_text("# Alpha\n\n" + "Late chunking pools token states per chunk. " * 60, encoding="utf-8")
    (data / "b.md").write_text("Short document.\nSecond line of it.\n", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "peers.md"
    res = bench.main(["--data", str(data), "--corpora", "a", "b", "--fraction", "1", "--model", str(model),
                      "--rounds", "1", "--batch-sizes", "2", "--window", "128", "--overlap", "0",
                      "--strategy", "fixed:size=32", "--out", str(out), "--note", "dry run"])
    text = out.read_text(encoding="utf-8")
    for name in ("raw model(...) bs=2", "latechunk late", "latechunk late x5", "latechunk naive",
                 "chonkie LateChunker", "st naive (same spans)"):
        assert f"| {name} |" in text
        assert res["median_s"][name] > 0
    assert "macro window 128, overlap 0" in text and "note: dry run" in text
    assert 0 <= res["padding"] < 1
    assert res["model_tokens"] >= res["corpus_tokens"]  # every token once, plus frames of extra windows
    assert "Targets (issue 15, CPU):" in text and len(res["targets"]) == 4
    assert res["corpus_tokens"] > 3 * 128  # a.md needs several 128-token windows


def test_raw_rows_cover_the_corpus_once():
    bench = _script()
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document
    from tests.models import minilm_parts

    tok = DocumentTokenizer(minilm_parts()[1])(Document("d", "word " * 300))
    rows = bench.raw_rows([tok], 128)
    assert all(len(r) <= 128 for r in rows)
    assert sum(len(r) - 2 for r in rows) == tok.n_content  # no overlap, nothing dropped


def test_targets_are_judged_plainly():
    bench = _script()
    med = {"raw": 10.0, "latechunk late": 10.0, "latechunk late x5": 10.5, "chonkie LateChunker": 11.0}
    lines = bench.targets(med, "raw")
    assert lines[0].startswith("latechunk late vs chonkie LateChunker (speed): 1.10x, target >= 1.2x: NOT met")
    assert "5.24x, target >= 5x: met" in lines[1]
    assert "1.05x, target <= 1.1x: met" in lines[2]
    assert "1.00x, target >= 0.95x: met" in lines[3]
    assert bench.targets({"latechunk late": 1.0}, "raw") == []  # nothing to judge without the peers
