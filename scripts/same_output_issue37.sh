#!/usr/bin/env bash
# Behaviour unchanged by issue 37 (settings defined once, modules split into packages): embed the Chroma corpora with
# the code before and after the change and compare each pair of output folders with scripts/same_output.py
# (chunks.parquet byte-identical, index vectors within 1e-6).
#
#   scripts/same_output_issue37.sh BEFORE_ROOT AFTER_ROOT OUT_ROOT [CORPUS]
#
# BEFORE_ROOT and AFTER_ROOT are checkouts of the repository (e.g. git worktrees; results/same_output_issue37.md
# says which commits). Each run imports latechunk, latechunk.kernels and latechunk.eval from its own root only: the
# venv's editable install maps those names to /work/main, so the runner points that mapping at the root, puts the
# root first on sys.path, and after the run checks that every loaded latechunk module's file lies under the root
# (exit 3 otherwise). The console script's entry point (latechunk.cli:main, pyproject.toml) is called directly.
#
# Runs, one at a time (the strategies at their defaults, `latechunk strategies`):
#   late  and naive  x  fixed, recursive, heading, sentence_window, semantic
# into OUT_ROOT/{before,after}/<mode>_<strategy>, then OUT_ROOT/summary.txt. Existing folders are kept (a run whose
# folder holds a chunks.parquet is skipped), so the script can be rerun after an interruption; delete OUT_ROOT for
# fresh runs (a kept folder may come from other code). CORPUS defaults to ../shared/data/chroma_chunking_eval/corpora;
# MODES="late" and STRATEGIES="recursive heading" (environment) run fewer. Exit status 0 when every pair is the same
# output, 1 otherwise.
set -u -o pipefail
if [ $# -lt 3 ]; then
    sed -n '2,6p' "$0"
    exit 2
fi
BEFORE=$(realpath "$1")
AFTER=$(realpath "$2")
OUT=$3
HERE=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=$(realpath "${4:-$HERE/../shared/data/chroma_chunking_eval/corpora}")
MODES=${MODES:-"late naive"}
STRATEGIES=${STRATEGIES:-"fixed recursive heading sentence_window semantic"}
mkdir -p "$OUT/before" "$OUT/after"

# run ROOT ARGS...: `latechunk ARGS...` with latechunk imported from ROOT only
run() {
    local root=$1
    shift
    PYTHONPATH="$root" python3 - "$root" "$@" <<'EOF'
import sys
root = sys.argv[1]
sys.argv = ["latechunk"] + sys.argv[2:]
try:  # the editable install's finder maps latechunk, latechunk.kernels, latechunk.eval to its checkout
    import __editable___latechunk_0_1_0_finder as finder
    finder.MAPPING.update({"latechunk": f"{root}/latechunk", "latechunk.kernels": f"{root}/kernels",
                           "latechunk.eval": f"{root}/eval"})
except ImportError:
    pass
sys.path.insert(0, root)
import latechunk.cli

code = 0
try:
    latechunk.cli.main()
except SystemExit as stop:
    code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
loaded = {name: getattr(mod, "__file__", None) or "" for name, mod in sys.modules.items()
          if name == "latechunk" or name.startswith("latechunk.")}
strays = sorted(f"{name} {path}" for name, path in loaded.items() if path and not path.startswith(root + "/"))
print(f"imported {len(loaded)} latechunk modules, latechunk from {latechunk.__file__}", file=sys.stderr)
if strays:
    print("modules from outside the root:\n  " + "\n  ".join(strays), file=sys.stderr)
    code = code or 3
sys.exit(code)
EOF
}

for mode in $MODES; do
    for strategy in $STRATEGIES; do
        name=${mode}_${strategy}
        for side in before after; do
            root=$BEFORE
            [ "$side" = after ] && root=$AFTER
            folder=$OUT/$side/$name
            if [ -f "$folder/chunks.parquet" ]; then
                echo "== $side $name: kept ($folder)"
                continue
            fi
            echo "== $side $name: latechunk embed $CORPUS --out $folder --strategy $strategy --mode $mode -q --force"
            start=$(date +%s)
            run "$root" embed "$CORPUS" --out "$folder" --strategy "$strategy" --mode "$mode" -q --force \
                || { echo "embed failed ($side $name)"; exit 1; }
            echo "   $(( $(date +%s) - start )) s"
        done
    done
done

# same_meta OLD NEW: the rest of the folder (not part of the pass/fail verdict): index.faiss and the shards' .npy and
# .parquet bytes, and run.json, manifest.json, progress.json and shards/*.json with their times (created, finished,
# seconds) and the manifest's shard sha256 (a hash of the shard's .json, times included) left out; .latechunk.lock
# (the writer's process id) is not compared
same_meta() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
from pathlib import Path
old, new = Path(sys.argv[1]), Path(sys.argv[2])
TIMES = {"created", "finished", "seconds"}
def strip(value, key=""):
    if isinstance(value, dict):
        return {k: strip(v, k) for k, v in value.items() if k not in TIMES and not (key == "shards" and k == "sha256")}
    if isinstance(value, list):
        return [strip(v, key) for v in value]
    return value
def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
names = files(old)
diffs = [] if names == files(new) else [f"file lists differ: old {names} new {files(new)}"]
for name in sorted(set(names) & set(files(new))):
    a, b = old / name, new / name
    if name.endswith(".json"):
        if strip(json.loads(a.read_text())) != strip(json.loads(b.read_text())):
            diffs.append(f"{name} differs apart from times")
    elif name not in ("chunks.parquet", ".latechunk.lock") and a.read_bytes() != b.read_bytes():
        diffs.append(f"{name} bytes differ")
print(f"rest of the folder     {len(names)} files: "
      + ("same (json apart from times, others byte-identical)" if not diffs else "; ".join(diffs)))
EOF
}

status=0
: >"$OUT/summary.txt"
for mode in $MODES; do
    for strategy in $STRATEGIES; do
        name=${mode}_${strategy}
        echo "== $name" | tee -a "$OUT/summary.txt"
        python3 "$HERE/scripts/same_output.py" "$OUT/before/$name" "$OUT/after/$name" | tee -a "$OUT/summary.txt" \
            || status=1
        same_meta "$OUT/before/$name" "$OUT/after/$name" | tee -a "$OUT/summary.txt"
    done
done
exit $status
