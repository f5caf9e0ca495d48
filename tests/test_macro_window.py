"""latechunk.macro_window: the plan as a value, its one validation, and the window plan (tiling, overlap, the
most-central-window rule)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latechunk.macro_window import MIN_WINDOW_CONTENT_TOKENS, MacroWindow

FRAME = 2  # [CLS] ... [SEP]


def _plan_ref(n: int, capacity: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Reference plan, a plain loop: windows every capacity - overlap tokens, the last one flush with the end; a
    token shared by two windows belongs to the one where it is farther from an edge (ties: the earlier one)."""
    if n <= capacity:
        return [(0, n, 0, n)]
    starts, a = [], 0
    while a + capacity < n:
        starts.append(a)
        a += capacity - overlap
    if not starts or starts[-1] != n - capacity:
        starts.append(n - capacity)
    wins = [(a, a + capacity) for a in starts]
    owner = []
    for p in range(n):
        best = max((min(p - a, b - 1 - p), -i) for i, (a, b) in enumerate(wins) if a <= p < b)
        owner.append(-best[1])
    out = []
    for i, (a, b) in enumerate(wins):
        kept = [p for p in range(n) if owner[p] == i]
        out.append((a, b, kept[0], kept[-1] + 1))
    return out


@pytest.mark.parametrize("n,cap,ov", [(10, 16, 2), (16, 16, 2), (17, 16, 2), (100, 16, 3), (1000, 126, 31),
                                      (127, 126, 0), (510, 510, 127), (5000, 510, 127)])
def test_plan_tiles_and_respects_capacity(n, cap, ov):
    plan = MacroWindow(cap + FRAME, ov).plan(n, FRAME)
    assert plan[0].keep_start == 0 and plan[-1].keep_end == n
    for (a, b, ks, ke), nxt in zip(plan, plan[1:] + [None]):
        assert 0 <= a < b <= n and b - a <= cap and a <= ks < ke <= b
        if nxt is not None:
            assert nxt.keep_start == ke and nxt.start <= b - ov  # consecutive windows overlap by at least `ov`
    assert [tuple(w) for w in plan] == _plan_ref(n, cap, ov)


@given(n=st.integers(0, 3000), cap=st.integers(MIN_WINDOW_CONTENT_TOKENS, 300), data=st.data())
def test_plan_matches_the_reference_loop(n, cap, data):
    ov = data.draw(st.integers(0, cap - 1))
    assert [tuple(w) for w in MacroWindow(cap + FRAME, ov).plan(n, FRAME)] == _plan_ref(n, cap, ov)


def test_default_resolves_size_to_the_model_default_window_and_no_overlap():
    """Issue 14: the default window is the model's sentence-transformers max_seq_length (``default_size``), capped
    at the input limit; the default overlap is DEFAULT_WINDOW_OVERLAP (0, the cheapest point on the measured
    quality/cost front)."""
    from latechunk.macro_window import DEFAULT_WINDOW_OVERLAP

    assert DEFAULT_WINDOW_OVERLAP == 0
    assert MacroWindow.default(512, FRAME) == MacroWindow(512, 0)  # no default_size: the input limit
    assert MacroWindow.default(512, FRAME, default_size=256) == MacroWindow(256, 0)
    assert MacroWindow.default(512, FRAME, default_size=8192) == MacroWindow(512, 0)  # capped at the limit
    assert MacroWindow.default(512, FRAME, size=128, default_size=256) == MacroWindow(128, 0)  # a size wins
    assert MacroWindow.default(512, FRAME, size=128, overlap=32) == MacroWindow(128, 32)
    with pytest.raises(ValueError, match="macro_window_overlap=126 must be >= 0 and < 126"):
        MacroWindow.default(512, FRAME, size=128, overlap=126)


def test_one_validation_names_the_bound():
    minimum = FRAME + MIN_WINDOW_CONTENT_TOKENS
    with pytest.raises(ValueError, match="macro_window=513 exceeds max_length=512"):
        MacroWindow(513, 0).check(FRAME, 512)
    MacroWindow(513, 0).check(FRAME)  # no model bound given
    for bad in (3, minimum - 1):
        with pytest.raises(ValueError, match=rf"macro_window={bad} is too small: the minimum is {minimum} tokens"):
            MacroWindow.default(512, FRAME, size=bad)
    MacroWindow(minimum, MIN_WINDOW_CONTENT_TOKENS - 1).check(FRAME, 512)
    with pytest.raises(ValueError, match=r"macro_window_overlap=16 must be >= 0 and < 16"):
        MacroWindow(minimum, MIN_WINDOW_CONTENT_TOKENS).check(FRAME, 512)
    with pytest.raises(ValueError, match=r"macro_window_overlap=-1 must be >= 0"):
        MacroWindow(128, -1).plan(1000, FRAME)  # the plan goes through the same check
    with pytest.raises(TypeError, match="MacroWindow.size must be an int"):
        MacroWindow(128.0, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MacroWindow.overlap must be an int"):
        MacroWindow(128, True)
