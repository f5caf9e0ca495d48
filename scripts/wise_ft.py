#!/usr/bin/env python3
"""WiSE-FT: a model whose weights interpolate a base model and its fine-tuned copy (issue 14).

    weights = (1 - alpha) * base + alpha * trained        (every floating-point tensor of the transformer)

Wortsman et al., "Robust fine-tuning of zero-shot models" (CVPR 2022, arXiv:2109.01903): the interpolation keeps
most of the fine-tuning's gain on its own distribution and can beat both endpoints under distribution shift.
Here: a base encoder and the model ``latechunk train`` wrote from it (same architecture and tokenizer).

The output folder is the *trained* model's folder (its sentence-transformers config, pooling, prompts,
tokenizer and ``latechunk_train.json``) with ``model.safetensors`` replaced by the interpolation, plus
``wise_ft.json`` recording both inputs (their weight sha256), ``alpha`` and this command. ``--model OUT`` loads it.

    python3 scripts/wise_ft.py --base bundled --trained models/xquad --alpha 0.5 --out models/xquad_wise05
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def _weights_file(folder: Path) -> Path:
    path = folder / "model.safetensors"
    if not path.is_file():
        raise SystemExit(f"{folder}: no model.safetensors (a Hugging Face / sentence-transformers folder is needed)")
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def interpolate(base: dict, trained: dict, alpha: float) -> dict:
    """``(1 - alpha) * base + alpha * trained`` for every floating-point tensor of ``trained``; other tensors (and
    buffers the base lacks) are the trained model's.

    Args:
        base, trained: State dicts (name -> tensor) of the same architecture.
        alpha: Weight of the trained model, in [0, 1] (0: the base, 1: the trained model).

    Returns:
        The interpolated state dict (float tensors in the trained model's dtype).

    Raises:
        ValueError: on alpha outside [0, 1], a floating-point tensor of either model missing from the other, or
            a shape that differs.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    lost = [n for n, t in base.items() if t.is_floating_point() and n not in trained]
    if lost:
        raise ValueError(f"tensor {lost[0]!r} of the base model is not in the trained model (another architecture?)")
    out = {}
    for name, t in trained.items():
        if not t.is_floating_point():
            out[name] = t
            continue
        if name not in base:
            raise ValueError(f"tensor {name!r} of the trained model is not in the base model (another architecture?)")
        b = base[name]
        if tuple(b.shape) != tuple(t.shape):
            raise ValueError(f"tensor {name!r}: shape {tuple(b.shape)} in the base, {tuple(t.shape)} in the trained model")
        out[name] = ((1.0 - alpha) * b.double() + alpha * t.double()).to(t.dtype).contiguous()
    return out


def main(argv: Sequence[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the base model folder, or 'bundled' (all-MiniLM-L6-v2)")
    ap.add_argument("--trained", required=True, type=Path, help="the folder `latechunk train` wrote from the base")
    ap.add_argument("--alpha", type=float, default=0.5, help="weight of the trained model (default 0.5, the paper's)")
    ap.add_argument("--out", required=True, type=Path, help="the new model folder (must not exist)")
    args = ap.parse_args(argv)
    from safetensors.torch import load_file, save_file

    from latechunk.models import resolve_model_path

    base = Path(resolve_model_path(None if args.base == "bundled" else args.base))
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")
    b_file, t_file = _weights_file(base), _weights_file(args.trained)
    train_record = args.trained / "latechunk_train.json"
    if train_record.is_file():  # a model latechunk train wrote names its base: warn when it is another
        try:
            named = json.loads(train_record.read_text(encoding="utf-8")).get("base_model")
            same = named is None or Path(resolve_model_path(named)).resolve() == base.resolve()
        except (ValueError, OSError, AttributeError):  # a damaged record, a base that no longer resolves
            named, same = "(unreadable latechunk_train.json)", False
        if not same:
            print(f"warning: {args.trained} was trained from {named}, not from {base}: the interpolation mixes two "
                  "different starting points", file=sys.stderr)
    try:
        mixed = interpolate(load_file(b_file), load_file(t_file), args.alpha)
    except ValueError as err:
        raise SystemExit(str(err)) from err
    shutil.copytree(args.trained, args.out)
    save_file(mixed, args.out / "model.safetensors", metadata={"format": "pt"})
    record = {"method": "WiSE-FT (arXiv:2109.01903): (1 - alpha) * base + alpha * trained", "alpha": args.alpha,
              "base": str(base.resolve()), "base_sha256": _sha256(b_file), "trained": str(args.trained.resolve()),
              "trained_sha256": _sha256(t_file)}
    _write_record(args.out / "wise_ft.json", record, "wise_ft.py", argv)
    print(f"written: {args.out} (alpha {args.alpha})")
    return args.out


def _write_record(path: Path, record: dict, script: str, argv: Sequence[str] | None) -> None:
    """Write a model folder's record of how it was made: ``record`` plus the command line (``scripts/<script>``
    with ``argv``, else this process's arguments), as indented JSON."""
    record = {**record, "command": f"python3 scripts/{script} " + " ".join(sys.argv[1:] if argv is None else argv)}
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
