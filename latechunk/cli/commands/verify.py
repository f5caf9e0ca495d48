"""``latechunk verify``: check an output folder against itself and its sources (:func:`latechunk.verify.verify_output`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail


def verify(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    inputs: Annotated[Optional[list[Path]], typer.Option("--inputs", "-i", help="Where the source inputs are now, repeated for each input in the order they were embedded (--inputs a --inputs b), or once per distinct input; the folder's own appended/*.jsonl need not be given (default: the paths recorded in the manifest).")] = None,
    no_sources: Annotated[bool, typer.Option("--no-sources", help="Skip re-reading and hashing the source documents.")] = False,
) -> None:
    """Check an output folder: index against chunk table, manifest, shards and source files; print each
    problem and exit 1 on any. See docs/how-to/check.md."""
    from latechunk.verify import verify_output

    if not out.exists():  # as search and Index.load say it
        _fail(f"{out} does not exist (give an output folder of `latechunk embed`)")
    if not out.is_dir():
        _fail(f"{out} is not a folder (give an output folder of `latechunk embed`)")
    try:
        problems, summary = verify_output(out, inputs=inputs, check_sources=not no_sources)
    except ValueError as err:
        _fail(str(err))
    for p in problems:
        typer.secho(f"problem: {p}", fg=typer.colors.RED)
    if problems:
        typer.secho(f"{len(problems)} problem(s) in {out}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: {summary}")
