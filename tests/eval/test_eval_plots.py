"""Tests of the late-chunking map (eval/plots.py) and of ``compare``'s window-overlap sweep (eval/harness.py,
eval/config.py, eval/report/): a tiny Chroma-format dataset (tests/eval/test_eval_harness.py's) and a 1-layer random
BERT, so the numbers mean nothing but every path runs in seconds.
"""

from __future__ import annotations

import functools
import re

import pytest

from latechunk.encoder import Encoder
from latechunk.eval.config import CompareConfig
from latechunk.eval.harness import run_compare
from latechunk.eval.map_cli import main
from latechunk.eval.plots import (
    cost_points,
    has_map,
    map_cells,
    map_markdown,
    merge_results,
    pareto_front,
    recall_metric,
)
from latechunk.eval.report import load_result, write_report
from latechunk.models import LoadedModel, ModelSettings
from tests.eval.test_eval_harness import _write_dataset
from tests.models import minilm_parts, tiny_bert

STRATS = ("fixed:size=16", "fixed:size=32")


@functools.lru_cache(maxsize=1)
def _tiny_loaded() -> LoadedModel:
    _, tok, _ = minilm_parts()
    return LoadedModel("tiny-bert", tiny_bert(layers=1, heads=2), tok, ModelSettings(pooling="mean", normalize=True))


def _encoder() -> Encoder:
    return Encoder(_tiny_loaded(), device="cpu")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return _write_dataset(tmp_path_factory.mktemp("plots") / "tiny_chroma")


def _cfg(root, tmp, **kw) -> CompareConfig:
    base = {"dataset": str(root), "strategies": STRATS, "ks": (1, 3), "n_resamples": 200, "device": "cpu",
            "cache_dir": str(tmp / "cache"), "windows": (32, 64)}
    base.update(kw)
    return CompareConfig(**base)


@pytest.fixture(scope="module")
def swept(root, tmp_path_factory):
    """One run: 2 strategies x windows 32, 64 x overlaps 0, 8, late and naive, with its report folder."""
    tmp = tmp_path_factory.mktemp("swept")
    out = tmp / "report"
    res = run_compare(_cfg(root, tmp, window_overlap=(0, 8)), out, encoder=_encoder(), command="compare (test)")
    return res, out


def test_overlap_option_parses_and_is_checked():
    cfg = CompareConfig.from_options(dataset="x", strategies=["fixed"], window="128|256", window_overlap="0|32|64")
    assert cfg.window_overlap == (0, 32, 64)
    assert cfg.late_passes()[:4] == [(128, 0), (128, 32), (128, 64), (256, 0)] and len(cfg.late_passes()) == 6
    assert CompareConfig(dataset="x", window_overlap=16).window_overlap == (16,)  # an int: a one-value sweep
    assert CompareConfig.from_dict({"dataset": "x", "window_overlap": 16}).window_overlap == (16,)  # old results
    assert CompareConfig(dataset="x").window_overlap == (None,)
    with pytest.raises(ValueError, match="window overlaps repeat"):
        CompareConfig.from_options(dataset="x", window_overlap="0|0")
    with pytest.raises(ValueError, match="window overlaps must be integers >= 0"):
        CompareConfig(dataset="x", window_overlap=(-1,))
    with pytest.raises(ValueError, match="--macro-window-overlap: 'a' is not an integer"):
        CompareConfig.from_options(dataset="x", window_overlap="0|a")
    with pytest.raises(ValueError, match="needs late mode"):
        CompareConfig(dataset="x", modes=("naive",), window_overlap=(0, 8))


def test_one_late_pass_per_window_and_overlap_and_naive_once(swept):
    res, _ = swept
    assert [(w["window"], w["overlap"]) for w in res.manifest["windows"]] == [(32, 0), (32, 8), (64, 0), (64, 8)]
    assert [w["modes"] for w in res.manifest["windows"]] == [["late", "naive"], ["late"], ["late"], ["late"]]
    assert set(res.embeds) == {(32, 0), (32, 8), (64, 0), (64, 8)}
    late = [s for s in res.systems if s.mode == "late"]
    assert len(late) == 8 and len({s.key for s in late}) == 8
    assert {s.label for s in late} >= {"late w=32 o=0", "late w=64 o=8"}
    assert sum(s.mode == "naive" for s in res.systems) == 2
    # an overlap sends more tokens through the encoder for the same window (documents longer than a window)
    by = {(w["window"], w["overlap"]): w["late_tokens"] for w in res.manifest["windows"]}
    assert by[(32, 8)] > by[(32, 0)] and by[(64, 8)] >= by[(64, 0)]
    kinds = {c["kind"] for c in res.comparisons}
    assert {"late-naive", "window", "overlap"} <= kinds
    ov = [c for c in res.comparisons if c["kind"] == "overlap"]
    assert {(c["window"], c["window_overlap"]) for c in ov} == {(32, 8), (64, 8)}


