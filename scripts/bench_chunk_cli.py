"""`latechunk chunk` over a folder in one call vs one call per file (issue 16, part 6).

Each `latechunk chunk` process pays a start-up (Python, transformers, the tokenizer) before it reads a document;
chunking one file per call pays it once per file. This script times, in one run, side by side:

- one call over the whole folder (every supported file under it, one JSONL stream);
- ``--files`` calls of one file each (files spread over the sorted list), whose mean is the per-file time;
- the per-file time x the folder's document count: what calling it per file would cost.

It prints a markdown table with the ratio, the machine's load average (other work on the machine slows both
columns alike) and the versions; every call must exit 0.

Usage:
    python scripts/bench_chunk_cli.py /work/docs_corpus/mkdocs-material/docs --strategy heading --files 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm"}


def _chunk(paths: list[Path], strategy: str, out: Path) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one ``latechunk chunk`` process (CPU: user + system, its children's
    rusage; less sensitive than wall time to other work on the machine)."""
    cmd = [sys.executable, "-m", "latechunk", "chunk", *map(str, paths), "--strategy", strategy, "--out", str(out),
           "--force", "--quiet"]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    seconds, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return seconds, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--strategy", default="heading")
    ap.add_argument("--files", type=int, default=5, help="per-file calls to time (files spread over the list)")
    args = ap.parse_args()
    files = sorted(p for p in args.folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        raise SystemExit(f"no .md/.txt/.html file under {args.folder}")
    step = max(1, len(files) // args.files)
    sample = files[::step][: args.files]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "all.jsonl"
        folder_s, folder_cpu = _chunk([args.folder], args.strategy, out)
        rows = out.read_text(encoding="utf-8").splitlines()
        docs = len({json.loads(r)["doc_id"] for r in rows})
        per_file = [_chunk([f], args.strategy, Path(tmp) / "one.jsonl") for f in sample]
    load_after = os.getloadavg()
    walls, cpus = [w for w, _ in per_file], [c for _, c in per_file]
    mean, mean_cpu = sum(walls) / len(walls), sum(cpus) / len(cpus)
    print("| | wall s | CPU s |\n|---|---|---|")
    print(f"| one call over the folder ({docs} documents, {len(rows)} chunks) | {folder_s:.1f} | {folder_cpu:.1f} |")
    print(f"| one call per file: mean of {len(sample)} files (wall min {min(walls):.1f}, max {max(walls):.1f}) "
          f"| {mean:.1f} | {mean_cpu:.1f} |")
    print(f"| one call per file x {docs} documents (estimate) | {mean * docs:.1f} | {mean_cpu * docs:.1f} |")
    print(f"| ratio per-file total / one call | {mean * docs / folder_s:.1f}x | {mean_cpu * docs / folder_cpu:.1f}x |")
    print(f"| one call / one per-file call (the folder's work beyond one start-up) | {folder_s / mean:.2f}x "
          f"| {folder_cpu / mean_cpu:.2f}x |")
    print()
    print(f"strategy {args.strategy}; sample: {', '.join(str(f.relative_to(args.folder)) for f in sample)}")
    print(f"load average (1, 5, 15 min) before {tuple(round(x, 1) for x in load_before)}, after "
          f"{tuple(round(x, 1) for x in load_after)}; {os.cpu_count()} CPUs; {platform.processor() or platform.machine()}")
    print("versions: " + ", ".join(f"{p} {version(p)}" for p in ("latechunk", "torch", "transformers", "tokenizers"))
          + f", Python {platform.python_version()}")


if __name__ == "__main__":
    main()
