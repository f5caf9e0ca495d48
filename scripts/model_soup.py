#!/usr/bin/env python3
"""A uniform model soup: one model whose weights are the mean of several fine-tunes of one base (issue 14).

    weights = (model_1 + model_2 + ... + model_n) / n        (every floating-point tensor of the transformer)

Wortsman et al., "Model soups: averaging weights of multiple fine-tuned models improves accuracy without increasing
inference time" (ICML 2022, arXiv:2203.05482), the "uniform soup": fine-tunes of one pre-trained model (here:
``latechunk train`` runs that differ only in ``--seed``) lie in one basin, and their average keeps their gain while
averaging out each run's noise. One model, so encoding costs what one fine-tune costs.

The output folder is the first model's folder (its sentence-transformers config, pooling, prompts, tokenizer and
``latechunk_train.json``) with ``model.safetensors`` replaced by the mean, plus ``model_soup.json`` recording the
inputs (their weight sha256) and this command. ``--model OUT`` loads it.

    python3 scripts/model_soup.py --models models/seed0 models/seed1 models/seed2 --out models/soup3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wise_ft import _sha256, _weights_file, _write_record  # scripts/ is not a package


def uniform_soup(models: Sequence[dict]) -> dict:
    """The mean of several state dicts of one architecture.

    Args:
        models: Two or more state dicts (name -> tensor) with the same names and shapes.

    Returns:
        The soup: each floating-point tensor the mean of the models' (computed in float64, stored in the first
        model's dtype); every other tensor (integer buffers such as position ids) the first model's, which must
        equal the others'.

    Raises:
        ValueError: on fewer than two models, a tensor one model has and another lacks, a shape that differs, or an
            integer tensor that differs between models (not fine-tunes of one base).
    """
    if len(models) < 2:
        raise ValueError(f"a soup needs at least two models, got {len(models)}")
    first = models[0]
    for i, other in enumerate(models[1:], start=2):
        if set(other) != set(first):
            name = min(set(other) ^ set(first))
            raise ValueError(f"tensor {name!r} is in one of model 1 and model {i} only (another architecture?)")
    out = {}
    for name, t in first.items():
        for i, other in enumerate(models[1:], start=2):
            o = other[name]
            if tuple(o.shape) != tuple(t.shape):
                raise ValueError(f"tensor {name!r}: shape {tuple(t.shape)} in model 1, {tuple(o.shape)} in model {i}")
            if not t.is_floating_point() and not bool((o == t).all()):
                raise ValueError(f"tensor {name!r} (not floating point) differs between model 1 and model {i}")
        if not t.is_floating_point():
            out[name] = t
            continue
        total = t.double().clone()
        for other in models[1:]:
            total += other[name].double()
        out[name] = (total / len(models)).to(t.dtype).contiguous()
    return out


def _base_of(folder: Path) -> str | None:
    try:
        return json.loads((folder / "latechunk_train.json").read_text(encoding="utf-8")).get("base_model")
    except (OSError, ValueError, AttributeError):
        return None


def main(argv: Sequence[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, nargs="+", type=Path,
                    help="two or more model folders `latechunk train` wrote from one base (e.g. one per --seed)")
    ap.add_argument("--out", required=True, type=Path, help="the new model folder (must not exist)")
    args = ap.parse_args(argv)
    from safetensors.torch import load_file, save_file

    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")
    if len({m.resolve() for m in args.models}) != len(args.models):
        raise SystemExit("a model is listed twice: a soup averages distinct fine-tunes")
    files = [_weights_file(m) for m in args.models]
    bases = {_base_of(m) for m in args.models}
    if len(bases) > 1:
        print(f"warning: the models name different bases ({', '.join(sorted(map(str, bases)))}): a soup of "
              "fine-tunes from different starting points need not lie in one basin", file=sys.stderr)
    try:
        soup = uniform_soup([load_file(f) for f in files])
    except ValueError as err:
        raise SystemExit(str(err)) from err
    shutil.copytree(args.models[0], args.out)
    save_file(soup, args.out / "model.safetensors", metadata={"format": "pt"})
    (args.out / "wise_ft.json").unlink(missing_ok=True)  # a first model made by wise_ft.py: its record is not ours
    record = {"method": "uniform model soup (arXiv:2203.05482): the mean of the models' weights",
              "models": [{"path": str(m.resolve()), "sha256": _sha256(f)} for m, f in zip(args.models, files)]}
    _write_record(args.out / "model_soup.json", record, "model_soup.py", argv)
    print(f"written: {args.out} (mean of {len(args.models)} models)")
    return args.out


if __name__ == "__main__":
    main()
