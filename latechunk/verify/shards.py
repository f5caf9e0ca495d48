"""``latechunk verify``'s shard checks: each shard record named in the manifest exists with its sha256, its
``.parquet`` and ``.npy`` have the recorded size and sha256, the shards' documents and skipped lists are the
manifest's, chunks.parquet is the concatenation of the shard tables (read with :class:`_RowReader`), each row
belongs to its document (:func:`_check_rows`), and the vectors are finite, unit-norm where normalised, and held by
the index (:func:`_check_vectors`).

Part of :mod:`latechunk.verify`; tests: ``tests/verify/test_verify.py``, ``tests/verify/test_verify_rows.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from latechunk.ingest.files import sha256_file
from latechunk.ingest.shards import check_shard_files
from latechunk.output import CHUNKS_FILE, SHARD_FILE, OutputFolder, section_text
from latechunk.verify.problems import _Problems


class _RowReader:
    """Reader of a parquet file: ``take(n)`` returns the next ``n`` rows as a table; ``take_at(start, n)`` the rows
    ``[start, start + n)`` (forward: skipping rows; backward: reading again from the row group holding ``start``,
    one per shard, so a folder with appended runs, whose documents are visited out of row order, is not read again
    from its first row at every jump back)."""

    def __init__(self, folder: OutputFolder, columns: Sequence[str] | None = None) -> None:
        self._folder, self._columns = folder, columns
        self._batches = folder.iter_chunk_batches(columns=columns)
        self._starts: list[int] | None = None  # first row of each row group, read at the first jump back
        self._buf = []
        self._n = 0
        self.pos = 0  # rows taken so far
        self.restarts = 0  # jumps back (for tests)

    def take_at(self, start: int, n: int):
        if start < self.pos:
            import bisect

            if self._starts is None:
                self._starts = self._folder.row_group_starts()
            g = max(0, bisect.bisect_right(self._starts, start) - 1)
            self._batches = self._folder.iter_chunk_batches(
                columns=self._columns, row_groups=range(g, len(self._starts)))
            self._buf, self._n, self.pos = [], 0, self._starts[g] if self._starts else 0
            self.restarts += 1
        if start > self.pos:
            self.take(start - self.pos)
        return self.take(n)

    def take(self, n: int):
        import pyarrow as pa

        while self._n < n:
            try:
                b = next(self._batches)
            except StopIteration:
                break
            self._buf.append(b)
            self._n += b.num_rows
        table = pa.Table.from_batches(self._buf) if self._buf else None
        if table is None:
            return None
        head, rest = table.slice(0, n), table.slice(n)
        self._buf = rest.to_batches()
        self._n = rest.num_rows
        self.pos += head.num_rows
        return head


def _check_shards(folder: OutputFolder, manifest: dict, documents: list, skipped: list, index, n_rows,
                  P: _Problems) -> None:
    shards = manifest.get("shards")
    if not shards:
        P.add("shard", "the manifest lists no shards (not written by a sharded `latechunk embed`?)")
        return
    shard_dir = folder.shards_dir
    listed = {f"{s['name']}.{ext}" for s in shards for ext in ("json", "parquet", "npy")}
    if shard_dir.is_dir():
        extra = [f.name for f in sorted(shard_dir.iterdir()) if f.name not in listed and not f.name.endswith(".tmp")]
        shardlike = [x for x in extra if SHARD_FILE.fullmatch(x)]
        if shardlike:  # first: the per-kind limit of lines cuts the list, never this
            # killed before or during assembly the folder still serves its last finished state (assembly commits
            # its files together, OutputFolder.begin_commit): the next append removes them and carries on
            P.add("shard", f"{len(shardlike)} shard file(s) beyond the manifest ({shardlike[0]}, ...): an "
                  "interrupted `--append` (or Index.add) left them; the folder still serves its last finished "
                  "state. The next append, or the same one again, removes them and carries on")
        for name in extra:
            P.add("shard", f"shards/{name} is not part of the manifest"
                  + ("" if SHARD_FILE.fullmatch(name) else " (not a shard file: not written by latechunk)"))
    normalize = bool(manifest.get("normalize", True))
    reader = None
    if n_rows is not None:
        reader = _RowReader(folder)
    docs_seen: list[dict] = []
    skips_seen: list[dict] = []
    offset = 0
    prev_end = 0
    table_ok = True
    for s in shards:
        name = s["name"]
        jpath = shard_dir / f"{name}.json"
        if not jpath.is_file():
            P.add("shard", f"shards/{name}.json is missing")
            table_ok = False
            continue
        if sha256_file(jpath) != s.get("sha256"):
            P.add("shard", f"shards/{name}.json: sha256 differs from the manifest's (edited after the run)")
        try:
            rec = folder.read_json(jpath)
        except ValueError as err:
            P.add("shard", f"shards/{err}")
            table_ok = False
            continue
        if rec.get("inputs", [None])[0] != prev_end:
            P.add("shard", f"shards/{name}.json starts at input item {rec.get('inputs')} but the previous shard ended at {prev_end}")
        prev_end = rec.get("inputs", [0, 0])[1]
        docs_seen.extend(rec.get("documents", []))
        skips_seen.extend(rec.get("skipped", []))
        bad = check_shard_files(shard_dir, rec, verify_hashes=True)
        for b in bad:
            P.add("shard", b)
        rows = int(rec.get("rows", 0))
        if sum(int(d["chunks"]) for d in rec.get("documents", [])) != rows:
            P.add("shard", f"shards/{name}.json: its documents' chunk counts do not add up to its {rows} rows")
        # rows: chunks.parquet slice == shard table, and the structure of the shard table
        if not bad:
            try:
                shard_table = folder.read_shard_table(name)
            except ValueError as err:
                P.add("shard", f"shards/{err}")
                shard_table = None
            if shard_table is not None:
                if shard_table.num_rows != rows:
                    P.add("shard", f"shards/{name}.parquet has {shard_table.num_rows} rows, its record says {rows}")
                _check_rows(shard_table, rec.get("documents", []), f"shards/{name}.parquet", P)
                if reader is not None and table_ok:
                    got = reader.take(shard_table.num_rows)
                    got_rows = 0 if got is None else got.num_rows
                    if got_rows != shard_table.num_rows or (got is not None and not got.equals(shard_table)):
                        P.add("rows", f"chunks.parquet rows [{offset}, {offset + shard_table.num_rows}) differ from shards/{name}.parquet")
            # vectors
            try:
                v = folder.read_shard_vectors(name)
            except (OSError, ValueError) as err:
                P.add("shard", f"shards/{name}.npy is unreadable: {err}")
                v = None
            if v is not None:
                _check_vectors(v, rows, manifest.get("dim"), normalize, index, offset, name, P,
                               config=_index_config(manifest))
        else:
            table_ok = False
        offset += rows
    if table_ok and n_rows is not None and offset != n_rows:
        P.add("rows", f"the shards hold {offset} rows but {CHUNKS_FILE} has {n_rows}")
    if docs_seen != documents:
        i = next((i for i, (a, b) in enumerate(zip(docs_seen, documents)) if a != b), min(len(docs_seen), len(documents)))
        P.add("manifest", f"the manifest's documents differ from the shard records from documents[{i}] on "
                          f"({len(documents)} listed, {len(docs_seen)} in the shards)")
    from latechunk.ingest.assemble import compact_skipped

    counts = manifest.get("counts", {})
    already_seen = repeated_seen = 0
    if compact_skipped(skipped)[0] == skipped:  # a manifest of before 2026-12-05 listed every skip
        skips_seen, already_seen, repeated_seen = compact_skipped(skips_seen)
    if skips_seen != skipped:
        P.add("manifest", f"the manifest's skipped list differs from the shard records ({len(skipped)} listed, {len(skips_seen)} in the shards)")
    for key, seen_n in (("already_indexed", already_seen), ("skips_repeated", repeated_seen)):
        if seen_n != int(counts.get(key, 0) or 0):
            P.add("count", f"the shard records give {seen_n} for counts.{key}, the manifest {counts.get(key, 0)}")
    if prev_end != manifest.get("counts", {}).get("documents_in"):
        P.add("count", f"the shards consumed {prev_end} input items but counts.documents_in is {manifest.get('counts', {}).get('documents_in')}")


def _check_rows(table, docs: list[dict], where: str, P: _Problems) -> None:
    cols = table.select(["doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "text",
                         "heading_path", "section", "source"]).to_pydict()
    expect = [(d["doc_id"], i) for d in docs for i in range(int(d["chunks"]))]
    sources = {d["doc_id"]: d.get("source", "") for d in docs}
    for r, (doc_id, ci, cs, ce, ts, te, text, hp, section, source) in enumerate(zip(*cols.values())):
        if section != section_text(hp):
            P.add("rows", f"{where} row {r} ({doc_id!r}, chunk {ci}): section {section!r} is not its heading path "
                          f"{hp!r} joined")
        if source is not None and doc_id in sources and source != sources[doc_id]:
            P.add("rows", f"{where} row {r} ({doc_id!r}, chunk {ci}): source {source!r} differs from its document "
                          f"record's {sources[doc_id]!r}")
        if r < len(expect) and (doc_id, ci) != expect[r]:
            P.add("rows", f"{where} row {r} is ({doc_id!r}, chunk {ci}) but the record puts ({expect[r][0]!r}, chunk {expect[r][1]}) there")
        if not (0 <= cs < ce) or not (0 <= ts < te):
            P.add("rows", f"{where} row {r} ({doc_id!r}, chunk {ci}) has an empty or negative span: chars [{cs}, {ce}), tokens [{ts}, {te})")
        elif len(text) != ce - cs:
            P.add("rows", f"{where} row {r} ({doc_id!r}, chunk {ci}): text has {len(text)} chars but the char span [{cs}, {ce}) has {ce - cs}")
        elif not text.strip():
            P.add("rows", f"{where} row {r} ({doc_id!r}, chunk {ci}) is whitespace-only")


def _index_config(manifest: dict):
    """The manifest's index settings (``--precision``, ``--truncate-dim``); plain float32 when unreadable."""
    from latechunk.config import IndexConfig

    try:
        return IndexConfig.from_dict(manifest.get("index", {}))
    except (ValueError, TypeError):
        return IndexConfig()


