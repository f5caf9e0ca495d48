#!/usr/bin/env python3
"""How fast `latechunk embed` fails on a bad option, and what a start costs (issue 10, fault 6).

Each case runs `python -m latechunk ...` in a fresh process, ``--repeats`` times (default 3); the median wall
time is printed, with the exit code and whether the case's process imported torch (from ``-X importtime``'s
report on stderr; that run is timed apart, so the timed runs carry no tracing). Cases:

- bad SPEC: ``embed a.md --out DIR --strategy fixd:size=256`` (the target: under 1.5 s);
- ``--window 3``: a macro window under the model's frame + 16 content tokens, checked from the model's files
  (config.json, tokenizer.json) before any weight loads;
- ``--help``: ``embed --help``;
- good tiny embed: ``embed a.md --out DIR --strategy fixed:size=64 --device cpu`` with the bundled
  all-MiniLM-L6-v2 (torch import, model load, one document, the output folder): the cost of a start.

    python3 scripts/bench_startup.py [--repeats 3] [--markdown results/bench_startup.md] [--repo CHECKOUT]

``--repo`` times another checkout of latechunk (put first on ``PYTHONPATH``), e.g. the commit before a change:
``git archive HEAD | tar -x -C /tmp/before && python3 scripts/bench_startup.py --repo /tmp/before``.

Not a timed test: the numbers depend on the machine, its load and its disk cache (a first run after boot reads
torch from disk and is slower; each case here runs once untimed first to warm the cache).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_BAD_SPEC_S = 1.5


def cases(tmp: Path) -> list[tuple[str, list[str], int]]:
    """(label, latechunk arguments, expected exit code) of each case; a fresh output folder per run is made by
    :func:`run` (``{out}`` in the arguments)."""
    doc = tmp / "a.md"
    doc.write_text("# Rivers\n\nRivers flow to the sea. They carve valleys over long ages.\n", encoding="utf-8")
    embed = ["embed", str(doc), "--out", "{out}"]
    return [
        ("bad SPEC (`--strategy fixd:size=256`)", [*embed, "--strategy", "fixd:size=256"], 2),
        ("`--window 3`", [*embed, "--window", "3"], 2),
        ("`embed --help`", ["embed", "--help"], 0),
        ("good tiny embed (1 document, bundled MiniLM, CPU)",
         [*embed, "--strategy", "fixed:size=64", "--device", "cpu", "--quiet"], 0),
    ]


def run(args: list[str], tmp: Path, importtime: bool = False, repo: Path = REPO) -> tuple[float, int, str]:
    """One fresh process running ``repo``'s latechunk: (wall seconds, exit code, stderr)."""
    out = Path(tempfile.mkdtemp(dir=tmp)) / "out"
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "latechunk",
           *(a.replace("{out}", str(out)) for a in args)]
    env = dict(os.environ, PYTHONPATH=str(repo))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=False, env=env, cwd=repo, capture_output=True, text=True)
    return time.perf_counter() - t0, proc.returncode, proc.stderr


def imports_torch(stderr: str) -> bool:
    """Whether ``-X importtime``'s report names the module ``torch``."""
    return any(line.rsplit("|", 1)[-1].strip() == "torch" for line in stderr.splitlines() if "import time:" in line)


def versions() -> str:
    import importlib.metadata as md

    parts = []
    for name in ("latechunk", "torch", "transformers", "tokenizers", "typer", "numpy"):
        try:
            parts.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="Timed runs per case (median reported).")
    ap.add_argument("--markdown", type=Path, help="Also write the table, machine and versions here.")
    ap.add_argument("--repo", type=Path, default=REPO, help="The latechunk checkout to time (default: this one).")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for label, argv, expected in cases(tmp):
            _, code, traced = run(argv, tmp, importtime=True, repo=args.repo)  # warms the disk cache; tells whether torch loads
            if code != expected:
                raise SystemExit(f"{label}: exit {code}, expected {expected}:\n{traced[-2000:]}")
            times = []
            for _ in range(args.repeats):
                wall, code, stderr = run(argv, tmp, repo=args.repo)
                if code != expected:
                    raise SystemExit(f"{label}: exit {code}, expected {expected}:\n{stderr[-2000:]}")
                times.append(wall)
            rows.append((label, statistics.median(times), min(times), max(times), code, imports_torch(traced)))
    lines = ["| case | median (s) | min-max (s) | exit | torch imported |", "| --- | ---: | ---: | ---: | --- |"]
    for label, med, lo, hi, code, torch_loaded in rows:
        lines.append(f"| {label} | {med:.2f} | {lo:.2f}-{hi:.2f} | {code} | {'yes' if torch_loaded else 'no'} |")
    bad_spec = rows[0][1]
    verdict = (f"**Bad SPEC: {bad_spec:.2f} s** (target under {TARGET_BAD_SPEC_S} s: "
               f"{'met' if bad_spec < TARGET_BAD_SPEC_S else 'NOT met'}).")
    machine = (f"Machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
               f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; "
               f"{datetime.datetime.now():%Y-%m-%d %H:%M}.")
    table = "\n".join(lines)
    print(f"latechunk from {args.repo}")
    print(table)
    print()
    print(verdict)
    print(machine)
    print(f"Versions: {versions()}.")
    if args.markdown:
        cmd = "python3 scripts/bench_startup.py" + (f" --repeats {args.repeats}" if args.repeats != 3 else "") + \
              f" --markdown {args.markdown}"
        args.markdown.write_text(
            "# How fast `latechunk embed` fails on a bad option (issue 10, fault 6)\n\n"
            f"Command: `{cmd}`\n\n"
            f"Each case ran as `python -m latechunk ...` in a fresh process, once untimed (with `-X importtime`, "
            f"which tells whether torch was imported) and then {args.repeats} times timed; the median wall time "
            "is shown.\n\n"
            f"{table}\n\n{verdict}\n\n{machine}\n\nVersions: {versions()}.\n",
            encoding="utf-8")


if __name__ == "__main__":
    main()
