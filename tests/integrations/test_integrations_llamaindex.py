"""latechunk.integrations.llamaindex with the real llama-index-core: TextNodes with exact character spans, their
late vectors set and their relationships; VectorStoreIndex stores those vectors without embedding any node and
answers the Chroma credit-card question with its top node (a retriever, never an LLM)."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document as LIDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import MetadataMode, NodeRelationship

import latechunk
from latechunk.integrations import CHUNK_KEYS
from latechunk.integrations.llamaindex import LateChunkEmbedding, LateChunkNodeParser
from latechunk.types import Document
from tests.integration_data import ANSWER, CHROMA, QUESTION, TEXT, corpus_documents, reference_span
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
    return [LIDocument(text=d.text, id_=d.doc_id, metadata=dict(d.metadata)) for d in corpus_documents()]


@pytest.fixture(scope="module")
def corpus_nodes(chunker, corpus_docs):
    return LateChunkNodeParser(chunker).get_nodes_from_documents(corpus_docs)


class CountingEmbedding(LateChunkEmbedding):
    """LateChunkEmbedding that logs every call of its embedding methods in ``CALLS``."""

    def _get_text_embedding(self, text):
        CALLS.append(("text", 1))
        return super()._get_text_embedding(text)

    def _get_text_embeddings(self, texts):
        CALLS.append(("text", len(texts)))
        return super()._get_text_embeddings(texts)

    def _get_query_embedding(self, query):
        CALLS.append(("query", 1))
        return super()._get_query_embedding(query)


CALLS: list[tuple[str, int]] = []


def test_nodes(chunker):
    doc = LIDocument(text=TEXT, id_="fees.md", metadata={"source": "notes/fees.md"})
    nodes = LateChunkNodeParser(chunker).get_nodes_from_documents([doc])
    ref = chunker(Document("fees.md", TEXT))
    assert len(nodes) == len(ref) >= 1
    for i, (node, c) in enumerate(zip(nodes, ref)):
        assert node.text == TEXT[node.start_char_idx:node.end_char_idx] == c.text
        assert (node.start_char_idx, node.end_char_idx) == (c.char_start, c.char_end)
        m = node.metadata
        assert set(CHUNK_KEYS) <= set(m) and m["source"] == "notes/fees.md"
        assert (m["doc_id"], m["chunk_index"], m["token_start"], m["token_end"]) == (
            "fees.md", i, c.token_start, c.token_end)
        assert m["heading_path"] == list(c.heading_path) and m["strategy"] == chunker.strategy
        assert m["mode"] == "late" and m["model"] == chunker.model_name
        np.testing.assert_allclose(np.asarray(node.embedding, dtype=np.float32), c.embedding, atol=1e-6)
        assert node.ref_doc_id == "fees.md"
        assert node.relationships[NodeRelationship.SOURCE].node_id == "fees.md"
        # span keys stay out of what embed models and LLMs read; the document's own metadata stays in
        assert "char_start" not in node.get_content(MetadataMode.LLM)
        assert "notes/fees.md" in node.get_content(MetadataMode.LLM)
    if len(nodes) > 1:
        assert nodes[1].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id
        assert nodes[0].relationships[NodeRelationship.NEXT].node_id == nodes[1].node_id


def test_repeated_text_keeps_exact_spans(chunker):
    """LlamaIndex's base class finds each node's text in its document again; with repeated text it finds an
    earlier occurrence. The parser keeps the chunker's spans."""
    text = "The same paragraph, again and again, word for word.\n\n" * 60
    doc = LIDocument(text=text, id_="same.md")
    budget = latechunk.LateChunker(chunker.encoder, strategy="recursive:max_tokens=64")  # equal chunks of equal text
    nodes = LateChunkNodeParser(budget).get_nodes_from_documents([doc])
    ref = budget(Document("same.md", text))
    assert len(nodes) == len(ref) >= 3
    assert len({n.text for n in nodes[:-1]}) < len(nodes) - 1  # repeated chunk texts: the case that matters
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [(c.char_start, c.char_end) for c in ref]
    assert all(n.text == text[n.start_char_idx:n.end_char_idx] for n in nodes)


