#!/usr/bin/env python3
"""One machine, several processes: single process vs ``torchrun --nproc-per-node 2`` vs ``--engine ray`` (issue 13,
part 2).

Each engine runs ``latechunk embed`` in a fresh process, once per input:

- start-up: a one-document input (the first paragraph of the smallest corpus): what the engine costs before and
  after the work (imports, model loads in every process, the Ray cluster and its workers, the rendezvous, the
  assembly), as wall seconds;
- total: the Chroma corpora (``../shared/data/chroma_chunking_eval/corpora``, 5 documents, ~1.4 M characters) with
  the bundled all-MiniLM-L6-v2 on the CPU, as wall seconds; the outputs' ``chunks.parquet`` are compared byte for
  byte with the single process's, and the vectors to 1e-6.

Engines: ``local`` (``python -m latechunk embed``: one process, torch's default threads), ``torchrun``
(``torchrun --nproc-per-node 2 -m latechunk embed``: two ranks, one thread each, the file rendezvous of
``latechunk/ingest/ranks.py``), ``ray`` (``--engine ray`` on a new local Ray cluster of this machine's CPUs: one CPU
encoder actor, the CPU stage's tasks on the other CPU).

    python3 scripts/bench_engines.py [--group-tokens 32768] [--markdown results/engines.md]

Not a timed test: one run each on a machine shared with other work (the load average is printed beside).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _corpora() -> Path:
    sys.path.insert(0, str(REPO))
    from latechunk.eval.datasets import data_root

    return data_root() / "chroma_chunking_eval" / "corpora"


def _command(engine: str, inputs: Path, out: Path, group_tokens: int) -> list[str]:
    args = ["embed", str(inputs), "--out", str(out), "--device", "cpu", "--quiet", "--force",
            "--group-tokens", str(group_tokens)]
    if engine == "local":
        return [sys.executable, "-m", "latechunk", *args]
    if engine == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                "-m", "latechunk", *args]
    if engine == "ray":
        return [sys.executable, "-m", "latechunk", *args, "--engine", "ray"]
    raise ValueError(engine)


def _run(cmd: list[str]) -> tuple[float, int, str]:
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, res.returncode, (res.stdout + res.stderr)[-2000:]


def _same(ref: Path, out: Path) -> str:
    import faiss
    import numpy as np

    if not (out / "manifest.json").is_file():
        return "no output"
    same_bytes = (ref / "chunks.parquet").read_bytes() == (out / "chunks.parquet").read_bytes()
    a, b = faiss.read_index(str(ref / "index.faiss")), faiss.read_index(str(out / "index.faiss"))
    if a.ntotal != b.ntotal:
        return f"{b.ntotal} vectors, single process {a.ntotal}"
    diff = float(np.abs(a.reconstruct_n(0, a.ntotal) - b.reconstruct_n(0, b.ntotal)).max()) if a.ntotal else 0.0
    return f"chunks.parquet {'byte-identical' if same_bytes else 'DIFFERS'}, largest vector difference {diff:.1e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default="local,torchrun,ray")
    ap.add_argument("--group-tokens", type=int, default=32768,
                    help="tokens per group = per shard (the default 262144 puts the corpora in 2 shards)")
    ap.add_argument("--markdown", type=Path, help="write the table here too")
    args = ap.parse_args()
    corpora = _corpora()
    engines = args.engines.split(",")
    with tempfile.TemporaryDirectory(prefix="bench_engines_") as tmp:
        tmp = Path(tmp)
        tiny = tmp / "one"
        tiny.mkdir()
        first = (corpora / "chatlogs.md").read_text(encoding="utf-8").split("\n\n")[0]
        (tiny / "one.md").write_text(first, encoding="utf-8")
        rows = []
        for engine in engines:
            t_start, rc1, log1 = _run(_command(engine, tiny, tmp / f"start_{engine}", args.group_tokens))
            load1 = os.getloadavg()[0]
            out = tmp / f"out_{engine}"
            t_total, rc2, log2 = _run(_command(engine, corpora, out, args.group_tokens))
            load2 = os.getloadavg()[0]
            shards = len(list((out / "shards").glob("*.json"))) if (out / "shards").is_dir() else 0
            rows.append((engine, t_start, rc1, t_total, rc2, shards, f"{load1:.1f} / {load2:.1f}"))
            print(f"{engine}: start-up {t_start:.1f} s (rc {rc1}), total {t_total:.1f} s (rc {rc2}), {shards} shards",
                  flush=True)
            for rc, log in ((rc1, log1), (rc2, log2)):
                if rc:
                    print(log, file=sys.stderr)
        ref = tmp / "out_local"
        lines = [("| engine | start-up (s, 1 document) | total (s, Chroma corpora) | vs single process | shards | "
                  "output vs single process | load avg (1 min) after each |"),
                 "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
        base = next((r[3] for r in rows if r[0] == "local"), None)
        for engine, ts, rc1, tt, rc2, shards, load in rows:
            ratio = f"{tt / base:.2f}x" if base else "-"
            same = _same(ref, tmp / f"out_{engine}") if engine != "local" and ref.is_dir() else "(reference)"
            lines.append(f"| {engine} | {ts:.1f}{'' if rc1 == 0 else f' (exit {rc1})'} | "
                         f"{tt:.1f}{'' if rc2 == 0 else f' (exit {rc2})'} | {ratio} | {shards} | {same} | {load} |")
        import ray
        import torch

        info = (f"Machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs; "
                f"{datetime.datetime.now():%Y-%m-%d %H:%M}. Versions: torch {torch.__version__}, ray {ray.__version__}.")
        cmd = f"python3 scripts/bench_engines.py --group-tokens {args.group_tokens}"
        text = "\n".join([f"Command: `{cmd}`", "", *lines, "", info])
        print(text)
        if args.markdown:
            args.markdown.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
