"""LlamaIndex adapters: a node parser whose TextNodes carry exact character spans and their late vectors, and
a query embedding model of the same encoder.

``VectorStoreIndex`` embeds only the nodes whose ``embedding`` is ``None``; the nodes of
:class:`LateChunkNodeParser` arrive with their late vector set (the mean of the chunk's token states in the
context of its whole document; Günther et al., arXiv:2409.04701), so the index stores those vectors and its
``embed_model`` (:class:`LateChunkEmbedding`) embeds only the queries.

```python
from llama_index.core import Document, VectorStoreIndex
import latechunk
from latechunk.integrations.llamaindex import LateChunkEmbedding, LateChunkNodeParser

chunker = latechunk.LateChunker()
nodes = LateChunkNodeParser(chunker).get_nodes_from_documents([Document(text=text, id_="notes.md")])
index = VectorStoreIndex(nodes, embed_model=LateChunkEmbedding(chunker))
index.as_retriever(similarity_top_k=5).retrieve("question")
```

Needs ``llama-index-core`` (``pip install 'latechunk[llamaindex]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.node_parser.interface import NodeParser
    from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, TextNode
    from llama_index.core.schema import Document as LIDocument
    from llama_index.core.utils import get_tqdm_iterable
except ImportError as err:  # the module is the optional part: it needs the framework to define its classes
    raise ImportError(
        "latechunk.integrations.llamaindex needs llama-index-core, which is not installed: "
        "pip install 'latechunk[llamaindex]'"
    ) from err

from latechunk.api import LateChunker
from latechunk.integrations import CHUNK_KEYS, MARKDOWN_KEYS, as_chunker
from latechunk.types import Document

__all__ = ["CHUNK_KEYS", "LateChunkNodeParser", "LateChunkEmbedding"]



def _merge_keys(first: Sequence[str], second: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


class LateChunkNodeParser(NodeParser):
    """A LlamaIndex ``NodeParser`` that late-chunks each document into ``TextNode``s with their vectors set.

    Each input node (a ``Document``, or any node with text) is chunked and encoded once by the chunker: its
    strategy's boundaries, then each chunk's vector pooled from the token states of the whole document (late
    chunking, arXiv:2409.04701; naive when the chunker's mode is ``"naive"``). Each chunk becomes a ``TextNode``
    with ``text`` the exact slice ``source_text[start_char_idx:end_char_idx]`` (character offsets, half-open),
    ``embedding`` the chunk's vector (``dim`` floats), metadata :data:`CHUNK_KEYS` (``doc_id`` is the source
    node's id, ``heading_path`` a list of str; LlamaIndex adds the source's own metadata when
    ``include_metadata``), a ``SOURCE`` relationship to its document and ``PREVIOUS``/``NEXT`` to its neighbours
    (``include_prev_next_rel``). Node ids come from ``id_func(chunk_index, source_node)`` (LlamaIndex's default:
    a random UUID).

    LlamaIndex's base class re-derives ``start_char_idx`` by searching each node's text in its document; that
    finds the wrong occurrence when a chunk's text repeats earlier text, so this parser keeps the chunker's
    spans.

    Args:
        chunker: The LateChunker (model, strategy, mode, macro window), a model name for a LateChunker with the
            default strategy, or ``None`` for the bundled default model.
        **kwargs: ``NodeParser`` fields (``include_metadata``, ``include_prev_next_rel``, ``id_func``,
            ``callback_manager``).

    Raises:
        TypeError: if ``chunker`` is of another type.
    """

    model_name: str = Field(default="", description="The chunker's model.")
    strategy: str = Field(default="", description="The chunker's strategy SPEC.")
    mode: str = Field(default="late", description="'late', 'naive', 'contextual' or 'fused'.")
    _chunker: Any = PrivateAttr(default=None)

    def __init__(self, chunker: LateChunker | str | None = None, **kwargs: Any) -> None:
        chunker = as_chunker(chunker)
        super().__init__(model_name=chunker.model_name, strategy=chunker.strategy,
                         mode=chunker.mode, **kwargs)
        self._chunker = chunker

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name of the class."""
        return "LateChunkNodeParser"

    @property
    def chunker(self) -> LateChunker:
        """The LateChunker that chunks and encodes."""
        return self._chunker

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        """Chunk and embed each node; the nodes of one document are in order, documents in input order.

        A document that gives no chunk (empty text, or chunking failed) gives no node, its reason logged as a
        warning on the ``latechunk`` logger (``LateChunker.map``).

        Raises:
            ValueError: if two input nodes have the same id.
        """
        docs = []
        seen: set[str] = set()
        for node in nodes:
            if node.node_id in seen:
                raise ValueError(f"two input nodes have the id {node.node_id!r}: each document needs its own id_")
            seen.add(node.node_id)
            meta = {k: node.metadata[k] for k in MARKDOWN_KEYS if k in (node.metadata or {})}  # a .md file: markdown
            docs.append(Document(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), meta))
        model = self._chunker.model_name
        out: list[BaseNode] = []
        pairs = zip(nodes, self._chunker.map(docs))
        for node, chunks in get_tqdm_iterable(pairs, show_progress, "Late chunking", total=len(docs)):
            source = {NodeRelationship.SOURCE: node.as_related_node_info()}
            for c in chunks:
                out.append(TextNode(
                    id_=self.id_func(c.chunk_index, node),
                    text=c.text,
                    start_char_idx=int(c.char_start),
                    end_char_idx=int(c.char_end),
                    embedding=c.embedding.astype("float32").tolist(),
                    metadata={
                        "doc_id": c.doc_id, "chunk_index": int(c.chunk_index), "char_start": int(c.char_start),
                        "char_end": int(c.char_end), "token_start": int(c.token_start),
                        "token_end": int(c.token_end), "heading_path": list(c.heading_path),
                        "strategy": c.strategy, "mode": c.mode, "model": model,
                    },
                    excluded_embed_metadata_keys=_merge_keys(node.excluded_embed_metadata_keys, CHUNK_KEYS),
                    excluded_llm_metadata_keys=_merge_keys(node.excluded_llm_metadata_keys, CHUNK_KEYS),
                    metadata_template=node.metadata_template,
                    metadata_separator=node.metadata_separator,
                    text_template=getattr(node, "text_template", TextNode.model_fields["text_template"].default),
                    relationships=dict(source),
                ))
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, LIDocument]) -> list[BaseNode]:
        """LlamaIndex's post-processing (source metadata, relationships), keeping the chunker's character spans."""
        spans = {n.node_id: (n.start_char_idx, n.end_char_idx) for n in nodes}
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for n in nodes:
            n.start_char_idx, n.end_char_idx = spans[n.node_id]
        return nodes


