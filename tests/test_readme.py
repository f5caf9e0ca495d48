"""The README's Python examples run as written (copied into a fresh namespace, in order)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_readme_python_examples_run_as_written():
    blocks = python_blocks()
    assert blocks, "README.md has no ```python block"
    for code in blocks:
        namespace: dict = {}
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102  (our own README)
    # the API example's objects are what its comments say
    res, text = namespace["res"], namespace["text"]
    run = res.run("fixed:size=256")
    vecs = run.vectors["late"].vectors
    assert vecs.shape == (run.n_chunks, 384) and str(vecs.dtype) == "float32"
    spans = run.boundaries[0].char_spans
    assert spans.dtype.name == "int32" and spans.shape == (run.n_chunks, 2)
    assert all(text[s:e].strip() for s, e in spans.tolist())
