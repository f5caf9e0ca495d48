"""scripts/compare_models.py: paired intervals between two `latechunk compare` report folders."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.scripts import load_script


def _load():
    return load_script("compare_models")


def _write(folder: Path, late: list[float], naive: list[float], dataset: str = "toy") -> Path:
    folder.mkdir(parents=True)
    with open(folder / "per_query.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "query_id", "strategy", "mode", "window", "label", "SpanRecall@5"])
        for i, (a, b) in enumerate(zip(late, naive)):
            w.writerow([dataset, str(i), "fixed:size=64,overlap=0", "late", "256", "late", repr(a)])
            w.writerow([dataset, str(i), "fixed:size=64,overlap=0", "naive", "", "naive", repr(b)])
    return folder


def test_paired_rows(tmp_path):
    mod = _load()
    a = _write(tmp_path / "a", late=[1.0] * 20, naive=[0.5] * 20)
    b = _write(tmp_path / "b", late=[0.5] * 20, naive=[0.0] * 10 + [1.0] * 10)
    lines, rows = mod.compare(a, b, ["SpanRecall@5"], "trained", "base", resamples=500)
    got = {r["comparison"]: r for r in rows}
    assert got["late(trained) - naive(base)"]["diff"] == pytest.approx(50.0)
    assert got["late(trained) - late(base)"]["diff"] == pytest.approx(50.0)
    assert got["late(trained) - late(base)"]["ci_low"] == pytest.approx(50.0)  # constant differences
    assert got["naive(trained) - naive(base)"]["diff"] == pytest.approx(0.0)
    assert any("late(trained) - naive(base) | +50.0 [" in line and "*" in line for line in lines)


def test_different_datasets_refused(tmp_path, capsys):
    mod = _load()
    a = _write(tmp_path / "a", [1.0], [0.0], dataset="chroma")
    b = _write(tmp_path / "b", [1.0], [0.0], dataset="xquad")
    assert mod.main(["--a", str(a), "--b", str(b)]) == 2
    assert "paired test needs one dataset" in capsys.readouterr().err


def test_gzipped_per_query_read(tmp_path):
    """The repository keeps report folders' per-query scores as per_query.csv.gz: the script reads that form too."""
    import gzip
    import shutil

    mod = _load()
    a = _write(tmp_path / "a", late=[1.0] * 5, naive=[0.5] * 5)
    b = _write(tmp_path / "b", late=[0.5] * 5, naive=[0.0] * 5)
    with open(b / "per_query.csv", "rb") as src, gzip.open(b / "per_query.csv.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (b / "per_query.csv").unlink()
    _, rows = mod.compare(a, b, ["SpanRecall@5"], "trained", "base", resamples=100)
    got = {r["comparison"]: r["diff"] for r in rows}
    assert got["late(trained) - naive(base)"] == pytest.approx(100.0)
    with pytest.raises(FileNotFoundError):
        mod.read_per_query(tmp_path / "missing")


def _write_rows(folder: Path, rows: list[tuple[str, str, str, str, float]], dataset: str = "toy") -> Path:
    """A per_query.csv with the window_overlap column (newer report folders): rows of (query_id, mode, window,
    window_overlap, SpanRecall@5)."""
    folder.mkdir(parents=True)
    with open(folder / "per_query.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "query_id", "strategy", "mode", "window", "window_overlap", "label", "SpanRecall@5"])
        for qid, mode, window, overlap, v in rows:
            w.writerow([dataset, qid, "fixed:size=64,overlap=0", mode, window, overlap, mode, repr(v)])
    return folder


def test_overlap_sweep_not_merged(tmp_path):
    """A folder that swept --window-overlap holds two late passes at one window: they were one key before (the later
    overwrote the earlier per query, silently) and window_overlap was read as a metric; now each pass is its own
    system and --window-overlap picks one."""
    mod = _load()
    n = 10
    rows = [(str(i), "late", "128", "0", 1.0) for i in range(n)] + [(str(i), "late", "128", "32", 0.0) for i in range(n)]
    a = _write_rows(tmp_path / "a", rows)
    b = _write_rows(tmp_path / "b", [(str(i), "naive", "", "", 0.5) for i in range(n)])
    _, systems = mod.read_per_query(a)
    assert len(systems) == 2 and all("window_overlap" not in v for v in systems.values())
    with pytest.raises(ValueError, match="several late passes"):
        mod.compare(a, b, ["SpanRecall@5"], "trained", "base", resamples=100)
    for overlap, want in (("0", 50.0), ("32", -50.0)):
        _, got = mod.compare(a, b, ["SpanRecall@5"], "trained", "base", resamples=100, window="128",
                             window_overlap=overlap)
        assert {r["comparison"]: r["diff"] for r in got}["late(trained) - naive(base)"] == pytest.approx(want)


def test_several_folders_per_side(tmp_path, capsys):
    """A model scored in two runs (late only, naive only) is one side: the folders are merged; a system in two of
    them is refused."""
    mod = _load()
    n = 8
    late = _write_rows(tmp_path / "late", [(str(i), "late", "128", "0", 1.0) for i in range(n)])
    naive = _write_rows(tmp_path / "naive", [(str(i), "naive", "", "", 0.25) for i in range(n)])
    base = _write_rows(tmp_path / "base", [(str(i), m, w, o, 0.5) for i in range(n)
                                           for m, w, o in (("late", "128", "0"), ("naive", "", ""))])
    assert mod.main(["--a", str(late), str(naive), "--b", str(base), "--a-name", "t", "--b-name", "b",
                     "--metrics", "SpanRecall@5", "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "late(t) - naive(t) | +75.0 [" in out and "naive(t) - naive(b) | -25.0 [" in out
    assert mod.main(["--a", str(late), str(late), "--b", str(base)]) == 2
    assert "two of the folders" in capsys.readouterr().err


def test_fused_systems_are_paired_per_late_pass(tmp_path):
    """A folder with fused systems (compare --modes ...,fused; one per late pass) gets fused(A) - naive(B),
    fused(A) - late(B) and fused(A) - fused(B); --window picks the pass for fused as for late."""
    mod = _load()

    def write(folder: Path, fused_by_window: dict[str, float]) -> Path:
        _write(folder, late=[0.5] * 10, naive=[0.25] * 10)
        with open(folder / "per_query.csv", "a", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            for win, v in fused_by_window.items():
                for i in range(10):
                    w.writerow(["toy", str(i), "fixed:size=64,overlap=0", "fused", win, f"fused w={win}", repr(v)])
        return folder

    a = write(tmp_path / "a", {"256": 1.0, "512": 0.0})
    b = write(tmp_path / "b", {"256": 0.75, "512": 0.0})
    with pytest.raises(ValueError, match="several late passes"):
        mod.compare(a, b, ["SpanRecall@5"], "trained", "base", resamples=100)
    _, rows = mod.compare(a, b, ["SpanRecall@5"], "trained", "base", window="256", resamples=100)
    got = {r["comparison"]: r["diff"] for r in rows}
    assert got["fused(trained) - naive(base)"] == pytest.approx(75.0)
    assert got["fused(trained) - late(base)"] == pytest.approx(50.0)
    assert got["fused(trained) - fused(base)"] == pytest.approx(25.0)
