"""Sentence segmentation speed-ups keep the output: the faster pysbd abbreviation pass against stock pysbd,
segmentation ahead in worker processes against the calling thread, the shared cache, and the pipeline's use."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from eval.datasets import data_root
from latechunk import segment
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.models import minilm_encoder

CORPORA = data_root() / "chroma_chunking_eval" / "corpora"


@pytest.fixture(autouse=True)
def fresh_cache():
    segment.clear_cache()
    yield
    segment.clear_cache()


def _processed(text: str, fast: bool) -> list[str]:
    seg = segment._segmenter(fast=fast)
    return seg.processor(text).process()


def test_fast_abbreviation_pass_is_active():
    import pysbd

    lang = segment._segmenter().language_module
    if pysbd.__version__ == segment._PYSBD_PATCHED_VERSION:
        assert lang.__name__ == "FastEnglish"
        assert lang.AbbreviationReplacer.__name__ == "FastAbbreviationReplacer"
    else:  # another pysbd: stock rules
        assert lang.__name__ == "English"


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/data is not present")
def test_fast_pysbd_matches_stock_pysbd_on_real_corpora():
    """Every block of the first 60k characters of each Chroma corpus: identical sentences."""
    n_blocks = 0
    for path in sorted(CORPORA.glob("*.md")):
        text = path.read_text(encoding="utf-8")[:60_000]
        for a, b in segment._paragraphs(text):
            pos = a
            while pos < b:  # the blocks _segment_paragraph feeds pysbd
                end = min(b, pos + segment._BLOCK_CHARS)
                block = text[pos:end]
                assert _processed(block, True) == _processed(block, False), (path.name, pos)
                n_blocks += 1
                pos = end
    assert n_blocks > 100


_WORDS = ["Dr", "dr", "e.g", "i.e", "U.S", "Ph.D", "Mr", "no", "No", "St", "st", "a", "A", "approx", "Fig", "fig",
          "vs", "etc", "Inc", "Jan", "ſt", "\u212ag", "ıd", "3", "3.14", "1", "ii", "x", "Ames", "the", "data",
          "Ohio", "he", "It", "I", "mg", "p.m", "a.m", "cf", "al", "et", "(a)", "1)", "U.K", "PhD"]
_PUNCT = ["", "", ".", ".", ". ", "! ", "? ", ",", ":", "'s", ".)", '."', "...", "\n", "\n\n", " - "]


@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_PUNCT)), min_size=1, max_size=40))
@example([("see", ""), ("e.g", ""), ("the", ""), ("exg", "."), ("data", "")])  # "." in an abbreviation is a wildcard
@example([("first", ""), ("ſt", "."), ("next", "")])  # "ſ" matches "s" case-insensitively, but lower() keeps it
@example([("no", "."), ("5", ""), ("and", ""), ("No", "."), ("6", "")])
def test_fast_pysbd_matches_stock_pysbd_on_generated_text(parts):
    """Text dense in abbreviations, periods, case variants and the characters that case-fold to ASCII."""
    text = " ".join(w + p for w, p in parts)
    assert _processed(text, True) == _processed(text, False)


def _texts() -> list[str]:
    rng = np.random.default_rng(0)
    words = ["alpha", "Dr.", "beta", "e.g.", "gamma.", "Delta", "3.14", "U.S.", "state", "end."]
    out = []
    for d in range(6):
        paras = []
        for _ in range(40 + 10 * d):
            paras.append(" ".join(rng.choice(words, size=int(rng.integers(5, 120)))))
        out.append("\n\n".join(paras))
    return out


def test_presegment_in_worker_processes_equals_this_thread(monkeypatch):
    texts = _texts()
    serial = segment.presegment(texts, workers=0)
    assert serial["workers"] == 0 and serial["paragraphs"] > 200
    expected = [segment.sentence_char_spans(t).copy() for t in texts]
    segment.clear_cache()
    monkeypatch.setattr(segment, "_MIN_POOL_CHARS", 0)
    monkeypatch.setattr(segment, "_TASK_CHARS", 2000)  # many tasks, so order across tasks is exercised
    try:
        info = segment.presegment(texts, workers=2)
        assert info == {**serial, "workers": 2}

        # every sentence now comes from the cache: segmenting again would fail
        def boom(*args):
            raise AssertionError("segmented again")

        monkeypatch.setattr(segment, "_segment_paragraph", boom)
        for t, e in zip(texts, expected):
            np.testing.assert_array_equal(segment.sentence_char_spans(t), e)
        assert segment.presegment(texts, workers=2)["paragraphs"] == 0  # nothing left to do
    finally:
        segment._drop_pool()


def test_presegment_falls_back_when_the_pool_fails(monkeypatch):
    texts = _texts()[:2]
    expected = [segment._segment_text(t) for t in texts]

    def broken(workers):
        raise RuntimeError("no processes here")

    monkeypatch.setattr(segment, "_MIN_POOL_CHARS", 0)
    monkeypatch.setattr(segment, "_pool", broken)
    with pytest.warns(RuntimeWarning, match="segmenting in this process instead"):
        info = segment.presegment(texts, workers=4)
    assert info["workers"] == 0
    for t, e in zip(texts, expected):
        np.testing.assert_array_equal(segment.sentence_char_spans(t), e)


def test_presegment_min_tokens_picks_paragraphs_with_a_long_line(minilm_tokenizer):
    """Only a paragraph holding a line of more than ``min_tokens`` tokens is segmented ahead; the rest stay
    lazy and give the same sentences when asked."""
    long_line = "A much longer line goes here. " * 8  # ~56 tokens on one line
    many_short = "\n".join(["Short line here."] * 10)  # ~40 tokens, but no line over 4
    text = f"Short one. Two.\n\n{many_short}\n\n{long_line}\n\nTiny."
    doc = Document("d", text)
    tok = minilm_tokenizer(doc)
    starts = tok.offsets[tok.content_start : tok.content_end, 0]
    info = segment.presegment([text], 20, [starts], workers=0)
    ds = segment._document_sentences(text)
    assert info["paragraphs"] == 1 and sorted(ds.memo) == [2]
    np.testing.assert_array_equal(segment.sentence_char_spans(text), segment._segment_text(text))
    segment.clear_cache()
    assert segment.presegment([text], 0, [starts], workers=0)["paragraphs"] == 4  # 0: every paragraph
    with pytest.raises(ValueError, match="1 texts but 2"):
        segment.presegment([text], 20, [starts, starts])


def test_small_jobs_stay_in_this_thread(monkeypatch):
    def no_pool(workers):
        raise AssertionError("a pool for a few characters")

    monkeypatch.setattr(segment, "_pool", no_pool)
    assert segment.presegment(["One. Two."], workers=8)["workers"] == 0


def test_cache_is_bounded_by_characters():
    cache = segment._SentenceCache(max_chars=100)
    a, b, c = "a" * 60, "b" * 30, "c" * 30
    da = cache.get(a)
    cache.get(b)
    assert cache.get(a) is da  # a hit, and now the most recent
    cache.get(c)  # 120 chars > 100: the least recent (b) goes
    assert list(cache._items) == [a, c]
    huge = "d" * 500  # bigger than the bound: kept alone
    cache.get(huge)
    assert list(cache._items) == [huge]


def test_set_workers():
    before = segment.get_workers()
    try:
        assert segment.set_workers(3) == 3 and segment.get_workers() == 3
        assert segment.set_workers(None) == segment.default_workers()
        with pytest.raises(ValueError, match="-1"):
            segment.set_workers(-1)
    finally:
        segment.set_workers(before)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("fixed:size=64", None), ("recursive:max_tokens=100", 100), ("heading:max_tokens=80", 80),
     ("sentence_window:window=1", 0), ("semantic", 0)],
)
def test_sentence_paragraph_hints(spec, expected):
    assert get_strategy(spec).sentence_paragraphs() == expected


def test_pipeline_segments_each_paragraph_once_for_all_strategies(monkeypatch):
    """Five strategies on one pass: one pysbd pass per paragraph, done ahead of the split."""
    from latechunk.pipeline import embed

    texts = _texts()[:3]
    docs = [Document(f"d{i}", t) for i, t in enumerate(texts)]
    n_paragraphs = sum(len(segment._paragraphs(t)) for t in texts)
    calls = []
    real = segment._segment_paragraph
    monkeypatch.setattr(segment, "_segment_paragraph", lambda text, a, b: calls.append((text, a)) or real(text, a, b))
    specs = ["fixed:size=64", "recursive:max_tokens=64", "heading:max_tokens=64", "sentence_window:window=1",
             "semantic:percentile=10"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = embed(docs, specs, minilm_encoder())
    assert not res.skipped
    assert len(calls) == n_paragraphs == len(set(calls))


def test_pipeline_with_sentence_workers_gives_the_same_chunks(monkeypatch):
    """embed() with worker processes segmenting ahead (from the prefetch thread) = embed() in one process."""
    from latechunk.pipeline import embed

    docs = [Document(f"d{i}", t) for i, t in enumerate(_texts()[:3])]
    specs = ["recursive:max_tokens=64", "sentence_window:window=1"]
    enc = minilm_encoder()
    before = segment.get_workers()
    try:
        segment.set_workers(0)
        one = embed(docs, specs, enc)
        segment.clear_cache()
        monkeypatch.setattr(segment, "_MIN_POOL_CHARS", 0)
        monkeypatch.setattr(segment, "_TASK_CHARS", 4000)
        segment.set_workers(2)
        two = embed(docs, specs, enc)
        assert segment._POOL is not None and segment._POOL.n == 2  # the workers were used
    finally:
        segment.set_workers(before)
        segment._drop_pool()
    assert list(one.runs) == list(two.runs) and len(one.runs) == 2
    for r1, r2 in zip(one.runs.values(), two.runs.values()):
        assert len(r1.boundaries) == len(docs)
        for b1, b2 in zip(r1.boundaries, r2.boundaries):
            np.testing.assert_array_equal(b1.token_spans, b2.token_spans)
            np.testing.assert_array_equal(b1.char_spans, b2.char_spans)
        np.testing.assert_array_equal(r1.vectors["late"].vectors, r2.vectors["late"].vectors)


def test_cli_rejects_negative_sentence_workers(tmp_path):
    from typer.testing import CliRunner

    from latechunk.cli import app

    (tmp_path / "a.md").write_text("One. Two.", encoding="utf-8")
    before = segment.get_workers()
    try:
        res = CliRunner().invoke(app, ["embed", str(tmp_path / "a.md"), "--out", str(tmp_path / "out"),
                                       "--sentence-workers", "-1"])
    finally:
        segment.set_workers(before)
    assert res.exit_code == 2
    assert "--sentence-workers" in res.output and "-1" in res.output
    assert not (tmp_path / "out").exists()  # failed before any work


def test_workers_need_no_main_guard_and_never_rerun_the_script(tmp_path):
    """A script without ``if __name__ == "__main__":`` that turns workers on: its top level runs once (the
    workers import only latechunk.segment), the workers are used, and the sentences match one process."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "import hashlib, sys\n"
        "print('TOP-LEVEL RAN', file=sys.stderr)\n"
        "from latechunk import segment\n"
        "segment._MIN_POOL_CHARS = 0\n"
        "segment._TASK_CHARS = 500\n"
        "texts = ['Dr. Smith went home. It rained. ' * 40 + '\\n\\n' + 'U.S. data, e.g. 3.14 here. Next one. ' * 30]\n"
        "info = segment.presegment(texts, workers=2)\n"
        "a = segment.sentence_char_spans(texts[0]).tobytes()\n"
        "segment.clear_cache()\n"
        "segment.presegment(texts, workers=0)\n"
        "b = segment.sentence_char_spans(texts[0]).tobytes()\n"
        "print(info['workers'], a == b, len(a))\n",
        encoding="utf-8",
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("TOP-LEVEL RAN") == 1, proc.stderr
    workers, same, n_bytes = proc.stdout.split()
    assert workers == "2" and same == "True" and int(n_bytes) > 100


def test_a_dead_worker_falls_back_to_this_process(monkeypatch):
    texts = _texts()[:2]
    expected = [segment._segment_text(t) for t in texts]
    monkeypatch.setattr(segment, "_MIN_POOL_CHARS", 0)
    try:
        pool = segment._pool(2)
        pool.ready()
        for proc in pool.procs:
            proc.kill()
            proc.wait()
        with pytest.warns(RuntimeWarning, match="segmenting in this process instead"):
            info = segment.presegment(texts, workers=2)
        assert info["workers"] == 0 and segment._POOL is None  # the broken pool was dropped
    finally:
        segment._drop_pool()
    for t, e in zip(texts, expected):
        np.testing.assert_array_equal(segment.sentence_char_spans(t), e)
