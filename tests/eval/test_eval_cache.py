"""eval/cache.py (installed as latechunk.eval.cache): the parsed-dataset cache keyed on content, and the removal
of stale pickle files from it (the cache never unpickles)."""

from __future__ import annotations

import json
import logging
from pathlib import Path


def test_dataset_cache_removes_stale_pickles(tmp_path, monkeypatch, caplog):
    from latechunk.eval.cache import load_cached

    squad = tmp_path / "tiny_squad.json"
    ctx = "The Nile flows north. The Amazon is wide."
    squad.write_text(json.dumps({"version": "1.1", "data": [{"title": "rivers", "paragraphs": [{
        "context": ctx,
        "qas": [{"id": "q1", "question": "Which way does the Nile flow?",
                 "answers": [{"text": "north", "answer_start": ctx.index("north")}]}]}]}]}), encoding="utf-8")
    cache = tmp_path / "lc"
    folder = cache / "datasets"
    folder.mkdir(parents=True)
    for name in ("0a1b.pkl", "old-dataset.pkl"):
        (folder / name).write_bytes(b"\x80\x04not to be unpickled")
    (folder / "notes.txt").write_text("kept")
    monkeypatch.setenv("LATECHUNK_CACHE", str(cache))
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        ds, info = load_cached(squad)
    assert not list(folder.glob("*.pkl")) and (folder / "notes.txt").is_file()
    assert Path(info["cache_file"]).parent == folder and Path(info["cache_file"]).is_file()
    lines = [r.getMessage() for r in caplog.records if "pickle" in r.getMessage()]
    assert len(lines) == 1 and "removed 2" in lines[0]
    assert len(ds.queries) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        _, again = load_cached(squad)
    assert again["cache_hit"] and not [r for r in caplog.records if "pickle" in r.getMessage()]
