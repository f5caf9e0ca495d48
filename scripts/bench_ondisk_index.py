"""Benchmark: an IVF index built on disk from shards stays far below the size of its float32 vectors in memory.

A synthetic output folder of ``--rows`` x ``--dim`` float32 unit vectors (a mixture of Gaussian clusters around
random centres, so IVF lists are meaningful) is written as ``--shards`` shards in the shard format assembly reads
(:func:`latechunk.ingest.shards.write_shard`: checksummed .parquet chunk rows, .npy vectors, .json record; one
document per 100 chunks), then assembled by :func:`latechunk.ingest.assemble.assemble` (the code path of
``latechunk embed``) with ``--index`` in a **subprocess** whose peak memory is measured: ``ru_maxrss`` of the child
(``resource.getrusage(RUSAGE_CHILDREN)``, which counts resident file-backed pages too) and, sampled every 50 ms
from ``/proc/PID/status``, its peak ``RssAnon`` (heap: what the build allocates) and ``RssFile`` (mapped files:
shard vectors and the .ivfdata being written, which the kernel can drop at any time). The peak is printed beside
the float32 vectors' size (``rows * dim * 4`` bytes). Then ``latechunk verify`` runs on the folder
(``check_sources=False``: the documents are synthetic) and must pass.

Run (about 10-20 minutes on 2 loaded cores; 1.6 GB of shards plus the index on disk)::

    python3 scripts/bench_ondisk_index.py --rows 1000000 --dim 384 --shards 20 --index IVF1024,PQ32 \\
        --dir /tmp/ondisk_bench --record results/ondisk_index.md

``tests/index/test_index_factory.py`` uses :func:`write_synthetic_folder` and :func:`assemble_folder` at 20k x 32.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

CHUNKS_PER_DOC = 100
STRATEGY = "fixed:size=8"


def synthetic_vectors(rows: int, dim: int, seed: int, centres: np.ndarray) -> np.ndarray:
    """(rows, dim) float32 unit vectors: a random centre each plus Gaussian noise of norm ~1 (seeded).

    Args:
        rows: Vectors.
        dim: Dimension.
        seed: Seed of this batch.
        centres: (c, dim) cluster centres (unit norm).

    Returns:
        (rows, dim) float32, L2-normalised.
    """
    rng = np.random.default_rng(seed)
    x = centres[rng.integers(0, len(centres), rows)] + rng.standard_normal((rows, dim), dtype=np.float32) / np.sqrt(dim)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32, copy=False)


def write_synthetic_folder(out: Path, rows: int, dim: int, shards: int, factory: str = "Flat", seed: int = 0,
                           n_centres: int = 256) -> list[dict]:
    """Write an output folder's run.json and ``shards`` shards of synthetic chunks and vectors (no index yet).

    Args:
        out: The folder (created; must not hold a run).
        rows: Chunks (= vectors) in all, split as evenly as possible over the shards, whole documents of
            :data:`CHUNKS_PER_DOC` chunks (the last one shorter).
        dim: Vector dimension.
        shards: Shards.
        factory: The ``--index`` recorded in run.json (assembly takes the index config as an argument).
        seed: Seed of the vectors.
        n_centres: Clusters of the vector mixture.

    Returns:
        The shard records, in order.
    """
    from latechunk.config import IndexConfig
    from latechunk.ingest.files import write_json
    from latechunk.ingest.shards import write_shard
    from latechunk.output import RUN_FORMAT, OutputFolder
    from latechunk.types import Boundaries, Document

    out.mkdir(parents=True, exist_ok=True)
    folder = OutputFolder(out)
    folder.shards_dir.mkdir(exist_ok=True)
    write_json(folder.run_path, {"format": RUN_FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                 "settings": synthetic_settings(factory)})
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_centres, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    bounds = np.linspace(0, rows, shards + 1).astype(int)
    records, item = [], 0
    for k in range(shards):
        n = int(bounds[k + 1] - bounds[k])
        docs, bnds = [], []
        row = 0
        while row < n:
            m = min(CHUNKS_PER_DOC, n - row)
            words = [f"c{j:03d}" for j in range(m)]
            text = " ".join(words)
            starts = np.arange(m) * 5
            char_spans = np.stack([starts, starts + 4], axis=1)
            token_spans = np.stack([np.arange(m), np.arange(m) + 1], axis=1)
            doc_id = f"doc{item + len(docs):07d}"
            docs.append(Document(doc_id, text, {"source": f"synthetic/{doc_id}.txt"}))
            bnds.append(Boundaries(doc_id, token_spans, char_spans, strategy=STRATEGY))
            row += m
        vectors = synthetic_vectors(n, dim, seed + 1 + k, centres)
        stats = {"content_tokens": n, "tokens_encoded": n, "forward_calls": 1, "seconds": {"encode": 0.0}}
        records.append(write_shard(folder, k, (item, item + len(docs)), f"synthetic-{k}", docs, bnds, vectors, [],
                                   STRATEGY, stats, doc_extra=[{"source_type": "txt", "tokens": len(b)} for b in bnds]))
        item += len(docs)
        del vectors
    _ = IndexConfig  # (the factory string is checked by assemble)
    return records


def synthetic_settings(factory: str) -> dict:
    """run.json settings of a synthetic folder (what verify and search read: normalize, mode, the index)."""
    from latechunk.config import IndexConfig

    return {"strategy": STRATEGY, "mode": "late", "normalize": True, "include_special": False,
            "long_documents": "windows", "macro_window": None, "macro_window_overlap": None,
            "inputs_from_out": [], "group_tokens": 0, "index": IndexConfig.from_option(factory).to_dict(),
            "model": {"name": "synthetic"}}


def assemble_folder(out: Path, factory: str) -> dict:
    """Assemble a folder of :func:`write_synthetic_folder` with ``--index factory`` (the path of ``embed``).

    Args:
        out: The folder.
        factory: An ``--index`` value (``IVF1024,PQ32``, ``HNSW32``, ...).

    Returns:
        The manifest.
    """
    from latechunk.config import IndexConfig
    from latechunk.ingest.assemble import assemble
    from latechunk.ingest.shards import scan_shards

    records, notes = scan_shards(out, verify_hashes=False)
    if notes:
        raise RuntimeError(f"{out}: {notes}")
    dim = int(records[0]["dim"])
    header = {"model": {"name": "synthetic", "dim": dim}, "strategy": {"spec": STRATEGY}, "inputs": []}
    return assemble(out, records, synthetic_settings(factory), IndexConfig.from_option(factory), dim, header,
                    time.time())


def _proc_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure_assembly(out: Path, factory: str) -> dict:
    """Assemble ``out`` in a subprocess; its wall seconds and peak memory (bytes).

    Returns:
        ``{"seconds", "ru_maxrss", "rss_anon_peak", "rss_file_peak", "returncode"}``.
    """
    cmd = [sys.executable, __file__, "--assemble-only", "--dir", str(out), "--index", factory]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peaks = {"RssAnon": 0, "RssFile": 0}

    def sample() -> None:
        while proc.poll() is None:
            for key, value in peaks.items():
                peaks[key] = max(value, _proc_kib(proc.pid, key))
            time.sleep(0.05)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    rc = proc.wait()
    t.join()
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 1), "ru_maxrss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
            "rss_anon_peak": peaks["RssAnon"] * 1024, "rss_file_peak": peaks["RssFile"] * 1024, "returncode": rc}


def _machine() -> str:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.platform()}"


def _versions() -> str:
    import faiss

    return f"Python {platform.python_version()}, faiss {faiss.__version__}, numpy {np.__version__}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--shards", type=int, default=20)
    ap.add_argument("--index", default="IVF1024,PQ32")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ondisk_bench"))
    ap.add_argument("--keep-shards", action="store_true", help="Reuse the shards in --dir if present.")
    ap.add_argument("--record", type=Path, help="Write the result as markdown here.")
    ap.add_argument("--assemble-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.assemble_only:
        assemble_folder(args.dir, args.index)
        return 0

    from latechunk.verify import verify_output

    load_before = os.getloadavg()
    out = args.dir
    t0 = time.perf_counter()
    if not (args.keep_shards and (out / "run.json").is_file()):
        shutil.rmtree(out, ignore_errors=True)
        write_synthetic_folder(out, args.rows, args.dim, args.shards, factory=args.index)
    t_write = time.perf_counter() - t0
    mem = measure_assembly(out, args.index)
    if mem["returncode"] != 0:
        print(f"assembly failed (exit {mem['returncode']})", file=sys.stderr)
        return 1
    manifest = json.loads((out / "manifest.json").read_text())
    t1 = time.perf_counter()
    problems, summary = verify_output(out, check_sources=False)
    t_verify = time.perf_counter() - t1
    load_after = os.getloadavg()
    raw = args.rows * args.dim * 4
    ivf = manifest["index"].get("ivfdata", {})
    lines = [
        f"# On-disk IVF assembly: {args.rows:,} x {args.dim} float32 from {args.shards} shards, `--index {args.index}`",
        "",
        f"- machine: {_machine()}",
        f"- versions: {_versions()}",
        f"- command: `python3 scripts/bench_ondisk_index.py --rows {args.rows} --dim {args.dim} --shards "
        f"{args.shards} --index {args.index} --dir {out}" + (f" --record {args.record}`" if args.record else "`"),
        (f"- load average (1 min) before / after: {load_before[0]:.1f} / {load_after[0]:.1f} on {os.cpu_count()} cores "
        "(other helpers' jobs share the machine: timings are loaded wall seconds)"),
        "",
        "| | value | / float32 vectors |",
        "| --- | ---: | ---: |",
        f"| float32 vectors (`rows * dim * 4`) | {raw / 1e9:.3f} GB | 1.00 |",
        (f"| assembly peak RSS (`ru_maxrss`, anon + file-backed) | {mem['ru_maxrss'] / 1e9:.3f} GB | "
        f"{mem['ru_maxrss'] / raw:.2f} |"),
        (f"| assembly peak RssAnon (sampled every 50 ms) | {mem['rss_anon_peak'] / 1e9:.3f} GB | "
        f"{mem['rss_anon_peak'] / raw:.2f} |"),
        (f"| assembly peak RssFile (mapped shards / ivfdata, sampled) | {mem['rss_file_peak'] / 1e9:.3f} GB | "
        f"{mem['rss_file_peak'] / raw:.2f} |"),
        (f"| index.faiss | {(out / 'index.faiss').stat().st_size / 1e9:.3f} GB | "
        f"{(out / 'index.faiss').stat().st_size / raw:.3f} |"),
        f"| index.ivfdata | {ivf.get('bytes', 0) / 1e9:.3f} GB | {ivf.get('bytes', 0) / raw:.3f} |",
        "",
        (f"- training sample: {manifest['index'].get('train', {}).get('rows')} rows, seed "
        f"{manifest['index'].get('train', {}).get('seed')}; nlist {manifest['index'].get('nlist')}, "
        f"default nprobe {manifest['index'].get('nprobe')}; on disk: {manifest['index'].get('ondisk')}"),
        (f"- wall seconds: writing the synthetic shards {t_write:.0f} s, assembly (index + chunks.parquet + manifest) "
        f"{mem['seconds']:.0f} s, verify {t_verify:.0f} s"),
        f"- verify (`verify_output(out, check_sources=False)`): {'passed' if not problems else 'FAILED'}; {summary}",
    ]
    lines += [f"  - {p}" for p in problems[:20]]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        args.record.write_text(text, encoding="utf-8")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
