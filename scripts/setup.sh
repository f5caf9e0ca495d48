#!/usr/bin/env bash
# Set up latechunk on a fresh machine, in the active Python environment.
# Installs the CPU torch wheel (torch==2.13.0) only when no torch is present, so GPU users keep theirs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
CPU_INDEX="https://download.pytorch.org/whl/cpu"
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  # PyPI's Linux torch is a CUDA build of several GB; PyTorch's CPU index has the small CPU build. Use that index
  # when it answers within 3 s; otherwise (an offline mirror, as on the project's machines) plain pip, which
  # finds the CPU wheel there.
  if "$PY" -c "import urllib.request as u; u.urlopen('$CPU_INDEX/torch/', timeout=3)" >/dev/null 2>&1; then
    echo "setup: no torch found; installing torch==2.13.0 (CPU build) from $CPU_INDEX" >&2
    "$PY" -m pip install -q torch==2.13.0 --index-url "$CPU_INDEX"
  else
    echo "setup: no torch found; installing torch==2.13.0 from the configured package index" >&2
    "$PY" -m pip install -q torch==2.13.0
  fi
fi
# editable: kernels/ and eval/ import as latechunk.kernels and latechunk.eval through the install's mapping (setup.py)
"$PY" -m pip install -q -e ".[dev]"
# Hugging Face's kernels wheel (installed here only where transformers >= 5.25 brings it) for tests/test_packaging.py, which installs latechunk's wheel
# beside it; kept in the git-ignored .whl/ so the test runs offline
if ! compgen -G ".whl/kernels-*.whl" >/dev/null; then
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d .whl "kernels==0.17.2" \
    || echo "setup: could not fetch Hugging Face's kernels wheel into .whl/ (tests/test_packaging.py skips)" >&2
fi
# console scripts of a pyenv interpreter become visible after a rehash
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