def test_embedding_prompts(chunker, monkeypatch):
    enc = chunker.encoder
    prompts = []
    encode = enc.encode

    def spy(texts, prompt_name=None, *args, **kwargs):
        prompts.append(prompt_name)
        return encode(texts, prompt_name, *args, **kwargs)

    monkeypatch.setattr(enc, "encode", spy)
    emb = LateChunkEmbedding(chunker)
    q = emb.get_query_embedding(QUESTION)
    d = emb.get_text_embedding_batch(["late fees", "credit cards"])
    t = emb.get_text_embedding("late fees")
    assert prompts == ["query", "document", "document"]
    np.testing.assert_allclose(q, encode([QUESTION], "query")[0], atol=1e-6)
    np.testing.assert_allclose(d, encode(["late fees", "credit cards"], "document"), atol=1e-6)
    np.testing.assert_allclose(t, d[0], atol=1e-6)
    assert emb.model_name == chunker.model_name and len(q) == chunker.dim


@needs_data
def test_index_answers_without_embedding_nodes(chunker, corpus_docs, corpus_nodes, reference):
    CALLS.clear()
    index = VectorStoreIndex(corpus_nodes, embed_model=CountingEmbedding(chunker))
    assert CALLS == []  # no node was embedded: the index holds the late vectors
    hits = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    assert CALLS == [("query", 1)]
    corpus, start, end = reference
    text = next(d.text for d in corpus_docs if d.id_ == corpus)
    assert text[start:end] == ANSWER
    top = hits[0].node
    assert (top.metadata["doc_id"], top.ref_doc_id) == (corpus, corpus)
    assert top.start_char_idx <= start and end <= top.end_char_idx, [
        (h.node.metadata["doc_id"], h.node.start_char_idx, h.node.end_char_idx, h.score) for h in hits]
    assert ANSWER in top.text
    by_id = {n.node_id: n for n in corpus_nodes}
    np.testing.assert_allclose(index.vector_store.get(top.node_id), by_id[top.node_id].embedding, atol=1e-6)


def test_parser_refusals(chunker):
    with pytest.raises(ValueError, match="two input nodes have the id 'a'"):
        LateChunkNodeParser(chunker).get_nodes_from_documents([LIDocument(text="One.", id_="a"),
                                                               LIDocument(text="Two.", id_="a")])
    with pytest.raises(TypeError, match="chunker must be a latechunk.LateChunker"):
        LateChunkNodeParser(chunker=3)


def test_missing_llamaindex_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "llama_index" or m.startswith("llama_index.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "latechunk.integrations.llamaindex", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'latechunk\[llamaindex\]'"):
        importlib.import_module("latechunk.integrations.llamaindex")


def test_documents_without_ids_never_collide_across_calls(chunker):
    """Two parses of one Document each without an id_ (LlamaIndex gives each a random id, and each node a random
    id): inserted into one index, both stay."""
    parser = LateChunkNodeParser(chunker)
    first = parser.get_nodes_from_documents([LIDocument(text="Mount Etna erupts almost every year.")])
    second = parser.get_nodes_from_documents([LIDocument(text="The Danube flows to the Black Sea.")])
    assert {n.node_id for n in first}.isdisjoint(n.node_id for n in second)
    assert {n.metadata["doc_id"] for n in first}.isdisjoint(n.metadata["doc_id"] for n in second)
    index = VectorStoreIndex(first, embed_model=LateChunkEmbedding(chunker))
    index.insert_nodes(second)
    assert len(index.vector_store.data.embedding_dict) == len(first) + len(second)


