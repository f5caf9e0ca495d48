#!/usr/bin/env bash
# Set up latechunk on a fresh machine, in the active Python environment.
# Installs the CPU torch wheel (torch==2.13.0) only when no torch is present, so GPU users keep theirs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "setup: no torch found; installing the CPU wheel torch==2.13.0" >&2
  "$PY" -m pip install -q torch==2.13.0
fi
"$PY" -m pip install -q -e ".[dev]"
# console scripts of a pyenv interpreter become visible after a rehash
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
