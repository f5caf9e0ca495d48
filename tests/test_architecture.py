"""The import rules of pyproject.toml's ``[tool.importlinter]`` (import-linter), checked on the real code.

Two runs of ``lint-imports``, because grimp (import-linter's graph builder) reads folders, not the installed
layout:

1. From the repository root with no arguments, exactly as a developer runs it: the root packages are the folders
   ``latechunk``, ``kernels`` and ``eval``. Every import made inside ``kernels/`` and ``eval/`` is seen, but an
   import of ``latechunk.kernels``/``latechunk.eval`` made inside ``latechunk/`` is not (no such folder).
2. On a copy laid out as the wheel installs it (``kernels/`` -> ``latechunk/kernels``, ``eval/`` ->
   ``latechunk/eval``) with the same contracts, names translated (``eval`` -> ``latechunk.eval``): there every
   import is seen, e.g. ``latechunk.pipeline`` importing ``latechunk.eval`` breaks the layers contract.

Each contract can fail: an import injected into a copy of the code must break it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"kernels": "latechunk/kernels", "eval": "latechunk/eval"}
"""Repository folder -> its place in the installed layout (setup.py)."""
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]' (import-linter)")
    return found


def _config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [_lint_imports(), "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _verdicts(stdout: str) -> dict[str, str]:
    """``{contract name: "KEPT" | "BROKEN"}`` from lint-imports' report (it wraps long lines)."""
    text = " ".join(stdout.split())
    config = _config()
    out = {}
    for contract in config["contracts"]:
        name = " ".join(contract["name"].split())
        m = re.search(re.escape(name) + r" (KEPT|BROKEN)", text)
        assert m, f"contract {name!r} missing from lint-imports' report:\n{stdout[-3000:]}"
        out[contract["id"]] = m.group(1)
    return out


def _source_copy(dst: Path, installed_layout: bool) -> Path:
    """Copy latechunk/, kernels/, eval/ (Python files) and pyproject.toml into ``dst``."""
    shutil.copytree(ROOT / "latechunk", dst / "latechunk", ignore=_COPY_IGNORE)
    for folder, installed in MAPPED.items():
        shutil.copytree(ROOT / folder, dst / (installed if installed_layout else folder), ignore=_COPY_IGNORE)
    shutil.copy2(ROOT / "pyproject.toml", dst / "pyproject.toml")
    return dst


_MAPPED_NAME = re.compile(r"(?<![\w.])(kernels|eval)(?![\w])")


def _installed_config_ini(config: dict) -> str:
    """The same contracts for the installed layout, as an INI file for ``lint-imports --config``."""

    def translate(value: str) -> str:
        return _MAPPED_NAME.sub(r"latechunk.\1", value)

    lines = ["[importlinter]", "root_packages =", "    latechunk", ""]
    for contract in config["contracts"]:
        lines.append(f"[importlinter:contract:{contract['id']}]")
        for key, value in contract.items():
            if key == "id":
                continue
            if key in ("name", "type", "broken_contract_guidance"):
                lines.append(f"{key} = {' '.join(str(value).split())}")
            elif isinstance(value, list):
                lines.append(f"{key} =")
                lines += [f"    {translate(v)}" for v in value]
            else:  # a string, int or bool (import-linter parses "True"/"False" in any case)
                lines.append(f"{key} = {translate(str(value))}")
        lines.append("")
    return "\n".join(lines)


def _installed_copy(tmp_path: Path) -> tuple[Path, Path]:
    root = _source_copy(tmp_path / "installed", installed_layout=True)
    ini = root / ".importlinter"
    ini.write_text(_installed_config_ini(_config()), encoding="utf-8")
    return root, ini


def _n_python_files(*folders: Path) -> int:
    return sum(1 for folder in folders for p in folder.rglob("*.py"))