def test_ingestion_pipeline_keeps_the_late_vectors(chunker):
    """Trial finding: in LlamaIndex's usual `IngestionPipeline([parser, embed_model])`, BaseEmbedding re-embedded
    every node on its own text, replacing the late vectors with naive ones, silently. Only nodes without an
    embedding are embedded now (sync and async), and such nodes get the naive vector."""
    import asyncio

    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.schema import TextNode

    docs = [LIDocument(text=TEXT, id_="rivers.md")]
    parser = LateChunkNodeParser(latechunk.LateChunker(chunker.encoder, strategy="fixed:size=8"))
    late = [np.asarray(n.embedding) for n in parser.get_nodes_from_documents(docs)]
    assert len(late) > 1
    got = IngestionPipeline(transformations=[parser, LateChunkEmbedding(chunker)]).run(documents=docs)
    assert len(got) == len(late)
    for node, want in zip(got, late):
        np.testing.assert_allclose(np.asarray(node.embedding), want, atol=1e-6)
    # a node without an embedding is embedded naively, beside one that keeps its own
    bare = TextNode(text="The Danube flows into the Black Sea.")
    kept = TextNode(text="kept", embedding=[0.5] * len(late[0]))
    emb = LateChunkEmbedding(chunker)
    out = emb([bare, kept])
    np.testing.assert_allclose(out[0].embedding, emb.get_text_embedding(bare.text), atol=1e-6)
    assert out[1].embedding == [0.5] * len(late[0])
    bare.embedding = None
    asyncio.run(emb.acall([bare, kept]))
    assert bare.embedding is not None and kept.embedding == [0.5] * len(late[0])


def test_markdown_files_of_a_reader_are_parsed_as_markdown(chunker):
    """Trial finding: LlamaIndex's SimpleDirectoryReader names the file in `file_path`/`file_name`, not `source`,
    so its markdown was chunked as plain text (front matter a chunk of its own); the parser passes those keys."""
    text = ("---\ntitle: Rivers\n---\n\n# Rivers\n\nThe Danube flows to the Black Sea. It crosses ten countries."
            "\n\n## Deltas\n\nA delta forms where a river meets the sea.\n")
    parser = LateChunkNodeParser(latechunk.LateChunker(chunker.encoder, strategy="heading"))

    def spans(meta):
        nodes = parser.get_nodes_from_documents([LIDocument(text=text, id_="r", metadata=meta)])
        return [(n.start_char_idx, n.end_char_idx) for n in nodes]

    want = [(c.char_start, c.char_end) for c in latechunk.LateChunker(chunker.encoder, strategy="heading",
                                                                      markdown=True)(text)]
    assert spans({"file_path": "/data/rivers.md", "file_name": "rivers.md"}) == want
    assert spans({"file_path": "/data/rivers.txt"}) != want


def test_pieces_of_a_late_chunk_cut_by_a_splitter_are_embedded_again(chunker):
    """Second trial: `IngestionPipeline([LateChunkNodeParser, SentenceSplitter, LateChunkEmbedding])` gave every
    piece of a late chunk that chunk's vector (the splitter copies it); such pieces are embedded on their own text
    now, with a warning (a Python UserWarning, as LangChain's), and whole late chunks keep theirs."""
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter

    docs = [LIDocument(text=TEXT, id_="rivers.md")]
    late = latechunk.LateChunker(chunker.encoder, strategy="recursive:max_tokens=64")
    emb = LateChunkEmbedding(chunker)
    with pytest.warns(UserWarning, match="hold a late chunk's vector but only part of its text"):
        got = IngestionPipeline(transformations=[LateChunkNodeParser(late), SentenceSplitter(chunk_size=20,
                                                 chunk_overlap=0), emb]).run(documents=docs)
    vectors = [tuple(np.round(n.embedding, 6)) for n in got]
    assert len(got) > 2 and len(set(vectors)) == len(vectors), "pieces share a vector"
    for n in got:
        np.testing.assert_allclose(n.embedding, emb.get_text_embedding(n.get_content(metadata_mode=MetadataMode.EMBED)),
                                   atol=1e-5)
