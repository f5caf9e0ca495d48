"""latechunk.integrations.langchain with the real langchain-core: chunk Documents carry exact spans and the late
vectors, add_late_chunks fills InMemoryVectorStore with those vectors (the store embeds nothing), and the
Chroma credit-card question is answered from two of the Chroma corpora."""

from __future__ import annotations

import hashlib
import importlib
import sys

import numpy as np
import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document as LCDocument
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

import latechunk
from latechunk.integrations import CHUNK_KEYS
from latechunk.integrations.langchain import (
    EMBEDDING_KEY,
    LateChunkEmbeddings,
    LateChunkingTransformer,
    add_late_chunks,
    chunk_id,
    text_doc_id,
)
from latechunk.types import Document
from tests.integration_data import ANSWER, CHROMA, CORPORA, QUESTION, TEXT, corpus_documents, reference_span
from tests.models import minilm_encoder

needs_data = pytest.mark.skipif(not CHROMA.is_dir(), reason=f"no Chroma data at {CHROMA}")


@pytest.fixture(scope="module")
def chunker():
    """The default LateChunker over the bundled MiniLM (its weights loaded once per test session)."""
    return latechunk.LateChunker(minilm_encoder())


@pytest.fixture(scope="module")
def reference():
    """The answer's reference span in the Chroma questions file: (corpus, char_start, char_end)."""
    return reference_span()


@pytest.fixture(scope="module")
def corpus_docs():
    return [LCDocument(page_content=d.text, id=d.doc_id, metadata=dict(d.metadata)) for d in corpus_documents()]


@pytest.fixture(scope="module")
def store(chunker, corpus_docs):
    """InMemoryVectorStore filled through add_late_chunks with the transformer's chunk Documents; counts every
    call of the store's embed_documents."""
    calls = []

    class Counting(LateChunkEmbeddings):
        def embed_documents(self, texts):
            calls.append(len(texts))
            return super().embed_documents(texts)

    vs = InMemoryVectorStore(Counting(chunker))
    chunk_docs = LateChunkingTransformer(chunker).transform_documents(corpus_docs)
    ids = add_late_chunks(vs, chunk_docs)
    return vs, ids, chunk_docs, calls


def test_transformer_chunk_documents(chunker):
    src = LCDocument(page_content=TEXT, id="fees.md", metadata={"source": "notes/fees.md", "title": "Fees"})
    out = LateChunkingTransformer(chunker).transform_documents([src])
    ref = chunker(Document("fees.md", TEXT))
    assert len(out) == len(ref) >= 1
    for doc, c in zip(out, ref):
        m = doc.metadata
        assert doc.page_content == TEXT[m["char_start"]:m["char_end"]] == c.text
        assert set(CHUNK_KEYS) <= set(m) and m["source"] == "notes/fees.md" and m["title"] == "Fees"
        assert (m["doc_id"], m["chunk_index"], m["char_start"], m["char_end"], m["token_start"], m["token_end"]) == (
            c.doc_id, c.chunk_index, c.char_start, c.char_end, c.token_start, c.token_end)
        assert m["heading_path"] == list(c.heading_path) and m["strategy"] == chunker.strategy
        assert m["mode"] == "late" and m["model"] == chunker.model_name
        assert len(m[EMBEDDING_KEY]) == chunker.dim and all(type(x) is float for x in m[EMBEDDING_KEY])
        np.testing.assert_allclose(np.asarray(m[EMBEDDING_KEY], dtype=np.float32), c.embedding, atol=1e-6)
        assert doc.id == chunk_id("fees.md", c.chunk_index, chunker.strategy, "late")
    assert [d.metadata["chunk_index"] for d in out] == list(range(len(out)))


