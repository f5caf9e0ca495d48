"""The names of an output folder: files, folders, formats, chunk-table columns, shard-record keys.

The layout these names make is :mod:`latechunk.output`'s docstring; this module only defines them, once.

Tests: ``tests/output/test_output.py``.
"""

from __future__ import annotations

import re

INDEX_FILE = "index.faiss"
#: the inverted lists of an IVF index, merged on disk at assembly (faiss ``OnDiskInvertedLists``); index.faiss
#: names it and is read with ``faiss.IO_FLAG_ONDISK_SAME_DIR``, so the folder can move
IVFDATA_FILE = "index.ivfdata"
#: a folder of per-shard IVF part files while assembly merges them (removed when it ends)
IVF_PARTS_DIR = "index.ivfparts.tmp"
CHUNKS_FILE = "chunks.parquet"
MANIFEST_FILE = "manifest.json"
RUN_FILE = "run.json"
PROGRESS_FILE = "progress.json"
SHARDS_DIR = "shards"
#: the names of the files a run writes in ``shards/``: ``NNNNN.json``, ``.parquet`` and ``.npy`` (each first under
#: its ``.tmp`` name, :func:`latechunk.ingest.files.tmp_path`); anything else there was not written by latechunk
SHARD_FILE = re.compile(r"\d+\.(?:json|parquet|npy)")
RANKS_DIR = "ranks"
#: the commit journal of an assembly: written once ``index.faiss``, ``index.ivfdata``, ``chunks.parquet`` and
#: ``manifest.json`` are whole under their ``.tmp`` names, removed once they are renamed into place; while it
#: exists the folder's new state is decided, and :meth:`OutputFolder.finish_commit` completes the renames
COMMIT_FILE = "commit.json"
#: the files a commit journal may rename into place or remove (in this order: the index last but run.json and the
#: manifest; run.json only when its settings change with the assembly: ``latechunk reindex``)
COMMIT_ORDER = (IVFDATA_FILE, CHUNKS_FILE, INDEX_FILE, RUN_FILE, MANIFEST_FILE)
#: the writer lock of an output folder (see the layout above); not in :data:`OUTPUT_FILES`: ``--force`` leaves it
LOCK_FILE = ".latechunk.lock"
#: the files assembled from the shards at the end of a run (manifest last)
ASSEMBLED_FILES = (INDEX_FILE, CHUNKS_FILE, MANIFEST_FILE)
#: files and folders of an output folder that ``--force`` removes (nothing else there is touched)
OUTPUT_FILES = (INDEX_FILE, IVFDATA_FILE, CHUNKS_FILE, MANIFEST_FILE, RUN_FILE, PROGRESS_FILE, SHARDS_DIR,
                RANKS_DIR, COMMIT_FILE)

RUN_FORMAT = "latechunk-run/1"
MANIFEST_FORMAT = "latechunk-index/1"
SHARD_FORMAT = "latechunk-shard/1"
RANKS_FORMAT = "latechunk-ranks/1"

#: the source metadata of each chunk, for citations (issue 12): ``title`` and ``title_from``
#: (:func:`latechunk.titles.document_title`), ``section`` (the heading path joined with " > "), ``header``
#: (:func:`latechunk.titles.contextual_header`), ``source`` (the document's path as read: a file relative to its
#: input root, or ``file.jsonl:LINE``), ``url`` (front matter or JSONL ``url``; null when none) and ``metadata``
#: (the record's fields kept by ``--metadata-fields``, as JSON text of an object; null when none). An output folder
#: written before them is read with them filled (:func:`fill_source_columns`).
SOURCE_COLUMNS = ("title", "title_from", "section", "header", "source", "url", "metadata")
#: the columns of chunks.parquet before :data:`SOURCE_COLUMNS` (output folders of latechunk <= issue 11)
LEGACY_COLUMNS = ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "text",
                  "heading_path", "strategy")
#: columns of chunks.parquet and of each shard's .parquet, in order; row i = vector id i
CHUNK_COLUMNS = (
    "doc_id",
    "chunk_index",
    "char_start",
    "char_end",
    "token_start",
    "token_end",
    "text",
    "heading_path",
    "strategy",
    *SOURCE_COLUMNS,
)
#: the columns of a chunk record as ``search`` prints it (after ``rank``, ``score`` and ``vector_id``)
RECORD_COLUMNS = ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "heading_path", "text",
                  "strategy", *SOURCE_COLUMNS)

#: keys of a shard record (``shards/NNNNN.json``):
#: ``format``; ``shard`` (its number k) and ``name`` (``NNNNN``); ``inputs``: input items ``[start, end)``;
#: ``inputs_digest``: running digest of the input items up to ``end``; ``rows``, ``dim``; ``files``:
#: ``{file name: {"bytes", "sha256"}}`` of its .parquet and .npy; ``documents``: ``[{"doc_id", "chunks",
#: "sha256", "source"[, "title"][, "converted_from", "converter"][, "front_matter_problem"]}]``; ``skipped``: ``[{"doc_id", "reason", "source"}]``; ``stats``: ``{"content_tokens",
#: "tokens_encoded", "forward_calls", "seconds": {stage: s}}``.
SHARD_KEYS = ("format", "shard", "name", "inputs", "inputs_digest", "rows", "dim", "files", "documents", "skipped",
              "stats")
