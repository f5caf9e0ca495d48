"""Tests for scripts/gpu_check.py and scripts/gpu_check.sh: the CPU dry run prints the full summary table."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.py"
SHELL = ROOT / "scripts" / "gpu_check.sh"

# rows every dry run must print, by step-name prefix
EXPECTED_ROWS = (
    "gpu tests (pytest -m gpu)",
    "d2d copy ",
    "kernel bf16 ",
    "kernel bf16 cu_seqlens",
    "kernel fp32 ",
    "torch ref ",
    "encoder modernbert-base fwd",
    "encoder bert-small fwd",
    "pipeline late x1",
    "pipeline late x5",
    "pipeline naive x1",
    "raw model(...) on the same inputs",
    "faiss gpu flat IP",
    "target kernel bf16",
    "target late pipeline x1 / raw",
    "target five strategies / one",
)


def load_gpu_check():
    """The script as a module (scripts/ is not a package)."""
    return load_script("gpu_check")


def parse_table(stdout: str) -> tuple[dict[str, str], str]:
    """``({step: result}, status line)`` of the summary table, which must be the last thing printed."""
    lines = stdout.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("== gpu_check summary")]
    assert starts, f"no summary table in output:\n{stdout[-3000:]}"
    table = lines[starts[-1] :]
    assert table[-1] in ("== OK ==", "== FAILED =="), f"table is not printed last: {table[-1]!r}"
    rows = {}
    for line in table[3:-1]:
        step, _time, result = (part.strip() for part in line.split("|", 2))
        rows[step] = result
    return rows, table[-1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)  # the script must set it itself
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def check_rows(rows: dict[str, str]) -> None:
    """Every expected step has a row, none failed, and each row's result has the right unit."""
    for prefix in EXPECTED_ROWS:
        matching = [s for s in rows if s.startswith(prefix)]
        assert matching, f"no row starting with {prefix!r} in {list(rows)}"
    failed = {s: r for s, r in rows.items() if r.startswith("FAIL")}
    assert not failed, f"failed steps: {failed}"
    for step, result in rows.items():
        if step.startswith(("kernel bf16", "kernel fp32")):
            assert "GB/s" in result and "x copy" in result, (step, result)
        if step.startswith(("encoder", "pipeline", "raw model")):
            assert "tokens/s" in result or result.startswith("n/a"), (step, result)
        if step.startswith("target"):  # a dry run measures the ratios but does not judge them
            assert result.endswith("(not judged: dry run)") or result.startswith("n/a"), (step, result)
    assert rows["gpu tests (pytest -m gpu)"].startswith("0 passed, 0 failed, 0 errors"), (
        "no CUDA: all skipped"
    )
    assert rows["faiss gpu flat IP"].startswith("n/a") or "vec/s" in rows["faiss gpu flat IP"]


@pytest.mark.slow  # every benchmark step at tiny sizes: about 20 s on 2 cores; the default run has the script's
# own dry run (test_script_runs_pytest_itself) and the table and junit parsing (test_report_table_and_junit)
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="the kernel step needs triton (CI installs it)")
def test_shell_dry_run_prints_table(tmp_path):
    """gpu_check.sh --dry-run: pytest -m gpu (skipped on CPU), then every step at tiny sizes, table last."""
    env = _env()
    env["GPU_CHECK_LOG_DIR"] = str(tmp_path)
    proc = subprocess.run(
        ["bash", str(SHELL), "--dry-run"], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows, status = parse_table(proc.stdout)
    assert status == "== OK =="
    check_rows(rows)
    assert "dry-run: yes" in proc.stdout
    for name in ("gpu_tests.log", "gpu_tests.xml", "gpu_check.log"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_script_runs_pytest_itself():
    """Without --pytest-junit the script runs `pytest -m gpu` on its own and reports it."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--skip", "kernel", "encoder", "pipeline", "faiss"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, check=False, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows, status = parse_table(proc.stdout)
    assert status == "== OK ==" and list(rows) == ["gpu tests (pytest -m gpu)"]
    assert "skipped" in rows["gpu tests (pytest -m gpu)"]


def test_report_table_and_junit(tmp_path):
    """The table marks a FAIL row as FAILED; junit summaries count passed/failed/skipped."""
    gpu_check = load_gpu_check()
    report = gpu_check.Report()
    report.add("a step", "1 GB/s", 0.5)
    report.add("b", "n/a (nothing)")
    rows, status = parse_table(report.table("header"))
    assert rows == {"a step": "1 GB/s", "b": "n/a (nothing)"} and status == "== OK =="
    report.add("c", "FAIL: boom", 1.0)
    assert parse_table(report.table("header"))[1] == "== FAILED =="
    xml = tmp_path / "junit.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="2" tests="5"/></testsuites>'
    )
    assert gpu_check._junit_summary(xml) == ("2 passed, 1 failed, 0 errors, 2 skipped", False)


def test_synthetic_documents_are_deterministic_markdown():
    """The pipeline step's corpus: headings and sentences, same text for the same seed."""
    gpu_check = load_gpu_check()
    a = gpu_check.synthetic_documents(2, 100)
    b = gpu_check.synthetic_documents(2, 100)
    assert [d.text for d in a] == [d.text for d in b]
    assert all(d.text.startswith("#") and ". " in d.text for d in a)
