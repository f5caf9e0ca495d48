""":class:`OutputFolder`: the paths of an output folder's files and their readers; :func:`read_output`.

The commit of an assembly is :class:`OutputFolder`'s base :class:`~latechunk.output.journal.CommitJournal`;
chunk table files are read through :mod:`latechunk.output.tables`.

Tests: ``tests/output/test_output.py``, ``tests/ingest/test_ingest.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.io import quiet_c_stdout
from latechunk.output import tables
from latechunk.output.durable import _json_bytes
from latechunk.output.journal import CommitJournal
from latechunk.output.layout import (
    ASSEMBLED_FILES,
    CHUNKS_FILE,
    COMMIT_FILE,
    INDEX_FILE,
    IVF_PARTS_DIR,
    IVFDATA_FILE,
    MANIFEST_FILE,
    PROGRESS_FILE,
    RANKS_DIR,
    RUN_FILE,
    SHARDS_DIR,
    SOURCE_COLUMNS,
)
from latechunk.output.tables import fill_source_columns


@dataclass(frozen=True)
class OutputFolder(CommitJournal):
    """An output folder of ``latechunk embed``: the paths of its files and their readers.

    Attributes:
        path: The folder.
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    # ---------------------------------------------------------------- paths
    @property
    def index_path(self) -> Path:
        """``DIR/index.faiss``."""
        return self.path / INDEX_FILE

    @property
    def ivfdata_path(self) -> Path:
        """``DIR/index.ivfdata`` (an IVF index's inverted lists, :data:`IVFDATA_FILE`)."""
        return self.path / IVFDATA_FILE

    @property
    def ivf_parts_path(self) -> Path:
        """``DIR/index.ivfparts.tmp``: per-shard IVF part files while assembly merges them (:data:`IVF_PARTS_DIR`)."""
        return self.path / IVF_PARTS_DIR

    @property
    def chunks_path(self) -> Path:
        """``DIR/chunks.parquet``."""
        return self.path / CHUNKS_FILE

    @property
    def manifest_path(self) -> Path:
        """``DIR/manifest.json``."""
        return self.path / MANIFEST_FILE

    @property
    def run_path(self) -> Path:
        """``DIR/run.json``."""
        return self.path / RUN_FILE

    @property
    def commit_path(self) -> Path:
        """``DIR/commit.json`` (the commit journal of an assembly, :data:`COMMIT_FILE`)."""
        return self.path / COMMIT_FILE

    @property
    def progress_path(self) -> Path:
        """``DIR/progress.json``."""
        return self.path / PROGRESS_FILE

    @property
    def shards_dir(self) -> Path:
        """``DIR/shards``."""
        return self.path / SHARDS_DIR

    @property
    def ranks_dir(self) -> Path:
        """``DIR/ranks``."""
        return self.path / RANKS_DIR

    @staticmethod
    def shard_name(k: int) -> str:
        """The name of shard ``k``.

        Args:
            k: Shard number (>= 0).

        Returns:
            ``k`` as five or more digits, zero-padded (``7`` -> ``"00007"``).
        """
        return f"{k:05d}"

    @staticmethod
    def shard_number(file_name: str) -> int | None:
        """The shard number of a file name in ``shards/``.

        Args:
            file_name: A file name (no folder), e.g. ``"00007.npy"``.

        Returns:
            The number (``7``), or ``None`` if the part before the first ``.`` is not all digits.
        """
        stem = file_name.split(".", 1)[0]
        return int(stem) if stem.isdigit() else None

    def shard_path(self, k: int, ext: str) -> Path:
        """The path of one of shard ``k``'s files.

        Args:
            k: Shard number.
            ext: ``"json"``, ``"parquet"`` or ``"npy"`` (not checked).

        Returns:
            ``DIR/shards/NNNNN.<ext>``.
        """
        return self.shards_dir / f"{self.shard_name(k)}.{ext}"

    def temp_files(self) -> list[Path]:
        """Temp files of unfinished writes (``*.tmp``) at the top level and in ``shards/``.

        Returns:
            Their paths: the top level's sorted, then ``shards/``'s sorted.
        """
        return sorted(self.path.glob("*.tmp")) + sorted(self.shards_dir.glob("*.tmp"))

    # ---------------------------------------------------------------- JSON files
    @staticmethod
    def read_json(path: Path) -> dict:
        """A JSON object file.

        Args:
            path: The file.

        Returns:
            The parsed JSON object.

        Raises:
            ValueError: if it is missing, unreadable, not JSON or not an object (the message names the file).
        """
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{Path(path).name} is missing") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{Path(path).name} is unreadable: {err}") from err
        if not isinstance(obj, dict):
            raise ValueError(f"{Path(path).name} is unreadable: not a JSON object")  # noqa: TRY004  (a damaged file)
        return obj

    @staticmethod
    def json_bytes(obj, indent: int | None = 1) -> bytes:
        """How every JSON file of the folder is written: UTF-8, ``ensure_ascii=False``, newline-terminated.

        Args:
            obj: A JSON-ready object.
            indent: Spaces per level; None: one line.

        Returns:
            The file's bytes.

        Raises:
            TypeError: if ``obj`` holds a value JSON cannot encode.
        """
        return _json_bytes(obj, indent)

    def read_manifest(self) -> dict:
        """``manifest.json`` as a dict.

        Returns:
            The manifest (keys: :func:`build_manifest`).

        Raises:
            ValueError: if it is missing (an unfinished run?) or unreadable, or an interrupted commit cannot be
                finished (:meth:`finish_commit`).
        """
        self.finish_commit()
        if not self.manifest_path.is_file():
            raise ValueError(f"{self.path}: {MANIFEST_FILE} is missing (not a latechunk output folder, or an "
                             "unfinished run? run `latechunk embed` first, or finish it with --resume)")
        return self.read_json(self.manifest_path)

    def read_run(self) -> dict:
        """``run.json`` as a dict.

        Returns:
            ``{"format", "created", "settings"}``; ``settings`` is ``EmbedConfig.to_dict()`` with the model's
            facts (:func:`latechunk.ingest.run_settings`).

        Raises:
            ValueError: if it is missing or unreadable.
        """
        return self.read_json(self.run_path)

    def recorded_settings(self, manifest: dict | None = None) -> dict:
        """The run's settings: the manifest's ``settings``, else run.json's (a folder whose manifest predates
        them), else ``{}`` (neither recorded, or run.json unreadable).

        Args:
            manifest: The manifest already read; None: read it when it exists.

        Returns:
            ``EmbedConfig.to_dict()`` with the model's facts, as recorded.
        """
        if manifest is None and self.manifest_path.is_file():
            manifest = self.read_manifest()
        settings = (manifest or {}).get("settings")
        if not settings and self.run_path.is_file():
            try:
                settings = self.read_run().get("settings")
            except ValueError:
                settings = None
        return dict(settings or {})

    # ---------------------------------------------------------------- index and chunks
    def read_index(self):
        """``index.faiss`` as a CPU ``faiss.Index``, or a ``faiss.IndexBinary`` where the run's ``--precision`` is
        ``ubinary`` (told apart by the file's four-byte faiss type code: binary ones begin with ``IB``).

        Returns:
            The index (inner-product metric, or Hamming for a binary one; vector id i = row i of
            chunks.parquet).

        Raises:
            ValueError: if it is missing, or unreadable (truncated or not a FAISS index).
        """
        import faiss

        if not self.index_path.is_file():
            raise ValueError(f"{self.path}: {INDEX_FILE} is missing (not a latechunk output folder? run "
                             "`latechunk embed` first)")
        try:
            with open(self.index_path, "rb") as f:
                binary = f.read(2) == b"IB"
            if binary:
                return faiss.read_index_binary(str(self.index_path))
            with quiet_c_stdout():  # an IVF index's index.ivfdata is looked up beside index.faiss (faiss prints that)
                # read-only: index.ivfdata is memory-mapped for reading, so a read-only folder (a shared mount,
                # a container's :ro volume) searches and verifies
                return faiss.read_index(str(self.index_path), faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as err:
            if IVFDATA_FILE in str(err):  # the IVF index reads but its inverted lists do not
                raise ValueError(f"{self.ivfdata_path} (the inverted lists of this IVF index) is missing or "
                                 f"unreadable ({str(err).splitlines()[0]}); run `latechunk verify {self.path}`"
                                 ) from err
            raise ValueError(f"{self.index_path} is unreadable ({str(err).splitlines()[0] if str(err) else err}; "
                             f"truncated or not a FAISS index); run `latechunk verify {self.path}`") from err

    def write_index(self, index, tmp: Path) -> None:
        """Write ``index`` to ``tmp`` (the caller commits it to :attr:`index_path`).

        Args:
            index: A CPU ``faiss.Index`` or ``faiss.IndexBinary`` (``faiss.write_index_binary``).
            tmp: The temp file to write.

        Raises:
            RuntimeError: if FAISS cannot write the file.
        """
        import faiss

        if isinstance(index, faiss.IndexBinary):
            faiss.write_index_binary(index, str(tmp))
        else:
            faiss.write_index(index, str(tmp))

    def read_chunks(self, columns: Sequence[str] | None = None):
        """``chunks.parquet`` as a ``pyarrow.Table`` (all or some columns).

        Args:
            columns: Column names to read (of :data:`CHUNK_COLUMNS`); None: all.

        Returns:
            The table, row i = vector id i.

        Raises:
            ValueError: if it is missing or unreadable.
        """
        return tables.read_chunk_table(self.chunks_path, columns, sources=lambda: self._sources(self.chunks_path))

    def _sources(self, path: Path) -> dict[str, str]:
        """``{doc_id: source}`` from the record that lists the documents of a chunk table file (a shard's own
        ``.json`` for a shard's .parquet, else the manifest); ``{}`` when that record is unreadable. Used only to
        fill an older table's ``source`` (:func:`fill_source_columns`)."""
        path = Path(path)
        record = path.with_suffix(".json") if path.parent == self.shards_dir else self.manifest_path
        try:
            docs = self.read_json(record).get("documents") or []
        except ValueError:
            return {}
        return {d["doc_id"]: d.get("source", "") for d in docs if isinstance(d, dict) and "doc_id" in d}

    def chunk_rows_count(self) -> int:
        """Rows of ``chunks.parquet`` from its footer (the file is not read).

        Returns:
            The row count (= chunks).

        Raises:
            ValueError: if it is missing or unreadable.
        """
        import pyarrow.parquet as pq

        if not self.chunks_path.is_file():
            raise ValueError(f"{CHUNKS_FILE} is missing")
        try:
            return int(pq.ParquetFile(self.chunks_path).metadata.num_rows)
        except Exception as err:
            raise ValueError(f"{CHUNKS_FILE} is unreadable: {type(err).__name__}: {err}") from err

    def iter_chunk_batches(self, path: Path | None = None, columns: Sequence[str] | None = None,
                           batch_size: int = 4096, row_groups: Sequence[int] | None = None) -> Iterator:
        """Record batches of a chunk table file (default ``chunks.parquet``), in row order.

        Args:
            path: The parquet file; None: ``chunks.parquet``.
            columns: Column names to read; None: all. A file written before :data:`SOURCE_COLUMNS` gives them
                filled (:func:`fill_source_columns`).
            batch_size: Rows per batch (the last one may be shorter).
            row_groups: Read only these parquet row groups (in this order); None: all. The file's row groups
                are :func:`write_chunk_table`'s tables, one per shard (:func:`row_group_starts` gives their
                first rows).

        Returns:
            An iterator of ``pyarrow.RecordBatch``.

        Raises:
            OSError: if the file is missing.
            pyarrow.ArrowInvalid: (a ValueError) if it is not a parquet file.
        """
        import pyarrow.parquet as pq

        path = Path(path or self.chunks_path)
        pf = pq.ParquetFile(path)
        have = set(pf.schema_arrow.names)
        want = list(columns) if columns is not None else None
        if all(c in have for c in (want if want is not None else SOURCE_COLUMNS)):
            return pf.iter_batches(batch_size=batch_size, columns=want, row_groups=row_groups)
        return self._filled_batches(pf, path, want, batch_size, row_groups)

    def row_group_starts(self, path: Path | None = None) -> list[int]:
        """The first row of each parquet row group of a chunk table file (default ``chunks.parquet``).

        Returns:
            ``[0, rows of group 0, rows of groups 0-1, ...]``: one entry per row group, ascending.

        Raises:
            OSError: if the file is missing.
            pyarrow.ArrowInvalid: (a ValueError) if it is not a parquet file.
        """
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(Path(path or self.chunks_path)).metadata
        starts, at = [], 0
        for g in range(meta.num_row_groups):
            starts.append(at)
            at += meta.row_group(g).num_rows
        return starts

    def _filled_batches(self, pf, path: Path, want: list[str] | None, batch_size: int,
                        row_groups: Sequence[int] | None = None) -> Iterator:
        have = set(pf.schema_arrow.names)
        read = None if want is None else [c for c in want if c in have]
        if want is not None:  # what filling needs: heading_path (section), doc_id (source)
            read += [c for c in ("doc_id", "heading_path") if c in have and c not in read]
        sources = self._sources(path) if (want is None or "source" in want) else None
        for batch in pf.iter_batches(batch_size=batch_size, columns=read, row_groups=row_groups):
            batch = fill_source_columns(batch, sources)
            yield batch if want is None else batch.select(want)

    # ---------------------------------------------------------------- shards
    def read_shard_vectors(self, name: str) -> np.ndarray:
        """A shard's vectors, memory-mapped.

        Args:
            name: The shard's name (``NNNNN``).

        Returns:
            (rows, dim), float32, read-only memory map; row i = row i of the shard's table.

        Raises:
            OSError, ValueError: if the file is missing or not a ``.npy`` array.
        """
        return np.load(self.shards_dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)

    def read_shard_table(self, name: str):
        """A shard's chunk rows as a ``pyarrow.Table`` (:func:`chunk_schema`).

        Args:
            name: The shard's name (``NNNNN``).

        Returns:
            The table.

        Raises:
            ValueError: if it is missing or unreadable.
        """
        path = self.shards_dir / f"{name}.parquet"
        return tables.read_chunk_table(path, sources=lambda: self._sources(path))


def read_output(out: str | os.PathLike):
    """Read an output folder for searching.

    Args:
        out: The folder written by ``latechunk embed``.

    Returns:
        ``(index, table, manifest)``: the CPU ``faiss.Index``, the chunk table (``pyarrow.Table``, row i =
        vector id i) and the manifest dict.

    Raises:
        ValueError: if ``out`` does not exist or is not a folder, a file is missing (an unfinished run, one with a
            run.json: the message says to finish it with ``--resume``) or unreadable, or the index and table
            disagree on the row count.
    """
    folder = OutputFolder(Path(out))
    if not folder.path.exists():
        raise ValueError(f"{folder.path} does not exist (give an output folder of `latechunk embed`)")
    if not folder.path.is_dir():
        raise ValueError(f"{folder.path} is not a folder (give an output folder of `latechunk embed`)")
    folder.finish_commit()
    for name in ASSEMBLED_FILES:
        if not (folder.path / name).is_file():
            if folder.run_path.is_file():  # run.json is written first, the manifest last: a run that never ended
                raise ValueError(f"{folder.path}: {name} is missing: the folder holds an unfinished `latechunk "
                                 f"embed` run (killed or still running?, or its index could not be trained); finish "
                                 f"it with `latechunk embed INPUTS --out {folder.path} --resume` (options left out "
                                 "are the run's, from its run.json; add --index Flat if its index failed to train)")
            raise ValueError(f"{folder.path}: {name} is missing (not a latechunk output folder? run "
                             "`latechunk embed` first)")
    index = folder.read_index()
    table = folder.read_chunks()
    manifest = folder.read_manifest()
    if index.ntotal != table.num_rows:
        raise ValueError(f"{folder.path}: index has {index.ntotal} vectors but chunks.parquet has {table.num_rows} rows")
    return index, table, manifest
