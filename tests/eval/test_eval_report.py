"""compare's report: the boundary agreement of every strategy pair, parse alarms per strategy, and
``--dedup-threshold`` (each system on the index ``embed --dedup`` would write, beside the full one, with NearDup@k).

The tiny Chroma-format dataset of tests/eval/test_eval_harness.py, plus a copy of one of its documents under another
name (so near-duplicate chunks exist); the bundled all-MiniLM-L6-v2 on the CPU, late mode only (quick).
"""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.eval.metrics import near_duplicate_share
from tests.eval.test_eval_harness import _write_dataset


def test_near_duplicate_share_counts_hits_that_repeat_a_higher_ranked_one():
    v = np.array([[1, 0], [1, 0.001], [0, 1], [0.6, 0.8], [0, 1]], np.float32)
    assert near_duplicate_share([0, 1, 2, 3, 4], v, 5, 0.95) == pytest.approx(2 / 5)  # rows 1 and 4
    assert near_duplicate_share([0, 2, 3], v, 3, 0.95) == 0.0
    assert near_duplicate_share([0, 1, -1], v, 3, 0.95) == pytest.approx(1 / 2)  # -1: no hit
    assert near_duplicate_share([], v, 3, 0.95) == 0.0


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = _write_dataset(tmp_path_factory.mktemp("tiny") / "tiny_chroma")
    shutil.copy(root / "corpora" / "cats.md", root / "corpora" / "zz_cats_copy.md")
    out = tmp_path_factory.mktemp("report") / "out"
    r = CliRunner().invoke(app, ["compare", "--dataset", str(root), "--out", str(out), "--device", "cpu",
                                 "--strategies", "fixed:size=24 sentence_window", "--modes", "late", "--k", "1,3",
                                 "--resamples", "100", "--dedup-threshold", "0.95", "--no-cache", "--quiet"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return out, r, json.loads((out / "results.json").read_text())


def test_compare_with_two_strategies_reports_their_boundary_agreement(report):
    out, _, data = report
    text = (out / "report.md").read_text()
    assert "## Boundary agreement" in text and "| fixed | sentence_window |" in text
    (pair,) = data["manifest"]["agreement"]["pairs"]
    t = pair["total"]
    assert t["documents"] == 4 and t["matched"] + t["residual_a"] == t["cuts_a"] > 0
    assert "## Parse alarms" in text and set(data["manifest"]["alarms"]) == set(data["manifest"]["strategies"])
    # four documents: too few to compare, and the report says so rather than only "no alarm"
    assert set(data["manifest"]["alarms_unchecked"]) == set(data["manifest"]["strategies"])
    assert "not checked: " in text
    # third trial: 99-100 on nDCG@10/R@100/MRR@10 for every system over 4 documents was read as a result
    assert "With 4 documents the document-level metrics rank a handful of documents" in text
    # third trial: the section also said "No alarm for any of the 2 strategies" above the not-checked lines
    assert "No alarm for any" not in text and "No strategy could be checked" in text


def test_compare_dedup_threshold_puts_near_duplicates_and_recall_beside_the_full_index(report):
    out, _, data = report
    text = (out / "report.md").read_text()
    assert "## Dedup at ingest (cosine ≥ 0.95)" in text
    assert "| NearDup@3 | NearDup@3 (dedup) |" in text and "AR@3 (dedup)" in text
    for s in data["systems"]:
        m = s["metrics"]
        # the copy's chunks are dropped: as many as the original has (at least)
        assert s["costs"]["dedup_dropped"] >= s["costs"]["chunks"] // 4
        assert m["NearDup@3"] > 0, "the copy's chunks come right after the original's for the cats questions"
        assert m["dedup:NearDup@3"] == 0.0, "no two kept chunks are near-duplicates"
        assert m["dedup:AR@3"] >= m["AR@3"] - 1e-9, "freed slots hold other chunks"
    header = (out / "per_query.csv").read_text().splitlines()[0].split(",")
    assert {"NearDup@1", "NearDup@3", "dedup:AR@3", "dedup:NearDup@3"} <= set(header)


def test_report_reads_back_and_renders_the_same_sections(report):
    from latechunk.eval.report import load_result, markdown_report

    out, _, _ = report
    again = markdown_report(load_result(out))
    for section in ("## Boundary agreement", "## Parse alarms", "## Dedup at ingest"):
        assert section in again


def test_bold_marks_every_value_that_prints_as_the_best():
    """0.8194 and 0.8191 both print as 81.9: both are bold (the mark compared unrounded values, so a table showed
    two equal numbers, one of them bold)."""
    from types import SimpleNamespace

    from latechunk.eval.report import _metric_table

    systems = [SimpleNamespace(strategy="fixed:size=64", label=mode, aggregates={"SpanRecall@5": v})
               for mode, v in (("late", 0.8194), ("naive", 0.8191), ("fused", 0.80))]
    table = _metric_table(SimpleNamespace(systems=systems), ["SpanRecall@5"])
    assert table.count("**81.9**") == 2 and "**80.0**" not in table and "80.0" in table


def test_plot_cost_axes_use_a_log_scale_only_over_a_decade(tmp_path, monkeypatch):
    """User trial: costs within a few percent (late 323,840 vs naive 323,490 tokens) on a log axis gave minor-tick
    labels "3.235 x 10^5 ..." printed over each other. Under a decade the axis is linear with plain numbers."""
    from pathlib import Path

    import matplotlib.figure

    from latechunk.eval.report import load_result, write_plot

    figs = []
    real = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: (figs.append(self), real(self, *a, **k)))
    import copy

    result = load_result(Path(__file__).resolve().parents[2] / "results" / "chroma_precision")
    naive = copy.deepcopy(result.systems[0])
    naive.label = naive.mode = "naive"
    result.systems.append(naive)
    for s in result.systems:
        s.costs["tokens_encoded"] = 323_490 + (350 if s.label == "late" else 0)
        s.costs["seconds"] = 40.0 + len(s.label)
    write_plot(result, tmp_path / "plot.png")
    ax_tokens, ax_seconds = figs[-1].axes[2], figs[-1].axes[3]
    assert ax_tokens.get_xscale() == ax_seconds.get_xscale() == "linear"
    labels = [t.get_text() for t in ax_tokens.get_xticklabels()]
    assert any("," in t for t in labels) and not any("10^" in t or "\\times" in t for t in labels), labels
    for s in result.systems:  # a spread of more than a decade: log
        s.costs["tokens_encoded"] = 1_000 if s.label == "late" else 50_000
    write_plot(result, tmp_path / "plot2.png")
    assert figs[-1].axes[2].get_xscale() == "log"


@pytest.mark.parametrize("run, turned", [("fused/chroma_xquad_3ep_sweep", (True, True)),
                                         ("contextual_xquad", (False, False)), ("xquad_window_sweep", (False, True))])
def test_plot_category_labels_never_overlap_and_name_no_missing_window(run, turned, tmp_path, monkeypatch):
    """User trial: six sweep SPECs (`recursive:max_tokens=128,overlap=64`, ...) printed over each other in
    panels (a) and (b), and naive − contextual pairs sat apart from their strategy, labelled "w=None"."""
    from pathlib import Path

    import matplotlib.figure

    from latechunk.eval.report import _renderer, load_result, write_plot

    figs = []
    real = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: (figs.append(self), real(self, *a, **k)))
    result = load_result(Path(__file__).resolve().parents[2] / "results" / run)
    write_plot(result, tmp_path / "plot.png")
    fig = figs[-1]
    renderer = _renderer(fig)  # plt.close left it without a canvas that draws
    for ax, turn in zip(fig.axes[:2], turned):  # turned where side by side they would overlap
        ticks = [t for t in ax.get_xticklabels() if t.get_text()]
        assert ticks and not any("None" in t.get_text() for t in ticks), [t.get_text() for t in ticks]
        assert all(bool(t.get_rotation()) == turn for t in ticks)
        if not turn:  # side by side: no two labels share a pixel column
            boxes = [t.get_window_extent(renderer) for t in ticks]
            assert all(a.x1 <= b.x0 for a, b in itertools.pairwise(boxes)), [t.get_text() for t in ticks]
    windows = {(c["strategy"], c["window"]) for c in result.comparisons if c["kind"] == "late-naive"}
    assert len(fig.axes[1].get_xticks()) == len(windows)  # a pair without a window sits with its strategy