def test_contracts_kept_from_the_repository_root():
    """`lint-imports` with no arguments: every contract kept, and latechunk/, kernels/ and eval/ all analysed."""
    proc = _run(ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert set(_verdicts(proc.stdout).values()) == {"KEPT"}
    analysed = int(re.search(r"Analyzed (\d+) files", proc.stdout).group(1))
    assert analysed == _n_python_files(ROOT / "latechunk", ROOT / "kernels", ROOT / "eval")


def test_contracts_kept_in_the_installed_layout(tmp_path):
    """The same contracts on latechunk/{kernels,eval}: the imports that cross the mapping are seen too."""
    root, ini = _installed_copy(tmp_path)
    proc = _run(root, "--config", str(ini))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert set(_verdicts(proc.stdout).values()) == {"KEPT"}
    analysed = int(re.search(r"Analyzed (\d+) files", proc.stdout).group(1))
    assert analysed == _n_python_files(root / "latechunk")


# (file relative to the copy, line appended, the one contract it must break)
VIOLATIONS = [
    ("kernels/reference.py", "from latechunk.types import Document", "kernels-leaf"),
    ("latechunk/types.py", "from latechunk import tokenize", "types-leaf"),
    ("latechunk/strategies/fixed.py", "from latechunk.encoder import Encoder", "strategies-no-encoder"),
    ("latechunk/tokenize.py", "from latechunk import pipeline", "layers"),
    ("eval/stats.py", "from . import report", "acyclic"),
]


@pytest.mark.parametrize(("path", "line", "contract"), VIOLATIONS, ids=[v[2] for v in VIOLATIONS])
def test_an_injected_import_breaks_its_contract(tmp_path, path, line, contract):
    """Each contract can fail: an import appended to a copy of the code breaks that contract."""
    root = _source_copy(tmp_path / "repo", installed_layout=False)
    with open(root / path, "a", encoding="utf-8") as f:
        f.write(f"\n{line}  # injected by tests/test_architecture.py\n")
    proc = _run(root)
    assert proc.returncode != 0, proc.stdout[-4000:]
    broken = {cid for cid, verdict in _verdicts(proc.stdout).items() if verdict == "BROKEN"}
    assert contract in broken, proc.stdout[-4000:]


INSTALLED_VIOLATIONS = [
    ("latechunk/pipeline/run.py", "from latechunk.eval import metrics", "layers"),
    ("latechunk/kernels/reference.py", "from latechunk import pooling", "kernels-leaf"),
]


@pytest.mark.parametrize(
    ("path", "line", "contract"), INSTALLED_VIOLATIONS, ids=[v[2] for v in INSTALLED_VIOLATIONS]
)
def test_the_installed_layout_sees_imports_across_the_mapping(tmp_path, path, line, contract):
    """Imports between latechunk/ and the mapped packages, e.g. latechunk.pipeline importing latechunk.eval
    (invisible from the repository root), break their contract in the installed layout."""
    root, ini = _installed_copy(tmp_path)
    with open(root / path, "a", encoding="utf-8") as f:
        f.write(f"\n{line}  # injected by tests/test_architecture.py\n")
    proc = _run(root, "--config", str(ini))
    assert proc.returncode != 0, proc.stdout[-4000:]
    assert _verdicts(proc.stdout)[contract] == "BROKEN", proc.stdout[-4000:]


def test_architecture_md_module_map_matches_the_code():
    """Every module named in ARCHITECTURE.md's map exists, and every module of the package is named there."""
    doc = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = doc.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`((?:latechunk|kernels|eval)/[\w/]*?(?:\.py|/))`", table))
    assert named, "no module paths found in ARCHITECTURE.md's module map"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"
    folders = {p for p in named if p.endswith("/")}
    on_disk = [p.relative_to(ROOT).as_posix() for p in (ROOT / "latechunk").rglob("*.py") if p.name != "__init__.py"]
    unnamed = sorted(p for p in on_disk if p not in named and not any(p.startswith(f) for f in folders))
    assert not unnamed, f"modules missing from ARCHITECTURE.md's module map: {unnamed}"
    tests = set(re.findall(r"`((?:\w+/)*test_\w+\.py)`", table))
    absent = sorted(t for t in tests if not (ROOT / "tests" / t.removeprefix("tests/")).is_file())  # tests/x.py too
    assert not absent, f"ARCHITECTURE.md names test files that do not exist: {absent}"
