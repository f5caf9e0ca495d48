"""LangChain adapters: late chunks as LangChain Documents, query embeddings, and vector stores filled with the
late vectors themselves.

A LangChain vector store embeds the text it is given (``add_texts``/``add_documents`` call its ``Embeddings`` on
each chunk's text alone), which would replace every late vector (the mean of the chunk's token states in the
context of its whole document; Günther et al., arXiv:2409.04701) by a naive one. So the chunk Documents carry
their late vector, and :func:`add_late_chunks` writes those vectors through the store's ``add_embeddings`` (or
``InMemoryVectorStore``'s own records) without embedding anything; :class:`LateChunkEmbeddings` is the store's
``Embeddings`` for the queries (the model's query prompt).

```python
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
import latechunk
from latechunk.integrations.langchain import LateChunkEmbeddings, add_late_chunks

chunker = latechunk.LateChunker()
store = InMemoryVectorStore(LateChunkEmbeddings(chunker))
add_late_chunks(store, [Document(page_content=text, id="notes.md")], chunker=chunker)
store.similarity_search("question", k=5)     # chunk Documents; metadata: doc_id, spans, heading_path, ...
```

Needs ``langchain-core`` (``pip install 'latechunk[langchain]'``).
"""

from __future__ import annotations

import inspect
import logging
import uuid
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

try:
    from langchain_core.documents import BaseDocumentTransformer
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
except ImportError as err:  # the module is the optional part: it needs the framework to define its classes
    raise ImportError(
        "latechunk.integrations.langchain needs langchain-core, which is not installed: "
        "pip install 'latechunk[langchain]'"
    ) from err

from latechunk.api import Chunk, LateChunker
from latechunk.ingest.files import sha256_text
from latechunk.integrations import CHUNK_KEYS, as_chunker
from latechunk.types import Document

__all__ = ["EMBEDDING_KEY", "CHUNK_KEYS", "LateChunkingTransformer", "LateChunkEmbeddings", "add_late_chunks",
           "chunk_to_document", "chunk_id", "text_doc_id"]

#: metadata key of a chunk Document's late vector: a list of ``dim`` Python floats (JSON-serialisable)
EMBEDDING_KEY = "embedding"
# the namespace of chunk ids (uuid5 over the chunk's identity, so the same chunk always gets the same id)
_CHUNK_ID_NAMESPACE = uuid.UUID("3c0b3f0e-6d1a-5b8e-9a64-1a7e2c6b9d41")


def chunk_id(doc_id: str, chunk_index: int, strategy: str, mode: str) -> str:
    """The vector-store id of a chunk: a UUID (version 5) of its identity, the same in every run.

    Chunk identity is ``(doc_id, chunk_index)`` under one strategy and mode; the id is a UUID because several
    stores (Qdrant, Chroma's defaults, PGVector) take only UUID or integer ids, and being a function of the
    identity makes adding the same chunk twice replace it (in stores that upsert by id) rather than duplicate it.

    Args:
        doc_id: The chunk's document id.
        chunk_index: Position of the chunk in its document (0-based).
        strategy: The canonical strategy SPEC.
        mode: ``"late"``, ``"naive"``, ``"contextual"`` or ``"fused"``.

    Returns:
        The id as a string (``"xxxxxxxx-xxxx-5xxx-..."``).
    """
    return str(uuid.uuid5(_CHUNK_ID_NAMESPACE, f"{len(doc_id)}:{doc_id}|{chunk_index}|{strategy}|{mode}"))


def chunk_to_document(chunk: Chunk, model: str | None = None) -> LCDocument:
    """A latechunk Chunk as a LangChain Document.

    Args:
        chunk: The chunk.
        model: The model's name, recorded as ``metadata["model"]`` (``None``: not recorded).

    Returns:
        ``Document(id=chunk_id(...), page_content=chunk.text, metadata=...)``: the metadata is the source
        document's metadata, then :data:`CHUNK_KEYS` (``heading_path`` as a list of str) and
        :data:`EMBEDDING_KEY` (the late vector, ``dim`` floats), which win over document keys of the same name.
    """
    metadata = dict(chunk.metadata)
    metadata.update(
        doc_id=chunk.doc_id, chunk_index=int(chunk.chunk_index), char_start=int(chunk.char_start),
        char_end=int(chunk.char_end), token_start=int(chunk.token_start), token_end=int(chunk.token_end),
        heading_path=list(chunk.heading_path), strategy=chunk.strategy, mode=chunk.mode,
    )
    if model is not None:
        metadata["model"] = model
    metadata[EMBEDDING_KEY] = np.asarray(chunk.embedding, dtype=np.float32).tolist()
    return LCDocument(id=chunk_id(chunk.doc_id, chunk.chunk_index, chunk.strategy, chunk.mode),
                      page_content=chunk.text, metadata=metadata)