def test_an_interval_bound_near_zero_shows_its_sign_and_more_decimals():
    """Trial finding: "+1.7 [+0.0, +4.0]" without a star read as an interval excluding 0 (its bound was 0 or just
    below); a bound that rounds to 0 prints unsigned when it is 0, else with two more decimals."""
    from latechunk.eval.report import _ci

    assert _ci({"mean_diff": 0.017, "ci_low": 0.0, "ci_high": 0.04}, "SpanRecall@5") == "+1.7 [0.0, +4.0]"
    assert _ci({"mean_diff": 0.017, "ci_low": -0.0002, "ci_high": 0.04}, "SpanRecall@5") == "+1.7 [-0.020, +4.0]"
    assert _ci({"mean_diff": 0.017, "ci_low": 0.011, "ci_high": 0.04}, "SpanRecall@5") == "+1.7 [+1.1, +4.0]"


def test_the_late_passes_table_has_contextual_modes_tokens_and_seconds():
    """Trial finding: with --modes late,naive,contextual the "Late passes" table showed only late and naive, so its
    wall time did not add up (contextual's 9.3 s and tokens were missing)."""
    from pathlib import Path

    from latechunk.eval.report import load_result, markdown_report

    result = load_result(Path(__file__).resolve().parents[2] / "results" / "contextual_chroma")
    text = markdown_report(result)
    table = text[text.index("## Late passes"):].split("\n\n")[1]
    header, _, row = table.splitlines()[:3]
    assert "contextual tokens" in header and "contextual encode s" in header
    w = result.manifest["windows"][0]
    assert f"{w['contextual_tokens']:,}" in row and f"{w['seconds']['contextual_encode']:.1f}" in row
