"""The CLI reference pages, generated from the Typer app itself (issue 40), so they cannot drift from `--help`.

Each command's page holds its usage line, its help and examples as `--help` prints them, and one row per argument
and option with the option's names, metavar, help and default exactly as click's own help records give them
(``click.Parameter.get_help_record``). The mkdocs hook ``scripts/docs_hooks.py`` calls :func:`cli_pages` at build
time and adds the pages to the site (nothing generated is committed); ``tests/docs/test_cli_reference.py`` checks
the pages against the app. Run it by hand to see the pages::

    python3 scripts/gen_cli_docs.py --out /tmp/cli   # writes reference/cli/*.md under /tmp/cli
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

#: where the generated pages go in the site (relative to docs/)
CLI_DIR = "reference/cli"


def _root_command():
    """The click group behind ``latechunk`` (Typer's app turned into click objects, as ``--help`` does)."""
    import typer

    from latechunk.cli import app

    return typer.main.get_command(app)


def commands() -> dict[str, object]:
    """The visible commands of ``latechunk``, by name, in alphabetical order (click command objects)."""
    root = _root_command()
    return {name: root.commands[name] for name in sorted(root.commands) if not root.commands[name].hidden}


def _cell(text: str) -> str:
    """``text`` safe in a markdown table cell: markup characters escaped, ``<``/``>`` as entities, one line."""
    text = " ".join(text.split())
    text = re.sub(r"([\\`*_\[\]|{}])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _help_lines(text: str) -> str:
    """A command's help or epilog as a text block (click's ``\\b`` no-rewrap markers dropped)."""
    return "\n".join(line for line in text.replace("\b", "").strip().splitlines())


def command_page(name: str, command, root=None) -> str:
    """The markdown page of one command.

    Args:
        name: The command's name (``"embed"``).
        command: Its click command.
        root: The ``latechunk`` click group (its context is the parent of the command's).

    Returns:
        The page: title, usage, help, epilog, then the arguments and options as a table.
    """
    import click

    root = root if root is not None else _root_command()
    ctx = click.Context(command, info_name=name, parent=click.Context(root, info_name="latechunk"))
    lines = [f"# latechunk {name}", "", "<!-- generated from the Typer app by scripts/gen_cli_docs.py: do not edit -->",
             "", "```text", command.get_usage(ctx).strip(), "", _help_lines(command.help or "")]
    if command.epilog:
        lines += ["", _help_lines(command.epilog)]
    lines += ["```", "", "| option | what it does |", "| --- | --- |"]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # hidden (old spellings of renamed options)
            continue
        opts, help_text = record
        lines.append(f"| `{' '.join(opts.split())}` | {_cell(help_text)} |")
    lines += ["", "Every option above is also printed by `latechunk " + name + " --help`."]
    return "\n".join(lines) + "\n"


def index_page(cmds: dict[str, object]) -> str:
    """The CLI reference's index: one row per command with the first sentence of its help."""
    intro = "Every command takes `-h`/`--help`; these pages print the same text, generated from the app at build time."
    lines = ["# Command line", "", "<!-- generated from the Typer app by scripts/gen_cli_docs.py: do not edit -->", "",
             intro, "", "| command | what it does |", "| --- | --- |"]
    for name, command in cmds.items():
        lines.append(f"| [`latechunk {name}`]({name}.md) | {_cell(command.get_short_help_str(limit=300))} |")
    return "\n".join(lines) + "\n"


def cli_pages() -> dict[str, str]:
    """Every generated page, by its path under docs/ (``reference/cli/index.md``, ``reference/cli/embed.md``,
    ...), as markdown text."""
    root = _root_command()
    cmds = commands()
    pages = {f"{CLI_DIR}/index.md": index_page(cmds)}
    for name, command in cmds.items():
        pages[f"{CLI_DIR}/{name}.md"] = command_page(name, command, root)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write reference/cli/*.md under")
    args = parser.parse_args()
    for rel, text in cli_pages().items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