def text_doc_id(text: str) -> str:
    """The doc id of a document that names none: ``"text-"`` and the first 16 hex digits of its text's sha256.

    The same as :meth:`latechunk.Index.add` gives a plain ``str``: a function of the text alone, so documents
    added in separate calls never share an id (a position would: every call's first document was ``"0"``, and
    its chunk ids then replaced the earlier call's in the store), and adding the same text again gives the same
    chunk ids (a store that upserts by id replaces them instead of holding duplicates).

    Args:
        text: The document text.

    Returns:
        ``"text-" + sha256(text as UTF-8).hexdigest()[:16]``.
    """
    return f"text-{sha256_text(text)[:16]}"


def _doc_id(doc: LCDocument) -> tuple[str, bool]:
    """A Document's doc id and whether it was given (``Document.id``, metadata ``id``, metadata ``source``) rather
    than made from its text (:func:`text_doc_id`)."""
    for value in (doc.id, doc.metadata.get("id"), doc.metadata.get("source")):
        if value is not None and str(value).strip():
            return str(value), True
    return text_doc_id(doc.page_content), False


def _to_documents(documents: Sequence[LCDocument]) -> list[Document]:
    seen: dict[str, int] = {}
    out = []
    clash = sorted({k for d in documents if isinstance(d, LCDocument) for k in d.metadata
                    if k in (*CHUNK_KEYS, EMBEDDING_KEY)})
    if clash:  # a chunk Document's own keys win: say so once, not silently
        logging.getLogger("latechunk").warning(
            "LateChunkingTransformer: the documents' metadata key(s) %s are replaced in each chunk Document by the "
            "chunk's own (see latechunk.integrations.CHUNK_KEYS); rename them to keep their values", ", ".join(clash))
    for i, doc in enumerate(documents):
        if not isinstance(doc, LCDocument):
            raise TypeError(f"document {i}: expected a langchain_core.documents.Document, got {type(doc).__name__}")
        doc_id, given = _doc_id(doc)
        if doc_id in seen and given:
            raise ValueError(
                f"documents {seen[doc_id]} and {i} have the same doc id {doc_id!r} (taken from Document.id, else "
                "metadata 'id', else metadata 'source'): give each document its own Document.id, e.g. "
                "Document(id=f'{source}#page={page}', ...)"
            )
        # a repeated text without an id is the same document again: LateChunker.map keeps the first (and logs it)
        seen.setdefault(doc_id, i)
        out.append(Document(doc_id, doc.page_content, dict(doc.metadata)))
    return out


class LateChunkingTransformer(BaseDocumentTransformer):
    """A LangChain document transformer: Documents in, one chunk Document per late chunk out.

    Each input Document is chunked and encoded once by ``chunker`` (its strategy's boundaries, then each chunk's
    vector pooled from the token states of the whole document: late chunking, arXiv:2409.04701; or naive when
    the chunker's mode is ``"naive"``). A chunk Document's ``page_content`` is the exact slice
    ``page_content[char_start:char_end]`` of its source, its ``id`` is :func:`chunk_id`, and its metadata is the
    source's metadata plus :data:`CHUNK_KEYS` and the vector under :data:`EMBEDDING_KEY` (see
    :func:`chunk_to_document`).

    The vector travels in the metadata (as a list of floats) because metadata is what survives LangChain's
    document pipelines (filters, retrievers, copies); :func:`add_late_chunks` takes it out again and hands it to
    the store as the vector, so stores that serialise metadata (Chroma, Qdrant payloads, ``dump``) do not also
    store ``dim`` floats of JSON per chunk. Passing chunk Documents to a store's ``add_documents`` instead would
    re-embed their text alone and keep the vector as metadata: use :func:`add_late_chunks`.

    A Document's doc id is its ``id``, else ``metadata["id"]``, else ``metadata["source"]``, else
    :func:`text_doc_id` of its text (``"text-"`` + 16 hex digits of its sha256, as ``Index.add`` names a plain
    str), so chunk ids never collide across calls; a repeated text without an id gives its chunks once.

    Args:
        chunker: The LateChunker (model, strategy, mode, macro window), a model name for a LateChunker with the
            default strategy, or ``None`` for the bundled default model.

    Raises:
        TypeError: if ``chunker`` is of another type.
    """

    def __init__(self, chunker: LateChunker | str | None = None) -> None:
        self.chunker = as_chunker(chunker)

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> list[LCDocument]:
        """Split and embed documents into chunk Documents.

        Args:
            documents: LangChain Documents; ``page_content`` is the text.
            **kwargs: Not used (LangChain's interface); any given raises TypeError.

        Returns:
            The chunk Documents, documents in input order and each document's chunks in order; a document
            that gives no chunk (empty or whitespace-only text, or chunking failed) contributes none, its reason
            logged as a warning on the ``latechunk`` logger (``LateChunker.map``).

        Raises:
            TypeError: if an item is not a LangChain Document, or on unknown keyword arguments.
            ValueError: if two documents have the same given doc id (``id``, metadata ``id`` or ``source``).
        """
        if kwargs:
            raise TypeError(f"LateChunkingTransformer.transform_documents got unexpected arguments {sorted(kwargs)}")
        docs = _to_documents(list(documents))
        model = self.chunker.model_name
        out: list[LCDocument] = []
        for chunks in self.chunker.map(docs):
            out.extend(chunk_to_document(c, model) for c in chunks)
        _remember_late_texts(self.chunker, [d.page_content for d in out])
        return out


