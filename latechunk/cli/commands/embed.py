"""``latechunk embed``: chunk and embed documents into an output folder (index.faiss, chunks.parquet, manifest.json).

The command parses its options (and a ``--config`` file's: :mod:`latechunk.cli.config_file`), lets
:func:`latechunk.ingest.plan.plan_embed` decide the run and its settings (``--resume``, ``--append``, ``--reuse``,
``--force``), checks what the model's files tell before torch loads, loads the model, runs
:func:`latechunk.ingest.ingest` (or ``--append``'s :func:`latechunk.ingest.append.append`, ``--engine ray``'s
:func:`latechunk.ingest.ray_engine.ingest_ray`) and prints what it did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import STRICT_EXIT_CODE, _fail
from latechunk.cli.messages import (
    _check_strict,
    _documents_line,
    _print_ingest_notes,
    _print_skipped,
    _warn_changed,
    _warn_vanished,
)
from latechunk.cli.options import (
    BackendOpt,
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
    _check_beam_widths,
    _metadata_fields,
    _sentence_workers,
    deprecated_option,
    given_on_command_line,
    renamed_value,
)
from latechunk.config import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_GROUP_TOKENS,
    DEFAULT_HNSW_M,
    DEFAULT_INDEX,
    DEFAULT_MODE,
    DEFAULT_STRATEGY,
)
from latechunk.console import plural

#: embed's options that are settings of the run (:data:`latechunk.config.EMBED_OPTIONS` names): each one given
#: replaces the default or, with --resume, --append and --reuse, the folder's recorded setting
_SETTINGS = ("model", "strategy", "mode", "dtype", "macro_window", "macro_window_overlap", "batch_tokens", "index",
             "hnsw_m", "ef_construction", "ef_search", "precision", "truncate_dim", "normalize", "include_special",
             "long_documents", "group_tokens", "late_pooling", "dedup", "backend", "id_field", "text_field",
             "title_field", "metadata_fields", "encoding_errors")
#: embed's options on how this process runs, never read from a folder (--force and --resume: what it does)
_RUN_OPTIONS = ("device", "compile", "trust_remote_code", "force", "resume")


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExamples:\n'
    '  latechunk embed my_docs/ --out out/my_docs --strategy heading\n'
    '  latechunk embed corpus.jsonl --out idx/new --reuse idx/current\n'
    '  torchrun --nproc-per-node 4 -m latechunk embed docs/ --out idx   (one process per GPU)\n'
)


def embed(
    ctx: typer.Context,
    inputs: Annotated[Optional[list[Path]], typer.Argument(metavar="INPUT", show_default=False, help=".md/.txt files, source code (.py/.js/.ts/.go/.rs/.java), .html (as markdown), folders of them, .jsonl (id/text), BEIR corpus.jsonl, .parquet or .arrow (id/text), Hugging Face save_to_disk folders. Default: the --config file's inputs.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", show_default=False, help="Output folder: index.faiss, chunks.parquet, manifest.json (required, here or in the --config file).")] = None,
    config_file: Annotated[Optional[Path], typer.Option("--config", metavar="FILE", show_default=False, help="A TOML file of settings with run.json's keys (strategy, mode, [model] name, [index] factory, ...; see latechunk.cli.config_file); options given on the command line override it.")] = None,
    model: ModelOpt = None,
    strategy: Annotated[Optional[str], typer.Option("--strategy", "-s", show_default=False, help=f"SPEC: name or name:key=value,... (see `latechunk strategies`).  [default: {DEFAULT_STRATEGY}]")] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", show_default=False, help=f"late (encode the document once, pool per chunk), naive (encode each chunk alone), contextual (naive, with the chunk's header [title > section path] before its text) or fused (late + naive unit vectors summed: about 2x late's tokens; results/fused.md).  [default: {DEFAULT_MODE}]")] = None,
    device: DeviceOpt = "auto",
    dtype: Annotated[Optional[str], typer.Option(help="float32, bfloat16, float16 (or fp32, bf16, fp16). Default: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16 (results/bf16.md), else float32 ($LATECHUNK_CPU_DTYPE=float32 sets the CPU default); recorded in run.json.")] = None,
    macro_window: MacroWindowOpt = None,
    macro_window_overlap: MacroWindowOverlapOpt = None,
    batch_tokens: Annotated[Optional[int], typer.Option(show_default=False, help="Token budget per forward batch (padded tokens). It never changes a vector, so --resume and --append take their own device's default unless given.  [default: 4096 on the CPU, 16384 on a GPU]")] = None,
    backend: BackendOpt = None,
    compile: CompileOpt = False,
    index: Annotated[Optional[str], typer.Option("--index", show_default=False, help=f"A faiss index_factory string (Flat, HNSW32, IVF4096,Flat, IVF1024,PQ32, ...) or flat or hnsw (= HNSW{{--hnsw-m}}); inner product, checked against the model's dimension first. IVF indexes are built on disk; see docs/how-to/indexes-beyond-ram.md.  [default: {DEFAULT_INDEX}]")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option(show_default=False, help=f"With --index hnsw: graph degree M.  [default: {DEFAULT_HNSW_M}]")] = None,
    ef_construction: Annotated[Optional[int], typer.Option(show_default=False, help=f"HNSW: build beam width.  [default: {DEFAULT_EF_CONSTRUCTION}]")] = None,
    ef_search: Annotated[Optional[int], typer.Option(show_default=False, help=f"HNSW: search beam width.  [default: {DEFAULT_EF_SEARCH}]")] = None,
    precision: PrecisionOpt = None,
    truncate_dim: TruncateDimOpt = None,
    normalize: Annotated[Optional[bool], typer.Option("--normalize/--no-normalize", show_default=False, help="L2-normalise chunk vectors (cosine search).  [default: normalize]")] = None,
    include_special: Annotated[Optional[bool], typer.Option("--include-special/--no-include-special", show_default=False, help="Late mode: first/last chunk absorb [CLS]/prefix/[SEP] states.  [default: no-include-special]")] = None,
    long_documents: Annotated[Optional[str], typer.Option("--long-documents", show_default=False, help="windows: encode documents longer than the macro window in consecutive macro windows; skip: skip them (listed with their token count). Never truncated.  [default: windows]")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own code (only for models that need it). Never taken from run.json: --append asks for it again.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output folder.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --out: options not given are the run's (run.json) and options given must equal them, except the index options (the index is built from the shards).")] = False,
    append: Annotated[bool, typer.Option("--append", help="Add INPUT to the finished folder --out with its run's settings (run.json; options given must equal them); documents whose id is already there are skipped. Exits 0 when every input is already indexed, 1 when nothing could be appended for another reason.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars and no notes on unknown tokens or degraded text (the manifest lists them); errors and skipped inputs are still printed.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help=f"For CI jobs: exit {STRICT_EXIT_CODE} when an input document was skipped (the output is written all the same); entries never read as documents (.pdf, hidden folders) and, with --append, documents already indexed do not count.")] = False,
    group_tokens: Annotated[Optional[int], typer.Option("--group-tokens", hidden=True, show_default=False, help=f"Tokens per pipeline group = per shard (bounds memory).  [default: {DEFAULT_GROUP_TOKENS}]")] = None,
    sentence_workers: SentenceWorkersOpt = None,
    late_pooling: LatePoolingOpt = None,
    dedup: Annotated[Optional[float], typer.Option("--dedup", metavar="THRESHOLD", help="Drop a chunk whose cosine to an earlier kept chunk is >= THRESHOLD (0 < THRESHOLD <= 1; default off), each listed in manifest.json's dedup. Recorded in run.json: --resume and --append keep it (--reuse refuses an OLD embedded with it).")] = None,
    id_field: IdFieldOpt = None,
    text_field: TextFieldOpt = None,
    title_field: TitleFieldOpt = None,
    metadata_fields: MetadataFieldsOpt = None,
    encoding_errors: EncodingErrorsOpt = None,
    engine: Annotated[str, typer.Option("--engine", help="local: this process (or torchrun ranks); ray: a Ray cluster (pip install 'latechunk[ray]'), one encoder actor per GPU. Same output either way.")] = "local",
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="--engine ray: auto (this machine's cluster or $RAY_ADDRESS), HOST:PORT of its head, or ray://HOST:PORT. Default: a new local cluster.")] = None,
    ray_actors: Annotated[Optional[int], typer.Option("--ray-actors", help="--engine ray: encoder actors. Default: one per GPU of the cluster; without GPUs one per two CPUs.")] = None,
    reuse: Annotated[Optional[Path], typer.Option("--reuse", metavar="OLD", show_default=False, help="An earlier output folder with the same settings: documents with an unchanged id and text take their chunks and vectors from OLD, only new and changed ones are encoded (options not given are OLD's). Not with --append or --engine ray.")] = None,
    old_window: Annotated[Optional[int], deprecated_option("embed", "--window")] = None,
    old_window_overlap: Annotated[Optional[int], deprecated_option("embed", "--window-overlap")] = None,
) -> None:
    """Chunk and embed documents into an output folder: a FAISS index, the chunk table and a manifest, written
    in checksummed shards that --resume continues after a crash. See docs/concepts/output-folder.md."""
    options = dict(locals())  # every parameter, by name (the settings given are taken from it below)
    options["macro_window"] = renamed_value("embed", "--window", macro_window, old_window)
    options["macro_window_overlap"] = renamed_value("embed", "--window-overlap", macro_window_overlap,
                                                    old_window_overlap)
    if metadata_fields is not None:
        options["metadata_fields"] = _metadata_fields(metadata_fields)
    given = {k: options[k] for k in _SETTINGS}
    run = {k: options[k] for k in _RUN_OPTIONS}
    inputs = list(inputs or [])
    if config_file is not None:  # the file's settings, under those given on the command line
        inputs, out, given, run = _with_config_file(ctx, config_file, inputs, out, given, run)
    if out is None:
        _fail("give the output folder: --out DIR")
    if not inputs:
        _fail("give at least one INPUT (a file or folder to embed)")
    from latechunk.config import dist_env

    rank, world_size, local_rank = dist_env()
    workers = run.get("sentence_workers", sentence_workers)  # the command line's, else the --config file's
    run["sentence_workers"] = _sentence_workers(workers, world_size)
    plan = _plan(inputs, out, given, run, append=append, reuse=reuse, engine=engine, rank=rank,
                 world_size=world_size)
    _check_beam_widths(given, plan.config.index)
    _check_engine(engine, ray_address, ray_actors, world_size=world_size, append=append, dedup=plan.config.dedup,
                  sentence_workers=workers)
    if plan.done:  # a finished folder resumed with nothing to check against it
        typer.echo(plan.finished, err=True)
        return
    _check_before_loading(plan)
    encoder, header = _load_encoder(plan, world_size, local_rank)
    if plan.finished:
        from latechunk.ingest.plan import check_finished

        try:
            check_finished(plan, encoder)
        except ValueError as err:
            _fail(str(err))
        typer.echo(plan.finished, err=True)
        return
    if plan.append:
        _append(plan.config, encoder, quiet, strict)
        return
    manifest = _ingest(plan, encoder, header, engine=engine, ray_address=ray_address, ray_actors=ray_actors,
                       quiet=quiet, world_size=world_size)
    if manifest is None:
        typer.echo(f"rank {rank} of {world_size} ({encoder.device}): shards written into {out / 'shards'}; "
                   "rank 0 assembles")
        return
    _print_summary(plan, manifest, quiet=quiet, strict=strict)


def _with_config_file(ctx: typer.Context, path: Path, inputs: list[Path], out: Path | None, given: dict,
                      run: dict) -> tuple[list[Path], Path, dict, dict]:
    """``--config FILE``: its settings and run options under those given on the command line (a flag or the
    device counts as given only when it was on the command line), its inputs and out where none were given."""
    from latechunk.cli.config_file import config_file_options

    try:
        file_options, inputs, out = config_file_options(path, inputs=tuple(inputs), out=out)
    except ValueError as err:
        _fail(str(err))
    given = {k: v if v is not None else file_options.get(k) for k, v in given.items()}
    for k in ("device", "compile", "trust_remote_code", "force", "resume", "sentence_workers", "index_gpu"):
        if k in file_options and not given_on_command_line(ctx, k):
            run[k] = file_options[k]
    return list(inputs), out, given, run


def _plan(inputs: list[Path], out: Path, given: dict, run: dict, *, append: bool, reuse: Path | None, engine: str,
          rank: int, world_size: int):
    """:func:`latechunk.ingest.plan.plan_embed`, its notes on stderr, exit 2 on what it refuses."""
    from latechunk.ingest.plan import plan_embed

    run = dict(run)
    force, resume = run.pop("force"), run.pop("resume")
    try:
        return plan_embed(inputs, out, given, run=run, force=force, resume=resume, append=append, reuse=reuse,
                          engine=engine, rank=rank, world_size=world_size, note=lambda m: typer.echo(m, err=True))
    except ValueError as err:
        _fail(str(err))


def _check_before_loading(plan) -> None:
    """What the model's files tell (its sentence model's path, late pooling, the macro window, the index's
    dimension), the output folder and the inputs, all before torch is imported or a weight is loaded (exit 2)."""
    from latechunk.ingest.plan import recorded_model_hint
    from latechunk.models import ModelFacts, resolve_model_path

    config = plan.config
    strat = config.strategy
    source = getattr(strat, "source", "late")
    try:
        if strat.needs_sentence_vectors and source != "late":
            try:  # a missing sentence-model path fails here, before any work, naming the strategy's setting
                resolve_model_path(source)
            except ValueError as err:
                raise ValueError(f"strategy {strat.spec!r}: its sentence model source={source!r} does not load "
                                 f"(source=late uses the run's own model): {err}") from err
        # the settings that need the model (late pooling, the macro window) against its files: no torch, no weights
        facts = ModelFacts.read(config.model.name)
        config.pipeline.check_model(facts)
        _check_index_dim(config.index, facts)  # --truncate-dim against the model's dimension (config.json)
    except ValueError as err:
        _fail(recorded_model_hint(str(err), plan.out, plan.model_recorded))
    try:  # the folder (rank 0 of a new run), then an input with nothing to embed (an empty folder, only .pdf files)
        plan.check_folder()
        from latechunk.io import require_documents

        require_documents(config.inputs, fields=config.fields)
    except ValueError as err:
        _fail(str(err))


def _load_encoder(plan, world_size: int, local_rank: int):
    """The run's encoder (one GPU per process of a multi-process run: cuda:LOCAL_RANK), checked against the
    settings once loaded, and the manifest's header (exit 2 on a model that does not load or fit)."""
    from latechunk.encoder import Encoder
    from latechunk.index import new_index
    from latechunk.ingest.plan import recorded_model_hint
    from latechunk.provenance import versions

    config = plan.config
    device = config.model.device
    if world_size > 1 and device in ("auto", "cuda"):
        import torch

        if torch.cuda.is_available():  # one GPU per process: cuda:LOCAL_RANK
            if local_rank >= torch.cuda.device_count():
                _fail(f"$LOCAL_RANK={local_rank} but only {torch.cuda.device_count()} CUDA device(s) are visible")
            device = f"cuda:{local_rank}"
            torch.cuda.set_device(local_rank)
    try:
        encoder = Encoder.from_config(config.model, device=device)
        windows = config.pipeline.check_model(encoder.facts)  # the same check, now with the tokenizer as loaded
        new_index(config.index, encoder.dim)  # a factory string faiss cannot build fails here, before any output
    except ValueError as err:  # a model that does not load, a macro window that does not fit it, a bad --index
        _fail(recorded_model_hint(str(err), plan.out, plan.model_recorded))
    strat = config.strategy
    header = {"model": encoder.describe(windows), "strategy": {"spec": strat.spec, **strat.to_dict()},
              "inputs": [str(p) for p in config.inputs], "versions": versions()}
    return encoder, header


