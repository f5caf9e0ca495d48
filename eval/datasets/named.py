"""Datasets by name or path: the shared data folder (:func:`data_root`, ``$LATECHUNK_DATA``), the bundled sets'
places (:func:`dataset_path`), and :func:`load_dataset`, which picks the loader a path's contents call for.
"""

from __future__ import annotations

import os
from pathlib import Path

from .beir import load_beir
from .chroma import load_chroma
from .dataset import EvalDataset
from .squad import load_squad

DATA_ENV_VAR = "LATECHUNK_DATA"
"""Environment variable naming the folder that holds ``chroma_chunking_eval/`` and ``xquad_en/``."""

_NAMED = {
    "chroma": ("chroma_chunking_eval", "chroma"),
    "xquad": ("xquad_en/xquad.en.json", "squad"),
}


def data_root() -> Path:
    """The shared data folder: ``$LATECHUNK_DATA`` if set, else ``<repo root>/../shared/data``.

    The repo root is the parent of the ``eval/`` folder this package is in, so the default does not depend on
    the working directory.

    Returns:
        The folder (not checked to exist).
    """
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"  # eval/datasets/named.py


def dataset_path(spec: str | os.PathLike) -> Path:
    """The file or folder a dataset spec names: a known name under :func:`data_root`, else the path as given.

    Args:
        spec: ``"chroma"``, ``"xquad"`` or a path.

    Returns:
        The path (not checked to exist).
    """
    text = os.fspath(spec)
    return data_root() / _NAMED[text][0] if text in _NAMED else Path(text)


def load_dataset(spec: str | os.PathLike) -> EvalDataset:
    """Load a dataset by name (``"chroma"``, ``"xquad"``) or by path.

    Names resolve under :func:`data_root`. A path dispatches on what it holds: a folder with
    ``questions_df.csv`` is Chroma's format (named after the folder), a folder with ``corpus.jsonl`` is BEIR, a
    ``.json`` file is SQuAD/XQuAD (named after the file), and so is a folder holding exactly one ``.json`` file
    (named after the folder). SQuAD v2.0's unanswerable questions are left out (a span metric needs an answer)
    and counted in the dataset's ``notes``.

    Args:
        spec: ``"chroma"``, ``"xquad"`` or a path.

    Returns:
        The :class:`EvalDataset`.

    Raises:
        ValueError: if ``spec`` is neither a known name nor a recognisable path, or as the loader it picks.
        FileNotFoundError: if a known name resolves to a missing path (see :data:`DATA_ENV_VAR`).
    """
    text = os.fspath(spec)
    if text in _NAMED:
        kind = _NAMED[text][1]
        path = dataset_path(text)
        if not path.exists():
            raise FileNotFoundError(
                f"load_dataset: {text!r} resolves to {path}, which does not exist; set {DATA_ENV_VAR} to the "
                "folder holding chroma_chunking_eval/ and xquad_en/"
            )
        return load_chroma(path, name=text, id_prefix="") if kind == "chroma" else load_squad(path, name=text,
                                                                                skip_unanswerable=True)
    path = Path(text)
    if path.is_dir() and (path / "questions_df.csv").is_file():
        return load_chroma(path)
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        return load_beir(path)
    if path.is_file() and path.suffix.lower() == ".json":
        return load_squad(path, skip_unanswerable=True)
    if path.is_dir():
        jsons = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".json")
        if len(jsons) == 1:  # a folder holding one SQuAD file: named after the folder
            return load_squad(jsons[0], name=path.resolve().name, skip_unanswerable=True)
        if len(jsons) > 1:
            raise ValueError(
                f"load_dataset: {text!r} holds {len(jsons)} .json files ({', '.join(p.name for p in jsons[:5])}"
                f"{', ...' if len(jsons) > 5 else ''}); name the SQuAD file itself"
            )
    raise ValueError(
        f"load_dataset: {text!r} is not a known name ({sorted(_NAMED)}) nor a Chroma folder "
        "(questions_df.csv), a BEIR folder (corpus.jsonl), a SQuAD .json file or a folder holding one"
    )
