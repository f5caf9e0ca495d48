"""Tests of eval/metrics/ on tiny fixtures whose expected values were computed by hand (see the comments).

Each ratio of integer character counts is one float division, so it equals ``float(Fraction(...))`` exactly.
"""

from __future__ import annotations

import copy
import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latechunk.eval.metrics import (
    answer_contained_recall,
    chroma_span_scores,
    doc_metrics,
    doc_run_from_chunk_run,
    drop_overlapping,
    duplicate_slots,
    facts_protected,
    mean_over_queries,
    observed_overlap_multiplier,
    precision_omega,
    span_metrics,
    spans_protected,
    theoretical_overlap_multiplier,
)

# Document "a" (100 chars) holds both reference spans: 10 + 10 = 20 reference chars.
REFS = [("a", 10, 20), ("a", 40, 50)]
C1, C2, C3, C4, C5 = ("a", 0, 15), ("a", 5, 25), ("b", 0, 30), ("a", 45, 60), ("a", 40, 50)
RANKING = [C1, C2, C3, C4, C5]


# ---------------------------------------------------------------- answer-contained recall


def test_answer_contained_recall_hand():
    # k=3: [10,20) lies inside C2=[5,25); [40,50) inside none of C1..C3 -> 1/2
    assert answer_contained_recall(RANKING, REFS, 3) == float(F(1, 2))
    # k=1: C1=[0,15) cuts [10,20) -> 0
    assert answer_contained_recall(RANKING, REFS, 1) == 0.0
    # k=4: C4=[45,60) cuts [40,50) -> still 1/2; k=5: C5=[40,50) holds it exactly -> 1
    assert answer_contained_recall(RANKING, REFS, 4) == float(F(1, 2))
    assert answer_contained_recall(RANKING, REFS, 5) == 1.0
    # a chunk of another document never contains a span, whatever its offsets
    assert answer_contained_recall([("b", 0, 100)], REFS, 1) == 0.0
    # k larger than the ranking uses it whole; extra entries (score, chunk_index) are ignored
    assert answer_contained_recall([("a", 0, 100, 0.3, 7)], REFS, 10) == 1.0


# ---------------------------------------------------------------- Chroma span metrics


def test_chroma_span_scores_k3_hand():
    # top-3 = C1, C2, C3. R (doc a) = [0,15) ∪ [5,25) = [0,25). R ∩ G = [10,20): 10 chars.
    # recall = 10/20 = 1/2
    # precision: denominator is the SUM of top-k chunk lengths, 15 + 20 + 30 = 65 (C1 and C2 share [5,15) and
    #   C3 is another document; both still count): 10/65 = 2/13
    # iou: 65 + unused reference chars ([40,50) = 10) = 75: 10/75 = 2/15
    scores = chroma_span_scores(RANKING, REFS, 3)
    assert scores == {"recall": float(F(1, 2)), "precision": float(F(2, 13)), "iou": float(F(2, 15))}


def test_chroma_span_scores_k5_hand():
    # top-5: R (a) = [0,25) ∪ [40,60). R ∩ G = 10 + 10 = 20 -> recall 20/20 = 1
    # sum of lengths 15 + 20 + 30 + 15 + 10 = 90 (C4, C5 share [45,50): counted twice) -> precision 2/9
    # nothing unused -> iou 20/90 = 2/9
    scores = chroma_span_scores(RANKING, REFS, 5)
    assert scores == {"recall": 1.0, "precision": float(F(2, 9)), "iou": float(F(2, 9))}


def test_chroma_span_scores_numerator_is_a_union():
    # Two identical chunks over [10,20): the shared 10 chars count once in the numerator, twice in the
    # precision denominator. recall 10/20 = 1/2, precision 10/20 = 1/2, iou 10/(20 + 10) = 1/3.
    scores = chroma_span_scores([("a", 10, 20), ("a", 10, 20)], REFS, 2)
    assert scores == {"recall": float(F(1, 2)), "precision": float(F(1, 2)), "iou": float(F(1, 3))}


def test_chroma_span_scores_empty_and_errors():
    # nothing retrieved: recall 0, precision 0 (their code's guard), iou 0/(0 + 20) = 0
    assert chroma_span_scores([], REFS, 5) == {"recall": 0.0, "precision": 0.0, "iou": 0.0}
    with pytest.raises(ValueError, match="no reference spans"):
        chroma_span_scores(RANKING, [], 5)
    with pytest.raises(ValueError, match="k must be"):
        chroma_span_scores(RANKING, REFS, 0)
    with pytest.raises(ValueError, match="char_start < char_end"):
        chroma_span_scores([("a", 5, 5)], REFS, 1)


