"""Checkpoints of an unfinished training run (``--checkpoint-every``, ``--resume``): written atomically in
safetensors (no pickle), read back, and the ``--out`` folder checked before a run starts.

Tests: ``tests/train/test_train.py``, ``tests/model_loading/test_safety.py``.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from latechunk.train.config import TRAIN_FILE

if TYPE_CHECKING:
    import torch

    from latechunk.train.config import TrainConfig

CHECKPOINT_DIR = ".checkpoint"
"""The folder inside ``--out`` where an unfinished run keeps its last checkpoint (removed when the run ends)."""
CHECKPOINT_FILE = "state.safetensors"
"""The checkpoint in :data:`CHECKPOINT_DIR`: tensors in safetensors, the rest as JSON in its metadata."""
DEFAULT_CHECKPOINT_EVERY = 50
"""Optimiser steps between two checkpoints by default (``--checkpoint-every``)."""

def _random_state(state) -> list:
    """A ``random.Random`` state as JSON (``[version, [625 ints], gauss_next]``)."""
    return [state[0], list(state[1]), state[2]]


def _save_checkpoint(out: Path, model, opt, sched, order: random.Random, info: dict) -> None:
    """Write ``out/.checkpoint/state.safetensors`` atomically (a temporary file, then a rename: a kill while it
    writes leaves the previous checkpoint): the model's weights, AdamW's state and the torch/numpy random
    generators as tensors, everything else (``info``, AdamW's parameter groups, the schedule, the Python random
    generators) as JSON in the file's metadata. No pickle (``tests/model_loading/test_safety.py``)."""
    import torch
    from safetensors.torch import save_file

    def cpu(t) -> torch.Tensor:
        return (t.detach().to("cpu") if torch.is_tensor(t) else torch.tensor(t)).clone().contiguous()

    tensors = {f"model.{k}": cpu(v) for k, v in model.state_dict().items()}
    sd = opt.state_dict()
    for idx, st in sd["state"].items():
        tensors.update({f"optimizer.{idx}.{name}": cpu(v) for name, v in st.items()})
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors.update({f"rng.cuda.{i}": cpu(t) for i, t in enumerate(torch.cuda.get_rng_state_all())})
    np_state = np.random.get_state()
    tensors["rng.numpy"] = torch.from_numpy(np.asarray(np_state[1], dtype=np.int64))
    info = {**info, "param_groups": sd["param_groups"], "scheduler": sched.state_dict(),
            "rng_numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])],
            "rng_python": _random_state(random.getstate()), "order_rng": _random_state(order.getstate())}
    folder = out / CHECKPOINT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "state.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"latechunk": json.dumps(info)})
    os.replace(tmp, folder / CHECKPOINT_FILE)


def _read_checkpoint(path: Path) -> tuple[dict, dict]:
    """``(info, tensors)`` of a checkpoint file (:func:`_save_checkpoint`)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        info = json.loads((f.metadata() or {})["latechunk"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    return info, tensors


def _restore(state: tuple[dict, dict], model, opt, sched, order: random.Random) -> None:
    """Put a checkpoint's weights, AdamW and schedule state and random generators back."""
    import torch

    info, tensors = state
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")})
    opt_state: dict[int, dict] = {}
    for k, v in tensors.items():
        if k.startswith("optimizer."):
            _, idx, name = k.split(".", 2)
            opt_state.setdefault(int(idx), {})[name] = v
    groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in info["param_groups"]]
    opt.load_state_dict({"state": opt_state, "param_groups": groups})
    sched.load_state_dict(info["scheduler"])
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[k] for k in sorted((k for k in tensors if k.startswith("rng.cuda.")),
                                       key=lambda k: int(k.rsplit(".", 1)[1]))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    name, pos, has_gauss, cached = info["rng_numpy"]
    np.random.set_state((name, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss, cached))
    v, st, gauss = info["rng_python"]
    random.setstate((v, tuple(st), gauss))
    v, st, gauss = info["order_rng"]
    order.setstate((v, tuple(st), gauss))


#: TrainConfig fields whose ``latechunk train`` option is not ``--`` + the name with dashes
_OPTION_NAMES = {"precision": "--dtype"}


def _check_out(out: Path, config: TrainConfig, resume: bool) -> tuple[dict, dict] | None:
    """Refuse an ``--out`` that is a file or holds anything but a checkpoint of this run; with ``resume``, the
    checkpoint (:func:`_read_checkpoint`)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a new folder for the trained model")
    folder = out / CHECKPOINT_DIR
    state_file = folder / CHECKPOINT_FILE
    others = sorted(p.name for p in out.iterdir() if p.name != CHECKPOINT_DIR) if out.is_dir() else []
    if others:
        what = ("a trained model (latechunk_train.json): this run finished" if TRAIN_FILE in others
                else "files: " + ", ".join(others[:3]) + (" ..." if len(others) > 3 else ""))
        raise ValueError(f"--out {out} is a folder that is not empty ({what}); give a new folder for the trained "
                         "model")
    if not resume:
        if folder.exists():
            raise ValueError(f"--out {out} holds the checkpoint of a training run that did not finish: --resume "
                             "continues it (with the same options), or remove the folder to start again")
        return None
    if not state_file.is_file():
        raise ValueError(f"--resume: {out} holds no checkpoint ({CHECKPOINT_DIR}/{CHECKPOINT_FILE}) to continue "
                         "from; train without --resume")
    state = _read_checkpoint(state_file)
    old = state[0].get("config") or {}
    new = config.to_dict()
    # the device may change (a run moved to another machine), and --dtype is compared as what it resolves to
    # (train() checks that: auto and bfloat16 are one setting on a bf16 CPU; a trial saw them refused)
    diff = [f"{_OPTION_NAMES.get(k, '--' + k.replace('_', '-'))} {old.get(k)!r} there, {new.get(k)!r} now"
            for k in sorted(set(old) | set(new))
            if k not in ("out", "device", "precision") and old.get(k) != new.get(k)]
    if diff:
        raise ValueError(f"--resume: the checkpoint in {out} is of a run with other settings (" + "; ".join(diff)
                         + "): give the same options, or train into a new folder")
    return state
