"""Adapters from latechunk to the frameworks people build retrieval with (issue 11).

- :mod:`latechunk.integrations.langchain`: ``LateChunkingTransformer`` (a LangChain ``BaseDocumentTransformer``:
  Documents to chunk Documents carrying their late vectors), ``LateChunkEmbeddings`` (an ``Embeddings`` for
  queries) and ``add_late_chunks`` (fills a ``VectorStore`` with the late vectors). Extra: ``latechunk[langchain]``.
- :mod:`latechunk.integrations.llamaindex`: ``LateChunkNodeParser`` (a LlamaIndex ``NodeParser`` emitting
  ``TextNode``s with exact character spans and their late ``embedding`` set) and ``LateChunkEmbedding`` (a
  ``BaseEmbedding`` for queries). Extra: ``latechunk[llamaindex]``.

Each framework is an optional dependency: this package imports neither; importing one of its modules without
its framework raises an ImportError naming the extra to install. Late chunking: arXiv:2409.04701.
"""

__all__ = ["CHUNK_KEYS", "MARKDOWN_KEYS", "as_chunker"]

#: metadata keys that a chunk Document (LangChain) or TextNode (LlamaIndex) gets from its chunk, beside its
#: source document's metadata: ``doc_id``, ``chunk_index`` (0-based position in its document), ``char_start`` /
#: ``char_end`` (characters of the source text), ``token_start`` / ``token_end`` (positions in the document's
#: one tokenization, special tokens included), both spans half-open ``[start, end)``; ``heading_path`` (list of
#: str), ``strategy`` (canonical SPEC), ``mode`` (``"late"``, ``"naive"``, ``"contextual"`` or ``"fused"``) and ``model`` (the encoder's name).
CHUNK_KEYS = ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "heading_path",
              "strategy", "mode", "model")


#: source metadata keys that decide whether a document is markdown (:func:`latechunk.strategies._markdown.
#: is_markdown_input`): LangChain's loaders set ``source``, LlamaIndex's readers ``file_path`` and ``file_name``.
MARKDOWN_KEYS = ("markdown", "source", "file_path", "file_name")


def as_chunker(chunker):
    """The LateChunker an adapter is given: a LateChunker as it is, a model name or ``None`` made into one.

    Args:
        chunker: A ``latechunk.LateChunker``, a model name or folder (str) for a LateChunker with the default
            strategy, or ``None`` for the bundled default model.

    Returns:
        A ``latechunk.LateChunker``.

    Raises:
        TypeError: if ``chunker`` is of another type.
    """
    from latechunk.api import LateChunker

    if chunker is None or isinstance(chunker, str):
        return LateChunker(model=chunker)
    if not isinstance(chunker, LateChunker):
        raise TypeError(f"chunker must be a latechunk.LateChunker, a model name or None, got {type(chunker).__name__}")
    return chunker
