"""How `embed`, `verify`, `--resume` and `--append` scale with the number of documents (no O(n^2) path).

Writes a synthetic JSONL corpus of N short documents (1-3 sentences, about 32 tokens each) for each N given,
embeds it with a tiny random-weight BERT (the bundled MiniLM tokenizer; encoding is cheap, so what is measured is
everything around the encoder), then verifies it, deletes its manifest and resumes it (checking that
chunks.parquet and index.faiss come back byte-identical), appends 1,000 more documents and verifies again. Each
command runs in its own process; the table gives wall seconds, the manifest's per-stage seconds, and for each N
the growth against the previous N (a linear path grows as N does; a quadratic one as N squared).

    python scripts/bench_scale.py --n 5000 20000 80000 --out results/scale.md

Not a test: a benchmark (timings are the machine's). Needs the repository's tests/ (the tiny model).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["river", "delta", "channel", "flood", "bank", "ferry", "harbour", "tide", "reed", "heron", "otter", "silt",
         "barge", "lock", "weir", "dam", "valley", "season", "survey", "report", "council", "bridge", "road", "market",
         "winter", "summer", "north", "south"]


def write_corpus(path: Path, n: int, start: int = 0, seed: int = 0) -> None:
    rng = random.Random(seed + start)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(start, start + n):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12))).capitalize() + "."
                         for _ in range(rng.randint(1, 3))]
            f.write(json.dumps({"id": f"doc{i}", "text": " ".join(sentences)}) + "\n")


def run(cmd: list[str]) -> tuple[float, int, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True, text=True, env={**os.environ, "LATECHUNK_CPU_DTYPE": "float32"})
    last = (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]
    return time.perf_counter() - t, p.returncode, last[0]


def stages(out: Path) -> dict:
    try:
        return json.loads((out / "manifest.json").read_text())["seconds"]
    except (OSError, ValueError, KeyError):
        return {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[5000, 20000, 80000], help="corpus sizes (documents)")
    ap.add_argument("--out", type=Path, help="write the markdown table here too")
    ap.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="latechunk_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    from tests.models import save_tiny_bert

    model = work / "tiny"
    if not model.is_dir():
        save_tiny_bert(model)
    embed = [sys.executable, "-m", "latechunk", "embed", "--model", str(model), "--device", "cpu", "--strategy",
             "fixed:size=32", "-q"]
    verify = [sys.executable, "-m", "latechunk", "verify"]
    rows, prev = [], None
    for n in args.n:
        corpus, extra, out = work / f"{n}.jsonl", work / f"new_{n}.jsonl", work / f"out_{n}"
        write_corpus(corpus, n)
        write_corpus(extra, 1000, start=n)
        r: dict = {"n": n}
        r["embed"], code, last = run([*embed, str(corpus), "--out", str(out), "--force"])
        assert code == 0, last
        r["stages"] = stages(out)
        ref = work / f"ref_{n}"
        ref.mkdir(exist_ok=True)
        for name in ("chunks.parquet", "index.faiss"):
            (ref / name).write_bytes((out / name).read_bytes())
        r["verify"], code, last = run([*verify, str(out)])
        assert code == 0, last
        (out / "manifest.json").unlink()  # as if killed while assembling
        r["resume"], code, last = run([*embed, str(corpus), "--out", str(out), "--resume"])
        assert code == 0, last
        r["identical"] = all(filecmp.cmp(out / f, ref / f, shallow=False) for f in ("chunks.parquet", "index.faiss"))
        r["append"], code, last = run([*embed, str(extra), "--out", str(out), "--append"])
        assert code == 0, last
        r["verify_after"], code, last = run([*verify, str(out)])
        assert code == 0, last
        rows.append(r)
        if prev is not None:
            f = n / prev["n"]
            r["growth"] = {k: r[k] / prev[k] / f for k in ("embed", "verify", "resume", "append")}
        prev = r
        print(json.dumps(r), flush=True)
    keys = ["tokenize", "split", "late_encode", "pool", "assemble", "total"]
    lines = [f"Command: `python scripts/bench_scale.py --n {' '.join(map(str, args.n))}`", "",
             f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
             "- corpus: synthetic JSONL, 1-3 sentences a document; tiny random BERT (dim 32, 2 layers), fixed:size=32",
             "", "| N | embed wall s | " + " | ".join(keys) + " | verify s | resume s | append +1,000 s | "
             "verify after s | resumed identical | growth / N (embed, verify, resume, append) |",
             "| ---: " * (len(keys) + 8) + "|"]
    for r in rows:
        g = r.get("growth")
        gs = ", ".join(f"{v:.2f}" for v in g.values()) if g else ""
        lines.append(f"| {r['n']:,} | {r['embed']:.1f} | " + " | ".join(f"{r['stages'].get(k, 0):.2f}" for k in keys)
                     + f" | {r['verify']:.1f} | {r['resume']:.1f} | {r['append']:.1f} | {r['verify_after']:.1f} | "
                     f"{r['identical']} | {gs} |")
    text = "\n".join(lines) + "\n\nGrowth / N: a command's time ratio to the previous N divided by the ratio of N (1.0: linear;" \
        " the fixed start-up of each process keeps small N below 1).\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