def test_map_cells_are_the_reports_numbers(swept):
    res, out = swept
    metric = recall_metric(res)
    assert metric == "SpanRecall@3"
    cells = map_cells(res, metric)
    assert len(cells) == 8  # 2 strategies x 4 late passes
    comps = {(c["strategy"], c["window"], c["window_overlap"]): c for c in res.comparisons
             if c["kind"] == "late-naive" and c["metric"] == metric}
    for cell in cells:
        c = comps[(cell.strategy, cell.window, cell.overlap)]
        assert (cell.diff, cell.low, cell.high) == (c["mean_diff"], c["ci_low"], c["ci_high"])
        late = res.system(cell.strategy, "late", cell.window, cell.overlap)
        assert cell.late == late.aggregates[metric] and cell.naive == res.system(cell.strategy, "naive").aggregates[metric]
        assert cell.diff == pytest.approx(cell.late - cell.naive, abs=1e-12)  # a paired mean difference
        assert cell.significant == (c["ci_low"] > 0 or c["ci_high"] < 0)
    # the files are written, and report.md's map table holds the same numbers
    for name in ("map.png", "frontier.png", "report.md", "results.json", "per_query.csv"):
        assert (out / name).stat().st_size > 0
    assert (out / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Late chunking map" in text and "![late − naive map](map.png)" in text
    for cell in cells:
        assert f"{100 * cell.diff:+.1f} [{100 * cell.low:+.1f}, {100 * cell.high:+.1f}]" in text
    for cell in map_cells(res, "SpanIoU@3"):  # IoU with two decimals
        assert f"{100 * cell.diff:+.2f} [{100 * cell.low:+.2f}, {100 * cell.high:+.2f}]" in text
    # read back from the folder: the same cells
    again = load_result(out)
    assert has_map(again) and map_cells(again, metric) == cells


def test_cost_is_tokens_through_the_encoder_over_content_tokens(swept):
    res, _ = swept
    corpus = res.manifest["windows"][0]["content_tokens"]
    pts = cost_points(res)
    assert len(pts) == 10  # 8 late + 2 naive
    for p in pts:
        s = res.system(p.strategy, p.mode, p.window if p.mode == "late" else None,
                       p.overlap if p.mode == "late" else None)
        assert p.tokens == s.costs["tokens_encoded"] and p.cost == pytest.approx(p.tokens / corpus)
        assert p.cost >= 1.0  # every content token goes through the encoder at least once
    late0 = [p for p in pts if p.mode == "late" and p.overlap == 0]
    late8 = [p for p in pts if p.mode == "late" and p.overlap == 8]
    assert all(p8.cost >= p0.cost for p0, p8 in zip(late0, late8))
    assert any(p8.cost > p0.cost for p0, p8 in zip(late0, late8))


def test_pareto_front():
    pts = [(1.0, 0.5), (1.2, 0.6), (1.1, 0.4), (2.0, 0.6), (0.9, 0.3), (1.0, 0.5)]
    assert pareto_front(pts) == [4, 0, 5, 1]  # (1.1, .4) and (2.0, .6) are dominated; exact ties kept
    assert pareto_front([]) == []
    assert pareto_front([(3.0, 0.1)]) == [0]


def test_merged_runs_give_the_map_of_one_sweep(swept, root, tmp_path):
    res, _ = swept
    parts = []
    for ov in (0, 8):
        folder = tmp_path / f"ov{ov}"
        write_report(run_compare(_cfg(root, tmp_path, window_overlap=(ov,)), encoder=_encoder()), folder, plot=False)
        parts.append(load_result(folder))
    merged = merge_results(parts)
    metric = recall_metric(res)
    assert [(c.strategy, c.window, c.overlap, c.diff, c.low, c.high) for c in map_cells(merged, metric)] == [
        (c.strategy, c.window, c.overlap, c.diff, c.low, c.high) for c in map_cells(res, metric)]
    assert sum(s.mode == "naive" for s in merged.systems) == 2  # naive kept once
    with pytest.raises(ValueError, match="is in two runs"):
        merge_results([parts[0], parts[0]])
    # the command line writes the three files from the folders
    assert main([str(tmp_path / "ov0"), str(tmp_path / "ov8"), "--out", str(tmp_path / "map")]) == 0
    md = (tmp_path / "map" / "map.md").read_text(encoding="utf-8")
    assert md.strip() == map_markdown(merged, images=True).strip()
    assert (tmp_path / "map" / "map.png").stat().st_size > 0 and (tmp_path / "map" / "frontier.png").stat().st_size > 0
    assert re.search(r"\| 32 \| 8 \| [\d,]+ \| [\d.]+ \|", md)


def test_no_map_for_one_late_pass(root, tmp_path):
    res = run_compare(_cfg(root, tmp_path, windows=(64,), window_overlap=(0,)), tmp_path / "one", encoder=_encoder())
    assert not has_map(res)
    assert not (tmp_path / "one" / "map.png").exists()
    assert "## Late chunking map" not in (tmp_path / "one" / "report.md").read_text(encoding="utf-8")


def test_cli_compare_takes_an_overlap_sweep_and_rejects_a_bad_one():
    from typer.testing import CliRunner

    from latechunk.cli import app

    res = CliRunner().invoke(app, ["compare", "--dataset", "xquad", "--window-overlap", "0|x"])
    assert res.exit_code != 0 and "--macro-window-overlap: 'x' is not an integer" in res.output
    res = CliRunner().invoke(app, ["compare", "--dataset", "xquad", "--modes", "naive", "--window-overlap", "0|32"])
    assert res.exit_code != 0 and "needs late mode" in res.output
    res = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "200"})
    assert "--window-overlap" in res.output and "0|32|64" in res.output
