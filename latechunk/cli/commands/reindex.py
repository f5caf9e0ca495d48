"""``latechunk reindex``: build an output folder's index again with other settings, from its shards
(:func:`latechunk.ingest.reindex.reindex`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.options import _check_hnsw_options
from latechunk.config import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_HNSW_M,
    DEFAULT_PRECISION,
    IndexConfig,
)

#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExample:\n'
    '  latechunk reindex out/chroma --index hnsw --precision int8\n'
)


def reindex(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A finished output folder of `latechunk embed`.")],
    index: Annotated[Optional[str], typer.Option("--index", show_default=False, help="The new faiss index_factory string or alias, as embed's --index (flat, hnsw, HNSW32, IVF1024,Flat, ...). Default: the folder's.")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option(show_default=False, help=f"With --index hnsw: its graph degree M ({DEFAULT_HNSW_M} when not given; an HNSW16 folder reindexed without --index keeps its M).")] = None,
    ef_construction: Annotated[Optional[int], typer.Option(show_default=False, help=f"HNSW: build beam width. Default: the folder's ({DEFAULT_EF_CONSTRUCTION} for a folder without HNSW).")] = None,
    ef_search: Annotated[Optional[int], typer.Option(show_default=False, help=f"HNSW: search beam width. Default: the folder's ({DEFAULT_EF_SEARCH} for a folder without HNSW).")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", show_default=False, help="float32, float16, int8 or ubinary, as embed's --precision. Default: the folder's.")] = None,
    truncate_dim: Annotated[Optional[int], typer.Option("--truncate-dim", show_default=False, help="Keep the first N dimensions (Matryoshka models), as embed's --truncate-dim; 0: every dimension. Default: the folder's.")] = None,
    gpu: Annotated[str, typer.Option("--index-gpu", help="Build a flat float32 index on GPU FAISS: auto (when present), on, off.")] = IndexConfig.gpu,
) -> None:
    """Build an output folder's FAISS index again with other settings, from the vectors its shards keep: no
    document read, no model loaded. See docs/how-to/compact-vectors.md."""
    from latechunk.ingest.reindex import reindex as run_reindex
    from latechunk.output import OutputFolder

    if not out.is_dir():
        _fail(f"{out} is not a folder (give an output folder of `latechunk embed`)")
    try:
        old = IndexConfig.from_dict(OutputFolder(out).read_manifest().get("index") or {})
    except (ValueError, OSError) as err:
        _fail(str(err) if str(out) in str(err) else f"{out}: {err}")
    factory = old.factory if index is None else index
    given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search}
    try:
        new = IndexConfig.from_option(
            factory, hnsw_m=DEFAULT_HNSW_M if hnsw_m is None else hnsw_m,
            ef_construction=old.ef_construction if ef_construction is None else ef_construction,
            ef_search=old.ef_search if ef_search is None else ef_search, gpu=gpu,
            precision=old.precision if precision is None else precision,
            truncate_dim=old.truncate_dim if truncate_dim is None else (truncate_dim or None))
    except ValueError as err:
        _fail(str(err))
    _check_hnsw_options(given, new, factory)
    import time

    t0 = time.perf_counter()
    try:
        manifest, before, built = run_reindex(out, new)
    except ValueError as err:
        _fail(str(err))

    def label(d: dict) -> str:  # the string faiss built where it differs (an IVF's lists cut to the vectors)
        built_as = f" (built as {d['built']})" if d.get("built") and d.get("built") != d["factory"] else ""
        return (f"{d['factory']}{built_as} {d.get('precision', DEFAULT_PRECISION)}"
                + (f" @{d['truncate_dim']} dims" if d.get("truncate_dim") else "")
                + (f" ef_construction {d['ef_construction']} ef_search {d['ef_search']}" if "ef_search" in d else ""))

    now = manifest["index"]
    if not built:
        typer.echo(f"{out} already has this index ({label(before)}), whole: nothing to do")
        return
    same = IndexConfig.from_dict(now).to_dict() == before
    typer.echo(f"reindexed {out}: {label(before)} -> {label(now)}"
               + (" (the same settings: index.faiss was missing or damaged)" if same else "")
               + f" ({now.get('ntotal', 0)} vectors, {time.perf_counter() - t0:.1f} s); search, verify, export and "
               "--append use it")
