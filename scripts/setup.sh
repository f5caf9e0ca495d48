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
"$PY" -m pip install -q -e ".[dev]"
# console scripts of a pyenv interpreter become visible after a rehash
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
