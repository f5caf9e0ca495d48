"""Late and naive pipelines: one pass per document for many strategies, exact means, identical records."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from latechunk.config import PipelineConfig
from latechunk.pipeline import embed, late_vectors
from latechunk.types import Document
from tests.models import ForwardRecorder, minilm_encoder

TEXT = (
    "Late chunking encodes a whole document once. Each chunk vector is the mean of the token states in its span. "
    "Boundaries change only the pooling, never the encoding.\n\n"
    "Naive chunking encodes every chunk on its own. It loses the context of the rest of the document. "
    "The evaluator compares both on the same boundaries."
)
STRATS = ["fixed:size=16,overlap=4", "sentence_window:window=1", "recursive:max_tokens=24"]


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


def test_batch_tokenization_equals_one_by_one(minilm_tokenizer):
    docs = [Document("a", "Plain text. " * 50), Document("b", ""), Document("c", "[SEP] typed ☃ naïve café"),
            Document("d", "x" * 3000), Document("e", "  \n\t ")]
    one = [minilm_tokenizer(d) for d in docs]
    many = minilm_tokenizer.batch(docs)
    assert len(many) == len(docs)
    for x, y in zip(one, many):
        np.testing.assert_array_equal(x.input_ids, y.input_ids)
        np.testing.assert_array_equal(x.offsets, y.offsets)
        np.testing.assert_array_equal(x.special_tokens_mask, y.special_tokens_mask)
        assert (x.n_lead, x.n_trail) == (y.n_lead, y.n_trail)
    assert minilm_tokenizer.batch([]) == []


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
