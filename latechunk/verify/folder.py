"""``latechunk verify DIR`` (:func:`verify_output`): the folder's files, counts and manifest, then its shards
(:mod:`~latechunk.verify.shards`), IVF lists (:mod:`~latechunk.verify.ivf`) and sources
(:mod:`~latechunk.verify.sources`).

Part of :mod:`latechunk.verify`; tests: ``tests/verify/test_verify.py`` (one test per fault).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from latechunk.output import INDEX_FILE, MANIFEST_FILE, OutputFolder
from latechunk.verify.ivf import _check_ivf
from latechunk.verify.problems import _Problems
from latechunk.verify.shards import _check_shards, _index_config
from latechunk.verify.sources import _check_sources


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