def _ingest(plan, encoder, header: dict, *, engine: str, ray_address: str | None, ray_actors: int | None,
            quiet: bool, world_size: int) -> dict | None:
    """The run: :func:`latechunk.ingest.ingest` (or ``--engine ray``'s), its manifest (None on a rank > 0)."""
    from latechunk.index import IndexTrainingError
    from latechunk.ingest import RankError, ingest

    config, rank = plan.config, plan.rank
    try:
        if engine == "ray":
            from latechunk.ingest.ray_engine import ingest_ray

            return ingest_ray(config, encoder, header=header, address=ray_address, actors=ray_actors,
                              progress=not quiet)
        return ingest(config, encoder, progress=not quiet and rank == 0, header=header, rank=rank,
                      world_size=world_size, reuse=plan.reuse)
    except IndexTrainingError as err:  # everything is encoded: the shards hold it, only the index failed
        _fail(f"{err}. The encoded shards are kept in {config.out / 'shards'}: run the same command with --resume "
              "and --index Flat (or HNSW32) to build another index from them without encoding again")
    except ValueError as err:
        _fail(str(err))
    except RankError as err:
        _fail(f"rank {rank} of {world_size}: {err}", code=1)


def _print_summary(plan, manifest: dict, *, quiet: bool, strict: bool) -> None:
    """What a run did: its summary line, metadata fields that no record had, the documents ``--reuse`` took,
    the skipped items and the manifest's notes; exit 1 when nothing was embedded, 3 under ``--strict``."""
    config, out = plan.config, plan.out
    c = manifest["counts"]
    typer.echo(
        f"embedded {_documents_line(c['documents_embedded'], c['documents_in'], manifest['skipped'])} -> {plural(c['chunks'], 'chunk')} "
        f"({config.mode}, {config.strategy.spec}, {c['tokens_encoded']} tokens encoded, {manifest['seconds']['total']:.1f} s"
        f"{'; the whole run, its interrupted part included' if plan.resumed else ''}) into {out}"
    )
    named = [] if config.fields.all_metadata else list(config.fields.metadata)
    if named and c["chunks"]:  # a mistyped field name kept nothing: say so (a trial saw only nulls)
        import pyarrow.parquet as pq

        from latechunk.output import metadata_fields

        seen = metadata_fields(pq.read_table(out / "chunks.parquet", columns=["metadata"]))
        missing = [f for f in named if f not in seen]
        if missing:
            typer.secho(f"warning: no embedded record has the field(s) {', '.join(missing)} that --metadata-fields "
                        f"names (fields kept: {', '.join(seen) or 'none'})", fg=typer.colors.YELLOW, err=True)
    if plan.reuse is not None:
        n_reused = sum(1 for d in manifest.get("documents", []) if d.get("reused"))
        typer.echo(f"reused {n_reused:,} unchanged document(s) from {plan.reuse}; encoded "
                   f"{c['documents_embedded'] - n_reused:,} new or changed one(s)")
    _print_skipped(manifest["skipped"], out / "manifest.json")
    _print_ingest_notes(manifest, out / "manifest.json", quiet=quiet)
    if c["documents_embedded"] == 0:  # every input had a document, but none was embedded (duplicates, too long)
        _fail(f"no document was embedded from {', '.join(str(p) for p in config.inputs)} (the reasons are above "
              f"and in {out / 'manifest.json'}'s skipped list)", code=1)
    if strict:
        _check_strict(manifest["skipped"], out / "manifest.json")


