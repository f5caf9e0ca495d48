"""``latechunk strategies``: the chunking strategies of the registry, their bets and parameters."""

from __future__ import annotations

import dataclasses

import typer


def strategies() -> None:
    """List the chunking strategies, what each bets about where a fact ends, and their parameters. See
    docs/concepts/strategies.md."""
    from latechunk.strategies import registry
    from latechunk.strategies.base import _fmt

    for name, cls in registry().items():
        typer.secho(f"{name}", bold=True, nl=False)
        typer.echo(f"  — {cls.bet}" if cls.bet else "")
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else "required")
            help_ = f.metadata.get("help", "")
            shown = _fmt(default) if default != "required" else default
            typer.echo(f"    {f.name + ' = ' + shown:<30} {help_}")
    typer.echo('\nSPEC syntax: name or name:key=value,key=value   e.g. "fixed:size=256,overlap=32"')