def _char_set(spans):
    return {(d, i) for d, s, e in spans for i in range(s, e)}


def _span_scores_ref(ranking, refs, k):
    """Brute force over sets of (doc_id, char) pairs, written independently of the module."""
    top = [tuple(c[:3]) for c in ranking[:k]]
    r = _char_set(top)
    g = _char_set(refs)
    overlap = len(r & g)
    retrieved = sum(e - s for _, s, e in top)
    unused = sum(len(_char_set([ref]) - r) for ref in refs)
    return {
        "recall": overlap / sum(e - s for _, s, e in refs),
        "precision": overlap / retrieved if retrieved else 0.0,
        "iou": overlap / (retrieved + unused),
    }


_span = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 60), st.integers(1, 25)).map(
    lambda t: (t[0], t[1], t[1] + t[2])
)


@settings(max_examples=200, deadline=None)
@given(ranking=st.lists(_span, max_size=8), refs=st.lists(_span, min_size=1, max_size=4), k=st.integers(1, 9))
def test_chroma_span_scores_matches_brute_force(ranking, refs, k):
    ranking_copy, refs_copy = copy.deepcopy(ranking), copy.deepcopy(refs)
    new = chroma_span_scores(ranking, refs, k)
    ref = _span_scores_ref(ranking, refs, k)
    assert new == ref
    assert ranking == ranking_copy and refs == refs_copy  # inputs untouched


# ---------------------------------------------------------------- precision Ω


def test_precision_omega_hand():
    # chunks of a tile [0,100); those meeting a reference: [0,30) and [30,60) -> C_h = [0,60)
    # Ω = |C_h ∩ G| / |C_h ∪ G| = 20 / 60 = 1/3
    chunks = {"a": np.array([[0, 30], [30, 60], [60, 100]], dtype=np.int32)}
    assert precision_omega(chunks, REFS) == float(F(1, 3))


def test_precision_omega_touching_quirk():
    # chunks cut exactly at the reference borders: strictly, C_h = [10,20) ∪ [40,50) -> Ω = 20/20 = 1
    # Chroma's inclusive intersect_two_ranges also takes [0,10), [20,40) and [50,100), which only touch a
    # reference -> C_h = [0,100) -> Ω = 20/100 = 1/5
    chunks = {"a": [[0, 10], [10, 20], [20, 40], [40, 50], [50, 100]]}
    assert precision_omega(chunks, REFS) == 1.0
    assert precision_omega(chunks, REFS, count_touching=True) == float(F(1, 5))


def test_precision_omega_uncovered_reference_and_two_docs():
    # only [0,15) exists in a: C_h = [0,15); |C_h ∩ G| = 5; |C_h ∪ G| = |[0,20)| + |[40,50)| = 30 -> 1/6
    assert precision_omega({"a": [[0, 15]]}, REFS) == float(F(1, 6))
    # add a reference [0,10) in b, chunk [0,40) in b: numerator 5 + 10 = 15, denominator 30 + 40 = 70 -> 3/14
    assert precision_omega({"a": [[0, 15]], "b": [[0, 40]]}, REFS + [("b", 0, 10)]) == float(F(3, 14))
    # no chunk meets a reference -> 0
    assert precision_omega({"a": [[60, 100]]}, REFS) == 0.0
    with pytest.raises(ValueError, match="no entry for document 'a'"):
        precision_omega({"b": [[0, 5]]}, REFS)


def _omega_ref(chunks, refs, touching):
    """Brute-force precision Ω over sets of (doc_id, char) pairs."""
    g = _char_set(refs)
    hit = []
    for doc, arr in chunks.items():
        for s, e in arr:
            meets = any(
                d == doc and (min(e, re_) - max(s, rs) >= 0 if touching else min(e, re_) > max(s, rs))
                for d, rs, re_ in refs
            )
            if meets:
                hit.append((doc, s, e))
    h = _char_set(hit)
    return len(h & g) / len(h | g) if h & g else 0.0