def test_transformer_doc_ids(chunker):
    docs = [LCDocument(page_content="Alpha beta gamma.", id="by-id", metadata={"source": "s0"}),
            LCDocument(page_content="Delta epsilon.", metadata={"id": 7, "source": "s1"}),
            LCDocument(page_content="Zeta eta theta.", metadata={"source": "s2"}),
            LCDocument(page_content="Iota kappa.")]
    out = LateChunkingTransformer(chunker).transform_documents(docs)
    assert [d.metadata["doc_id"] for d in out] == ["by-id", "7", "s2", text_doc_id("Iota kappa.")]
    assert text_doc_id("Iota kappa.") == "text-" + hashlib.sha256(b"Iota kappa.").hexdigest()[:16]
    with pytest.raises(ValueError, match=r"documents 0 and 1 have the same doc id 'a.pdf'"):
        LateChunkingTransformer(chunker).transform_documents(
            [LCDocument(page_content="One.", metadata={"source": "a.pdf"}),
             LCDocument(page_content="Two.", metadata={"source": "a.pdf"})])
    with pytest.raises(TypeError, match="langchain_core.documents.Document, got str"):
        LateChunkingTransformer(chunker).transform_documents(["plain text"])


def test_embeddings_prompts(chunker, monkeypatch):
    enc = chunker.encoder
    prompts = []
    encode = enc.encode

    def spy(texts, prompt_name=None, *args, **kwargs):
        prompts.append(prompt_name)
        return encode(texts, prompt_name, *args, **kwargs)

    monkeypatch.setattr(enc, "encode", spy)
    emb = LateChunkEmbeddings(chunker)
    q = emb.embed_query(QUESTION)
    d = emb.embed_documents(["late fees", "credit cards"])
    assert prompts == ["query", "document"]
    np.testing.assert_allclose(q, encode([QUESTION], "query")[0], atol=1e-6)
    np.testing.assert_allclose(d, encode(["late fees", "credit cards"], "document"), atol=1e-6)
    assert len(q) == chunker.dim and emb.embed_documents([]) == []


@needs_data
def test_store_answers_credit_card_question(store, reference, corpus_docs):
    vs, ids, _, calls = store
    assert calls == []  # the store embedded no chunk text
    assert len(ids) == len(vs.store) == len(set(ids))
    hits = vs.similarity_search(QUESTION, k=5)
    corpus, start, end = reference
    text = next(d.page_content for d in corpus_docs if d.id == corpus)
    assert text[start:end] == ANSWER
    holding = [h for h in hits if h.metadata["doc_id"] == corpus
               and h.metadata["char_start"] <= start and end <= h.metadata["char_end"]]
    assert holding, [(h.metadata["doc_id"], h.metadata["char_start"], h.metadata["char_end"]) for h in hits]
    assert ANSWER in holding[0].page_content
    assert all(EMBEDDING_KEY not in h.metadata for h in hits)  # the vector is stored once, as the vector


