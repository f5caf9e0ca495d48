"""``latechunk embed --config FILE``: a run's settings as a TOML file, with the keys of run.json's ``settings``
(:meth:`EmbedConfig.to_dict <latechunk.config.EmbedConfig.to_dict>`; any of them left out keeps its default).

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
    factory = "HNSW32"
    precision = "int8"

    [record_fields]
    text = "body"
    metadata = ["lang", "tags"]

Besides run.json's keys it takes ``inputs`` (paths as on the command line, relative to the working directory),
``out``, ``force``, ``resume``, ``sentence_workers``, the model block's ``device`` and ``compile`` and the index
block's ``gpu``. The file is read as :meth:`EmbedConfig.from_dict <latechunk.config.EmbedConfig.from_dict>` reads
settings (not ``recorded``), so an unknown key or a bad value fails before any work, naming the file and the key.
The options it gives count as given on the command line (``--append`` and ``--resume`` compare them with the
folder's run.json); an option given on the command line overrides the file's. ``[model] trust_remote_code = true``
is taken from the file, which the user names on the command line (never from a folder's run.json).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from latechunk.config import EmbedConfig

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
_INDEX = {"factory": "index", "ef_construction": "ef_construction", "ef_search": "ef_search",
          "precision": "precision", "truncate_dim": "truncate_dim", "gpu": "index_gpu"}
"""The index block's keys -> embed's options (``metric``, ``rescore_multiplier`` and ``renormalize`` follow from
the others)."""
_FIELDS = {"id": "id_field", "text": "text_field", "title": "title_field", "metadata": "metadata_fields",
           "encoding_errors": "encoding_errors"}
"""The record_fields block's keys -> embed's options."""


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
        if key == "inputs_from_out":
            continue
        parts = value.items() if isinstance(value, Mapping) else [(None, value)]
        for sub, v in parts:
            try:
                EmbedConfig.from_dict({key: v} if sub is None else {key: {sub: v}}, out=out,
                                      inputs=inputs if inputs is not None else (Path(),))
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
            options.update({names[k]: getattr(part, k) for k in value if k in names})
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
    settings = {k: v for k, v in d.items() if k not in ("inputs", "out")}
    given = tuple(inputs) or None  # None: the file's inputs_from_out, relative to out (a run.json's settings)
    try:  # the inputs and the folder alone
        EmbedConfig.from_dict({k: v for k, v in settings.items() if k == "inputs_from_out"}, out=out, inputs=given)
    except ValueError as err:
        raise ValueError(f"--config {path}: {err}" if given is None or "inputs" in d or "out" in d else str(err)) from None
    try:
        config = EmbedConfig.from_dict(settings, out=out, inputs=given)
    except (ValueError, TypeError, AttributeError) as err:
        key = _bad_key(settings, given, out)
        raise ValueError(f"--config {path}: " + (f"{key}: " if key else "") + str(err)) from None
    return _options(settings, config), config.inputs, out
