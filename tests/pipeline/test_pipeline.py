"""latechunk.pipeline: late and naive vectors of many strategies from one pass (one pass per document for many
strategies, exact means, identical records), and the pipeline side of the cases BR-004 and BR-011 of
``../shared/cases/README.md`` (encoder side, BR-012..BR-014: tests/encoder/test_encoder.py; export, BR-015:
tests/index/test_index.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from latechunk.config import PipelineConfig
from latechunk.index import build_index
from latechunk.output import chunk_rows
from latechunk.pipeline import embed, late_vectors
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.corpus import make_corpus
from tests.invariants import check_boundaries, check_chunk_rows
from tests.models import ForwardRecorder, minilm_encoder

TEXT = (
    "Late chunking encodes a whole document once. Each chunk vector is the mean of the token states in its span. "
    "Boundaries change only the pooling, never the encoding.\n\n"
    "Naive chunking encodes every chunk on its own. It loses the context of the rest of the document. "
    "The evaluator compares both on the same boundaries."
)
STRATS = ["fixed:size=16,overlap=4", "sentence_window:window=1", "recursive:max_tokens=24"]
STRATEGIES = ["fixed", "recursive", "heading", "sentence_window", "semantic"]
SENT0 = "sentence_window:window=0"


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


def test_one_forward_pass_per_document_serves_three_strategies(encoder):
    docs = [Document("a", TEXT), Document("b", TEXT[:150])]
    rec = ForwardRecorder(encoder)
    res = embed(docs, encoder, PipelineConfig(tuple(STRATS), modes=("late",)))
    assert len(rec.rows) == 2  # one model input per document, three strategies pooled from it
    assert sorted(len(r) for r in rec.rows) == sorted(len(t) for t in res.tokenizations)
    assert all(res.run(s).n_chunks > 1 for s in STRATS)


def test_late_vectors_are_means_of_one_forward_pass(encoder):
    doc = Document("a", TEXT)
    res = embed([doc], encoder, PipelineConfig(tuple(STRATS), modes=("late",), normalize=False))
    tok = res.tokenizations[0]
    with torch.inference_mode():
        states = encoder.model(input_ids=torch.tensor(tok.input_ids)[None]).last_hidden_state[0]
    for spec in STRATS:
        run = res.run(spec)
        spans = run.boundaries[0].token_spans
        ref = np.stack([states[a:b].mean(0).numpy() for a, b in spans.tolist()])
        np.testing.assert_allclose(run.vectors["late"].vectors, ref, atol=1e-5)
        assert not tok.special_tokens_mask[np.concatenate([np.arange(a, b) for a, b in spans.tolist()])].any()


def test_late_and_naive_share_identical_chunk_records(encoder):
    docs = [Document("a", TEXT), Document("b", "Short doc. Two sentences.")]
    res = embed(docs, encoder, PipelineConfig(tuple(STRATS), modes=("late", "naive")))
    for spec in STRATS:
        run = res.run(spec)
        late, naive = run.vectors["late"], run.vectors["naive"]
        assert late.vectors.shape == naive.vectors.shape
        np.testing.assert_array_equal(late.chunk_index, naive.chunk_index)
        np.testing.assert_array_equal(late.cu_chunks, naive.cu_chunks)
        assert late.doc_ids == naive.doc_ids
        assert not np.allclose(late.vectors, naive.vectors)  # the encodings really differ
        np.testing.assert_allclose(np.linalg.norm(naive.vectors, axis=1), 1.0, atol=1e-5)


def test_naive_vectors_encode_each_chunk_text_alone(encoder):
    doc = Document("a", TEXT)
    res = embed([doc], encoder, PipelineConfig(("sentence_window:window=0",), modes=("naive",)))
    run = res.run("sentence_window:window=0")
    texts = run.boundaries[0].texts(doc.text)
    np.testing.assert_allclose(run.vectors["naive"].vectors, encoder.encode_document(texts), atol=1e-5)


def test_include_special_absorbs_frame_into_first_and_last_chunk(encoder):
    doc = Document("a", TEXT)
    res = embed([doc], encoder, PipelineConfig(("fixed:size=16",), modes=("late",), normalize=False, include_special=True))
    tok = res.tokenizations[0]
    run = next(iter(res.runs.values()))
    with torch.inference_mode():
        states = encoder.model(input_ids=torch.tensor(tok.input_ids)[None]).last_hidden_state[0]
    spans = run.boundaries[0].token_spans
    np.testing.assert_allclose(run.vectors["late"].vectors[0], states[0 : spans[0, 1]].mean(0).numpy(), atol=1e-5)
    np.testing.assert_allclose(run.vectors["late"].vectors[-1], states[spans[-1, 0] :].mean(0).numpy(), atol=1e-5)


def test_bad_documents_are_listed_not_fatal(encoder):
    docs = [Document("empty", ""), Document("ws", "  \n\t "), Document("ok", TEXT)]
    res = embed(docs, encoder, PipelineConfig(("fixed:size=16",)))
    assert [d.doc_id for d in res.documents] == ["ok"]
    assert {s.doc_id for s in res.skipped} == {"empty", "ws"}
    assert all("empty" in s.reason for s in res.skipped)


def test_bad_parameters_fail_before_work(encoder):
    rec = ForwardRecorder(encoder)
    for bad in ["nope", "fixed:size=8,overlap=8", "fixed:size=0"]:
        with pytest.raises(ValueError):
            embed([Document("a", TEXT)], encoder, PipelineConfig((bad,)))
    with pytest.raises(ValueError, match="mode"):
        embed([Document("a", TEXT)], encoder, PipelineConfig(("fixed",), modes=("early",)))
    assert rec.calls == 0


def test_late_vectors_of_zero_chunks_is_empty_float32(encoder):
    out = late_vectors([], [], [])
    assert out.shape[0] == 0 and out.dtype == np.float32


def test_semantic_with_a_named_sentence_model_needs_no_late_pass_in_naive_mode(encoder):
    doc = Document("a", TEXT)
    sentence_encoders = {"all-MiniLM-L6-v2": minilm_encoder()}
    res = embed([doc], encoder, PipelineConfig(("semantic:source=all-MiniLM-L6-v2,percentile=30",), modes=("naive",)),
                sentence_encoders=sentence_encoders)
    run = res.run("semantic:source=all-MiniLM-L6-v2,percentile=30")
    assert res.stats.forward_calls["late"] == 0 and res.stats.tokens["late"] == 0
    assert sentence_encoders["all-MiniLM-L6-v2"].stats["forward_calls"] >= 1  # sentences went through it
    assert run.n_chunks >= 2 and run.vectors["naive"].vectors.shape == (run.n_chunks, encoder.dim)
    late = embed([doc], encoder, PipelineConfig(("semantic:percentile=30",), modes=("naive",)))
    assert late.stats.forward_calls["late"] == 1  # source=late: one pass for the sentence vectors


def test_a_document_the_tokenizer_rejects_skips_only_itself():
    """The pipeline tokenizes in batches; a batch that fails is redone one by one, so only the bad one is skipped."""
    from latechunk.pipeline import embed

    enc = minilm_encoder()
    real = enc.tokenizer

    class Picky:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __call__(self, doc):
            if "poison" in doc.text:
                raise RuntimeError("cannot tokenize this")
            return self.inner(doc)

        def batch(self, docs):
            return [self(d) for d in docs]

    enc.tokenizer = Picky(real)
    docs = [Document(f"d{i}", f"Document {i} text." + (" poison" if i == 2 else "")) for i in range(5)]
    res = embed(docs, enc, PipelineConfig(("fixed:size=16",)))
    assert [s.doc_id for s in res.skipped] == ["d2"] and "cannot tokenize" in res.skipped[0].reason
    assert [d.doc_id for d in res.documents] == ["d0", "d1", "d3", "d4"]


def test_chunk_rows_of_every_strategy_are_the_callers_slices(encoder):
    """The records latechunk hands out (``output.chunk_rows``) hold the caller's own slices, and each row's token
    span covers its char span exactly, for every strategy, in late and naive mode."""
    original = "# Notes\n\n" + TEXT + "\n\n## More\n\nDr. Ames left at 3.14 p.m. sharp.  \n"
    docs = [Document("a", original), Document("b", TEXT)]
    res = embed(docs, encoder, PipelineConfig(tuple(STRATEGIES), modes=("late", "naive")))
    for spec, run in res.runs.items():
        rows = [r for d, b in zip(res.documents, run.boundaries) for r in chunk_rows(d, b, spec)]
        check_chunk_rows({"a": original, "b": TEXT}, rows, encoder.tokenizer)
        for d, tok, b in zip(res.documents, res.tokenizations, run.boundaries):
            caller = original if d.doc_id == "a" else TEXT
            check_boundaries(caller, tok, b, chunk_texts=[r["text"] for r in chunk_rows(d, b, spec)])


# --- cases BR-004, BR-011 (../shared/cases/README.md) ----------------------------------------------------------


@pytest.mark.parametrize("text", ["", "  \n\t\n  "])
def test_br004_empty_input_through_all_strategies_late_and_export(text, encoder):
    rec = ForwardRecorder(encoder)
    tok = encoder.tokenizer(text)
    for name in STRATEGIES:
        b = get_strategy(name).split(Document("d", text), tok, lambda d, t, s: np.zeros((len(s), 4), np.float32))
        assert b.char_spans.shape == (0, 2) and b.token_spans.shape == (0, 2)
        v = late_vectors([torch.zeros((len(tok), encoder.dim))], [tok], [b])
        assert v.shape == (0, encoder.dim) and v.dtype == np.float32
    res = embed([Document("d", text)], encoder, PipelineConfig(tuple(STRATEGIES)))
    assert rec.calls == 0  # a zero-chunk document never reaches the encoder
    assert [s.doc_id for s in res.skipped] == ["d"]
    for run in res.runs.values():
        assert run.vectors["late"].vectors.shape == (0, encoder.dim)
        assert build_index(run.vectors["late"].vectors, dim=encoder.dim).ntotal == 0


def test_br004_trailing_whitespace_gives_one_chunk_through_late_encoding(encoder):
    text = "alpha beta gamma   \n\n   "
    res = embed([Document("d", text)], encoder, PipelineConfig(tuple(STRATEGIES)))
    for spec, run in res.runs.items():
        (b,) = run.boundaries
        assert len(b) == 1 and b.char_spans[0, 1] <= 16, spec
        assert all(t.strip() for t in b.texts(text))
        assert run.vectors["late"].vectors.shape == (1, encoder.dim)


def test_br011_special_tokens_never_in_pooled_span(encoder):
    text = "Dogs bark. Cats sleep."
    res = embed([Document("d", text)], encoder, PipelineConfig((SENT0,), normalize=False))
    run = next(iter(res.runs.values()))
    tok = res.tokenizations[0]
    b = run.boundaries[0]
    assert b.char_spans.tolist() == [[0, 10], [11, 22]]
    assert b.token_spans.tolist() == [[1, 4], [4, 7]]
    for a, e in b.token_spans.tolist():
        assert not tok.special_tokens_mask[a:e].any() and a > 0 and e <= 7
    with torch.inference_mode():
        ids = torch.tensor(tok.input_ids)[None]
        states = encoder._run_model(ids, torch.ones_like(ids)).last_hidden_state[0]  # the encoder's arithmetic
    ref = np.stack([states[a:e].mean(0).numpy() for a, e in b.token_spans.tolist()])
    np.testing.assert_allclose(run.vectors["late"].vectors, ref, atol=1e-6)


# --- groups over the small corpus of tests/corpus.py (what ranks build on: tests/ingest/test_ranks.py) -----------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory, "_pipeline")


@pytest.mark.usefixtures("one_thread")
def test_select_group_skips_work_but_keeps_the_groups(corpus):
    """Unselected groups come as light records; the groups, their input positions and the selected vectors are
    unchanged."""
    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.io import iter_inputs
    from latechunk.pipeline import iter_embed

    corpus_dir, model = corpus
    enc = Encoder(str(model), device="cpu")
    items = list(iter_inputs([corpus_dir]))
    config = PipelineConfig(strategies=("fixed:size=128",), group_tokens=1500)
    full = list(iter_embed(items, enc, config))
    part = list(iter_embed(items, enc, config, select_group=lambda i: i % 2 == 1))
    assert len(full) >= 4 and len(part) == len(full)
    assert full[0].start == 0 and all(b.start == a.end for a, b in itertools.pairwise(full)) and full[-1].end == len(items)
    for i, (a, b) in enumerate(zip(full, part)):
        assert b.index == i and b.selected == (i % 2 == 1)
        assert (b.start, b.items) == (a.start, a.items)
        assert [d.doc_id for d in b.documents] == [d.doc_id for d in a.documents]
        if b.selected:
            np.testing.assert_array_equal(b.vectors["fixed:size=128,overlap=0"]["late"],
                                          a.vectors["fixed:size=128,overlap=0"]["late"])
        else:
            assert b.vectors == {} and b.tokenizations == []
    late = sum(g.stats.tokens["late"] for g in part)
    assert 0 < late < sum(g.stats.tokens["late"] for g in full)  # only the selected groups were encoded
    assert sum(g.stats.forward_calls["late"] for g in part) < sum(g.stats.forward_calls["late"] for g in full)


@pytest.mark.usefixtures("one_thread")
def test_stopping_early_leaves_no_tokenizer_thread(corpus):
    """A consumer that raises mid-stream (a rank sees another fail) must not leave the prefetch thread running:
    a thread inside native code at interpreter exit aborts the process (SIGABRT instead of a clean error)."""
    import contextlib
    import threading

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.io import iter_inputs
    from latechunk.pipeline import iter_embed

    corpus_dir, model = corpus
    enc = Encoder(str(model), device="cpu")
    groups = iter_embed(iter_inputs([corpus_dir]), enc, PipelineConfig(strategies=("fixed:size=128",), group_tokens=1500))
    with contextlib.closing(groups):
        next(groups)
    assert not [t for t in threading.enumerate() if t.name == "latechunk-tokenize"]


def test_late_mode_with_a_model_that_does_not_mean_pool_is_refused_by_the_python_api():
    """Issue 10, fault 7: the pipeline checks PipelineConfig.check_model with the loaded encoder's facts, so the
    Python API refuses late pooling of a CLS-pooled model as the command line does, unless late_pooling='mean'."""
    import dataclasses

    from latechunk.encoder import Encoder
    from tests.models import minilm_loaded

    loaded = minilm_loaded()
    cls_encoder = Encoder(dataclasses.replace(loaded, settings=dataclasses.replace(loaded.settings, pooling="cls")),
                          device="cpu")
    docs = [Document("a", "Rivers flow to the sea. They carve valleys over long ages.")]
    with pytest.raises(ValueError, match=r"model 'all-MiniLM-L6-v2' pools by 'cls'.*--late-pooling mean"):
        embed(docs, cls_encoder, PipelineConfig(("fixed:size=8",)))
    res = embed(docs, cls_encoder, PipelineConfig(("fixed:size=8",), modes=("late", "naive"), late_pooling="mean"))
    mean_res = embed(docs, minilm_encoder(), PipelineConfig(("fixed:size=8",)))
    late = res.run("fixed:size=8").vectors["late"].vectors
    np.testing.assert_allclose(late, mean_res.run("fixed:size=8").vectors["late"].vectors, atol=1e-6)


# --- issue 10, fault 4: memory grows with the largest document -------------------------------------------------
_CORRIDOR = ("the long corridor outside it, lit by a row of small brass lamps, stayed bright until the porter "
             "came by at midnight")
LONG_DOC = " ".join(  # about 640 tokens; every fifth sentence longer than 24 tokens
    f"Note {i}: the lamp in room {i} was switched off at dusk, and {_CORRIDOR if i % 5 == 0 else 'all was quiet'}."
    for i in range(1, 41)
)
WINDOWED = ("fixed:size=20,overlap=5", "recursive:max_tokens=24", "sentence_window:window=1", "semantic",
            "semantic:max_tokens=12,min_tokens=4")


def _whole_document_vectors(enc, res, strategies, mw, include_special, normalize):
    """The vectors as the pipeline made them before issue 10: every document's whole token states, semantic split
    on sentence vectors pooled from them, every strategy pooled from them (late_vectors)."""
    from latechunk.pipeline import _late_sentence_vectors
    from latechunk.sentences import SentenceSegmenter

    states = enc.token_states(res.tokenizations, mw)
    out = {}
    for spec in strategies:
        strat = get_strategy(spec)
        bounds = [strat.split(d, t, _late_sentence_vectors(st), sentences=SentenceSegmenter())
                  for d, t, st in zip(res.documents, res.tokenizations, states)]
        out[strat.spec] = (bounds, late_vectors(states, res.tokenizations, bounds, normalize, include_special))
    return out


@pytest.mark.parametrize("model", ["minilm", "modernbert"])
@pytest.mark.parametrize("include_special", [False, True])
def test_memory_grows_with_the_largest_document_window_by_window_pooling_equals_whole_document_pooling(
    model, include_special, caplog
):
    """Pooling each macro window's chunks as the window is done gives the vectors (and semantic's boundaries) of
    pooling whole-document states: several windows per document, chunks across window boundaries, semantic with
    sentence vectors of the late pass."""
    from tests.models import tiny_modernbert_encoder

    enc = minilm_encoder(batch_tokens=200) if model == "minilm" else tiny_modernbert_encoder(512, batch_tokens=200)
    docs = [Document("long", LONG_DOC), Document("short", TEXT[:120]), Document("mid", TEXT)]
    config = PipelineConfig(WINDOWED, modes=("late",), macro_window=48, macro_window_overlap=12,
                            include_special=include_special, normalize=False)
    res = embed(docs, enc, config)
    mw = enc.macro_window(48, 12)
    _, plan = enc.model_inputs(res.tokenizations[0], mw)
    assert len(plan) >= 8
    keep_ends = {res.tokenizations[0].n_lead + w.keep_end for w in plan[:-1]}
    crossing = 0
    expected = _whole_document_vectors(enc, res, WINDOWED, mw, include_special, normalize=False)
    for spec, (bounds, ref) in expected.items():
        run = res.run(spec)
        for got_b, ref_b in zip(run.boundaries, bounds):
            np.testing.assert_array_equal(got_b.token_spans, ref_b.token_spans)
        np.testing.assert_allclose(run.vectors["late"].vectors, ref, atol=1e-6, rtol=0)
        crossing += sum(any(a < e < b for e in keep_ends) for a, b in run.boundaries[0].token_spans.tolist())
    assert crossing > 10  # chunks that take their states from two or more windows
    assert not [r for r in caplog.records if "second time" in r.getMessage()]  # one late pass


def test_memory_grows_with_the_largest_document_no_longer_the_late_pass_never_holds_a_whole_documents_states(
    monkeypatch,
):
    """The pipeline never asks for a whole document's states, and the largest tensor its late pass sees (a forward
    batch, the states a segment mean pools, the segment sums) is a fraction of the long document's tokens."""
    from latechunk.pipeline import sums as pipeline_mod  # _SegmentSums lives there

    enc = minilm_encoder(batch_tokens=128)
    largest = {"batch": 0, "pooled": 0, "sums": 0}

    def no_whole_states(*args, **kwargs):
        raise AssertionError("the late pass asked for whole-document token states")

    monkeypatch.setattr(enc, "token_states", no_whole_states)
    inner_iter = enc.iter_token_states

    def iter_recording(*args, **kwargs):
        for batch in inner_iter(*args, **kwargs):
            largest["batch"] = max(largest["batch"], batch.states.shape[0])
            yield batch

    monkeypatch.setattr(enc, "iter_token_states", iter_recording)
    inner_add = pipeline_mod._SegmentSums.add

    def add_recording(self, batch):  # the states one pooling step sees (segment mean on CUDA, index_add on CPU)
        largest["pooled"] = max(largest["pooled"], batch.states.shape[0])
        return inner_add(self, batch)

    monkeypatch.setattr(pipeline_mod._SegmentSums, "add", add_recording)
    inner_init = pipeline_mod._SegmentSums.__init__

    def init_recording(self, *args, **kwargs):
        inner_init(self, *args, **kwargs)
        largest["sums"] = max(largest["sums"], self.sums.shape[0])

    monkeypatch.setattr(pipeline_mod._SegmentSums, "__init__", init_recording)
    doc = Document("long", LONG_DOC)
    config = PipelineConfig(("fixed:size=64", "recursive:max_tokens=64", "semantic:max_tokens=64"), modes=("late",),
                            macro_window=64)
    res = embed([doc], enc, config)
    n_tokens = len(res.tokenizations[0])
    assert all(res.run(s.spec).n_chunks > 1 for s in config.strategies)
    assert n_tokens > 600
    assert 0 < largest["batch"] <= 128 and 0 < largest["pooled"] <= 128
    assert 0 < largest["sums"] < n_tokens / 4