@needs_data
def test_store_holds_late_vectors(store, chunker, corpus_docs):
    vs, ids, chunk_docs, _ = store
    assert ids == [d.id for d in chunk_docs]
    assert {d.metadata["doc_id"] for d in chunk_docs} == set(CORPORA)
    texts = {d.id: d.page_content for d in corpus_docs}
    for doc in chunk_docs:
        rec, m = vs.store[doc.id], doc.metadata
        assert rec["text"] == doc.page_content == texts[m["doc_id"]][m["char_start"]:m["char_end"]]
        assert rec["vector"] == m[EMBEDDING_KEY]
        assert rec["metadata"] == {k: v for k, v in m.items() if k != EMBEDDING_KEY}
    # a naive vector of the chunk text alone is another vector: the store kept the late one
    some = chunk_docs[:: max(1, len(chunk_docs) // 4)]
    naive = chunker.encoder.encode_document([d.page_content for d in some])
    for doc, v in zip(some, naive):
        assert float(np.dot(vs.store[doc.id]["vector"], v)) < 0.999


class _Store(VectorStore):
    """A minimal real LangChain VectorStore with no add_embeddings."""

    def __init__(self, embedding=None):
        self.embedding = embedding
        self.added = []

    def add_texts(self, texts, metadatas=None, **kwargs):
        raise AssertionError("add_texts would re-embed the chunk text")

    def similarity_search(self, query, k=4, **kwargs):
        return []

    @classmethod
    def from_texts(cls, texts, embedding, metadatas=None, **kwargs):
        return cls(embedding)


class _PairsStore(_Store):
    def add_embeddings(self, text_embeddings, metadatas=None, ids=None, **kwargs):  # FAISS, Elasticsearch
        self.added.append((list(text_embeddings), metadatas, ids))
        return ids


class _ColumnsStore(_Store):
    def add_embeddings(self, texts, embeddings, metadatas=None, ids=None, **kwargs):  # PGVector
        self.added.append((list(zip(texts, embeddings)), metadatas, ids))


class _OddStore(_Store):
    def add_embeddings(self, rows):
        raise AssertionError("not called")


@pytest.mark.parametrize("cls", [_PairsStore, _ColumnsStore])
def test_add_embeddings_stores(chunker, cls):
    chunks = chunker(Document("fees.md", TEXT))
    vs = cls()
    ids = add_late_chunks(vs, chunks)
    [(pairs, metadatas, ids_given)] = vs.added
    assert ids == ids_given == [chunk_id("fees.md", c.chunk_index, c.strategy, c.mode) for c in chunks]
    assert [t for t, _ in pairs] == [c.text for c in chunks]
    np.testing.assert_allclose(np.asarray([v for _, v in pairs], dtype=np.float32),
                               np.stack([c.embedding for c in chunks]), atol=1e-6)
    assert [m["char_start"] for m in metadatas] == [c.char_start for c in chunks]
    assert all(EMBEDDING_KEY not in m for m in metadatas)


def test_add_late_chunks_refusals(chunker):
    chunks = chunker(Document("fees.md", TEXT))
    with pytest.raises(TypeError, match=r"_Store has no add_embeddings.*add_texts/add_documents always embed"):
        add_late_chunks(_Store(), chunks)
    with pytest.raises(TypeError, match=r"_OddStore\.add_embeddings\(rows\) has neither"):
        add_late_chunks(_OddStore(), chunks)
    with pytest.raises(ValueError, match="without a late vector.*no chunker"):
        add_late_chunks(_PairsStore(), [LCDocument(page_content=TEXT, id="fees.md")])
    with pytest.raises(TypeError, match="item 0 is a str"):
        add_late_chunks(_PairsStore(), ["text"], chunker=chunker)
    anonymous = LCDocument(page_content="x", metadata={EMBEDDING_KEY: [0.5] * chunker.dim})
    with pytest.raises(ValueError, match=r"chunk Document 0 has no id and no metadata \['doc_id', 'chunk_index'"):
        add_late_chunks(_PairsStore(), [anonymous])
    vs = InMemoryVectorStore(LateChunkEmbeddings(chunker))
    bad = LCDocument(page_content="x", metadata={"doc_id": "a", "chunk_index": 0, "strategy": "s", "mode": "late",
                                                 EMBEDDING_KEY: [0.5] * 5})
    with pytest.raises(ValueError, match=f"5 dimensions but the store's LateChunkEmbeddings .* makes {chunker.dim}"):
        add_late_chunks(vs, [bad])
    assert vs.store == {}


def test_add_late_chunks_warns_when_it_cannot_check_the_stores_query_model(chunker):
    """Third trial: a store on FakeEmbeddings(size=10) took 384-d late vectors silently and failed at query time;
    one on another 384-d model would rank with meaningless scores. latechunk can only check LateChunkEmbeddings,
    so any other store's embeddings get a warning naming them."""
    import warnings

    from langchain_core.embeddings import FakeEmbeddings

    chunks = chunker(Document("fees.md", TEXT))
    with pytest.warns(UserWarning, match=r"query embeddings are FakeEmbeddings, not a LateChunkEmbeddings"):
        add_late_chunks(InMemoryVectorStore(FakeEmbeddings(size=10)), chunks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        add_late_chunks(InMemoryVectorStore(LateChunkEmbeddings(chunker)), chunks)


def test_add_late_chunks_uses_store_chunker(chunker):
    """Plain Documents without chunker= are chunked by the store's LateChunkEmbeddings' chunker."""
    vs = InMemoryVectorStore(LateChunkEmbeddings(chunker))
    ids = add_late_chunks(vs, [LCDocument(page_content=TEXT, id="fees.md")])
    assert ids and [vs.store[i]["metadata"]["doc_id"] for i in ids] == ["fees.md"] * len(ids)
    assert vs.similarity_search("late fee on a credit card", k=1)[0].metadata["doc_id"] == "fees.md"


def test_missing_langchain_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "langchain_core" or m.startswith("langchain_core.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "latechunk.integrations.langchain", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'latechunk\[langchain\]'"):
        importlib.import_module("latechunk.integrations.langchain")


def test_embeddings_follow_the_chunkers_normalize(chunker):
    raw = latechunk.LateChunker(chunker.encoder, normalize=False)  # the same loaded encoder
    q = LateChunkEmbeddings(raw).embed_query(QUESTION)
    assert abs(float(np.linalg.norm(q)) - 1.0) > 1e-3
    np.testing.assert_allclose(q, chunker.encoder.encode_query([QUESTION], normalize=False)[0], atol=1e-6)
    assert abs(float(np.linalg.norm(LateChunkEmbeddings(chunker).embed_query(QUESTION))) - 1.0) < 1e-5


def test_documents_without_ids_never_collide_across_calls(chunker):
    """The trial's two add_late_chunks calls of one Document each, neither with an id nor a source: both kept (a
    position id gave both doc id "0" and the second call's chunk ids replaced the first's); the same text again
    replaces its own chunks, and a repeated text in one call gives its chunks once."""
    store = InMemoryVectorStore(LateChunkEmbeddings(chunker))
    etna, danube = "Mount Etna erupts almost every year.", "The Danube flows to the Black Sea."
    first = add_late_chunks(store, [LCDocument(page_content=etna)])
    second = add_late_chunks(store, [LCDocument(page_content=danube)])
    assert len(first) == len(second) == 1 and set(first).isdisjoint(second)
    assert sorted(r["text"] for r in store.store.values()) == sorted([danube, etna])
    assert add_late_chunks(store, [LCDocument(page_content=etna)]) == first and len(store.store) == 2
    out = LateChunkingTransformer(chunker).transform_documents([LCDocument(page_content=etna),
                                                                LCDocument(page_content=etna)])
    assert [d.id for d in out] == first


def test_store_add_documents_of_late_chunks_warns(chunker):
    """Trial finding: `store.add_documents(transformer.transform_documents(docs))`, LangChain's usual idiom,
    re-embeds each chunk alone (naive), silently replacing the late vectors; the store's LateChunkEmbeddings now
    warns, naming add_late_chunks. Texts that are not such chunks embed without a warning."""
    import warnings

    docs = [LCDocument(id="etna.md", page_content="# Volcanoes\n\nMount Etna in Sicily erupts almost every year."),
            LCDocument(id="danube.md", page_content="The Danube flows through ten countries to the Black Sea.")]
    chunk_docs = LateChunkingTransformer(chunker).transform_documents(docs)
    store = InMemoryVectorStore(LateChunkEmbeddings(chunker))
    with pytest.warns(UserWarning, match=r"add_late_chunks") as caught:
        store.add_documents(chunk_docs)
    assert f"{len(chunk_docs)} of {len(chunk_docs)} texts" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.add_texts(["A text no transformer made."])
        add_late_chunks(InMemoryVectorStore(LateChunkEmbeddings(chunker)), chunk_docs)  # the right way: silent
    # second trial: the usual code builds the transformer and the store's embeddings each with its own chunker
    other = latechunk.LateChunker(chunker.encoder)
    with pytest.warns(UserWarning, match=r"add_late_chunks"):
        InMemoryVectorStore(LateChunkEmbeddings(other)).add_documents(chunk_docs)


def test_metadata_keys_a_chunk_replaces_are_named(chunker, caplog):
    """Trial finding: a document's own `doc_id`/`chunk_index`/`embedding` metadata was overwritten silently in its
    chunk Documents; it still is (the chunk's keys win), with a warning naming the keys."""
    import logging

    docs = [LCDocument(id="a", page_content="Rivers reach the sea.", metadata={"doc_id": "mine", "lang": "en"})]
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        out = LateChunkingTransformer(chunker).transform_documents(docs)
    assert out[0].metadata["doc_id"] == "a" and out[0].metadata["lang"] == "en"
    assert "metadata key(s) doc_id are replaced" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        LateChunkingTransformer(chunker).transform_documents([LCDocument(id="b", page_content="Lakes stay.")])
    assert "replaced" not in caplog.text
