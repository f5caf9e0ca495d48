"""latechunk: late chunking toolkit.

Tokenize once, encode once, pool many times: a document's token states are computed in one pass (or in
overlapping macro windows), and every chunking strategy is only a set of token spans over them.
Late chunking: Günther et al., "Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding Models",
arXiv:2409.04701 (https://arxiv.org/abs/2409.04701).
"""

from latechunk.types import Boundaries, ChunkVectors, Document, Span, Tokenization

__version__ = "0.1.0"
__all__ = ["Boundaries", "ChunkVectors", "Document", "Span", "Tokenization", "__version__"]
