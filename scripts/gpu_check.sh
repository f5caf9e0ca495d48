#!/usr/bin/env bash
# Issue 4 GPU check on one CUDA GPU: `pytest -m gpu`, then scripts/gpu_check.py (kernel GB/s vs a d2d copy,
# encoder and pipeline tokens/s, GPU FAISS). Output is teed to $GPU_CHECK_LOG_DIR (default: $OUT, else
# $TMPDIR/latechunk_gpu_check): gpu_tests.log, gpu_tests.xml, gpu_check.log. The summary table is printed last.
#
# Usage: scripts/gpu_check.sh [--dry-run] [other gpu_check.py options]
#   --dry-run: every step at tiny sizes on the CPU (Triton interpreter), pytest -m gpu only on the kernel tests.
# Installs nothing when torch, triton, transformers, pytest and faiss import; otherwise tries `pip install -e .[dev]`.
# Exit status: nonzero if the GPU tests or any check step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
LOG_DIR="${GPU_CHECK_LOG_DIR:-${OUT:-${TMPDIR:-/tmp}/latechunk_gpu_check}}"
mkdir -p "$LOG_DIR"
export TRITON_DEFAULT_FP_FUSION="${TRITON_DEFAULT_FP_FUSION:-1}"

if ! "$PY" -c "import torch, triton, transformers, pytest, hypothesis, faiss, numpy" >/dev/null 2>&1; then
  echo "gpu_check: dependencies missing; installing latechunk[dev] into the active environment" >&2
  "$PY" -m pip install -q -e ".[dev]"
fi

TEST_PATHS=(tests)
PYTEST_ENV=()
for arg in "$@"; do
  if [[ "$arg" == "--dry-run" ]]; then
    TEST_PATHS=(tests/test_kernels.py)
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
echo "gpu_check: pytest -m gpu exit $rc_tests, gpu_check.py exit $rc_check; logs in $LOG_DIR" >&2
if [[ $rc_tests -ne 0 || $rc_check -ne 0 ]]; then exit 1; fi