def _check_index_dim(index_config, facts) -> None:
    """``--truncate-dim`` (and ubinary's multiple of 8) and the ``--index`` factory string against the model's
    dimension from its ``config.json`` (``hidden_size``), before torch loads; silent where the file does not state
    it (checked again once loaded).

    Raises:
        ValueError: if the dimension does not fit.
    """
    try:
        cfg = json.loads((Path(facts.path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return
    dim = cfg.get("hidden_size") or cfg.get("d_model")
    if isinstance(dim, int) and dim > 0:
        index_config.index_dim(dim)
        from latechunk.index import check_factory  # faiss only, no torch

        check_factory(index_config, dim)  # IVF0, IDMap, refine wrappers, no inner product: refused before encoding


def _check_engine(engine: str, address: str | None, actors: int | None, *, world_size: int, append: bool,
                  dedup: float | None, sentence_workers: int | None) -> None:
    """``--engine`` and its options checked before the model loads (exit 2 naming the option); ``ray`` must import."""
    if engine not in ("local", "ray"):
        _fail(f"--engine must be local or ray, got {engine!r}")
    if engine == "local":
        if address is not None or actors is not None:
            _fail("--ray-address and --ray-actors apply to --engine ray")
        return
    clash = [name for name, on in (("torchrun/accelerate ($WORLD_SIZE > 1)", world_size > 1), ("--append", append),
                                   ("--dedup", dedup is not None), ("--sentence-workers", sentence_workers is not None))
             if on]
    if clash:
        _fail(f"--engine ray does not combine with {', '.join(clash)} (Ray runs the processes and segments "
              "sentences in its CPU stage; --dedup and --append run in one process)")
    if actors is not None and actors < 1:
        _fail(f"--ray-actors must be >= 1, got {actors}")
    from latechunk.ingest.ray_engine import import_ray

    try:
        import_ray()
    except ImportError as err:
        _fail(str(err))
    if address == "auto":  # no running cluster fails now, instead of Ray waiting for one that never comes
        try:
            from ray._private.services import canonicalize_bootstrap_address  # how ray.init resolves "auto"
        except ImportError:  # a Ray without this helper: ray.init reports it later
            canonicalize_bootstrap_address = None
        if canonicalize_bootstrap_address is not None:
            try:
                address = canonicalize_bootstrap_address("auto") or None
            except ConnectionError as err:
                _fail(f"--ray-address auto: no running Ray cluster found on this machine and $RAY_ADDRESS is not "
                      f"set ({err}); start one with `ray start --head`, or give HOST:PORT of its head")
    if address and address != "auto":  # a mistyped or unreachable head fails now, before --force empties DIR
        import socket

        hostport = address.removeprefix("ray://")
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            _fail(f"--ray-address must be auto, HOST:PORT or ray://HOST:PORT, got {address!r}")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as err:
            _fail(f"--ray-address {address}: cannot connect to {host}:{port} ({err.strerror or err}); is the head "
                  "node running (`ray start --head`) and is the port open?")


def _append(config, encoder, quiet: bool, strict: bool = False) -> None:
    """``embed --append``: add the inputs to the finished folder and print what was added and skipped; with
    ``strict``, exit :data:`STRICT_EXIT_CODE` when a document was skipped (not one already in the index)."""
    from latechunk.index import IndexTrainingError
    from latechunk.ingest.append import append

    try:
        res = append(config, encoder, progress=not quiet)
    except IndexTrainingError as err:
        _fail(f"{err}. Nothing was appended (the folder is as it was); `latechunk reindex {config.out} --index Flat` "
              "(or HNSW32) gives the folder an index type that can be built, then append again")
    except ValueError as err:
        _fail(str(err))
    from latechunk.ingest.assemble import ALREADY_INDEXED_REASON

    # the documents already in the index, one line (a re-appended folder of 100k unchanged files printed 50 lines
    # and a count); the manifest counts them (counts.already_indexed) and lists the others
    already = sum(1 for s in res.skipped if s.get("reason") == ALREADY_INDEXED_REASON)
    others = [s for s in res.skipped if s.get("reason") != ALREADY_INDEXED_REASON]
    if not res.added:  # nothing embedded: the folder is as it was, and records none of the skipped items
        _print_skipped(others, None)
        if already:
            typer.secho(f"skipped {already:,} document(s) already in the index (same id and text)",
                        fg=typer.colors.YELLOW, err=True)
        _warn_changed(res.skipped, {d["doc_id"] for d in res.manifest.get("documents", [])}, config.out)
        _warn_vanished(config, res)
        from latechunk.io import is_not_read

        # an up-to-date folder appended again (a daily cron job): success, nothing to do, though it holds a .pdf
        if all(is_not_read(str(s.get("reason", ""))) for s in others):
            typer.echo(f"nothing new to append to {config.out}: all {already:,} input document(s) are already in "
                       "the index; the folder is unchanged")
            return
        _fail(f"nothing appended to {config.out}: none of the {len(res.skipped)} input item(s) was embedded "
              "(the reasons are above); the folder is unchanged", code=1)
    c = res.manifest["counts"]
    typer.echo(f"appended {_documents_line(len(res.documents), len(res.documents) + len(res.skipped), res.skipped)} -> "
               f"{plural(res.chunks, 'chunk')} into {config.out} (now {plural(c['chunks'], 'chunk')} from "
               f"{plural(c['documents_embedded'], 'document')})")
    _print_skipped(others, config.out / "manifest.json")
    if already:
        typer.secho(f"skipped {already:,} document(s) already in the index (same id and text; counted in the "
                    "manifest's counts.already_indexed)", fg=typer.colors.YELLOW, err=True)
    _warn_changed(res.skipped, {d["doc_id"] for d in res.manifest.get("documents", [])}, config.out)
    _warn_vanished(config, res)
    # this append's documents only: the earlier ones' notes were printed when they were embedded
    _print_ingest_notes(res.manifest, config.out / "manifest.json", only={d["doc_id"] for d in res.documents},
                        quiet=quiet)
    if strict:
        _check_strict(others, config.out / "manifest.json")
