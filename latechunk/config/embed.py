"""One ``latechunk embed`` run: :class:`EmbedConfig` (inputs, output folder and policy, and the model, pipeline
and index configs). Its :meth:`EmbedConfig.to_dict` is run.json's ``settings``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from latechunk.config._checks import _field_dict, _known_keys, _require
from latechunk.config.index import DEFAULT_HNSW_M, DEFAULT_INDEX, INDEX_RECORD_KEYS, IndexConfig
from latechunk.config.model import ModelConfig
from latechunk.config.pipeline import DEFAULT_MODE, DEFAULT_STRATEGY, PipelineConfig
from latechunk.types import RecordFields

if TYPE_CHECKING:
    from latechunk.strategies.base import Strategy


def _nested_input(inputs: tuple[Path, ...]) -> str:
    """Why two inputs would read the same documents twice (one is the other, or lies inside an input folder: its
    documents would get two ids, one relative to each input), or ``""``."""
    resolved = [p.resolve() for p in inputs]
    for i, a in enumerate(resolved):
        for j, b in enumerate(resolved):
            if i == j:
                continue
            if a == b and i < j:
                return (f"input {inputs[j]} is the input {inputs[i]} given again: its documents would be read twice; "
                        "give it once")
            # a folder inside a hidden one (.venv, .cache) is never walked by the reader of a: named, it is read once
            if (a != b and a.is_dir() and b.is_relative_to(a)
                    and not any(part.startswith(".") for part in b.relative_to(a).parts)):
                return (f"input {inputs[j]} is inside the input folder {inputs[i]}: its documents would be read twice "
                        f"(under two ids, one relative to each); give {inputs[i]} alone")
    return ""


def _require_utf8_path(path: Path, what: str) -> None:
    """Refuse a path whose bytes are not valid UTF-8 (os.fsdecode's surrogate escapes), also through the working
    directory it is under: run.json and the manifest record it, and JSON takes only valid text."""
    def shown(p: str) -> str:
        return p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

    given, full = os.fspath(path), os.fspath(path.absolute())
    try:
        full.encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    why = "run.json records every path as text"
    if shown(given) != given:
        raise ValueError(f"{what} '{shown(given)}' is not valid UTF-8 (its bytes shown as \\x escapes): {why}; "
                         "rename it") from None
    raise ValueError(f"{what} '{given}' is under '{shown(full)}', whose path is not valid UTF-8: {why}; give it "
                     "from another working directory or rename that folder") from None


RECORDED_MODEL_FACTS = frozenset({"sha256", "dim", "max_length", "window", "window_overlap", "pooling",
                                  "document_prompt"})
"""Keys of run.json's ``model`` block that are facts of the loaded model (:func:`latechunk.ingest.run_settings`
records them beside the settings), not settings: :meth:`EmbedConfig.from_dict` with ``recorded=True`` reads past
them. (``name`` and ``dtype`` are recorded as the encoder resolved them, and read as settings.)"""

RECORDED_RUN_OPTIONS = frozenset({"batch_tokens"})
"""Keys of run.json's ``model`` block that record how that run ran, not a setting of its output: the token budget
of a forward batch (batches are padding-invariant, so it never changes a vector; :func:`latechunk.ingest.run_settings`
records the budget used). :meth:`EmbedConfig.from_dict` with ``recorded=True`` reads past them, and a resumed run or
an append may use another (:data:`latechunk.ingest.folder.NOT_COMPARED`)."""

_RECORDED = ("strategy", "mode", "normalize", "include_special", "macro_window", "macro_window_overlap",
             "long_documents", "group_tokens", "index", "model")
"""The keys :meth:`EmbedConfig.to_dict` always writes (the others only where they are set)."""
_PIPELINE_KEYS = ("normalize", "include_special", "macro_window", "macro_window_overlap", "long_documents",
                  "group_tokens", "sentence_workers", "late_pooling")
"""The settings of :meth:`EmbedConfig.to_dict` (and options of :meth:`EmbedConfig.with_overrides`) that are
:class:`PipelineConfig` fields of the same name."""
_SETTINGS_KEYS = frozenset({"inputs_from_out", "strategy", "mode", *_PIPELINE_KEYS, "dedup", "record_fields",
                            "index", "model", "inputs", "out", "force", "resume"})
"""The keys :meth:`EmbedConfig.from_dict` reads: :meth:`EmbedConfig.to_dict`'s, ``sentence_workers``, and the
run's ``inputs`` (paths as given), ``out``, ``force`` and ``resume``."""
_RECORD_FIELDS_KEYS = frozenset({"id", "text", "title", "metadata", "encoding_errors"})

