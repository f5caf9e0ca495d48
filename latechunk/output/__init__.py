"""The output folder of ``latechunk embed`` (the package is :mod:`latechunk.output.folder` for now: the module
``latechunk/output.py`` moved whole). Every name is importable from ``latechunk.output`` as before; patch a seam in
the module that defines it (``latechunk.output.folder.read_chunk_table``).
"""

from latechunk.output.folder import ASSEMBLED_FILES as ASSEMBLED_FILES
from latechunk.output.folder import (
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
    SECTION_SEPARATOR,
    SHARD_FILE,
    SHARD_FORMAT,
    SHARD_KEYS,
    SHARDS_DIR,
    SOURCE_COLUMNS,
    OutputFolder,
    build_manifest,
    chunk_rows,
    chunk_schema,
    chunk_table,
    fill_source_columns,
    read_output,
    search_records,
    section_text,
    source_metadata,
)
from latechunk.output.folder import COMMIT_FILE as COMMIT_FILE
from latechunk.output.folder import COMMIT_ORDER as COMMIT_ORDER
from latechunk.output.folder import WHERE_COLUMNS as WHERE_COLUMNS
from latechunk.output.folder import _dictionary_mask as _dictionary_mask
from latechunk.output.folder import _identity as _identity
from latechunk.output.folder import _json_bytes as _json_bytes
from latechunk.output.folder import _number as _number
from latechunk.output.folder import _same_number as _same_number
from latechunk.output.folder import allowed_rows as allowed_rows
from latechunk.output.folder import commit as commit
from latechunk.output.folder import flush as flush
from latechunk.output.folder import fsync_dir as fsync_dir
from latechunk.output.folder import metadata_fields as metadata_fields
from latechunk.output.folder import metadata_matches as metadata_matches
from latechunk.output.folder import metadata_text as metadata_text
from latechunk.output.folder import metadata_value as metadata_value
from latechunk.output.folder import parse_where as parse_where
from latechunk.output.folder import read_chunk_table as read_chunk_table
from latechunk.output.folder import write_chunk_table as write_chunk_table
from latechunk.output.folder import write_shard_table as write_shard_table

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
