"""latechunk: late chunking toolkit.

Tokenize once, encode once, pool many times: a document's token states are computed in one pass (or in
overlapping macro windows), and every chunking strategy is only a set of token spans over them.
Late chunking: Günther et al., "Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding Models",
arXiv:2409.04701 (https://arxiv.org/abs/2409.04701).

The Python API (:mod:`latechunk.api`)::

    import latechunk
    chunker = latechunk.LateChunker()          # bundled all-MiniLM-L6-v2, embed's default strategy, late mode
    chunks = chunker(text)                     # list[latechunk.Chunk]: text, spans, heading_path, embedding
    index = latechunk.Index.load("out/chroma") # an output folder of `latechunk embed`
    hits = index.search("question", k=5)       # list[latechunk.Hit]

``LateChunker``, ``Chunk``, ``Index``, ``Hit``, ``Context`` and ``AddResult`` are loaded on first use (PEP 562), so ``import
latechunk`` imports neither torch nor FAISS.
"""

import importlib as _importlib
from importlib import util as _importlib_util

from latechunk.types import Boundaries, ChunkVectors, Document, Span, Tokenization

__version__ = "0.1.0"

#: names of :mod:`latechunk.api` exposed here, imported on first access
_API = ("AddResult", "Chunk", "Context", "Hit", "Index", "LateChunker")

__all__ = ["AddResult", "Boundaries", "Chunk", "ChunkVectors", "Context", "Document", "Hit", "Index", "LateChunker", "Span",
           "Tokenization", "__version__"]


def __getattr__(name: str):
    """PEP 562: the API classes, from :mod:`latechunk.api` on first access."""
    if name in _API:
        # imported by name, not by an import statement: the root package sits above every layer of the import
        # rules (provenance reads __version__ here), so only the attribute access depends on latechunk.api
        api = _importlib.import_module("latechunk.api")
        value = getattr(api, name)
        globals()[name] = value
        return value
    if not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        # a submodule named as an attribute (`latechunk.convert.html_to_markdown(...)` after `import latechunk`,
        # as the README writes it): imported on first access, as the API classes are
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (``__all__``): ``dir(latechunk)`` listed ``importlib`` and the ``types`` submodule."""
    return sorted(__all__)