#: Per model (a chunker's ``model_name``: two ``LateChunker()`` of one model share it), hashes of the chunk texts a
#: transformer gave late vectors in this process (at most :data:`_LATE_TEXTS_MAX`):
#: :meth:`LateChunkEmbeddings.embed_documents` warns when a store is about to embed them again, naively.
_LATE_TEXTS: dict[str, set[int]] = {}
_LATE_TEXTS_MAX = 1_000_000


def _remember_late_texts(chunker: LateChunker, texts: Sequence[str]) -> None:
    seen = _LATE_TEXTS.setdefault(chunker.model_name, set())
    room = _LATE_TEXTS_MAX - len(seen)
    seen.update(hash(t) for t in texts[:max(0, room)])


def _warn_if_late_texts(chunker: LateChunker, texts: Sequence[str]) -> None:
    seen = _LATE_TEXTS.get(chunker.model_name)
    if seen:
        n = sum(hash(t) in seen for t in texts)
        if n:
            warnings.warn(
                f"LateChunkEmbeddings.embed_documents: {n} of {len(texts)} texts are chunks that "
                "LateChunkingTransformer gave late vectors; a store's add_documents/add_texts embeds each alone "
                "(naive), replacing them: add the chunk Documents with "
                "latechunk.integrations.langchain.add_late_chunks(store, chunk_docs)", UserWarning, stacklevel=3)


class LateChunkEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over a LateChunker's encoder: the query side of a store of late chunks.

    ``embed_query`` encodes with the model's query prompt (sentence-transformers' ``encode_query``);
    ``embed_documents`` encodes each text on its own with the document prompt: that is **naive** embedding (no
    document context), which is what a store does when given text; late vectors come from
    :class:`LateChunkingTransformer` and reach a store through :func:`add_late_chunks`. Vectors are L2-normalised
    when the chunker normalises (its default), so they compare with the chunks' late vectors by inner product.

    Args:
        chunker: The LateChunker whose encoder to use (the one that made the chunks, so queries and chunks share
            one vector space), a model name, or ``None`` for the bundled default model.

    Raises:
        TypeError: if ``chunker`` is of another type.
    """

    def __init__(self, chunker: LateChunker | str | None = None) -> None:
        self.chunker = as_chunker(chunker)

    @property
    def model_name(self) -> str:
        """The model's name (``chunker.model_name``)."""
        return self.chunker.model_name

    @property
    def dim(self) -> int:
        """The vector size (``chunker.dim``)."""
        return self.chunker.dim

    def _normalize(self) -> bool:
        return bool(self.chunker.config.normalize)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts each on its own with the document prompt (naive: no document context).

        A store's ``add_documents``/``add_texts`` calls this; when some texts are chunks that a
        :class:`LateChunkingTransformer` of the same model made in this process (whose late vectors the store is
        about to replace by naive ones) a ``UserWarning`` names :func:`add_late_chunks`.

        Args:
            texts: The texts.

        Returns:
            ``len(texts)`` lists of ``dim`` floats, in input order.
        """
        if not texts:
            return []
        _warn_if_late_texts(self.chunker, texts)
        return self.chunker.encoder.encode_document(list(texts), normalize=self._normalize()).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with the model's query prompt.

        Args:
            text: The query.

        Returns:
            ``dim`` floats.
        """
        return self.chunker.encoder.encode_query([text], normalize=self._normalize())[0].tolist()


