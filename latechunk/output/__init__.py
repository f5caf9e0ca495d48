"""The output folder of ``latechunk embed``: its one owner (file names, chunk table schema, manifest and shard keys).

Layout of an output folder ``DIR`` (DESIGN.md)::

    index.faiss             FAISS index over inner products (a binary one, Hamming, for --precision ubinary);
                            vector id i is row i of chunks.parquet
    index.ivfdata           an IVF index only: its inverted lists, merged on disk (:data:`IVFDATA_FILE`)
    chunks.parquet          one row per chunk, columns :data:`CHUNK_COLUMNS` (schema :data:`CHUNK_SCHEMA`)
    manifest.json           format :data:`MANIFEST_FORMAT`: settings, model, counts, documents, skipped, shards
    run.json                format :data:`RUN_FORMAT`: the run's settings, written first (``--resume`` compares them)
    progress.json           shards complete, input items consumed, wall seconds so far (over resumed runs; the
                            shard records are the truth, ``seconds`` feeds a resumed run's ``seconds.total``)
    shards/NNNNN.parquet    chunk rows of one pipeline group (same schema as chunks.parquet)
    shards/NNNNN.npy        (rows, dim) float32 chunk vectors, ``np.save(..., allow_pickle=False)``
    shards/NNNNN.json       shard record, format :data:`SHARD_FORMAT`, keys :data:`SHARD_KEYS`
    ranks/                  several processes only (:mod:`latechunk.ingest.ranks`), removed when the run completes
    commit.json             only while an assembly commits (:data:`COMMIT_FILE`, :meth:`OutputFolder.finish_commit`):
                            the assembled files wait whole under their ``.tmp`` names and are renamed into place;
                            the next reader or writer finishes a commit that was killed halfway
    .latechunk.lock         the writer lock (:data:`LOCK_FILE`, :func:`latechunk.ingest.folder.writer_lock`): an
                            ``fcntl.flock`` held by the one process writing the folder (embed, --resume, --append,
                            ``Index.add``); holds that writer's pid. Never removed (removing a lock file races),
                            never counts as content (an empty folder with only it is empty), never read by readers

This package is the only code that knows these names, columns and keys, and the only code that reads or writes
the three assembled files; :mod:`latechunk.ingest` writes shards and commits files through the names and
schema given here. ``embed`` (through ingest), ``verify``, ``search``, ``chunk`` and the evaluator use it.

The package, one module per concern:

- :mod:`~latechunk.output.layout`: the names above (files, folders, formats, columns, shard-record keys).
- :mod:`~latechunk.output.records`: chunk records (:func:`chunk_rows`, :func:`search_records`, the citation
  fields).
- :mod:`~latechunk.output.tables`: the chunk table (:func:`chunk_schema`, :func:`chunk_table`, parquet files
  read and written, older ones filled: :func:`fill_source_columns`).
- :mod:`~latechunk.output.where`: ``--where`` (:func:`parse_where`, :func:`metadata_matches`,
  :func:`allowed_rows`).
- :mod:`~latechunk.output.durable`: :func:`flush`, :func:`commit`, :func:`fsync_dir`.
- :mod:`~latechunk.output.journal`: the commit journal of an assembly (``begin_commit``, ``finish_commit``).
- :mod:`~latechunk.output.folder`: :class:`OutputFolder` (paths and readers) and :func:`read_output`.
- :mod:`~latechunk.output.manifest`: :func:`build_manifest`.

Every name is importable from ``latechunk.output`` as it was from the one module before. Patch a seam in the
module that defines it (``latechunk.output.tables.read_chunk_table``: :class:`OutputFolder` reads through it).

Tests: ``tests/output/test_output.py``.
"""

from latechunk.output.durable import _identity as _identity
from latechunk.output.durable import _json_bytes as _json_bytes
from latechunk.output.durable import commit as commit
from latechunk.output.durable import flush as flush
from latechunk.output.durable import fsync_dir as fsync_dir
from latechunk.output.folder import OutputFolder, read_output
from latechunk.output.journal import CommitJournal as CommitJournal
from latechunk.output.layout import ASSEMBLED_FILES as ASSEMBLED_FILES
from latechunk.output.layout import (
    CHUNK_COLUMNS,
    CHUNKS_FILE,
    INDEX_FILE,
    IVF_PARTS_DIR,
    IVFDATA_FILE,
    LEGACY_COLUMNS,
    LOCK_FILE,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    OUTPUT_FILES,
    PROGRESS_FILE,
    RANKS_DIR,
    RANKS_FORMAT,
    RECORD_COLUMNS,
    RUN_FILE,
    RUN_FORMAT,
    SHARD_FILE,
    SHARD_FORMAT,
    SHARD_KEYS,
    SHARDS_DIR,
    SOURCE_COLUMNS,
)
from latechunk.output.layout import COMMIT_FILE as COMMIT_FILE
from latechunk.output.layout import COMMIT_ORDER as COMMIT_ORDER
from latechunk.output.manifest import build_manifest
from latechunk.output.records import (
    SECTION_SEPARATOR,
    chunk_rows,
    search_records,
    section_text,
    source_metadata,
)
from latechunk.output.records import metadata_text as metadata_text
from latechunk.output.records import metadata_value as metadata_value
from latechunk.output.tables import chunk_schema, chunk_table, fill_source_columns
from latechunk.output.tables import read_chunk_table as read_chunk_table
from latechunk.output.tables import write_chunk_table as write_chunk_table
from latechunk.output.tables import write_shard_table as write_shard_table
from latechunk.output.where import WHERE_COLUMNS as WHERE_COLUMNS
from latechunk.output.where import _dictionary_mask as _dictionary_mask
from latechunk.output.where import _number as _number
from latechunk.output.where import _same_number as _same_number
from latechunk.output.where import allowed_rows as allowed_rows
from latechunk.output.where import metadata_fields as metadata_fields
from latechunk.output.where import metadata_matches as metadata_matches
from latechunk.output.where import parse_where as parse_where

__all__ = [
    "CHUNKS_FILE",
    "CHUNK_COLUMNS",
    "INDEX_FILE",
    "IVFDATA_FILE",
    "IVF_PARTS_DIR",
    "LEGACY_COLUMNS",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "OUTPUT_FILES",
    "PROGRESS_FILE",
    "RANKS_DIR",
    "RANKS_FORMAT",
    "RECORD_COLUMNS",
    "RUN_FILE",
    "RUN_FORMAT",
    "SHARDS_DIR",
    "SHARD_FILE",
    "SHARD_FORMAT",
    "SHARD_KEYS",
    "SOURCE_COLUMNS",
    "SECTION_SEPARATOR",
    "OutputFolder",
    "build_manifest",
    "chunk_rows",
    "chunk_schema",
    "chunk_table",
    "fill_source_columns",
    "section_text",
    "source_metadata",
    "read_output",
    "search_records",
]
# names outside __all__ (``name as name``: a re-export) are imported from here by callers and tests as they were
# from the one module before (latechunk.output.commit, latechunk.output._identity, ...)