def _check_vectors(v: np.ndarray, rows: int, dim, normalize: bool, index, offset: int, name: str,
                   P: _Problems, config=None) -> None:
    if v.ndim != 2 or v.shape[0] != rows or (dim is not None and v.shape[1] != dim) or v.dtype != np.float32:
        P.add("vectors", f"shards/{name}.npy has shape {v.shape} {v.dtype}, expected ({rows}, {dim}) float32")
        return
    if rows == 0:
        return
    x = np.asarray(v)
    if not np.isfinite(x).all():
        P.add("vectors", f"shards/{name}.npy holds NaN or inf")
        return
    if normalize:
        norms = np.linalg.norm(x, axis=1)
        bad = np.flatnonzero(np.abs(norms - 1.0) > 1e-3)
        if bad.size:
            P.add("vectors", f"shards/{name}.npy row {int(bad[0])} has norm {norms[bad[0]]:.6f}, expected 1 (normalised run)")
    if index is not None and offset + rows <= index.ntotal:
        from latechunk.config import IndexConfig
        from latechunk.index import check_rows

        try:  # the index holds the shard vectors as the run's --precision/--truncate-dim store them
            diff = check_rows(index, config or IndexConfig(), x, offset)
        except ValueError as err:
            diff = str(err)
        if diff:
            P.add("vectors", f"index.faiss vectors [{offset}, {offset + rows}) differ from shards/{name}.npy: {diff}")