def _chunk_documents(items: Iterable, chunker: LateChunker | None, vectorstore: VectorStore) -> list[LCDocument]:
    """Chunk Documents (with a vector) from a mix of chunk Documents, latechunk Chunks and plain Documents."""
    out: list[LCDocument] = []
    plain: list[LCDocument] = []

    def flush() -> None:
        nonlocal chunker
        if not plain:
            return
        if chunker is None:
            embeddings = getattr(vectorstore, "embeddings", None)
            if not isinstance(embeddings, LateChunkEmbeddings):
                raise ValueError(
                    f"add_late_chunks got {len(plain)} Document(s) without a late vector (no metadata "
                    f"{EMBEDDING_KEY!r}) and no chunker: pass chunker=latechunk.LateChunker(...), or a store whose "
                    "embeddings are a LateChunkEmbeddings (its chunker is then used)"
                )
            chunker = embeddings.chunker
        out.extend(LateChunkingTransformer(chunker).transform_documents(plain))
        plain.clear()

    model = chunker.model_name if chunker is not None else None
    for i, item in enumerate(items):
        if isinstance(item, Chunk):
            flush()
            out.append(chunk_to_document(item, model))
        elif isinstance(item, LCDocument):
            if EMBEDDING_KEY in item.metadata:
                flush()
                out.append(item)
            else:
                plain.append(item)
        else:
            raise TypeError(
                f"add_late_chunks: item {i} is a {type(item).__name__}; expected a LangChain Document (plain, or a "
                "chunk Document from LateChunkingTransformer) or a latechunk.Chunk"
            )
    flush()
    return out


def _check_vectors(docs: list[LCDocument], vectorstore: VectorStore) -> np.ndarray:
    vectors = []
    for doc in docs:
        v = np.asarray(doc.metadata[EMBEDDING_KEY], dtype=np.float32)
        if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
            raise ValueError(
                f"chunk {doc.metadata.get('doc_id')!r} #{doc.metadata.get('chunk_index')}: metadata "
                f"{EMBEDDING_KEY!r} must be a non-empty list of finite floats, got shape {v.shape}"
            )
        vectors.append(v)
    dims = {v.size for v in vectors}
    if len(dims) > 1:
        raise ValueError(f"add_late_chunks: the chunks' vectors have different sizes {sorted(dims)} (several models?)")
    embeddings = getattr(vectorstore, "embeddings", None)
    if isinstance(embeddings, LateChunkEmbeddings) and vectors:
        if vectors[0].size != embeddings.dim:
            raise ValueError(
                f"add_late_chunks: the chunks' vectors have {vectors[0].size} dimensions but the store's "
                f"LateChunkEmbeddings ({embeddings.model_name}) makes {embeddings.dim}: queries and chunks must "
                "come from one model"
            )
        models = {d.metadata.get("model") for d in docs} - {None}
        if models - {embeddings.model_name}:
            raise ValueError(
                f"add_late_chunks: the chunks were embedded with {sorted(models)} but the store's queries are "
                f"embedded with {embeddings.model_name!r}: queries and chunks must come from one model"
            )
    elif vectors:  # queries are embedded by something latechunk cannot check against the chunks' model
        import warnings

        name = type(embeddings).__name__ if embeddings is not None else "no embeddings"
        warnings.warn(
            f"add_late_chunks: the store's query embeddings are {name}, not a LateChunkEmbeddings: its query "
            f"vectors must come from the chunks' model ({sorted({d.metadata.get('model') for d in docs} - {None})}, "
            f"{vectors[0].size} dimensions) or the ranking is meaningless; latechunk cannot check it. Give the "
            "store LateChunkEmbeddings(chunker)", UserWarning, stacklevel=3)
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack(vectors)


