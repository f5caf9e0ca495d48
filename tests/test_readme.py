"""The README's Python examples run as written: every ```python block, each in a fresh namespace, in order (a
block right after a ``<!-- not run -->`` line is skipped); the API example's objects are what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The README's ```python blocks, less those marked ``<!-- not run -->`` on the line before."""
    text = README.read_text(encoding="utf-8")
    return [m.group(2) for m in re.finditer(r"(<!-- not run -->\n)?```python\n(.*?)```", text, flags=re.DOTALL)
            if not m.group(1)]


def test_readme_python_examples_run_as_written(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks()
    assert blocks, "README.md has no ```python block"
    api = None
    for code in blocks:
        namespace: dict = {"__name__": "__readme__"}
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102  (our own README)
        if "chunker" in namespace and "index" in namespace:
            api = namespace
    assert api is not None, "README.md has no Python API example (a block with `chunker` and `index`)"
    # the API example's objects are what its comments say
    text, chunks, index = api["text"], api["chunks"], api["index"]
    assert chunks and all(c.text == text[c.char_start:c.char_end] for c in chunks)
    assert all(c.embedding.dtype == np.float32 and abs(float(np.linalg.norm(c.embedding)) - 1) < 1e-5 for c in chunks)
    # the default strategy (recursive) records no heading path: only `heading` does (the README says so), so the
    # example's `c.heading_path` is () for every chunk, "# Volcanoes" above it or not
    assert api["chunker"].strategy.startswith("recursive:")
    assert [c.heading_path for c in chunks] == [()] * len(chunks)
    hits = api["hits"]
    assert hits and hits[0].doc_id == "volcanoes.md" and "Etna" in hits[0].text
    assert len(index) == index.manifest["counts"]["chunks"]


def test_ci_runs_the_readme_test_command_first_in_a_fresh_venv(tmp_path):
    """Issue 36: CI installed triton before the README's test command, so a failure that only a fresh machine
    shows (torch 2.13 without triton) passed CI. .ci/run now makes a fresh venv, reads the command from README.md
    and runs it as written before anything else is installed."""
    import subprocess

    ci = (README.parent / ".ci" / "run").read_text()
    lines = ci.splitlines()
    first_install = next(i for i, line in enumerate(lines) if "pip install" in line and not line.lstrip().startswith("#"))
    venv = next(i for i, line in enumerate(lines) if "-m venv --clear" in line)
    runs_readme = next(i for i, line in enumerate(lines) if line.strip() == 'bash -c "$readme_test_command"')
    assert venv < runs_readme < first_install
    # the command .ci/run extracts is the README's second set-up command, verbatim
    extract = next(line for line in lines if line.startswith("readme_test_command="))
    script = tmp_path / "extract.sh"
    script.write_text(f'cd "{README.parent}"\n{extract}\nprintf "%s" "$readme_test_command"\n')
    got = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True).stdout
    block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL).group(1)
    assert got == block.splitlines()[1] and "scripts/setup.sh" in got and "pytest" in got
