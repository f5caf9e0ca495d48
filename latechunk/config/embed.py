"""One ``latechunk embed`` run: :class:`EmbedConfig` (inputs, output folder and policy, and the model, pipeline
and index configs). Its :meth:`EmbedConfig.to_dict` is run.json's ``settings``."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from latechunk.config._checks import _require
from latechunk.config.index import IndexConfig
from latechunk.config.model import ModelConfig
from latechunk.config.pipeline import PipelineConfig
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
        if self.index.truncate_dim is not None and self.index.renormalize != self.pipeline.normalize:
            # truncated vectors are renormalised exactly when the run normalises
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
