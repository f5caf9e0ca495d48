"""ruff over the whole repository, with the rules of pyproject.toml's ``[tool.ruff]`` (the version pinned in the
``[dev]`` extra: another release selects other rules, so it is skipped, not failed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pinned_ruff() -> str:
    m = re.search(r'"ruff==([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert m, "pyproject.toml's [dev] extra pins ruff (ruff==X.Y.Z)"
    return m.group(1)


def test_ruff_passes_on_the_repository():
    pinned = _pinned_ruff()
    version = subprocess.run([sys.executable, "-m", "ruff", "--version"], check=False, capture_output=True, text=True)
    if version.returncode != 0:
        pytest.fail("ruff is not installed: `pip install -e .[dev]` installs it (the test set-up in README.md)")
    if version.stdout.split()[-1] != pinned:
        pytest.skip(f"ruff {version.stdout.split()[-1]} is installed, the rules are checked with ruff {pinned}")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "--no-cache", "."],
                         cwd=ROOT, check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
