"""Chunking strategies: each turns a Document and its Tokenization into Boundaries.

Importing this package registers the built-ins: fixed, recursive, heading, sentence_window, semantic, code.
"""

from latechunk.strategies import code, fixed, heading, recursive, semantic, sentence_window  # noqa: F401  (register)
from latechunk.strategies.base import (
    Strategy,
    expand_spec,
    get_strategy,
    make_boundaries,
    parse_spec,
    register,
    registry,
)

__all__ = ["Strategy", "expand_spec", "get_strategy", "make_boundaries", "parse_spec", "register", "registry"]
