"""The ``latechunk`` command line: embed, search, chunk, strategies (and compare, verify, reindex, export, train,
agree).

Run ``latechunk COMMAND --help`` for each command's options. The console script (``latechunk``, pyproject.toml)
and ``python -m latechunk`` call :func:`main`, which runs :data:`app`. The package, one module per concern:
:mod:`~latechunk.cli.app` (the Typer app, ``_fail``), :mod:`~latechunk.cli.commands` (one module per command,
each registered here in :data:`COMMANDS`' order), :mod:`~latechunk.cli.options` (the options several commands share,
renamed options' old spellings), :mod:`~latechunk.cli.messages` (what the commands print about their inputs),
:mod:`~latechunk.cli.config_file` (``embed --config``), :mod:`~latechunk.cli.script` (warnings and Ctrl-C in the
console script). What ``embed`` does with its folder is decided below the command line, by
:mod:`latechunk.ingest.plan`. Every public name the module ``latechunk/cli.py`` had stays importable from here.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

import typer

from latechunk.cli.app import STRICT_EXIT_CODE, _fail, _root, _version_callback, app  # noqa: F401
from latechunk.cli.commands.agree import agree
from latechunk.cli.commands.chunk import (  # noqa: F401
    _check_chunk_output,
    _ChunkBar,
    _remove_on_error,
    _stdout_file,
    chunk,
)
from latechunk.cli.commands.compare import compare
from latechunk.cli.commands.embed import _append, _check_engine, _check_index_dim, embed  # noqa: F401
from latechunk.cli.commands.export import export
from latechunk.cli.commands.reindex import reindex
from latechunk.cli.commands.search import _LONG_SECTION_CHARS, search  # noqa: F401
from latechunk.cli.commands.serve import serve
from latechunk.cli.commands.strategies import strategies
from latechunk.cli.commands.train import train
from latechunk.cli.commands.verify import verify
from latechunk.cli.messages import (  # noqa: F401
    _MAX_SKIPPED_SHOWN,
    _check_strict,
    _documents_line,
    _print_ingest_notes,
    _print_skipped,
    _print_unshown,
    _warn_changed,
    _warn_vanished,
    skipped_line,
    unknown_tokens_line,
)
from latechunk.cli.options import (  # noqa: F401
    _ID_FIELD_HELP,
    _RECORDED,
    ChunkDeviceOpt,
    ChunkEncodingErrorsOpt,
    ChunkIdFieldOpt,
    ChunkMetadataFieldsOpt,
    ChunkModelOpt,
    CompileOpt,
    DeviceOpt,
    EncodingErrorsOpt,
    IdFieldOpt,
    LatePoolingOpt,
    MacroWindowOpt,
    MacroWindowOverlapOpt,
    MetadataFieldsOpt,
    ModelOpt,
    PrecisionOpt,
    SentenceWorkersOpt,
    TextFieldOpt,
    TitleFieldOpt,
    TruncateDimOpt,
    TrustRemoteCodeOpt,
    _check_hnsw_options,
    _metadata_fields,
    _sentence_workers,
)
from latechunk.cli.script import (  # noqa: F401
    _DEFAULT_FORMATWARNING,
    _kept_shards,
    _option_value,
    exit_at_once,
    format_warning,
    interrupted_message,
)
from latechunk.console import format_hits, snippet, visible  # noqa: F401  (kept importable here)

#: the names of embed's policy helpers that moved to latechunk.ingest.plan, imported on first use (PEP 562: the
#: command line's start-up imports no latechunk.ingest)
_MOVED_TO_PLAN = {"_finished_run_note": "finished_run_note", "_interrupted_append": "interrupted_append_shards",
                  "_recorded_model_hint": "recorded_model_hint"}


def __getattr__(name: str):
    """The old names of :mod:`latechunk.ingest.plan`'s helpers, on first access."""
    if name in _MOVED_TO_PLAN:
        from latechunk.ingest import plan

        return getattr(plan, _MOVED_TO_PLAN[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the commands, in the order `latechunk --help` lists them
COMMANDS = (embed, verify, reindex, search, chunk, strategies, compare, train, export, agree, serve)
for _command in COMMANDS:
    # a command module's EPILOG (its examples) is printed under its help
    app.command(epilog=getattr(sys.modules[_command.__module__], "EPILOG", None))(_command)


def main() -> None:  # pragma: no cover
    """The ``latechunk`` console script; ``$LATECHUNK_LOG`` sets the log level (default WARNING).

    It runs this package's :data:`app` (looked up here when called, so a test may replace ``latechunk.cli.app``).
    """
    logging.basicConfig(level=os.environ.get("LATECHUNK_LOG", "WARNING"))
    warnings.formatwarning = format_warning
    try:
        app()
    except (KeyboardInterrupt, SystemExit) as stop:  # typer turns Ctrl-C into exit 130, silently
        if isinstance(stop, KeyboardInterrupt) or stop.code == 130:
            typer.echo(interrupted_message(sys.argv[1:]), err=True)
            exit_at_once(130)
        raise