def add_late_chunks(
    vectorstore: VectorStore,
    documents_or_chunks: Iterable[LCDocument | Chunk],
    chunker: LateChunker | None = None,
) -> list[str]:
    """Fill a LangChain vector store with late chunks and their late vectors; the store embeds nothing.

    Plain Documents are chunked and embedded by ``chunker`` (as :class:`LateChunkingTransformer` does); chunk
    Documents (with metadata :data:`EMBEDDING_KEY`) and latechunk ``Chunk`` objects are taken as they are. Each
    chunk goes into the store with its late vector as the vector, its text, its metadata without
    :data:`EMBEDDING_KEY` (the vector is stored once, as the vector) and its :func:`chunk_id`. How:

    - ``InMemoryVectorStore``: records in its own ``store`` mapping, in the format its ``add_documents``, ``dump``
      and ``load`` use (``{"id", "vector", "text", "metadata"}``); it has no ``add_embeddings``.
    - any store with ``add_embeddings(text_embeddings, metadatas, ids)`` (langchain-community's FAISS,
      Elasticsearch, OpenSearch, ...) or ``add_embeddings(texts, embeddings, metadatas, ids)`` (PGVector).

    Args:
        vectorstore: The store. Its ``embeddings`` should be a :class:`LateChunkEmbeddings` of the same model
            (queries are embedded by the store; the vectors are checked against it when it is one).
        documents_or_chunks: LangChain Documents (plain or chunk Documents) and latechunk Chunks, in any mix.
        chunker: Chunks and embeds plain Documents; default: the chunker of the store's
            :class:`LateChunkEmbeddings`.

    Returns:
        The ids of the chunks added, in order.

    Raises:
        TypeError: if an item is of another type, or the store can only embed text itself (no
            ``add_embeddings`` of a known signature): its ``add_texts``/``add_documents`` would replace each late
            vector by a naive vector of the chunk text alone.
        ValueError: if plain Documents come without a chunker (and the store's embeddings are no
            LateChunkEmbeddings), if a vector is malformed, or if the vectors do not fit the store's
            LateChunkEmbeddings (dimension, model).
    """
    if not isinstance(vectorstore, VectorStore):
        raise TypeError(f"add_late_chunks: vectorstore must be a LangChain VectorStore, got {type(vectorstore).__name__}")
    if chunker is not None and not isinstance(chunker, LateChunker):
        raise TypeError(f"add_late_chunks: chunker must be a latechunk.LateChunker, got {type(chunker).__name__}")
    add = None if isinstance(vectorstore, InMemoryVectorStore) else _add_embeddings_call(vectorstore)
    docs = _chunk_documents(documents_or_chunks, chunker, vectorstore)
    vectors = _check_vectors(docs, vectorstore)
    ids = [_store_id(d, i) for i, d in enumerate(docs)]
    texts = [d.page_content for d in docs]
    metadatas = [{k: v for k, v in d.metadata.items() if k != EMBEDDING_KEY} for d in docs]
    if not docs:
        return []
    if add is None:  # InMemoryVectorStore: the record format of its add_documents / dump / load
        for id_, text, meta, vec in zip(ids, texts, metadatas, vectors):
            vectorstore.store[id_] = {"id": id_, "vector": vec.tolist(), "text": text, "metadata": meta}
        return ids
    returned = add(texts, vectors.tolist(), metadatas, ids)
    return list(returned) if returned is not None else ids


def _store_id(doc: LCDocument, position: int) -> str:
    """A chunk Document's id: its ``id``, else :func:`chunk_id` of its metadata."""
    if doc.id:
        return doc.id
    m = doc.metadata
    missing = [k for k in ("doc_id", "chunk_index", "strategy", "mode") if k not in m]
    if missing:
        raise ValueError(
            f"add_late_chunks: chunk Document {position} has no id and no metadata {missing} to make one from: "
            "give it an id, or make chunk Documents with LateChunkingTransformer"
        )
    return chunk_id(str(m["doc_id"]), int(m["chunk_index"]), str(m["strategy"]), str(m["mode"]))


def _add_embeddings_call(vectorstore: VectorStore):
    """A function ``(texts, vectors, metadatas, ids)`` calling the store's ``add_embeddings``, by its signature."""
    name = type(vectorstore).__name__
    method = getattr(vectorstore, "add_embeddings", None)
    if not callable(method):
        raise TypeError(
            f"add_late_chunks: {name} has no add_embeddings, and LangChain's add_texts/add_documents always embed "
            "the text themselves (each late vector would be replaced by a naive vector of the chunk text alone). "
            "Use a store that takes precomputed vectors (InMemoryVectorStore, FAISS, PGVector, Elasticsearch, "
            "OpenSearch, ...), or `latechunk export DIR --to lancedb:|qdrant:|chroma:`"
        )
    params = inspect.signature(method).parameters
    if "text_embeddings" in params:
        return lambda texts, vecs, metas, ids: method(
            text_embeddings=list(zip(texts, vecs)), metadatas=metas, ids=ids)
    if "texts" in params and "embeddings" in params:
        return lambda texts, vecs, metas, ids: method(texts=texts, embeddings=vecs, metadatas=metas, ids=ids)
    raise TypeError(
        f"add_late_chunks: {name}.add_embeddings{inspect.signature(method)} has neither the "
        "(text_embeddings, metadatas, ids) signature of FAISS/Elasticsearch nor the (texts, embeddings, metadatas, "
        "ids) one of PGVector; add the chunks with the store's own API, passing each chunk Document's "
        f"metadata[{EMBEDDING_KEY!r}] as its vector"
    )