@settings(max_examples=200, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 89), max_size=8, unique=True),
    extra=st.lists(_span, max_size=3),
    refs=st.lists(_span, min_size=1, max_size=4),
    touching=st.booleans(),
)
def test_precision_omega_matches_brute_force(cuts, extra, refs, touching):
    bounds = [0, *sorted(cuts), 90]
    chunks = {"a": [[s, e] for s, e in itertools.pairwise(bounds)], "b": [[0, 90]]}
    for doc, s, e in extra:  # overlapping extra chunks
        chunks[doc].append([s, e])
    assert precision_omega(chunks, refs, count_touching=touching) == _omega_ref(chunks, refs, touching)


# ---------------------------------------------------------------- facts protected


def test_facts_protected_hand():
    refs = REFS + [("a", 20, 30)]
    tiling = {"a": np.array([[0, 15], [15, 45], [45, 100]])}
    # [10,20) crosses 15, [40,50) crosses 45, [20,30) lies in [15,45) -> 1/3
    assert spans_protected(tiling, refs).tolist() == [False, False, True]
    assert facts_protected(tiling, refs) == float(F(1, 3))
    # an overlapping chunk [5,25) also holds [10,20) -> 2/3
    overlapping = {"a": np.array([[0, 15], [5, 25], [15, 45], [45, 100]])}
    assert facts_protected(overlapping, refs) == float(F(2, 3))
    with pytest.raises(ValueError, match="no spans"):
        facts_protected(tiling, [])


# ---------------------------------------------------------------- duplicates


def test_duplicate_slots_hand():
    # k=3: C2 overlaps C1 on [5,15) -> 1; C3 is another document
    assert duplicate_slots(RANKING, 3) == 1
    # k=5: C5=[40,50) overlaps C4=[45,60) -> 2
    assert duplicate_slots(RANKING, 5) == 2
    # touching chunks share no character
    assert duplicate_slots([("a", 0, 10), ("a", 10, 20)], 2) == 0
    # every earlier chunk counts, duplicates included: [12,20) overlaps only the duplicate [5,15) -> 2
    assert duplicate_slots([("a", 0, 10), ("a", 5, 15), ("a", 12, 20)], 3) == 2


def test_drop_overlapping_hand():
    ranking = [(*C1, 0.9), (*C2, 0.8), (*C3, 0.7), (*C4, 0.6), (*C5, 0.5)]
    before = copy.deepcopy(ranking)
    # C2 overlaps kept C1 -> skipped; C3 and C4 fill the slots; order kept, items returned whole
    assert drop_overlapping(ranking, 3) == [ranking[0], ranking[2], ranking[3]]
    # C5 overlaps kept C4 -> skipped; the ranking runs out at 3
    assert drop_overlapping(ranking, 5) == [ranking[0], ranking[2], ranking[3]]
    assert drop_overlapping(ranking, 1) == [ranking[0]]
    assert ranking == before
    kept = drop_overlapping(RANKING, 3)
    assert duplicate_slots(kept, 3) == 0
    # scoring the deduplicated top-3 [C1, C3, C4]: R ∩ G = [10,15) + [45,50) = 10 -> recall 1/2;
    # lengths 15 + 30 + 15 = 60 -> precision 10/60 = 1/6; unused 5 + 5 -> iou 10/70 = 1/7
    assert chroma_span_scores(kept, REFS, 3) == {
        "recall": float(F(1, 2)),
        "precision": float(F(1, 6)),
        "iou": float(F(1, 7)),
    }


@settings(max_examples=200, deadline=None)
@given(ranking=st.lists(_span, max_size=10), k=st.integers(1, 6))
def test_drop_overlapping_properties(ranking, k):
    kept = drop_overlapping(ranking, k)
    assert len(kept) <= k
    assert duplicate_slots(kept, k) == 0
    positions = [ranking.index(c) for c in kept]
    assert positions == sorted(positions)  # rank order kept
    if duplicate_slots(ranking, k) == 0:
        assert kept == ranking[:k]


def test_malformed_spans():
    with pytest.raises(TypeError):
        answer_contained_recall([("a", 0.5, 3)], REFS, 1)
    with pytest.raises(TypeError):
        chroma_span_scores([(1, 0, 3)], REFS, 1)
    with pytest.raises(ValueError, match="must start with"):
        duplicate_slots([("a", 0)], 1)


# ---------------------------------------------------------------- many queries