def inner_cuts_needed(enc) -> bool:
    """LONG_DOC has sentences longer than 12 tokens (semantic:max_tokens=12 cuts inside them)."""
    from latechunk.sentences import SentenceSegmenter

    doc = Document("long", LONG_DOC)
    spans = SentenceSegmenter().token_spans(doc, enc.tokenizer(doc))
    return bool((spans[:, 1] - spans[:, 0] > 12).any())


def test_memory_grows_with_the_largest_document_chunks_outside_the_cut_points_still_pool_exactly(monkeypatch, caplog):
    """A sentence-vector strategy that cannot say where it cuts (cut_points None) gets every token as a cut point;
    one whose cut points miss a chunk end (here: the sentence ends only, while max_tokens=12 re-cuts long
    sentences) has that document encoded a second time: the vectors are exact either way."""
    from latechunk.strategies.semantic import Semantic

    enc = minilm_encoder()
    assert inner_cuts_needed(enc)
    docs = [Document("long", LONG_DOC)]
    specs = ("semantic:max_tokens=12", "fixed:size=20,overlap=5")
    config = PipelineConfig(specs, modes=("late",), macro_window=48, include_special=True)
    mw = enc.macro_window(48)
    for cut_points in (lambda self, doc, tok, sentences=None: None,
                       lambda self, doc, tok, sentences=None: np.unique(sentences.token_spans(doc, tok))):
        monkeypatch.setattr(Semantic, "cut_points", cut_points)
        caplog.clear()
        res = embed(docs, enc, config)
        for spec, (bounds, ref) in _whole_document_vectors(enc, res, specs, mw, True, True).items():
            np.testing.assert_array_equal(res.run(spec).boundaries[0].token_spans, bounds[0].token_spans)
            np.testing.assert_allclose(res.run(spec).vectors["late"].vectors, ref, atol=1e-6, rtol=0)
    assert [r for r in caplog.records if "second time" in r.getMessage()]  # the second case took a second pass


