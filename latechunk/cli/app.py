"""The ``latechunk`` Typer app (its commands are registered by :mod:`latechunk.cli`, one module each under
:mod:`latechunk.cli.commands`), ``--version``, and how a command fails: :func:`_fail` (a red ``error: ...`` line on
stderr and an exit status)."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    help=(
        "Late chunking: encode each document once, pool one vector per chunk from its token states. Typical "
        "use: `latechunk embed docs/ --out idx`, then `latechunk search idx \"question\"`; see "
        "docs/getting-started.md."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is printed as written: "[title > section path]" is text, not a rich tag
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: ``embed --strict``'s exit status when an input document was skipped (the output is written all the same);
#: 1 stays "nothing was embedded", 2 a bad option or input, 130 Ctrl-C
STRICT_EXIT_CODE = 3


def _version_callback(value: bool) -> None:
    if value:
        import latechunk

        typer.echo(f"latechunk {latechunk.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Late chunking: encode each document once, pool one vector per chunk from its token states."""


def _fail(msg: str, code: int = 2) -> None:
    """Print ``error: MSG`` in red on stderr and exit with ``code`` (2: a bad option or input)."""
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)