def test_span_metrics_and_mean():
    run = {"q1": RANKING, "q2": [("a", 0, 100)]}
    references = {"q1": REFS, "q2": [("a", 40, 50)], "q3": []}  # q3 has no spans: left out
    out = span_metrics(run, references, 3)
    assert set(out) == {"AR@3", "SpanRecall@3", "SpanPrecision@3", "SpanIoU@3", "Dup@3"}
    assert out["AR@3"] == {"q1": 0.5, "q2": 1.0}
    # q2: one chunk [0,100) holds the 10 reference chars: recall 1, precision 10/100, iou 10/100
    assert out["SpanPrecision@3"] == {"q1": float(F(2, 13)), "q2": float(F(1, 10))}
    assert out["Dup@3"] == {"q1": 1.0, "q2": 0.0}
    # mean of 2/13 and 1/10 = (20 + 13) / 260 = 33/260
    assert mean_over_queries(out["SpanPrecision@3"]) == pytest.approx(float(F(33, 260)), rel=1e-15)
    with pytest.raises(ValueError, match="lack a ranking"):
        span_metrics({"q1": RANKING}, references, 3)
    with pytest.raises(ValueError, match="no references entry"):
        span_metrics({**run, "zz": []}, references, 3)
    with pytest.raises(ValueError, match="no queries"):
        mean_over_queries({})


# ---------------------------------------------------------------- document level


def test_doc_run_from_chunk_run_max():
    chunk_run = {"q1": {("d1", 0): 0.5, ("d1", 1): 0.9, ("d2", 0): 0.7, ("d3", 0): 0.1}, "q2": {}}
    before = copy.deepcopy(chunk_run)
    assert doc_run_from_chunk_run(chunk_run) == {"q1": {"d1": 0.9, "d2": 0.7, "d3": 0.1}, "q2": {}}
    assert chunk_run == before
    with pytest.raises(ValueError, match="chunk_index"):
        doc_run_from_chunk_run({"q": {"d1": 1.0}})


def test_doc_metrics_hand():
    qrels = {"q1": {"d2": 1, "d3": 2, "d9": 0}, "q2": {"d4": 1}, "q3": {"d1": 1}}
    chunk_run = {
        "q1": {("d1", 0): 0.5, ("d1", 1): 0.9, ("d2", 0): 0.7, ("d3", 0): 0.1},
        "q2": {("d1", 0): 0.3},
    }
    doc_run = doc_run_from_chunk_run(chunk_run)
    out = doc_metrics(qrels, doc_run, ("nDCG@10", "R@100", "RR@10", "R@2"))
    # q1 ranking d1 (rel 0), d2 (rel 1), d3 (rel 2); trec_eval gains are the relevance levels:
    # DCG = 0/log2(2) + 1/log2(3) + 2/log2(4) = 1 + 1/log2(3); ideal d3, d2: IDCG = 2/1 + 1/log2(3)
    ndcg_q1 = (1 + 1 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert out["nDCG@10"]["q1"] == pytest.approx(ndcg_q1, rel=1e-12)
    assert out["RR@10"]["q1"] == 0.5  # first relevant at rank 2
    assert out["R@100"]["q1"] == 1.0  # both relevant found
    assert out["R@2"]["q1"] == 0.5  # d1, d2: one of two relevant
    # q2 retrieves only a non-relevant doc; q3 retrieves nothing (absent from the run): 0 everywhere
    for name in ("nDCG@10", "R@100", "RR@10", "R@2"):
        assert out[name]["q2"] == 0.0 and out[name]["q3"] == 0.0
    assert mean_over_queries(out["RR@10"]) == pytest.approx(0.5 / 3, rel=1e-15)
    with pytest.raises(ValueError, match="not an ir_measures measure"):
        doc_metrics(qrels, doc_run, ("NotAMeasure@3",))


# ---------------------------------------------------------------- costs


def test_overlap_multipliers():
    # chunk tokens (5-1) + (7-3) + (4-1) = 11 over 6 + 3 content tokens -> 11/9
    token_spans = {"a": np.array([[1, 5], [3, 7]], dtype=np.int32), "b": [[1, 4]]}
    assert observed_overlap_multiplier(token_spans, {"a": 6, "b": 3}) == float(F(11, 9))
    assert theoretical_overlap_multiplier(256, 32) == float(F(8, 7))  # 256 / 224
    assert theoretical_overlap_multiplier(100, 0) == 1.0
    with pytest.raises(ValueError):
        theoretical_overlap_multiplier(10, 10)
    with pytest.raises(ValueError, match="same doc_ids"):
        observed_overlap_multiplier(token_spans, {"a": 6})
