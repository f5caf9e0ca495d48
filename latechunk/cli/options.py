"""The options several commands share (their help strings one or two sentences, their defaults read from the config
classes), how a command tells the options given from those left to a default or a folder's run.json, and the
hidden old spellings of renamed options (:data:`latechunk.config.names.RENAMED_OPTIONS`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.config import DEFAULT_PRECISION, ModelConfig, RecordFields
from latechunk.config.names import RENAMED_OPTIONS
from latechunk.macro_window import DEFAULT_WINDOW_OVERLAP

ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", "-m", help="Hugging Face model id or local folder. Default: bundled all-MiniLM-L6-v2 (offline)."),
]
DeviceOpt = Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu, cuda, cuda:N.")]
TrustRemoteCodeOpt = Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own Python code (only for models that need it, such as jina-embeddings-v2; never implied by a folder or a file).")]
CompileOpt = Annotated[bool, typer.Option("--compile", help="Run the model through torch.compile (--backend torch): after a compile per batch shape, 0.97-1.15x the eager speed on CPUs, so it pays on large corpora only. Same vectors to float rounding (not recorded in run.json); see docs/reference/settings.md.")]
SentenceWorkersOpt = Annotated[
    Optional[int],
    typer.Option("--sentence-workers", help="Processes that segment sentences (pysbd) ahead of the split; 0: in the "
                 "main process; same output either way. Default: one per CPU core less one (max 16), 0 below 4 cores."),
]
MacroWindowOpt = Annotated[
    Optional[int],
    typer.Option("--macro-window", help="Macro-window size in tokens, frame included (at least the frame + 16): "
                 "longer documents are encoded in consecutive macro windows (old name: --window). Default: the "
                 "model's max_seq_length (256 for the bundled MiniLM); see docs/concepts/macro-windows.md."),
]
LatePoolingOpt = Annotated[
    Optional[str],
    typer.Option("--late-pooling", help="mean: in late mode, mean-pool the token states of a model whose own pooling "
                 "is not mean (CLS, last token, max); without it such a model is refused in late mode (late chunking "
                 "is defined for mean-pooled models)."),
]
MacroWindowOverlapOpt = Annotated[
    Optional[int],
    typer.Option("--macro-window-overlap", help="Content tokens shared by consecutive macro windows (old name: "
                 f"--window-overlap). Default: {DEFAULT_WINDOW_OVERLAP}, each token encoded once; see "
                 "docs/concepts/macro-windows.md."),
]

#: embed's help for an option that run.json records: --resume, --append and --reuse take it from there when not given
_RECORDED = "Recorded in run.json: --resume, --append and --reuse keep it."
_ID_FIELD_HELP = "JSONL field or table column (parquet, Arrow, datasets) holding a record's id (default: id, else _id, else doc_id)."
_FIELDS = RecordFields()
IdFieldOpt = Annotated[Optional[str], typer.Option("--id-field", metavar="NAME", show_default=False, help=f"{_ID_FIELD_HELP} {_RECORDED}")]
TextFieldOpt = Annotated[Optional[str], typer.Option("--text-field", metavar="NAME", show_default=False, help=f"Field or column holding a record's text, e.g. body or contents.  [default: {_FIELDS.text}]")]
EncodingErrorsOpt = Annotated[Optional[str], typer.Option("--encoding-errors", metavar="strict|replace", show_default=False, help=f"Bytes that are not UTF-8: strict skips the item, naming their offsets; replace reads it with U+FFFD in their place and lists it in manifest.json's degraded. {_RECORDED}  [default: {_FIELDS.encoding_errors}]")]
MetadataFieldsOpt = Annotated[Optional[str], typer.Option("--metadata-fields", metavar="NAMES|all", show_default=False, help=f"Fields, table columns or front-matter keys kept with each chunk, comma-separated (lang,tags,date), or all: in the chunk table, search --json and export; search --where NAME=VALUE filters on them. {_RECORDED}  [default: none]")]
TitleFieldOpt = Annotated[Optional[str], typer.Option("--title-field", metavar="NAME", show_default=False, help=f"Field or column holding a record's optional title (put before its text, and the chunks' title).  [default: {_FIELDS.title}]")]
# chunk's own help for the options it shares with embed: chunk writes chunk records, no folder, manifest or run.json
ChunkIdFieldOpt = Annotated[Optional[str], typer.Option("--id-field", metavar="NAME", show_default=False, help=f"{_ID_FIELD_HELP} It becomes the doc_id of each of the record's chunks.")]
ChunkEncodingErrorsOpt = Annotated[Optional[str], typer.Option("--encoding-errors", metavar="strict|replace", show_default=False, help=f"Bytes that are not UTF-8: strict skips the item (listed on stderr with the bytes' offsets); replace reads it with U+FFFD in their place and chunks it, with a note on stderr (none with --quiet).  [default: {_FIELDS.encoding_errors}]")]
ChunkMetadataFieldsOpt = Annotated[Optional[str], typer.Option("--metadata-fields", metavar="NAMES|all", show_default=False, help="Fields, table columns or front-matter keys copied into each chunk record's metadata object, comma-separated (lang,tags,date), or all (every field but the id, text, title and url).  [default: none]")]
ChunkModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="The model whose tokenizer counts the tokens (budgets and token spans are in its tokens, as embed counts them): a Hugging Face model id or local folder. Default: bundled all-MiniLM-L6-v2 (offline).")]
ChunkDeviceOpt = Annotated[str, typer.Option("--device", help="Where the semantic strategy runs the model: auto (CUDA when present), cpu, cuda, cuda:N. The other strategies only tokenize.")]
PrecisionOpt = Annotated[Optional[str], typer.Option("--precision", show_default=False, help=f"How index.faiss stores the vectors (the shards keep float32): float32, float16 (faiss SQfp16), int8 (SQ8, ranges calibrated on the corpus) or ubinary (1 bit per dimension, Hamming search then float rescoring; --index flat only).  [default: {DEFAULT_PRECISION}]")]
TruncateDimOpt = Annotated[Optional[int], typer.Option("--truncate-dim", help="Index only the first N dimensions of every vector (Matryoshka models), renormalised when vectors are normalised; queries get the same. Default: all.")]
BackendOpt = Annotated[Optional[str], typer.Option("--backend", show_default=False, help=f"What runs the model: torch (any device), onnx (ONNX Runtime on the CPU, fp32, exported once and cached under $LATECHUNK_CACHE/onnx) or onnx-int8 (the export quantized to int8: faster, a small recall cost); ONNX needs pip install 'latechunk[onnx]'.  [default: {ModelConfig.backend}]")]


def _sentence_workers(n: int | None, world_size: int = 1) -> int:
    """``--sentence-workers`` checked (exit 2 on a negative value) and resolved: the option's value, or the
    default (one per core less one, max 16; 0 below 4 cores) shared among the processes of a multi-process run."""
    from latechunk.sentences import default_workers

    if n is not None and n < 0:
        _fail(f"--sentence-workers must be >= 0 (0: segment in the main process), got {n}")
    if n is not None:
        return n
    share = default_workers() // world_size
    return share if share > 1 else 0


def _metadata_fields(value: str) -> tuple[str, ...]:
    """``--metadata-fields`` as :attr:`latechunk.types.RecordFields.metadata`: ``"lang, tags"`` -> ``("lang",
    "tags")``; ``all`` -> :data:`latechunk.types.ALL_METADATA`; ``""`` -> ``()`` (none)."""
    from latechunk.types import ALL_METADATA

    names = tuple(n.strip() for n in value.split(",") if n.strip())
    return ALL_METADATA if [n.lower() for n in names] == list(ALL_METADATA) else names  # ALL, All: all


def given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """True when the command's parameter ``name`` (its Python name) was given on the command line (or by an
    environment variable), not left to its default.

    Args:
        ctx: The command's context (a ``ctx: typer.Context`` parameter of the command).
        name: The parameter's name, e.g. ``"device"``.

    Returns:
        Whether it was given.
    """
    # by name: typer's own copy of click (typer >= 0.29) and click have each their ParameterSource
    return getattr(ctx.get_parameter_source(name), "name", None) in ("COMMANDLINE", "ENVIRONMENT")


def _renamed_message(command: str, old: str) -> str:
    new = RENAMED_OPTIONS[f"{command} {old}"]
    return f"warning: {command} {old} is deprecated: it is called {new} now (the old name works until the next release)"


def deprecated_option(command: str, old: str, **kwargs) -> typer.models.OptionInfo:
    """The hidden option of a renamed option's old spelling (:data:`~latechunk.config.names.RENAMED_OPTIONS`):
    it keeps working and, when given, prints one line on stderr naming the new one.

    Args:
        command: The command (``"compare"``).
        old: The old spelling (``"--window"``).
        **kwargs: More :func:`typer.Option` settings (``metavar``).

    Returns:
        The option; the command passes its value to :func:`renamed_value`.
    """
    _renamed_message(command, old)  # a spelling not listed fails here, at import

    def warn(ctx: typer.Context, param: typer.CallbackParam, value):
        if given_on_command_line(ctx, param.name):
            typer.echo(_renamed_message(command, old), err=True)
        return value

    return typer.Option(old, hidden=True, show_default=False, callback=warn, **kwargs)


def renamed_value(command: str, old: str, new_value, old_value):
    """The value of a renamed option: the new spelling's, else the old one's (exit 2 when both are given).

    Args:
        command: The command.
        old: The old spelling.
        new_value: The value under the new spelling (None or False: not given).
        old_value: The value under the old spelling.

    Returns:
        The value to use.
    """
    if old_value is None or old_value is False:
        return new_value
    if new_value is not None and new_value is not False:
        _fail(f"{RENAMED_OPTIONS[f'{command} {old}']} and {old} (its old name) were both given; give "
              f"{RENAMED_OPTIONS[f'{command} {old}']} only")
    return old_value


def _check_beam_widths(given: dict, index_config) -> None:
    """Refuse ``--ef-construction``/``--ef-search`` given for an index that is not HNSW (they were ignored:
    `--ef-search 64` with the flat default was recorded nowhere)."""
    beams = [f"--{k.replace('_', '-')}" for k in ("ef_construction", "ef_search") if given.get(k) is not None]
    if beams and not index_config.is_hnsw:
        _fail(f"{' and '.join(beams)} {'set' if len(beams) > 1 else 'sets'} an HNSW index, but the index is "
              f"{index_config.factory}; give --index hnsw "
              "(or HNSW{M}) with them, or leave them out")


def _check_hnsw_options(given: dict, index_config, index_option: str) -> None:
    """Refuse HNSW options given for an index they do not set (``reindex``; ``embed`` leaves ``--hnsw-m`` to
    :meth:`EmbedConfig.with_overrides <latechunk.config.EmbedConfig.with_overrides>`): ``--ef-construction`` and
    ``--ef-search`` need an HNSW index (:func:`_check_beam_widths`), ``--hnsw-m`` the alias ``--index hnsw``
    (``HNSW16`` names its own M)."""
    _check_beam_widths(given, index_config)
    if given.get("hnsw_m") is not None and index_option.strip().lower() != "hnsw":
        _fail(f"--hnsw-m sets M of --index hnsw, but the index is {index_config.factory}"
              + (" (its M is in the string)" if index_config.is_hnsw else "")
              + "; give --index hnsw with it, or leave it out")
