"""The wheel: ``kernels/`` and ``eval/`` install as ``latechunk.kernels`` and ``latechunk.eval``, nothing else
top-level, so it installs beside Hugging Face's own ``kernels`` package (which transformers uses).

Hugging Face's wheel is read from the git-ignored ``.whl/`` folder, which scripts/setup.sh fills
(``pip download --no-deps -d .whl kernels==0.17.2``); when it is absent the test tries that download once and
skips, saying why, only if it fails (offline). transformers >= 5.25 depends on it, so the running environment
may hold it too; from the repository root the repository's ``kernels/`` folder would shadow it, and hands the
top-level name over to it instead (``kernels/__init__.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HF_KERNELS = "kernels==0.17.2"
"""Hugging Face's ``kernels`` (PyPI), as scripts/setup.sh fetches it."""
WHEEL_DIR = ROOT / ".whl"

# what a build needs of the working tree: no tests, caches or earlier build/ output (setuptools reuses build/lib, so
# a build in place could ship a module deleted since). The measured results/ (40 MB) are copied, so that the wheel
# and sdist tests see that nothing of them is packaged.
_BUILD_IGNORE = shutil.ignore_patterns(
    ".*", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", "out", "tests", "scripts"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """latechunk's wheel, built with ``pip wheel --no-deps --no-build-isolation`` from a copy of the tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=_BUILD_IGNORE)
    assert (src / "results").is_dir()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(tmp / "dist"), str(src)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (found,) = (tmp / "dist").glob("latechunk-*.whl")
    return found


def _hf_kernels_wheel() -> Path:
    found = sorted(WHEEL_DIR.glob("kernels-*.whl"))
    if not found:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d",
             str(WHEEL_DIR), HF_KERNELS],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        found = sorted(WHEEL_DIR.glob("kernels-*.whl"))
        if not found:
            pytest.skip(
                f"Hugging Face's kernels wheel is not in .whl/ and could not be downloaded ({HF_KERNELS}): "
                f"run scripts/setup.sh where PyPI is reachable. pip said: {proc.stderr.strip()[-300:]}"
            )
    return found[-1]


def test_wheel_installs_kernels_and_eval_under_latechunk(wheel):
    """The mapped packages are in the wheel, under latechunk/; no top-level kernels/ or eval/."""
    names = zipfile.ZipFile(wheel).namelist()
    for expected in (
        "latechunk/kernels/__init__.py",
        "latechunk/kernels/segment_mean.py",
        "latechunk/kernels/reference.py",
        "latechunk/eval/__init__.py",
        "latechunk/eval/harness.py",
        "latechunk/eval/report/__init__.py",
        "latechunk/strategies/__init__.py",
    ):
        assert expected in names, f"{expected} not in {wheel.name}"
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"latechunk"}, top
    # every Python file of the three folders is in the wheel, where the mapping puts it
    for folder, installed in (
        ("latechunk", "latechunk"),
        ("kernels", "latechunk/kernels"),
        ("eval", "latechunk/eval"),
    ):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder)
            if not (path.parent / "__init__.py").exists():
                continue
            assert f"{installed}/{rel.as_posix()}" in names, f"{folder}/{rel} missing from the wheel"
    top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    if top_level:
        assert zipfile.ZipFile(wheel).read(top_level[0]).decode().split() == ["latechunk"]


def _results_names(names: list[str]) -> list[str]:
    """The archive names that come from the measured results: under a ``results`` folder (``results/``, as in the
    repository, or the one inside ``eval/`` it was moved from), or a report file (``report.md``, ``results.json``,
    ``per_query.csv.gz``, ``plot.png``)."""
    reports = {"report.md", "results.json", "per_query.csv", "per_query.csv.gz", "plot.png"}
    return [n for n in names if "results" in n.split("/")[:-1] or n.rsplit("/", 1)[-1] in reports]


def test_wheel_holds_nothing_of_the_measured_results(wheel):
    """issue 37: the measured results (``results/`` at the top, formerly a folder of ``eval/``, the package
    source) are no part of the wheel, though the tree the wheel is built from holds them."""
    names = zipfile.ZipFile(wheel).namelist()
    assert not _results_names(names), _results_names(names)[:20]


def test_sdist_holds_nothing_of_the_measured_results(tmp_path):
    """issue 37: nor of the sdist, built by setuptools' own ``build_sdist`` from a copy of the tree with results/."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_BUILD_IGNORE)
    assert (src / "results" / "compare.md").is_file()
    code = "import sys\nfrom setuptools import build_meta\nprint(build_meta.build_sdist(sys.argv[1]))\n"
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "dist")], cwd=src, capture_output=True,
                          text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with tarfile.open(tmp_path / "dist" / proc.stdout.strip().splitlines()[-1]) as sdist:
        names = [n.split("/", 1)[1] for n in sdist.getnames() if "/" in n]  # less the latechunk-X.Y.Z/ prefix
    assert "latechunk/__init__.py" in names and "eval/harness.py" in names, names[:20]
    assert not _results_names(names), _results_names(names)[:20]


_CHECK = r"""
import importlib.util, os, sys
target = os.path.realpath(sys.argv[1])
import kernels
assert os.path.realpath(kernels.__file__).startswith(target), kernels.__file__
assert hasattr(kernels, "get_kernel"), "import kernels is not Hugging Face's kernels"
import latechunk.kernels.reference, latechunk.eval.harness
names = ["latechunk.kernels.reference", "latechunk.eval.harness"]
if importlib.util.find_spec("triton") is not None:
    import latechunk.kernels.segment_mean
    names.append("latechunk.kernels.segment_mean")