_MODEL_OPTIONS = {"model": "name", "device": "device", "dtype": "dtype", "batch_tokens": "batch_tokens",
                  "trust_remote_code": "trust_remote_code", "backend": "backend", "compile": "compile"}
_INDEX_OPTIONS = {"ef_construction": "ef_construction", "ef_search": "ef_search", "precision": "precision",
                  "truncate_dim": "truncate_dim", "index_gpu": "gpu"}
_FIELD_OPTIONS = {"id_field": "id", "text_field": "text", "title_field": "title", "metadata_fields": "metadata",
                  "encoding_errors": "encoding_errors"}
_OWN_OPTIONS = ("inputs", "out", "force", "resume", "dedup")
EMBED_OPTIONS: tuple[str, ...] = (*_MODEL_OPTIONS, "strategy", "mode", *_PIPELINE_KEYS, "index", "hnsw_m",
                                  *_INDEX_OPTIONS, *_FIELD_OPTIONS, *_OWN_OPTIONS)
"""The option names of :meth:`EmbedConfig.with_overrides` and :meth:`EmbedConfig.option_defaults`: those of
``latechunk embed`` (``--batch-tokens`` -> ``batch_tokens``), each one setting of :class:`ModelConfig`
(``model`` is its ``name``), :class:`PipelineConfig` (``strategy``, ``mode``: its one strategy and mode),
:class:`IndexConfig` (``index``: the ``--index`` value, with ``hnsw_m`` for ``hnsw``; ``index_gpu`` is its
``gpu``), :class:`~latechunk.types.RecordFields` (``id_field`` ... ``metadata_fields``) or the run itself."""


def _inputs_from_out(relative, out: Path) -> tuple[Path, ...]:
    """run.json's ``inputs_from_out`` (paths relative to the output folder, resolved) as paths: relative to the
    working directory as ``out`` is where that names the same file, else absolute."""
    paths = []
    for rel in relative:
        target = Path(os.path.normpath(out.resolve() / rel))
        near = Path(os.path.normpath(out / rel))
        paths.append(near if near.resolve() == target.resolve() else target)
    return tuple(paths)


