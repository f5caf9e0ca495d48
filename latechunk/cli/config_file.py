"""``latechunk embed --config FILE``: a run's settings as a TOML file, with the keys of run.json's ``settings``
(:meth:`EmbedConfig.to_dict <latechunk.config.EmbedConfig.to_dict>`; any of them left out keeps its default) that
an embed option sets.

For example::

    inputs = ["docs/"]            # or INPUT on the command line
    out = "out/docs"              # or --out
    strategy = "heading:max_tokens=256"
    mode = "late"
    macro_window_overlap = 32
    dedup = 0.95

    [model]
    name = "sentence-transformers/all-MiniLM-L6-v2"
    dtype = "float32"

    [index]
    index = "hnsw"                # --index: flat, hnsw or a faiss index_factory string
    hnsw_m = 32                   # --hnsw-m
    precision = "int8"

    [record_fields]
    text = "body"
    metadata = ["lang", "tags"]

Besides those keys it takes ``inputs`` (paths as on the command line, relative to the working directory),
``out``, ``force``, ``resume``, ``sentence_workers``, the model block's ``device`` and ``compile`` and the index
block's ``index``, ``hnsw_m`` and ``gpu``. Keys run.json records but no option sets (``inputs_from_out``, the index
block's ``factory``, ``metric``, ``renormalize``, ``rescore_multiplier``, ``ntotal``, ``file``, the model's recorded
facts) are refused, naming what to set instead. The file is read as :meth:`EmbedConfig.from_dict <latechunk.config.EmbedConfig.from_dict>` reads
settings (not ``recorded``), so an unknown key or a bad value fails before any work, naming the file and the key.
The options it gives count as given on the command line (``--append`` and ``--resume`` compare them with the
folder's run.json); an option given on the command line overrides the file's. ``[model] trust_remote_code = true``
is taken from the file, which the user names on the command line (never from a folder's run.json).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from latechunk.config import EmbedConfig, IndexConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover  (Python 3.10)
    import tomli as tomllib

__all__ = ["config_file_options", "read_config_file"]

_PIPELINE = ("normalize", "include_special", "macro_window", "macro_window_overlap", "long_documents",
             "group_tokens", "sentence_workers", "late_pooling")
_MODEL = {"name": "model", "device": "device", "dtype": "dtype", "batch_tokens": "batch_tokens",
          "trust_remote_code": "trust_remote_code", "backend": "backend", "compile": "compile"}
"""The model block's keys -> embed's options."""
_INDEX = {"index": "index", "hnsw_m": "hnsw_m", "ef_construction": "ef_construction", "ef_search": "ef_search",
          "precision": "precision", "truncate_dim": "truncate_dim", "gpu": "index_gpu"}
"""The index block's keys -> embed's options (``index`` is ``--index``'s value, ``hnsw_m`` its M for ``hnsw``)."""
_FIELDS = {"id": "id_field", "text": "text_field", "title": "title_field", "metadata": "metadata_fields",
           "encoding_errors": "encoding_errors"}
"""The record_fields block's keys -> embed's options."""
_BLOCKS = {"model": _MODEL, "index": _INDEX, "record_fields": _FIELDS}
_TOP = frozenset({"inputs", "out", "strategy", "mode", *_PIPELINE, "dedup", "force", "resume", *_BLOCKS})
"""The top-level keys a file may set."""
_LEAVE_OUT = "leave it out"
_RECORDED_KEYS = {
    "inputs_from_out": "set inputs (paths relative to the working directory) or give INPUT instead",
    "index.factory": "set index (flat, hnsw or a faiss index_factory string) and hnsw_m (M of hnsw) instead",
    "index.metric": "it follows from precision (ip; hamming for ubinary): set precision instead",
    "index.renormalize": "it follows from normalize: set normalize instead",
    "index.rescore_multiplier": "it is fixed for precision ubinary: set precision instead",
    "index.ntotal": _LEAVE_OUT, "index.file": _LEAVE_OUT,
    "model.window": "set macro_window instead", "model.window_overlap": "set macro_window_overlap instead",
    **{f"model.{k}": _LEAVE_OUT for k in ("sha256", "dim", "max_length", "pooling", "document_prompt")},
}
"""Keys run.json records (facts of the run or values derived from its settings) that a file cannot set, with
what to set instead."""


def _refused_key(path: Path, d: Mapping) -> None:
    """Refuse a key of ``d`` that no embed option sets (a recorded fact, a derived value or an unknown key).

    Raises:
        ValueError: ``--config FILE: KEY: ...``, naming what to set instead, or listing the settable keys.
    """
    keys = [(k, None) for k in d]
    keys += [(k, sub) for k in _BLOCKS if isinstance(d.get(k), Mapping) for sub in d[k]]
    for key, sub in keys:
        name = key if sub is None else f"{key}.{sub}"
        if name in _RECORDED_KEYS:
            raise ValueError(f"--config {path}: {name}: run.json records it, but it is not a setting a file can "
                             f"give; {_RECORDED_KEYS[name]}")
        known = _TOP if sub is None else _BLOCKS[key]
        if (sub if sub is not None else key) not in known:
            where = "" if sub is None else f"the {key} block's "
            raise ValueError(f"--config {path}: {name}: unknown setting(s) {(sub or key)!r}; {where}settings are "
                             f"{', '.join(sorted(known))}")


def _index_block(path: Path, block: Mapping) -> dict:
    """The file's index block with ``index`` and ``hnsw_m`` replaced by the ``factory`` they give (what
    :meth:`EmbedConfig.from_dict <latechunk.config.EmbedConfig.from_dict>` reads)."""
    block = dict(block)
    value, hnsw_m = block.pop("index", None), block.pop("hnsw_m", None)
    if value is None:
        if hnsw_m is not None:
            raise ValueError(f"--config {path}: index.hnsw_m: it sets M of index 'hnsw'; give index = \"hnsw\" "
                             "with it, or leave it out")
        return block
    if not isinstance(value, str):
        raise ValueError(f"--config {path}: index.index: give flat, hnsw or a faiss index_factory string, "  # noqa: TRY004
                         f"got {value!r}")
    if hnsw_m is not None and value.strip().lower() != "hnsw":
        raise ValueError(f"--config {path}: index.hnsw_m: it sets M of index 'hnsw', but index is {value!r}; "
                         "give index = \"hnsw\" with it, or leave it out")
    try:
        factory = IndexConfig.from_option(value, **({"hnsw_m": hnsw_m} if hnsw_m is not None else {})).factory
    except (ValueError, TypeError) as err:
        raise ValueError(f"--config {path}: index.{'hnsw_m' if hnsw_m is not None and 'hnsw_m' in str(err) else 'index'}: "
                         f"{err}") from None
    return {**block, "factory": factory}


def read_config_file(path: str | Path) -> dict:
    """The settings of a ``--config`` TOML file.

    Args:
        path: The file.

    Returns:
        Its top-level table.

    Raises:
        ValueError: naming the file when it cannot be read or is not TOML.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as err:
        raise ValueError(f"--config {path}: cannot read it ({err.strerror or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"--config {path}: not a TOML file ({err})") from None


def _bad_key(d: Mapping, inputs, out) -> str | None:
    """The first key of ``d`` (``block.key`` inside a block) whose value alone the config refuses, or None."""
    for key, value in d.items():
        parts = value.items() if isinstance(value, Mapping) else [(None, value)]
        for sub, v in parts:
            try:
                EmbedConfig.from_dict({key: v} if sub is None else {key: {sub: v}}, out=out,
                                      inputs=inputs or (Path(),))
            except (ValueError, TypeError, AttributeError):
                return key if sub is None else f"{key}.{sub}"
    return None


def _options(d: Mapping, config: EmbedConfig) -> dict:
    """The ``embed`` options (:data:`latechunk.config.EMBED_OPTIONS` names) the keys of ``d`` give, each the
    value of the validated ``config`` (canonical: a SPEC with every parameter, ``bf16`` as ``bfloat16``)."""
    blocks = {"model": (_MODEL, config.model), "index": (_INDEX, config.index), "record_fields": (_FIELDS, config.fields)}
    options: dict = {}
    for key, value in d.items():
        if key == "strategy":
            options["strategy"] = config.strategy.spec
        elif key == "mode":
            options["mode"] = config.mode
        elif key in _PIPELINE:
            options[key] = getattr(config.pipeline, key)
        elif key in ("dedup", "force", "resume"):
            options[key] = getattr(config, key)
        elif key in blocks:
            names, part = blocks[key]
            names = {**names, "factory": "index"} if key == "index" else names
            attrs = {"factory": "factory"} if key == "index" else {}
            options.update({names[k]: getattr(part, attrs.get(k, k)) for k in value if k in names})
    return options


def config_file_options(path: str | Path, *, inputs: Sequence[Path] = (), out: Path | None = None) -> tuple[
        dict, tuple[Path, ...], Path | None]:
    """The options a ``--config`` file gives, checked as one run's settings.

    Args:
        path: The TOML file.
        inputs: INPUT given on the command line (they replace the file's ``inputs``).
        out: ``--out`` given on the command line (it replaces the file's ``out``).

    Returns:
        ``(options, inputs, out)``: the options by :data:`latechunk.config.EMBED_OPTIONS`' names (only those
        the file sets), and the inputs and output folder of the run (the command line's, else the file's).

    Raises:
        ValueError: naming the file (and the key, where one value alone is refused): not TOML, an unknown key, a
            bad value, no output folder.
    """
    path = Path(path)
    d = read_config_file(path)
    if not inputs and "inputs" in d:
        if isinstance(d["inputs"], str) or not isinstance(d["inputs"], Sequence):
            raise ValueError(f"--config {path}: inputs must be a list of paths, got {d['inputs']!r}")
        inputs = tuple(Path(p) for p in d["inputs"])
    if out is None and d.get("out") is not None:
        out = Path(d["out"])
    if out is None:
        raise ValueError(f"--config {path} gives no out: give --out DIR (or out = \"DIR\" in the file)")
    _refused_key(path, d)
    settings = {k: v for k, v in d.items() if k not in ("inputs", "out")}
    if isinstance(settings.get("index"), Mapping):
        settings["index"] = _index_block(path, settings["index"])
    given = tuple(inputs)
    try:  # the inputs and the folder alone
        EmbedConfig.from_dict({}, out=out, inputs=given)
    except ValueError as err:
        raise ValueError(f"--config {path}: {err}" if "inputs" in d or "out" in d else str(err)) from None
    try:
        config = EmbedConfig.from_dict(settings, out=out, inputs=given)
    except (ValueError, TypeError, AttributeError) as err:
        key = _bad_key(settings, given, out)
        raise ValueError(f"--config {path}: " + (f"{key}: " if key else "") + str(err)) from None
    return _options(settings, config), config.inputs, out
