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

Tests: ``tests/test_verify.py`` (one test per fault).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from latechunk.ingest.files import sha256_file, sha256_text
from latechunk.ingest.shards import check_shard_files
from latechunk.output import (
    CHUNKS_FILE,
    INDEX_FILE,
    MANIFEST_FILE,
    SHARD_FILE,
    OutputFolder,
    section_text,
    source_metadata,
)

__all__ = ["verify_output"]

MAX_PER_KIND = 10


class _Problems:
    """Problem lines, at most ``MAX_PER_KIND`` per kind (then one line saying how many more)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counts: Counter = Counter()

    def add(self, kind: str, msg: str) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= MAX_PER_KIND:
            self.lines.append(msg)

    def finish(self) -> list[str]:
        extra = [f"... and {n - MAX_PER_KIND} more {kind} problem(s)" for kind, n in self.counts.items() if n > MAX_PER_KIND]
        return self.lines + extra


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


def _source_roots(out: Path, manifest: dict, inputs: Sequence[os.PathLike] | None) -> list[Path]:
    if inputs:
        return [Path(p) for p in inputs]
    roots = []
    given = manifest.get("inputs", [])
    for i, rel in enumerate(manifest.get("inputs_from_out", [])):
        cand = out / rel
        if cand.exists():
            roots.append(cand)
        elif i < len(given):
            roots.append(Path(given[i]))
        else:
            roots.append(cand)
    if not roots:
        roots = [Path(p) for p in given]
    return roots


def _root_key(root: Path) -> str:
    return os.path.normcase(os.path.abspath(os.path.realpath(root)))


def _places(folder: Path, manifest: dict, inputs: Sequence[os.PathLike] | None
            ) -> tuple[list[Path], list[str], str | None]:
    """Where each input the manifest lists is now, the identity of each (its recorded place), or a problem.

    Without ``inputs``: the recorded places (:func:`_source_roots`). With ``inputs`` (the sources moved): one path
    per listed input in order, or one per *distinct* listed input (in order of first appearance; an input appended
    again is listed again), in either case leaving out the inputs inside the output folder (``appended/*.jsonl`` of
    ``Index.add``, which move with it), or one path per listed input, those included.

    Returns:
        ``(places, keys, problem)``: one place and one identity key per listed input; ``problem`` (then
        ``places`` is the given paths) when the number of ``inputs`` fits none of these.
    """
    recorded = [folder / rel for rel in manifest.get("inputs_from_out") or []] or \
        [Path(p) for p in manifest.get("inputs", [])]
    keys = [_root_key(r) for r in recorded]
    now = _source_roots(folder, manifest, None)
    if not inputs:
        return now, keys, None
    given = [Path(p) for p in inputs]
    if len(keys) != len(now):  # an older manifest without inputs_from_out: the given paths as they are
        return given, [_root_key(p) for p in given], None
    inside = _root_key(folder) + os.sep
    outer = [i for i, k in enumerate(keys) if not k.startswith(inside)]
    distinct = list(dict.fromkeys(keys[i] for i in outer))
    places = list(now)
    if len(given) in (len(keys), len(outer)):  # one place per listing: the places given say which are one input
        for i, p in zip(range(len(keys)) if len(given) == len(keys) else outer, given):
            places[i] = p
        return places, [_root_key(p) for p in places], None
    if len(given) == len(distinct):
        to = dict(zip(distinct, given))
        for i in outer:
            places[i] = to[keys[i]]
        return places, keys, None
    typed = manifest.get("inputs") or []
    names = ", ".join(str(typed[i]) if i < len(typed) else str(recorded[i]) for i in outer)
    return given, [_root_key(p) for p in given], (
        f"--inputs gave {len(given)} path(s) but the manifest lists {len(outer)} input(s) outside the folder "
        f"({names}, as given when embedded): give one per listed input, in order (the same path again for an "
        f"input appended again)" + (f", or one per distinct input ({len(distinct)})" if len(distinct) != len(outer)
                                    else "")
        + (f", or all {len(keys)} with the folder's own appended files" if len(keys) != len(outer) else ""))


def _runs_of_roots(manifest: dict, places: list[Path], keys: list[str] | None = None, home: Path | None = None
                   ) -> tuple[list[Path], int | None]:
    """The roots to read once each, and the item count they should hold now.

    An ``--append`` of an input the folder already lists (``embed DIR --append`` after DIR gained files) lists that
    root twice: the first run consumed what DIR held then, the append what it holds now (the documents already in
    the index skipped as such). Reading DIR twice would count every item twice, so each root is read once (first
    place kept) and a run whose every root a later run lists again is *superseded*: its items are no longer
    counted.

    Args:
        manifest: The folder's manifest (``inputs``, ``appends`` with their ``inputs`` and ``items``,
            ``counts.documents_in``).
        places: Where each listed input is now (:func:`_places`).
        keys: The identity of each listed input (default: its place's).
        home: The output folder: its own ``appended/*.jsonl`` never count as inside another root (the reader
            of a folder holding it does not walk an output folder).

    Returns:
        ``(roots, expected)``; ``expected`` is ``counts.documents_in`` when no root repeats, less the items of the
        superseded runs when some do, and ``None`` (no count to compare; every item is still checked) when a
        repeated root belongs to a run that is not wholly superseded (a run of ``a`` and ``b`` followed by an
        append of ``a`` alone: how many of the first run's items came from ``a`` is not recorded), when one
        root lies inside another (a file of a folder embedded before, appended on its own: the folder's items
        now include it), or when the manifest lacks the records.
    """
    total = manifest.get("counts", {}).get("documents_in")
    appends = manifest.get("appends") or []
    keys = [_root_key(p) for p in places] if keys is None else keys
    first: dict[str, Path] = {}
    for k, p in zip(keys, places):
        first.setdefault(k, p)  # each input once, at its first place
    roots = list(first.values())
    real = [_root_key(r) for r in roots]
    inside = _root_key(home) + os.sep if home is not None else None
    real = [k for k in real if inside is None or not k.startswith(inside)]
    if any(b.startswith(a + os.sep) for a in real for b in real):
        return roots, None
    if len(first) == len(keys):
        return roots, total
    sizes = [len(a.get("inputs") or []) for a in appends]
    if sum(sizes) > len(keys) or total is None:
        return roots, None  # an older manifest: no count
    runs = [len(keys) - sum(sizes)] + sizes
    try:
        consumed = [(appends[0]["items"][0] if appends else total)] + [a["items"][1] - a["items"][0] for a in appends]
    except (KeyError, IndexError, TypeError):  # an append entry without its item range
        return roots, None
    bounds = [sum(runs[:r]) for r in range(len(runs) + 1)]
    expected = total
    for r in range(len(runs)):
        mine = keys[bounds[r]:bounds[r + 1]]
        later = set(keys[bounds[r + 1]:])
        if mine and all(k in later for k in mine):
            expected -= consumed[r]
        elif any(k in later for k in mine):
            return roots, None  # part of this run is read again later, part not: its share is not recorded
    return roots, expected


def verify_output(out: str | os.PathLike, inputs: Sequence[os.PathLike] | None = None,
                  check_sources: bool = True) -> tuple[list[str], str]:
    """Check an output folder of ``latechunk embed``.

    Args:
        out: The folder.
        inputs: Where the source inputs are now; default: the manifest's ``inputs_from_out`` (relative to
            ``out``), else its ``inputs`` (relative to the working directory).
        check_sources: Re-read the sources and compare hashes and chunk texts.

    Returns:
        ``(problems, summary)``: one line per problem (empty when all agrees) and a one-line summary
        (missing, unreadable or inconsistent files are reported as problems).
    """
    out = Path(out)
    folder = OutputFolder(out)
    P = _Problems()
    try:
        folder.finish_commit()  # an assembly killed between its renames: its new state was decided, finish it
    except ValueError as err:
        P.add("file", str(err))
        return P.finish(), ""
    if not folder.manifest_path.is_file():
        P.add("file", f"{MANIFEST_FILE} is missing (an unfinished run? `latechunk embed ... --resume` finishes it; "
                      "if its index could not be trained, `--resume --index Flat` builds another from the shards)")
        return P.finish(), ""
    try:
        manifest = folder.read_json(folder.manifest_path)
    except ValueError as err:
        P.add("file", str(err))
        return P.finish(), ""
    for f in folder.temp_files():
        P.add("file", f"stray temp file {f.relative_to(out)} (a write that never finished; the next write, or "
                      "`latechunk reindex DIR`, removes it)")

    # ---- index and table
    index = None
    if not folder.index_path.is_file():
        P.add("file", f"{INDEX_FILE} is missing")
    else:
        try:
            index = folder.read_index()
        except ValueError as err:
            P.add("file", f"{INDEX_FILE} is unreadable: {str(err.__cause__ or err).splitlines()[0]}")
    n_rows = None
    try:
        n_rows = folder.chunk_rows_count()
    except ValueError as err:
        P.add("file", str(err))

    documents = manifest.get("documents", [])
    skipped = manifest.get("skipped", [])
    counts = manifest.get("counts", {})
    ntotal = int(index.ntotal) if index is not None else None
    listed_chunks = sum(int(d.get("chunks", 0)) for d in documents)
    if ntotal is not None and n_rows is not None and ntotal != n_rows:
        P.add("count", f"index.faiss has {ntotal} vectors but chunks.parquet has {n_rows} rows")
    for name, value in (("manifest index.ntotal", manifest.get("index", {}).get("ntotal")),
                        ("manifest counts.chunks", counts.get("chunks")),
                        ("the manifest documents' chunk counts (sum)", listed_chunks)):
        if ntotal is not None and value != ntotal:
            P.add("count", f"index.faiss has {ntotal} vectors but {name} is {value}")
        elif ntotal is None and n_rows is not None and value != n_rows:
            P.add("count", f"chunks.parquet has {n_rows} rows but {name} is {value}")
    if index is not None and manifest.get("dim") is not None:
        try:  # --truncate-dim: the index holds the first N dimensions of the manifest's dim
            want = _index_config(manifest).index_dim(int(manifest["dim"]))
        except ValueError as err:
            P.add("manifest", f"manifest index record: {err}")
            want = manifest["dim"]
        if index.d != want:
            P.add("count", f"index.faiss has dimension {index.d} but the manifest says dim {manifest['dim']}"
                           + (f" (index dimension {want})" if want != manifest["dim"] else ""))
    if counts.get("documents_embedded") != len(documents):
        P.add("count", f"counts.documents_embedded is {counts.get('documents_embedded')} but {len(documents)} documents are listed")
    if counts.get("documents_skipped") != len(skipped):
        P.add("count", f"counts.documents_skipped is {counts.get('documents_skipped')} but {len(skipped)} skips are listed")
    # appended items already in the index, and repeated skips of one id: counted, not listed
    already = int(counts.get("already_indexed", 0) or 0) + int(counts.get("skips_repeated", 0) or 0)
    if counts.get("documents_in") != len(documents) + len(skipped) + already:
        P.add("count", f"counts.documents_in is {counts.get('documents_in')} but {len(documents)} embedded + "
                       f"{len(skipped)} skipped + {already} counted (already in the index, repeated skips) are "
                       "listed")

    # ---- manifest documents listed once
    first: dict[str, int] = {}
    for i, d in enumerate(documents):
        doc_id = d.get("doc_id")
        if doc_id in first:
            P.add("manifest", f"manifest lists document {doc_id!r} twice (documents[{first[doc_id]}] and documents[{i}], "
                              f"sources {documents[first[doc_id]].get('source')!r} and {d.get('source')!r})")
        else:
            first[doc_id] = i

    # ---- shards, rows, vectors
    _check_shards(folder, manifest, documents, skipped, index, n_rows, P)

    # ---- IVF: the on-disk lists and a self-search
    ivf_note = _check_ivf(folder, manifest, index, P)

    # ---- sources
    if check_sources:
        _check_sources(folder, manifest, documents, skipped, inputs, n_rows, P)

    summary = (f"{ntotal} vectors, {n_rows} rows, {len(documents)} documents embedded, {len(skipped)} skipped, "
               f"{len(manifest.get('shards', []))} shards" + (", sources hashed" if check_sources else "")
               + (f", {ivf_note}" if ivf_note else ""))
    return P.finish(), summary


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


#: rows per shard (at most :data:`SELF_SEARCH_ROWS` in all) that search for themselves in an IVF index
SELF_SEARCH_PER_SHARD = 16
SELF_SEARCH_ROWS = 256
SELF_SEARCH_K = 10


def _check_ivf(folder: OutputFolder, manifest: dict, index, P: _Problems) -> str:
    """``index.ivfdata`` against the manifest, and the self-search of an IVF index; returns a summary note."""
    from latechunk.output import IVFDATA_FILE

    rec = manifest.get("index", {}).get("ivfdata")
    if rec:
        path = folder.path / rec.get("file", IVFDATA_FILE)
        if not path.is_file():
            P.add("file", f"{path.name} is missing (the inverted lists of the IVF index in {INDEX_FILE})")
        elif path.stat().st_size != rec.get("bytes"):
            P.add("file", f"{path.name} has {path.stat().st_size} bytes, the manifest says {rec.get('bytes')} "
                          "(truncated or replaced)")
        elif sha256_file(path) != rec.get("sha256"):
            P.add("file", f"{path.name}: sha256 differs from the manifest's (corrupted or replaced)")
    if index is None:
        return ""
    from latechunk.index import has_exact_codes, ivf_of, query_transform, self_search

    ivf = ivf_of(index)
    if ivf is None or index.ntotal == 0:
        return ""
    config = _index_config(manifest)
    vecs, ids, offset = [], [], 0
    for s in manifest.get("shards", []):
        rows = int(s.get("rows", 0))
        take = min(rows, SELF_SEARCH_PER_SHARD, SELF_SEARCH_ROWS - sum(len(i) for i in ids))
        if take > 0:
            try:
                v = folder.read_shard_vectors(s["name"])
            except (OSError, ValueError, KeyError):
                v = None
            if v is not None and v.ndim == 2 and len(v) == rows:
                r = np.sort(np.random.default_rng(offset).choice(rows, size=take, replace=False))
                vecs.append(np.asarray(v[r], np.float32))
                ids.append(offset + r)
        offset += rows
    if not ids or offset != index.ntotal:
        return ""
    try:
        q = query_transform(np.concatenate(vecs), config)
        rate, missed = self_search(index, q, np.concatenate(ids), k=SELF_SEARCH_K)
    except ValueError as err:
        P.add("vectors", f"IVF self-search failed: {err}")
        return ""
    n = sum(len(i) for i in ids)
    note = f"IVF self-recall@{SELF_SEARCH_K} {rate:.3f} over {n} sampled rows at nprobe {ivf.nprobe}"
    if has_exact_codes(index):
        for row in missed:
            P.add("vectors", f"row {row} is not among the {SELF_SEARCH_K} nearest of its own vector at nprobe "
                             f"{ivf.nprobe} (its IVF list and code were checked; the index is {config.faiss_factory})")
        return note
    return note + " (lossy codes: reported, not checked)"


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


def _check_sources(folder: OutputFolder, manifest: dict, documents: list, skipped: list, inputs, n_rows,
                   P: _Problems) -> None:
    from latechunk.io import is_not_read
    from latechunk.pipeline import is_pipeline_skip
    from latechunk.types import Skipped

    places, keys, problem = _places(folder.path, manifest, inputs)
    if problem:
        P.add("source", problem)
        return
    roots, expected = _runs_of_roots(manifest, places, keys, folder.path)
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        P.add("source", f"source input(s) not found: {', '.join(missing)} (give their current place with --inputs)")
        return
    by_id = {}
    for i, d in enumerate(documents):
        by_id.setdefault(d["doc_id"], i)
    skipped_ids = {s["doc_id"] for s in skipped}
    skip_reasons: dict[str, list[str]] = {}
    for s_ in skipped:
        skip_reasons.setdefault(s_["doc_id"], []).append(str(s_.get("reason", "")))
    # an item skipped at embedding under an id a later item was embedded with (an empty record, then one with
    # text): skipped then, skipped now, nothing changed
    skipped_as = {(s["doc_id"], s.get("source", ""), s.get("reason", "")) for s in skipped}
    reader = _RowReader(folder, ["doc_id", "chunk_index", "char_start", "char_end", "text", "heading_path", "title",
                                 "title_from", "header", "url", "metadata"]) if n_rows is not None else None
    # each document's first row in chunks.parquet (rows are in manifest order); sources read once per root come
    # in the root's order, which an append of the same root interleaves with the first run's documents
    first_row = np.concatenate([[0], np.cumsum([int(d["chunks"]) for d in documents])]).astype(np.int64)
    seen: set[str] = set()
    n_items = 0
    now_skipped: dict[str, str] = {}  # embedded ids whose source reads as skipped, as it was recorded once
    from latechunk.config import RecordFields

    fields = RecordFields.from_dict((manifest.get("settings") or {}).get("record_fields") or {})
    for item in _iter_sources(roots, P, fields):
        if isinstance(item, Skipped) and item.doc_id not in skipped_ids and is_not_read(item.reason):
            continue  # never opened (an output folder or .docx added since): nothing embedded depends on it
        n_items += 1
        if isinstance(item, Skipped):
            if (item.doc_id in by_id and item.doc_id not in seen and not item.reason.startswith("duplicate doc_id")
                    and (item.doc_id, item.source, item.reason) not in skipped_as):
                P.add("source", f"{item.doc_id!r} was embedded but its source is now skipped: {item.reason}")
                seen.add(item.doc_id)
            elif item.doc_id in by_id and item.doc_id not in seen and not item.reason.startswith("duplicate doc_id"):
                # skipped so once (an empty record before one with text under its id; or a later --append that
                # found the embedded document's source emptied): a problem only if no document follows under the id
                now_skipped.setdefault(item.doc_id, item.reason)
            elif item.doc_id not in skipped_ids and item.doc_id not in by_id:
                P.add("source", f"source item {item.doc_id!r} ({item.source}) is not in the manifest")
            continue
        i = by_id.get(item.doc_id)
        if i is None:
            if item.doc_id not in skipped_ids:
                P.add("source", f"source document {item.doc_id!r} ({item.metadata.get('source', '')}) is not in the manifest "
                                "(added after embedding?)")
            elif read := [r for r in skip_reasons.get(item.doc_id, [])
                          if not r.startswith("duplicate doc_id") and not is_pipeline_skip(r)]:
                # the reader skipped it then (empty, binary, unreadable, a bad record) and it reads as a document
                # now: a change after embedding (a document the pipeline skipped reads as a document now as then)
                P.add("source", f"{item.doc_id!r} was skipped at embedding ({read[0]}) but its source now reads as "
                                "a document: its text is in no vector (an index is append-only: embed into a new "
                                "folder to include it)")
            continue
        seen.add(item.doc_id)
        rec = documents[i]
        same = sha256_text(item.text) == rec.get("sha256")
        if not same:
            P.add("source", f"source of {item.doc_id!r} ({rec.get('source', '')}) changed after embedding: "
                            f"sha256 {sha256_text(item.text)[:12]}… != recorded {str(rec.get('sha256'))[:12]}…")
        if reader is None:
            continue
        rows = reader.take_at(int(first_row[i]), int(rec["chunks"]))
        if same and rows is not None:
            for cs, ce, text, ci in zip(rows["char_start"].to_pylist(), rows["char_end"].to_pylist(),
                                        rows["text"].to_pylist(), rows["chunk_index"].to_pylist()):
                if item.text[cs:ce] != text:
                    P.add("rows", f"chunk {ci} of {item.doc_id!r} is not the exact slice text[{cs}:{ce}] of its source")
                    break
            _check_citations(item, rows, P)
    for d in documents:
        if d["doc_id"] in seen:
            continue
        if d["doc_id"] in now_skipped:
            P.add("source", f"{d['doc_id']!r} was embedded but its source is now skipped: {now_skipped[d['doc_id']]}")
        else:
            P.add("source", f"source of {d['doc_id']!r} ({d.get('source', '')}) is gone")
    if expected is not None and n_items != expected:
        P.add("source", f"the inputs now hold {n_items} items but the manifest accounts for {expected}")


def _check_citations(doc, rows, P: _Problems) -> None:
    """The rows' title, title_from, header, url and metadata against the source document read again (rows of a
    folder written before these columns hold None there and are not checked)."""
    from latechunk.titles import contextual_header

    want = source_metadata(doc)
    for ci, hp, title, origin, header, url, meta in zip(*(rows[c].to_pylist() for c in (
            "chunk_index", "heading_path", "title", "title_from", "header", "url", "metadata"))):
        if origin is None:
            continue
        got = {"title": title, "title_from": origin, "url": url, "header": header, "metadata": meta}
        exp = {**{k: want[k] for k in ("title", "title_from", "url", "metadata")},
               "header": contextual_header(want["title"], hp or [])}
        bad = [f"{k} {got[k]!r} (source gives {exp[k]!r})" for k in got if got[k] != exp[k]]
        if bad:
            P.add("rows", f"chunk {ci} of {doc.doc_id!r}: " + ", ".join(bad))
            return


def _iter_sources(roots, P: _Problems, fields=None) -> Iterator:
    from latechunk.io import iter_inputs

    try:
        yield from iter_inputs(roots, fields)
    except ValueError as err:
        P.add("source", f"cannot read the sources: {err}")
