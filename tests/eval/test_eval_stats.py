"""Tests of eval/stats.py: paired differences and the paired bootstrap on fixtures with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.eval.stats import BootstrapResult, paired_bootstrap, paired_differences


def test_paired_differences_aligns_by_id():
    a = {"q2": 0.5, "q1": 1.0}
    b = {"q1": 0.25, "q2": 0.5}
    # sorted ids q1, q2: 1.0 - 0.25, 0.5 - 0.5
    assert paired_differences(a, b).tolist() == [0.75, 0.0]
    assert paired_differences([1.0, 2.0], np.array([0.5, 0.5])).tolist() == [0.5, 1.5]
    with pytest.raises(ValueError, match="query ids differ"):
        paired_differences(a, {"q1": 0.0})
    with pytest.raises(TypeError):
        paired_differences(a, [0.0, 0.0])
    with pytest.raises(ValueError, match="one length"):
        paired_differences([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="no queries"):
        paired_differences([], [])


def test_constant_difference_collapses_ci():
    # every query gains exactly 0.25 (a binary fraction): every resample mean is 0.25
    rng = np.random.default_rng(1)
    b = rng.random(50)
    a = b + 0.25
    d = a - b  # the floats the function will see
    res = paired_bootstrap(a, b, n_resamples=2000, seed=3)
    assert isinstance(res, BootstrapResult)
    assert res.mean_diff == pytest.approx(0.25, abs=1e-15)
    assert res.ci_low == pytest.approx(0.25, abs=1e-15) and res.ci_high == pytest.approx(0.25, abs=1e-15)
    assert d.min() <= res.ci_low <= res.ci_high <= d.max()
    assert res.p_le_zero == 0.0
    exact = paired_bootstrap([0.75] * 10, [0.5] * 10, n_resamples=100)
    assert (exact.mean_diff, exact.ci_low, exact.ci_high, exact.p_le_zero) == (0.25, 0.25, 0.25, 0.0)
    worse = paired_bootstrap([0.0] * 10, [0.5] * 10, n_resamples=100)
    assert (worse.ci_low, worse.ci_high, worse.p_le_zero) == (-0.5, -0.5, 1.0)


def test_symmetric_zero_mean_covers_zero():
    # differences +1 and -1 on 100 queries each: mean 0, the CI must straddle 0
    d = np.array([1.0, -1.0] * 100)
    res = paired_bootstrap(d, np.zeros_like(d))
    assert res.mean_diff == 0.0
    assert res.ci_low < 0.0 < res.ci_high
    assert 0.3 < res.p_le_zero < 0.7
    assert res.n_queries == 200 and res.n_resamples == 10000 and res.confidence == 0.95 and res.seed == 0
    # standard error of the mean is 1/sqrt(200) ~ 0.0707; the 95% percentile CI is about +-1.96 of that
    assert res.ci_high == pytest.approx(1.96 / np.sqrt(200), rel=0.1)
    assert res.ci_low == pytest.approx(-1.96 / np.sqrt(200), rel=0.1)


def test_seeded_and_pure():
    a = {f"q{i}": float(i % 3) for i in range(30)}
    b = {f"q{i}": float(i % 2) for i in range(30)}
    a_copy, b_copy = dict(a), dict(b)
    r1 = paired_bootstrap(a, b, n_resamples=1500, seed=7)
    r2 = paired_bootstrap(a, b, n_resamples=1500, seed=7)
    assert r1 == r2
    assert a == a_copy and b == b_copy
    assert r1.ci_low <= r1.mean_diff <= r1.ci_high
    assert set(r1.to_dict()) == {
        "mean_diff",
        "ci_low",
        "ci_high",
        "p_le_zero",
        "n_queries",
        "n_resamples",
        "confidence",
        "seed",
    }


def test_clear_win_and_bad_args():
    a = np.full(40, 1.0)
    b = np.concatenate([np.full(20, 0.0), np.full(20, 1.0)])
    res = paired_bootstrap(a, b, n_resamples=1000)
    # d is 1 on half the queries, 0 on the rest: mean 1/2, every resample mean > 0 unless all 40 draws are 0s
    assert res.mean_diff == 0.5
    assert res.p_le_zero == 0.0
    assert 0.3 < res.ci_low < 0.5 < res.ci_high < 0.7
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap(a, b, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap(a, b, confidence=1.0)
