"""The README's examples run as written (every ```bash and ```python block, in order, by tests/docs/examples.py,
the runner of the docs' examples) and do what their comments say; CI runs the README's test command first."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.docs.examples import has_data, run_page

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_BYTES = 15_000



def test_readme_is_a_front_page():
    """Issue 40: at most 15,000 bytes, opening with the two set-up commands, pointing to the docs."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= MAX_BYTES
    first = re.search(r"```bash\n(.*?)```", text, flags=re.DOTALL).group(1).splitlines()
    assert first[0].startswith("bash scripts/setup.sh && latechunk embed ") and "pytest" in first[1]
    assert text.index("```bash") < text.index("## ")  # the set-up block comes before every section
    for heading in ("## Quickstart on your own folder", "## Which strategy, which mode", "## Commands", "## Results",
                    "## Citation", "## License"):
        assert heading in text, heading
    from latechunk.cli import app

    names = [c.name or c.callback.__name__ for c in app.registered_commands if not c.hidden]
    commands = text[text.index("## Commands"):text.index("## Results")]
    missing = [n for n in names if f"`latechunk {n}" not in commands]
    assert not missing, f"commands without their line in README.md's Commands: {missing}"


@pytest.mark.skipif(not has_data(), reason="the bundled data (../shared/data or $LATECHUNK_DATA) is absent")
def test_readme_examples_run_as_written(tmp_path):
    run = run_page(README, tmp_path)
    ns = run.namespace
    # the folder the quickstart's first command wrote is what the Python block loaded
    assert (run.work / "out" / "my_docs" / "index.faiss").is_file()
    assert (run.work / "out" / "chroma" / "chunks.parquet").is_file()
    hits, index = ns["hits"], ns["index"]
    assert 1 <= len(hits) <= 3 and hits == sorted(hits, key=lambda h: -h.score)
    assert hits[0].doc_id == "guide/configure.md"  # the page that says where the cache is
    assert len(index) == index.manifest["counts"]["chunks"]
    chunker, chunks = ns["chunker"], ns["chunks"]
    assert chunker.strategy.startswith("fixed:size=64")
    text = "Mount Etna in Sicily erupts almost every year. It is Europe's most active volcano."
    assert chunks and all(c.text == text[c.char_start:c.char_end] for c in chunks)
    assert all(c.embedding.dtype == np.float32 and abs(float(np.linalg.norm(c.embedding)) - 1) < 1e-5 for c in chunks)


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