def test_progress_counts_documents_only_no_longer_text_bytes_move_with_each_forward_batch():
    """Issue 10, fault 5: iter_embed reports progress in bytes of document text as each forward batch finishes,
    so one long document advances window by window; a group's reports add up to its documents' bytes."""
    from latechunk.pipeline import iter_embed, text_bytes

    enc = minilm_encoder(batch_tokens=96)
    calls: list[tuple[int, int]] = []  # (bytes, forward calls so far)
    docs = [Document("long", LONG_DOC + " Café au lait, naïve façade."), Document("short", "Rivers meet the sea.")]
    config = PipelineConfig(("fixed:size=32",), modes=("late",), macro_window=48)
    groups = list(iter_embed(docs, enc, config, on_text_bytes=lambda n: calls.append((n, enc.stats["forward_calls"]))))
    assert len(groups) == 1 and len(groups[0].documents) == 2
    assert sum(n for n, _ in calls) == sum(text_bytes(d.text) for d in docs) == len(LONG_DOC) + 31 + 20  # UTF-8
    forward_calls = [f for _, f in calls]
    # one report per forward batch (then the rest of the group, as it ends)
    assert len(calls) > 5 and forward_calls == sorted(forward_calls)
    assert len(set(forward_calls[:-1])) == len(calls) - 1
    assert all(n > 0 for n, _ in calls)