for name in names:
    assert os.path.realpath(sys.modules[name].__file__).startswith(target), sys.modules[name].__file__
assert "eval" not in sys.modules, "a top-level eval was imported"
print("ok", " ".join(names))
"""


def test_wheel_installs_beside_hugging_face_kernels(wheel, tmp_path):
    """One ``pip install --target`` folder with both wheels: ``import kernels`` is Hugging Face's, and
    ``latechunk.kernels.segment_mean`` and ``latechunk.eval.harness`` import from the same folder."""
    hf = _hf_kernels_wheel()
    target = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
         "--target", str(target), str(wheel), str(hf)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (target / "kernels" / "__init__.py").exists() and (target / "latechunk" / "kernels").is_dir()
    assert not (target / "eval").exists()
    # outside the repository, so its folders cannot shadow anything; the target first on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(target)
    env.setdefault("TRITON_INTERPRET", "1")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK, str(target)], cwd=cwd, env=env, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.startswith("ok latechunk.kernels.reference latechunk.eval.harness")


def test_repository_root_imports_no_top_level_copy():
    """From the repository root (first on sys.path, as with ``python3 -m``), the mapped packages import as
    latechunk.kernels / latechunk.eval from the repository folders, and no top-level kernels/eval appears."""
    code = (
        "import sys, latechunk.kernels.reference, latechunk.eval.harness, latechunk.pooling\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('kernels', 'eval'))\n"
        "assert not bad, bad\n"
        "print(latechunk.kernels.reference.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, (
        proc.stderr[-3000:] + "\n(latechunk must be installed editable: pip install -e .)"
    )
    assert Path(proc.stdout.strip()) == ROOT / "kernels" / "reference.py"


def test_from_the_repository_root_import_kernels_is_hugging_faces(tmp_path):
    """transformers >= 5.25 imports Hugging Face's ``kernels`` with every model. From the repository root (first on
    sys.path, as with ``python3 -m pytest``) the repository's ``kernels/`` folder would shadow it (ImportError:
    cannot import name 'CUDAProperties'); the folder hands the top-level name to Hugging Face's package, so
    ``import kernels`` is theirs, a BERT model imports, and ``latechunk.kernels`` is still this folder."""
    hf = _hf_kernels_wheel()
    target = tmp_path / "hf"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
         "--target", str(target), str(hf)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    code = (
        "import os, sys\n"
        "import kernels\n"
        "assert hasattr(kernels, 'get_kernel'), kernels.__file__\n"
        "assert os.path.realpath(kernels.__file__).startswith(os.path.realpath(sys.argv[1])), kernels.__file__\n"
        "import transformers.models.bert.modeling_bert\n"
        "import latechunk.kernels.reference\n"
        "print(latechunk.kernels.reference.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(target)  # after the root ('' first on sys.path with -c)
    proc = subprocess.run([sys.executable, "-c", code, str(target)], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert Path(proc.stdout.strip()) == ROOT / "kernels" / "reference.py"


def test_dev_extra_does_not_install_triton_on_cpu_machines():
    """[dev] stays light (triton is ~1 GB): it is in [gpu], and .ci/run installs it for the kernel tests."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert not any(d.lower().startswith("triton") for d in extras["dev"])
    assert any(d.lower().startswith("triton") for d in extras["gpu"])
    ci = (ROOT / ".ci" / "run").read_text()
    assert "triton" in ci


def test_two_checkouts_on_the_path_do_not_hand_kernels_to_each_other(tmp_path):
    """Second trial: running one checkout with another on PYTHONPATH crashed (`KeyError: 'kernels'` in
    kernels/__init__.py): each checkout's folder handed the top-level name to the other's. Other checkouts are
    skipped; latechunk imports and its kernels are this checkout's."""
    import shutil

    other = tmp_path / "other_checkout"
    shutil.copytree(ROOT / "kernels", other / "kernels")
    (other / "latechunk").mkdir()
    code = ("import latechunk.kernels.reference, latechunk.pooling\n"
            "print(latechunk.kernels.reference.__file__)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(other)
    proc = subprocess.run([sys.executable, "-c", "import kernels; " + code.replace("\n", "; ", 1)], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert Path(proc.stdout.strip()) == ROOT / "kernels" / "reference.py"
