"""``latechunk verify DIR``: check that an output folder agrees with itself and with its sources (see
:mod:`latechunk.verify.folder`).

Every name is importable from ``latechunk.verify`` as it was from the one module before.

Tests: ``tests/test_verify.py`` (one test per fault), ``tests/test_verify_rows.py``.
"""

from latechunk.verify.folder import MAX_PER_KIND as MAX_PER_KIND
from latechunk.verify.folder import SELF_SEARCH_K as SELF_SEARCH_K
from latechunk.verify.folder import SELF_SEARCH_PER_SHARD as SELF_SEARCH_PER_SHARD
from latechunk.verify.folder import SELF_SEARCH_ROWS as SELF_SEARCH_ROWS
from latechunk.verify.folder import _check_citations as _check_citations
from latechunk.verify.folder import _check_ivf as _check_ivf
from latechunk.verify.folder import _check_rows as _check_rows
from latechunk.verify.folder import _check_shards as _check_shards
from latechunk.verify.folder import _check_sources as _check_sources
from latechunk.verify.folder import _check_vectors as _check_vectors
from latechunk.verify.folder import _index_config as _index_config
from latechunk.verify.folder import _iter_sources as _iter_sources
from latechunk.verify.folder import _places as _places
from latechunk.verify.folder import _Problems as _Problems
from latechunk.verify.folder import _root_key as _root_key
from latechunk.verify.folder import _RowReader as _RowReader
from latechunk.verify.folder import _runs_of_roots as _runs_of_roots
from latechunk.verify.folder import _source_roots as _source_roots
from latechunk.verify.folder import verify_output

__all__ = ["verify_output"]