@dataclass(frozen=True)
class EmbedConfig:
    """One ``latechunk embed`` run.

    Attributes:
        inputs: Input paths (files, folders, ``.jsonl``, ``.parquet``, ``.arrow``, Hugging Face ``save_to_disk``
            folders; see :func:`latechunk.io.iter_inputs`); each must exist.
        out: The output folder (``index.faiss``, ``chunks.parquet``, ``manifest.json``, shards).
        model: The encoder.
        pipeline: Exactly one strategy and one mode.
        index: The FAISS index.
        force: Remove a previous output in ``out`` first (never files latechunk did not write).
        resume: Continue an interrupted run in ``out`` (its settings must equal these).
        dedup: ``--dedup``: drop a chunk whose cosine to an earlier kept chunk is at least this threshold
            (``0 < dedup <= 1``; :mod:`latechunk.dedup`); None: off. A setting of the run (run.json).
        fields: Which record field or column holds a record's id, text and title (``--id-field``,
            ``--text-field``, ``--title-field``; :class:`RecordFields`). A setting of the run (run.json, only
            where it differs from the defaults), so ``--resume``, ``--append`` and ``verify`` read the same way.

    Raises:
        ValueError: on a missing input, an input given twice or inside an input folder, an input or ``out`` whose
            path is not valid UTF-8, ``out`` that is a file or an input folder, both ``force`` and ``resume``, a pipeline
            with other than one strategy and one mode, or a dedup threshold outside ``(0, 1]``.
    """

    inputs: tuple[Path, ...]
    out: Path
    pipeline: PipelineConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    force: bool = False
    resume: bool = False
    dedup: float | None = None
    fields: RecordFields = field(default_factory=lambda: RecordFields())

    def __post_init__(self) -> None:
        inputs = tuple(Path(p) for p in ([self.inputs] if isinstance(self.inputs, (str, os.PathLike)) else self.inputs))
        _require(bool(inputs), "give at least one input path")
        missing = [str(p) for p in inputs if not p.exists()]
        if missing:
            from latechunk.io import missing_inputs_message

            raise ValueError(missing_inputs_message(missing))
        for p in inputs:
            _require_utf8_path(p, "the input path")
        out = Path(self.out)
        _require_utf8_path(out, "--out")
        _require(not (out.exists() and not out.is_dir()), f"--out {out} exists and is not a folder")
        same = [str(p) for p in inputs if p.is_dir() and out.resolve() == p.resolve()]
        first = same[0] if same else ""
        _require(not same, f"--out {out} is the input folder {first}: the index would be written among the "
                 f"documents (a folder inside it, e.g. --out {first}/index, is fine: it is never read back)")
        _require(not (self.force and self.resume),
                 "--force (start over) and --resume (continue) exclude each other; give one")
        nested = _nested_input(inputs)
        _require(not nested, nested)
        _require(len(self.pipeline.strategies) == 1, "embed takes exactly one strategy")
        _require(len(self.pipeline.modes) == 1, "embed takes exactly one mode: late, naive, contextual or fused")
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "out", out)
        if self.dedup is not None:
            from latechunk.dedup import check_threshold

            object.__setattr__(self, "dedup", check_threshold(self.dedup))
        if self.index.renormalize != self.pipeline.normalize:
            # truncated vectors are renormalised exactly when the run normalises (without truncate_dim the setting
            # is unused: set all the same, so that a config read back from its settings equals it)
            object.__setattr__(self, "index", dataclasses.replace(self.index, renormalize=self.pipeline.normalize))

    @property
    def strategy(self) -> Strategy:
        """The run's one strategy."""
        return self.pipeline.strategies[0]

    @property
    def mode(self) -> str:
        """The run's one mode, ``late``, ``naive``, ``contextual`` or ``fused``."""
        return self.pipeline.modes[0]

    def to_dict(self) -> dict:
        """The run's settings, as recorded in ``run.json`` and the manifest (a resumed run must match them).

        Input paths are stored relative to the output folder (never absolute), so a folder can move together
        with its inputs; the device, worker count and output policy are not settings (they never change the
        output).

        Returns:
            ``inputs_from_out``, ``strategy`` (canonical SPEC), ``mode``, ``normalize``, ``include_special``,
            ``macro_window`` and ``macro_window_overlap`` (tokens, or None), ``long_documents``,
            ``group_tokens`` (tokens), ``index`` (:meth:`IndexConfig.to_dict`), ``model`` (name, dtype, batch_tokens,
            trust_remote_code, and backend when it is not torch), and ``late_pooling``, ``dedup`` and ``record_fields`` only where they are set (so that folders
            written before the settings existed still resume).
        """
        out_abs = self.out.resolve()
        p = self.pipeline
        late = {"late_pooling": p.late_pooling} if p.late_pooling is not None else {}
        if self.dedup is not None:
            late["dedup"] = self.dedup
        if self.fields.to_dict():
            late["record_fields"] = self.fields.to_dict()
        return {
            "inputs_from_out": [os.path.relpath(Path(i).resolve(), out_abs) for i in self.inputs],
            "strategy": self.strategy.spec,
            "mode": self.mode,
            "normalize": p.normalize,
            "include_special": p.include_special,
            "macro_window": p.macro_window,
            "macro_window_overlap": p.macro_window_overlap,
            "long_documents": p.long_documents,
            "group_tokens": p.group_tokens,
            **late,
            "index": self.index.to_dict(),
            "model": {"name": self.model.name, "dtype": self.model.dtype, "batch_tokens": self.model.batch_tokens,
                      "trust_remote_code": self.model.trust_remote_code,
                      # only when not torch, so folders written before backends existed still resume
                      **({"backend": self.model.backend} if self.model.backend != "torch" else {})},
        }

    @classmethod
    def from_dict(cls, d: Mapping, *, out: str | os.PathLike | None = None,
                  inputs: Sequence[str | os.PathLike] | None = None, recorded: bool = False) -> EmbedConfig:
        """The config of a settings mapping: the inverse of :meth:`to_dict`, so
        ``EmbedConfig.from_dict(c.to_dict(), out=c.out) == c`` (``out`` is where run.json lies, so the settings
        do not record it) for every config whose run options (device, ``compile``, sentence workers, index
        ``gpu``, ``force``, ``resume``: never settings of the output) are at their defaults.

        Also the settings of a file (``latechunk embed --config``): the same keys, any of them left out at its
        default, plus ``inputs`` (paths as given), ``out``, ``force``, ``resume``, ``sentence_workers``, and the
        model block's ``device`` and ``compile``, the index block's ``gpu``.

        Args:
            d: The settings, as :meth:`to_dict` writes them (``model``, ``index`` and ``record_fields`` nested).
            out: The output folder; default ``d["out"]``. ``inputs_from_out`` is relative to it.
            inputs: The input paths; default ``d["inputs"]``, else ``d["inputs_from_out"]`` (relative to ``out``).
            recorded: ``d`` is a run.json's ``settings`` (what :func:`latechunk.ingest.run_settings` wrote): every
                key :meth:`to_dict` always writes must be there, the model's recorded facts
                (:data:`RECORDED_MODEL_FACTS`) are read past, and so is ``model.batch_tokens`` (the budget that
                run used, never a setting: the config leaves it to this device's default).

        Returns:
            The validated :class:`EmbedConfig`.

        Raises:
            ValueError: on an unknown key (naming it, in ``model``, ``index`` and ``record_fields`` too), no
                ``out`` or no inputs, with ``recorded`` a key missing (naming it), or as the constructors.
        """
        _known_keys(d, _SETTINGS_KEYS, "run.json's settings" if recorded else "embed settings")
        out = d.get("out") if out is None else out
        _require(out is not None, "give the output folder (out=): the settings do not record it")
        out = Path(out)
        missing = [k for k in _RECORDED if k not in d] if recorded else []
        _require(not missing, f"{out}: run.json's settings lack {missing[0] if missing else ''!r} (written by "
                 "another latechunk version?); embed the documents into a new folder")
        model = dict(d.get("model") or {})
        if recorded:
            model = {k: v for k, v in model.items() if k not in RECORDED_MODEL_FACTS | RECORDED_RUN_OPTIONS}
        index = d.get("index") or {}
        _known_keys(index, INDEX_RECORD_KEYS, "index settings")
        fields = d.get("record_fields") or {}
        _known_keys(fields, _RECORD_FIELDS_KEYS, "record_fields")
        if inputs is None:
            inputs = d["inputs"] if "inputs" in d else _inputs_from_out(d.get("inputs_from_out") or (), out)
        return cls(
            inputs=tuple(Path(p) for p in inputs),
            out=out,
            pipeline=PipelineConfig(strategies=(d.get("strategy", DEFAULT_STRATEGY),),
                                    modes=(d.get("mode", DEFAULT_MODE),),
                                    **{k: d[k] for k in _PIPELINE_KEYS if k in d}),
            model=ModelConfig.from_dict(model),
            index=IndexConfig.from_dict({"factory": IndexConfig.factory, **index}),
            force=d.get("force", False),
            resume=d.get("resume", False),
            dedup=d.get("dedup"),
            fields=RecordFields.from_dict(fields),
        )

    def with_overrides(self, given: Mapping | None = None, /, **options) -> EmbedConfig:
        """This config with the options given replaced: what the command line does with the options given over
        a folder's settings (``--resume``, ``--append``, ``--reuse``) or a ``--config`` file.

        Args:
            given: ``{option: value}`` by the names of :data:`EMBED_OPTIONS` (``latechunk embed``'s options,
                ``--batch-tokens`` -> ``batch_tokens``); a value None is not given (kept).
            **options: More of them.

        Returns:
            A new, validated :class:`EmbedConfig` (this one when nothing is given). ``index`` is an ``--index``
            value (``flat``, ``hnsw`` = ``HNSW{hnsw_m}``, or a faiss string); the other index settings are kept
            unless given.

        Raises:
            ValueError: on an unknown option (naming it), ``hnsw_m`` without ``index="hnsw"``, or anything the
                constructors refuse.
        """
        given = {k: v for k, v in {**(given or {}), **options}.items() if v is not None}
        _known_keys(given, EMBED_OPTIONS, "embed options")
        if not given:
            return self
        _require("hnsw_m" not in given or str(given.get("index", "")).strip().lower() == "hnsw",
                 f"hnsw_m (--hnsw-m) sets M of index 'hnsw' (--index hnsw), but the index is "
                 f"{given.get('index', self.index.factory)}; give index 'hnsw' with it, or leave it out")
        replace = dataclasses.replace
        model = replace(self.model, **{a: given[k] for k, a in _MODEL_OPTIONS.items() if k in given})
        pipeline = replace(self.pipeline, **{k: given[k] for k in _PIPELINE_KEYS if k in given},
                           **({"strategies": (given["strategy"],)} if "strategy" in given else {}),
                           **({"modes": (given["mode"],)} if "mode" in given else {}))
        index = {**_field_dict(self.index), **{a: given[k] for k, a in _INDEX_OPTIONS.items() if k in given}}
        if "index" in given:
            del index["factory"]
            index = IndexConfig.from_option(given["index"], hnsw_m=given.get("hnsw_m", DEFAULT_HNSW_M), **index)
        else:
            index = IndexConfig(**index)
        fields = replace(self.fields, **{a: given[k] for k, a in _FIELD_OPTIONS.items() if k in given})
        return replace(self, model=model, pipeline=pipeline, index=index, fields=fields,
                       **{k: given[k] for k in _OWN_OPTIONS if k in given})

    @staticmethod
    def option_defaults() -> dict:
        """The default of every option of :data:`EMBED_OPTIONS` but ``inputs`` and ``out``, read from the config
        classes (the one definition of each): what ``latechunk embed`` uses for an option not given.

        Returns:
            ``{option: default}``, e.g. ``strategy`` :data:`~latechunk.config.DEFAULT_STRATEGY`, ``index``
            :data:`~latechunk.config.index.DEFAULT_INDEX` (``flat``), ``hnsw_m`` 32, ``ef_construction`` 200.
        """
        model, index, fields = _field_dict(ModelConfig()), _field_dict(IndexConfig()), _field_dict(RecordFields())
        pipeline = {f.name: f.default for f in dataclasses.fields(PipelineConfig) if f.name in _PIPELINE_KEYS}
        own = {f.name: f.default for f in dataclasses.fields(EmbedConfig) if f.name in _OWN_OPTIONS[2:]}
        return {**{k: model[a] for k, a in _MODEL_OPTIONS.items()}, "strategy": DEFAULT_STRATEGY,
                "mode": DEFAULT_MODE, **pipeline, "index": DEFAULT_INDEX, "hnsw_m": DEFAULT_HNSW_M,
                **{k: index[a] for k, a in _INDEX_OPTIONS.items()}, **{k: fields[a] for k, a in _FIELD_OPTIONS.items()},
                **own}
