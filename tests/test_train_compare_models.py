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