def test_semantic_default_max_tokens_fits_the_model_so_naive_chunks_take_one_window(encoder):
    """Issue 10: with semantic's default max_tokens no chunk exceeds the model's content limit (510 for MiniLM),
    so each naive chunk is one forward row, not two windows."""
    from latechunk.config import PipelineConfig
    from latechunk.pipeline import embed

    text = "The valve opens when the pressure rises above the set point. " * 120
    # percentile=0: no similarity is below the minimum, so the document is one group, re-cut at max_tokens
    res = embed([Document("long", text)], encoder, PipelineConfig(("semantic:percentile=0",), modes=("late", "naive")))
    run = res.run("semantic:percentile=0")
    limit = encoder.max_length - encoder.tokenizer.n_frame
    spans = np.concatenate([b.token_spans for b in run.boundaries])
    lengths = spans[:, 1] - spans[:, 0]
    assert limit == 510 and lengths.max() <= limit and lengths.max() > 400
    assert res.stats.forward_calls["naive"] >= 1
    assert run.vectors["naive"].vectors.shape[0] == len(spans)


def test_each_group_gives_its_vectors_as_chunk_vectors_and_embed_packs_the_same_records(encoder):
    """GroupResult.chunk_vectors packs a group's vectors with their chunk records (document ids, chunk numbers,
    cumulative counts); the groups' ChunkVectors, one after another, are embed()'s StrategyRun vectors, and the
    naive ones are what encode_chunk_vectors makes of the same chunks."""
    from latechunk.pipeline import encode_chunk_vectors, iter_embed, pack_chunk_vectors

    docs = [Document(f"d{i}", TEXT.replace("Late", f"Late ({i})")) for i in range(4)]
    spec = STRATS[0]
    config = PipelineConfig((spec,), modes=("late", "naive"), group_tokens=150)
    groups = list(iter_embed(docs, encoder, config))
    assert len(groups) >= 2  # the records restart in each group
    whole = embed(docs, encoder, config).run(spec)
    for mode in ("late", "naive"):
        parts = [g.chunk_vectors(get_strategy(spec).spec, mode) for g in groups]
        for g, cv in zip(groups, parts):
            assert cv.mode == mode and cv.normalized
            assert cv.doc_ids == tuple(d.doc_id for d in g.documents)
            np.testing.assert_array_equal(cv.vectors, g.vectors[get_strategy(spec).spec][mode])
            assert cv.chunk_index.tolist() == [i for b in g.boundaries[get_strategy(spec).spec] for i in range(len(b))]
        want = whole.vectors[mode]
        assert sum((cv.doc_ids for cv in parts), ()) == want.doc_ids
        np.testing.assert_array_equal(np.concatenate([cv.chunk_index for cv in parts]), want.chunk_index)
        np.testing.assert_allclose(np.concatenate([cv.vectors for cv in parts]), want.vectors, atol=1e-6)
    naive, tokens, calls = encode_chunk_vectors(encoder, "naive", docs, whole.boundaries)
    assert naive.mode == "naive" and tokens == whole.tokens_encoded["naive"] and calls >= 1
    assert naive.doc_ids == whole.vectors["naive"].doc_ids
    np.testing.assert_array_equal(naive.cu_chunks, whole.vectors["naive"].cu_chunks)
    np.testing.assert_allclose(naive.vectors, whole.vectors["naive"].vectors, atol=1e-6)
    with pytest.raises(ValueError, match="not a text mode"):
        encode_chunk_vectors(encoder, "late", docs, whole.boundaries)
    with pytest.raises(ValueError, match="3 vectors for"):
        pack_chunk_vectors(whole.boundaries, whole.vectors["late"].vectors[:3], "late")


