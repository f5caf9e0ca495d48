"""scripts/code_small_chunks.py and scripts/select_loco.py: the scripts behind numbers recorded in README.md and
results/fused.md, on small inputs whose answers are known."""

from __future__ import annotations

import csv
import gzip

import pytest

from tests.scripts import load_script


def test_code_small_chunks_counts_the_chunks_under_min_tokens(tmp_path):
    src = tmp_path / "m.py"
    body = "".join(f"    total = total + value_{i}\n" for i in range(60))
    src.write_text(f"def big(total):\n{body}    return total\n\n\nx = 1\n", encoding="utf-8")
    res = load_script("code_small_chunks").count([str(tmp_path / "*.py")], "code:max_tokens=64,min_tokens=16")
    assert res["files"] == 1 and res["chunks"] >= 3
    # every chunk it counts small is small, and every small chunk is counted
    assert all(n < 16 for _, n, _, _ in res["small"])
    big = load_script("code_small_chunks").count([str(src)], "code:max_tokens=64,min_tokens=60")
    assert len(big["small"]) >= 1 and all(n < 60 for _, n, _, _ in big["small"])
    with pytest.raises(ValueError, match="not a code SPEC"):
        load_script("code_small_chunks").count([str(src)], "fixed:size=64")
    with pytest.raises(ValueError, match="no file matches"):
        load_script("code_small_chunks").count([str(tmp_path / "*.go")], "code")


def _folder(path, rows):
    path.mkdir()
    with gzip.open(path / "per_query.csv.gz", "wt", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["query_id", "strategy", "mode", "window", "R", "I"])
        w.writeheader()
        w.writerows(rows)


def test_select_loco_picks_on_the_other_corpora_and_scores_the_held_out_one(tmp_path):
    questions = tmp_path / "q.csv"
    questions.write_text("question,references,corpus_id\n" + "".join(f"q{i},[],{c}\n" for i, c in
                                                                      enumerate("aabb")), encoding="utf-8")
    # system A is best on corpus a, system B on corpus b: each fold must pick the other corpus's winner
    rows = [{"query_id": q, "strategy": s, "mode": "late", "window": "128", "R": r, "I": 0.1}
            for s, rs in (("A", (1, 1, 0, 0)), ("B", (0, 0, 1, 1))) for q, r in zip("0123", rs)]
    _folder(tmp_path / "run", rows)
    res = load_script("select_loco").select([tmp_path / "run"], questions, metric="R", floor_metric="I", floor=5)
    assert res["picks"] == {"a": "run|B|late|w128", "b": "run|A|late|w128"}
    assert res["pooled"] == {"R": 0.0, "I": pytest.approx(10.0)} and res["questions"] == 4
    with pytest.raises(ValueError, match="no system reaches I >= 50"):
        load_script("select_loco").select([tmp_path / "run"], questions, metric="R", floor_metric="I", floor=50)


def test_window_repeat_counts_the_last_windows_repeated_tokens(tmp_path):
    """scripts/window_repeat.py (the 0.2% of README.md): a one-window document repeats nothing; a longer one
    repeats exactly the tokens its moved-back last window shares with the window before."""
    from latechunk.macro_window import MacroWindow

    (tmp_path / "short.md").write_text("Rivers flow to the sea.", encoding="utf-8")
    script = load_script("window_repeat")
    short = script.count([str(tmp_path / "short.md")], 64)
    assert short["documents"] == 1 and short["encoded_tokens"] == short["content_tokens"] and short["repeat"] == 0
    (tmp_path / "long.md").write_text("Rivers flow to the sea and carry silt to the delta. " * 30, encoding="utf-8")
    long = script.count([str(tmp_path / "long.md")], 64)
    n = long["content_tokens"]
    windows = MacroWindow(64, 0).plan(n, 2)
    assert len(windows) >= 2 and long["encoded_tokens"] == sum(w.end - w.start for w in windows) > n
    assert long["encoded_tokens"] - n == windows[-2].end - windows[-1].start  # the last window's moved-back start
