"""``latechunk search``: query an output folder (:meth:`latechunk.Index.search <latechunk.api_index.Index.search>`'s
rows) and print the hits."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.options import DeviceOpt, TrustRemoteCodeOpt
from latechunk.console import format_hits, plural, visible

#: search's -k: Index.search's default k, written here so that the start-up does not import the API (tests/cli/
#: checks they agree)
_DEFAULT_K = 5
#: a section context longer than this (characters) that is a whole document without headings gets a note
_LONG_SECTION_CHARS = 20_000


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExamples:\n'
    '  latechunk search out/docs "how do I set the cache folder" -k 3\n'
    '  latechunk search out/docs "cache folder" --expand section --json | jq -r \'.[0].text\'\n'
    '  latechunk search out/notes "heron" --where lang=en --where tags=birds\n'
)


def search(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    query: Annotated[str, typer.Argument(metavar="QUERY", help="The query text (embedded with the model's query prompt).")],
    k: Annotated[int, typer.Option("-k", help="Number of results.")] = _DEFAULT_K,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of results, best first (each chunk's spans, heading path, title, section, header, source, url, chunk_id (its row id in an export); with --expand, the contexts: span(s), text and the hits each holds).")] = False,
    device: DeviceOpt = "auto",
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model for the query. Default: the model the index was built with (from its manifest).")] = None,
    expand: Annotated[Optional[str], typer.Option("--expand", metavar="section|neighbors:N|document", help="Give each hit's context for a generator instead of the chunk alone: its heading section, N chunks on each side, or the document, reassembled from the chunk table; hits of one document whose contexts overlap or touch are merged (best score kept, hits listed).")] = None,
    nprobe: Annotated[Optional[int], typer.Option("--nprobe", show_default=False, help="IVF indexes (--index IVF1024,PQ32, ...): inverted lists probed per query; more is slower and closer to exact (nlist: every list). An error for other index types.  [default: the index's: min(16, nlist)]")] = None,
    where: Annotated[Optional[list[str]], typer.Option("--where", metavar="FIELD=VALUE", show_default=False, help="Only chunks whose FIELD equals VALUE (as text or number; a list field: any item): a field embed --metadata-fields kept (metadata.NAME) or a column (doc_id, source, title, url, section, header, heading_path). Repeat it for conditions that must all hold; see docs/how-to/search.md.")] = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Search an index: per hit, its rank, doc id, char span and score, then its heading path and a snippet
    around the query's words (--json: the records). See docs/how-to/search.md."""
    from latechunk.api import Index
    from latechunk.output import parse_where

    try:
        conditions = parse_where(where)
    except ValueError as err:
        _fail(str(err))
    from latechunk.index import check_nprobe, query_problem

    if k < 1:
        _fail(f"-k must be >= 1, got {k}")
    problem = query_problem(query)
    if problem:
        _fail(f"the query {problem}")
    if expand is not None:
        from latechunk.contexts import expand_hits, parse_expand

        try:
            parse_expand(expand)
        except ValueError as err:
            _fail(str(err))
    if model is not None:  # checked as the command line names it (Index.load names its own argument)
        from latechunk.models import resolve_model_path

        try:
            resolve_model_path(model)
        except ValueError as err:
            _fail(str(err))
    try:  # the folder's index, chunk table and manifest; the query model loads on the first search
        idx = Index.load(out, device, model=model, trust_remote_code=trust_remote_code)
    except ValueError as err:
        _fail(str(err))
    manifest, table = idx.manifest, idx.table
    try:
        check_nprobe(idx.faiss_index, nprobe)
    except ValueError as err:
        _fail(str(err))
    if len(idx) == 0:  # nothing to search: say why, give the empty result, load no model
        c = manifest.get("counts", {})
        typer.secho(f"{out} holds 0 vectors ({plural(c.get('documents_embedded', 0), 'document')} embedded, "
                    f"{c.get('documents_skipped', 0)} skipped: see {out / 'manifest.json'}): no results",
                    fg=typer.colors.YELLOW, err=True)
        if as_json:
            typer.echo("[]")
        return
    try:  # the query as the chunks were embedded: the recorded model, dtype, prompt, normalisation, truncation
        results = idx.search_rows(query, k, nprobe=nprobe, where=conditions)
    except ValueError as err:
        _fail(str(err))
    if conditions and not results:
        from latechunk.output import WHERE_COLUMNS, metadata_fields

        known = metadata_fields(table)
        on_metadata = any(f not in WHERE_COLUMNS for f in conditions)  # columns only: no metadata advice (a trial)
        typer.echo(f"note: no chunk of {out} meets --where {' '.join(f'{f}={v}' for f, v in conditions.items())}"
                   + ("" if not on_metadata else f" (its metadata fields: {', '.join(known)})"), err=True)
    if expand is not None:  # the rows around each hit, within its document
        results = expand_hits(table, results, expand)
        if expand.strip() == "section":
            spec = str((manifest.get("strategy") or {}).get("spec", "") if isinstance(manifest.get("strategy"), dict)
                       else manifest.get("strategy") or "")
            if results and not spec.startswith("heading") and not any(r.get("section") for r in results):
                # a trial: under the default recursive strategy every "section" was the whole document
                typer.echo(f"note: this index's strategy ({visible(spec) or 'unknown'}) records no heading paths, so "
                           "--expand section gives each hit's whole document; --expand neighbors:N gives N chunks "
                           "on each side of a hit, and `embed --strategy heading` records sections", err=True)
            else:
                for r in results:  # a hit outside every heading: its section is all of the document
                    if not r.get("section") and len(r.get("text") or "") > _LONG_SECTION_CHARS:
                        typer.echo(f"note: context {r['rank']} ({visible(str(r['doc_id']))}) is the whole document, "
                                   f"{len(r['text']):,} characters: its chunks have no heading path, so a section is "
                                   "the document; --expand neighbors:N gives N chunks on each side of a hit", err=True)
    if as_json:
        typer.echo(json.dumps(results, ensure_ascii=False, indent=2))
        return
    # plain text, never rich markup: chunk text, query and doc ids are printed as written (issue 16); wrapped to
    # the terminal's width on a terminal, one line per field when piped (no width taken from the terminal then)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line, emphasis in format_hits(results, query, expand=expand, width=width):
        if emphasis:
            typer.secho(line, bold=True)  # bold on a terminal; click drops the codes when piped
        else:
            typer.echo(line)