def _stale(node: BaseNode) -> bool:
    """A node that carries a late chunk's vector but not that chunk's text: a splitter after
    :class:`LateChunkNodeParser` cut the chunk and copied its metadata and vector to each piece."""
    m = node.metadata or {}
    if node.embedding is None or "strategy" not in m or "char_start" not in m or "char_end" not in m:
        return False
    try:
        return len(node.get_content(metadata_mode=MetadataMode.NONE)) != int(m["char_end"]) - int(m["char_start"])
    except (TypeError, ValueError):
        return False


def _without_embedding(nodes: Sequence[BaseNode]) -> tuple[list[BaseNode], list[str]]:
    """The nodes that have no embedding yet (or a stale one: :func:`_stale`, said in a warning), and their text
    as LlamaIndex embeds it."""
    stale = {id(n) for n in nodes if _stale(n)}
    if stale:  # a Python warning, as LangChain's re-embedding warnings are (a trial missed a log line)
        import warnings

        warnings.warn(
            f"LateChunkEmbedding: {len(stale)} node(s) hold a late chunk's vector but only part of its text (a "
            "splitter ran after LateChunkNodeParser); they are embedded again on their own text (naive). Split with "
            "the parser's strategy instead (LateChunker(strategy=...)) to keep late vectors", UserWarning,
            stacklevel=3)
    todo = [n for n in nodes if n.embedding is None or id(n) in stale]
    return todo, [n.get_content(metadata_mode=MetadataMode.EMBED) for n in todo]


class LateChunkEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` over a LateChunker's encoder: the query side of an index of late chunks.

    Queries are encoded with the model's query prompt (sentence-transformers' ``encode_query``). Texts are
    encoded each on its own with the document prompt: that is **naive** embedding (no document context), which
    LlamaIndex does only for nodes without an ``embedding``; the nodes of :class:`LateChunkNodeParser` have
    theirs. As a transformation (``IngestionPipeline(transformations=[parser, LateChunkEmbedding(...)])``, where
    LlamaIndex's ``BaseEmbedding`` re-embeds *every* node) it also embeds only the nodes without an embedding, so
    the late vectors are kept. Vectors are L2-normalised when the chunker normalises (its default).

    Args:
        chunker: The LateChunker whose encoder to use (the one that made the nodes), a model name, or ``None``
            for the bundled default model.
        **kwargs: ``BaseEmbedding`` fields (``embed_batch_size``, ``callback_manager``, ...).

    Raises:
        TypeError: if ``chunker`` is of another type.
    """

    _chunker: Any = PrivateAttr(default=None)

    def __init__(self, chunker: LateChunker | str | None = None, **kwargs: Any) -> None:
        chunker = as_chunker(chunker)
        super().__init__(model_name=chunker.model_name, **kwargs)
        self._chunker = chunker

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name of the class."""
        return "LateChunkEmbedding"

    @property
    def chunker(self) -> LateChunker:
        """The LateChunker whose encoder embeds."""
        return self._chunker

    def _encode(self, texts: list[str], prompt_name: str) -> list[list[float]]:
        normalize = bool(self._chunker.config.normalize)
        return self._chunker.encoder.encode(texts, prompt_name=prompt_name, normalize=normalize).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._encode([query], "query")[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encode([text], "document")[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._encode(list(texts), "document") if texts else []

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """As a transformation: embed (naive) only the nodes without an embedding; late chunks keep theirs.

        Args:
            nodes: LlamaIndex nodes.
            **kwargs: Passed to ``get_text_embedding_batch``.

        Returns:
            ``nodes``, each with an ``embedding``.
        """
        todo, texts = _without_embedding(nodes)
        for node, embedding in zip(todo, self.get_text_embedding_batch(texts, **kwargs) if todo else []):
            node.embedding = embedding
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """:meth:`__call__` for LlamaIndex's async pipelines."""
        todo, texts = _without_embedding(nodes)
        for node, embedding in zip(todo, await self.aget_text_embedding_batch(texts, **kwargs) if todo else []):
            node.embedding = embedding
        return nodes
