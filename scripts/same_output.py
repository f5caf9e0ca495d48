"""Compare two `latechunk embed` output folders: is the chunk table byte-identical, and how far apart are the vectors?

Used to show that a refactor left behaviour unchanged (issue 9): run `embed` before and after the change into two
folders, then

    python3 scripts/same_output.py OLD_DIR NEW_DIR [--tol 1e-6]

prints the chunks.parquet sha256 of both, the row count, and the max abs difference of the index vectors (faiss
`reconstruct_n`, row i = vector id i), and exits 1 when the tables differ or the difference exceeds --tol.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import faiss
import numpy as np


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def vectors(folder: Path) -> np.ndarray:
    index = faiss.read_index(str(folder / "index.faiss"))
    return index.reconstruct_n(0, index.ntotal) if index.ntotal else np.zeros((0, index.d), np.float32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--tol", type=float, default=1e-6, help="max abs vector difference allowed (default 1e-6)")
    args = ap.parse_args()
    a, b = sha256(args.old / "chunks.parquet"), sha256(args.new / "chunks.parquet")
    va, vb = vectors(args.old), vectors(args.new)
    same_table = a == b
    diff = float(np.abs(va - vb).max()) if va.shape == vb.shape and va.size else (0.0 if va.shape == vb.shape else float("inf"))
    print(f"chunks.parquet sha256  old {a[:16]}  new {b[:16]}  {'identical' if same_table else 'DIFFERENT'}")
    print(f"vectors                old {va.shape}  new {vb.shape}  max abs diff {diff:.3g} (tol {args.tol:g})")
    ok = same_table and diff <= args.tol
    print("same output" if ok else "OUTPUTS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
