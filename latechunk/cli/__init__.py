"""The ``latechunk`` command line: embed, search, chunk, strategies (and compare, verify, reindex, export, train,
agree).

Run ``latechunk COMMAND --help`` for each command's options. The console script (``latechunk``, pyproject.toml)
and ``python -m latechunk`` call :func:`main`, which runs :data:`app`. Every name the module ``latechunk/cli.py``
had stays importable from here.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

import typer

from latechunk.cli.app import (  # noqa: F401  (re-exported: the names latechunk/cli.py had)
    _DEFAULT_FORMATWARNING,
    _EMBED_DEFAULTS,
    _ID_FIELD_HELP,
    _LONG_SECTION_CHARS,
    _MAX_SKIPPED_SHOWN,
    _RECORDED,
    STRICT_EXIT_CODE,
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
    _append,
    _check_chunk_output,
    _check_engine,
    _check_hnsw_options,
    _check_index_dim,
    _check_strict,
    _ChunkBar,
    _documents_line,
    _fail,
    _finished_run_note,
    _interrupted_append,
    _kept_shards,
    _metadata_fields,
    _option_value,
    _print_ingest_notes,
    _print_skipped,
    _print_unshown,
    _recorded_model_hint,
    _remove_on_error,
    _resolve_embed_options,
    _root,
    _sentence_workers,
    _stdout_file,
    _version_callback,
    _warn_changed,
    _warn_vanished,
    agree,
    app,
    chunk,
    compare,
    embed,
    exit_at_once,
    export,
    format_hits,
    format_warning,
    interrupted_message,
    reindex,
    search,
    skipped_line,
    snippet,
    strategies,
    train,
    unknown_tokens_line,
    verify,
    visible,
)


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
