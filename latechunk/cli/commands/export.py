"""``latechunk export``: an output folder's vectors and chunk records into LanceDB, Qdrant or Chroma
(:func:`latechunk.export.export_folder`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail

#: export_folder's defaults and Chroma's HNSW settings (latechunk.export.common, latechunk.export.chroma), written
#: here so that the command line's start-up does not import the export package (tests/cli/ checks they agree)
DEFAULT_COLLECTION = "latechunk"
DEFAULT_BATCH_SIZE = 1024
DEFAULT_HNSW = {"max_neighbors": 32, "ef_construction": 256, "ef_search_min": 128, "ef_search_max": 1024}


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExamples:\n'
    '  latechunk export out/chroma --to qdrant:out/qdrant --collection chroma_eval\n'
    '  latechunk embed CORPUS --out new --reuse old && latechunk export new --to qdrant:store --sync\n'
)


def export(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    to: Annotated[str, typer.Option("--to", "-t", help="lancedb:PATH, qdrant:PATH or chroma:PATH (a local folder; "
                                    "the store's embedded/local client).")],
    collection: Annotated[str, typer.Option("--collection", "-c", help="Table (LanceDB) or collection name, the same rule for every store (Chroma's, the strictest): 3-512 characters of letters, digits, '.', '_', '-', starting and ending with a letter or digit.")] = DEFAULT_COLLECTION,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Rows read and written per batch.")] = DEFAULT_BATCH_SIZE,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a collection of that name that already holds rows.")] = False,
    sync: Annotated[bool, typer.Option("--sync", help="Qdrant, Chroma: bring the collection up to date with DIR in place, by chunk id (chunks added, rewritten, renumbered or deleted; vectors sent only for new chunks), e.g. for a folder rebuilt with `embed --reuse`. Run it again to finish a killed sync or export.")] = False,
    hnsw_ef: Annotated[Optional[int], typer.Option("--hnsw-ef", min=1, help=f"Chroma only: HNSW ef_search, candidates per query (default: the row count, clamped to {DEFAULT_HNSW['ef_search_min']}-{DEFAULT_HNSW['ef_search_max']}).")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option("--hnsw-m", min=1, help=f"Chroma only: HNSW max_neighbors, links per vector (default: {DEFAULT_HNSW['max_neighbors']}; Chroma's own: 16).")] = None,
    hnsw_ef_construction: Annotated[Optional[int], typer.Option("--hnsw-ef-construction", min=1, help=f"Chroma only: HNSW ef_construction (default: {DEFAULT_HNSW['ef_construction']}; Chroma's own: 100).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Export an output folder's vectors and chunk records to LanceDB, Qdrant or Chroma, one row per chunk id;
    --sync updates a collection in place. See docs/how-to/export.md."""
    from latechunk.export import export_folder

    given = {"ef_search": hnsw_ef, "max_neighbors": hnsw_m, "ef_construction": hnsw_ef_construction}
    hnsw = {k: v for k, v in given.items() if v is not None} or None
    if hnsw and not to.strip().lower().startswith("chroma:"):
        _fail(f"--hnsw-ef, --hnsw-m and --hnsw-ef-construction set Chroma's HNSW index, not {to!r}'s (LanceDB and "
              "Qdrant's local mode search exactly)")
    try:
        res = export_folder(out, to, collection=collection, batch_size=batch_size, overwrite=overwrite,
                            progress=not quiet, hnsw=hnsw, sync=sync)
    except (ValueError, ImportError) as err:
        _fail(str(err))
    if res.sync is not None:  # synced into a collection that was there
        c = res.sync
        typer.echo(f"synced {res.store}:{res.path} collection {res.collection!r} with {out}: {c['added']:,} added, "
                   f"{c['rewritten']:,} rewritten, {c['renumbered']:,} renumbered, {c['deleted']:,} deleted, "
                   f"{c['unchanged']:,} unchanged "
                   f"({res.rows:,} vectors now; manifest sha256 {res.manifest_sha256[:12]}"
                   + ("" if not res.hnsw else ", HNSW " + " ".join(f"{k}={res.hnsw.get(k)}" for k in
                                                                  ("max_neighbors", "ef_construction", "ef_search")))
                   + f", {res.seconds:.1f} s)")
        return
    hnsw_note = "" if not res.hnsw else ", HNSW " + " ".join(
        f"{k}={res.hnsw[k]}" for k in ("max_neighbors", "ef_construction", "ef_search"))
    typer.echo(f"exported {res.rows} vectors ({res.dim}-dim, {res.distance}) from {out} to {res.store}:{res.path} "
               f"{'table' if res.store == 'lancedb' else 'collection'} {res.collection!r} "
               f"(manifest sha256 {res.manifest_sha256[:12]}{hnsw_note}, {res.seconds:.1f} s)")
