"""``latechunk verify DIR``: check that an output folder agrees with itself and with its sources.

Checked, each disagreement reported as one line:

- files: ``manifest.json``, ``index.faiss``, ``chunks.parquet`` are present and readable; no stray temp files;
- counts: index ``ntotal`` = chunks.parquet rows = manifest ``index.ntotal`` = ``counts.chunks`` = the sum of
  the documents' chunk counts; index ``d`` = manifest ``dim``; embedded + skipped = documents in;
- manifest: no document listed twice;
- shards: each shard record named in the manifest exists with the recorded sha256, its ``.parquet`` and ``.npy``
  have the recorded size and sha256 (a truncated shard fails here), the shards' documents and skipped lists are the
  manifest's, chunks.parquet is the concatenation of the shard tables, and the index holds the shard vectors;
- rows: each row belongs to the document the manifest puts there, chunk indices run 0..n-1, spans are non-empty
  and the text length equals the char span;
- vectors: finite, and unit-norm when the run normalised them; the index holds them (a flat/HNSW index row by
  row; an IVF index on a sample of each shard's rows: each in the inverted list its vector is assigned to, with
  the code its vector encodes to, :func:`latechunk.index.check_ivf_rows`);
- IVF indexes: ``index.ivfdata`` (the on-disk inverted lists) has the manifest's size and sha256, and a seeded
  sample of the vectors finds itself among its 10 nearest at the index's ``nprobe``
  (:func:`latechunk.index.self_search`). That is a check for codes that hold a vector (nearly) exactly
  (``IVF...,Flat``, ``SQfp16``, ``SQ8``); a ``PQ`` code is lossy (another vector may score above a vector's own
  code), so for PQ the self-recall@10 is reported in the summary, not checked; the codes themselves are
  checked byte for byte above;
- citations: each row's ``section`` is its heading path joined, its ``source`` its document record's;
- sources (unless skipped): the inputs are read again; each embedded document's text has the recorded sha256,
  each chunk's text is the exact slice ``text[char_start:char_end]``, and its ``title``, ``title_from``,
  ``header`` and ``url`` are what the source gives now (rows of a folder written before these columns hold None
  there, :func:`latechunk.output.fill_source_columns`, and are not checked); every source item is listed in the manifest
  and every listed document still exists. A file or folder never opened (unsupported type, symlinked or output
  folder, ...: :func:`latechunk.io.is_not_read`) that the manifest does not list is not counted: another index
  written into the corpus folder, or a .docx added since, changes nothing that was embedded.

The package, one module per concern: :mod:`~latechunk.verify.folder` (:func:`verify_output`: files, counts,
manifest), :mod:`~latechunk.verify.shards` (shards, rows, vectors), :mod:`~latechunk.verify.ivf` (the on-disk
lists, the self-search), :mod:`~latechunk.verify.sources` (the inputs read again) and
:mod:`~latechunk.verify.problems` (the problem lines). Every name is importable from ``latechunk.verify`` as it was
from the one module before.

Tests: ``tests/verify/test_verify.py`` (one test per fault), ``tests/verify/test_verify_rows.py``.
"""

from latechunk.verify.folder import verify_output
from latechunk.verify.ivf import SELF_SEARCH_K as SELF_SEARCH_K
from latechunk.verify.ivf import SELF_SEARCH_PER_SHARD as SELF_SEARCH_PER_SHARD
from latechunk.verify.ivf import SELF_SEARCH_ROWS as SELF_SEARCH_ROWS
from latechunk.verify.ivf import _check_ivf as _check_ivf
from latechunk.verify.problems import MAX_PER_KIND as MAX_PER_KIND
from latechunk.verify.problems import _Problems as _Problems
from latechunk.verify.shards import _check_rows as _check_rows
from latechunk.verify.shards import _check_shards as _check_shards
from latechunk.verify.shards import _check_vectors as _check_vectors
from latechunk.verify.shards import _index_config as _index_config
from latechunk.verify.shards import _RowReader as _RowReader
from latechunk.verify.sources import _check_citations as _check_citations
from latechunk.verify.sources import _check_sources as _check_sources
from latechunk.verify.sources import _iter_sources as _iter_sources
from latechunk.verify.sources import _places as _places
from latechunk.verify.sources import _root_key as _root_key
from latechunk.verify.sources import _runs_of_roots as _runs_of_roots
from latechunk.verify.sources import _source_roots as _source_roots

__all__ = ["verify_output"]