def test_group_runner_halves_pickled_between_them_give_iter_embeds_groups(encoder):
    """GroupRunner (embed --engine ray) runs iter_embed's two halves apart: each group's items, prepared, pickled
    (as Ray hands them to the encoder actor) and embedded, give the group iter_embed yields."""
    import pickle

    from latechunk.pipeline import GroupRunner, iter_embed

    docs = [Document(f"d{i}", TEXT.replace("Late", f"Late ({i})")) for i in range(4)] + [Document("empty", " ")]
    config = PipelineConfig(("fixed:size=16", SENT0), modes=("late", "naive"), group_tokens=150)
    groups = list(iter_embed(docs, encoder, config))
    assert len(groups) >= 2
    runner = GroupRunner(encoder, config)
    for g in groups:
        prepared = pickle.loads(pickle.dumps(runner.prepare(g.items, g.index, g.start)))
        h = runner.embed(prepared)
        assert (h.index, h.start, h.end) == (g.index, g.start, g.end)
        assert [d.doc_id for d in h.documents] == [d.doc_id for d in g.documents]
        assert h.skipped == g.skipped
        assert h.boundaries.keys() == g.boundaries.keys()
        for spec in g.boundaries:
            assert [b.char_spans.tolist() for b in h.boundaries[spec]] == [b.char_spans.tolist() for b in g.boundaries[spec]]
            for mode in ("late", "naive"):
                np.testing.assert_allclose(h.vectors[spec][mode], g.vectors[spec][mode], atol=1e-6)
    assert any(s.doc_id == "empty" for g in groups for s in g.skipped)
    with pytest.raises(RuntimeError, match="formed 2 groups here"):
        runner.prepare([x for g in groups[:2] for x in g.items], 0, 0)
