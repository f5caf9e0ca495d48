"""Every ```bash and ```python block of README.md and docs/ runs, page by page, offline on the bundled data
(issue 40); the runner and its documented substitutions are tests/docs/examples.py."""

from __future__ import annotations

import re

import pytest

from tests.docs.examples import (
    DOCS,
    ROOT,
    RUN_LANGUAGES,
    SHOWN_LANGUAGES,
    blocks,
    has_data,
    needs_server,
    pages,
    run_page,
    serve_available,
    substitute,
)

#: every page with a block to run; README.md is run by tests/test_readme.py, which also checks what it printed
RUNNABLE = [p for p in pages()[1:] if any(b.lang in RUN_LANGUAGES for b in blocks(p))]
#: pages whose examples take longer (many commands, compare and train runs): `slow`, run by .ci/run's slow step;
#: the pages a newcomer reads first stay in the default run
SLOW = {"concepts/late-vs-naive.md", "how-to/check.md", "how-to/choose-strategy.md", "how-to/compact-vectors.md",
        "how-to/compare.md", "how-to/export.md", "how-to/indexes-beyond-ram.md", "how-to/train.md",
        "how-to/update-index.md"}
PARAMS = [pytest.param(p, marks=pytest.mark.slow) if p.relative_to(DOCS).as_posix() in SLOW else p for p in RUNNABLE]


@pytest.mark.skipif(not has_data(), reason="the bundled data (../shared/data or $LATECHUNK_DATA) is absent")
@pytest.mark.parametrize("page", PARAMS, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_every_example_of_the_page_runs(page, tmp_path):
    if needs_server(page) and not serve_available():
        pytest.skip("the page starts `latechunk serve`, which this checkout does not have")
    run_page(page, tmp_path)


def test_every_block_is_run_or_only_shown():
    """A block is run (bash, python) or shown in a language that is not a program (text, toml, json, mermaid):
    an ```sh or ```py block would be skipped silently, so none may exist."""
    bad = [f"{p.relative_to(ROOT)}:{b.line} ```{b.lang}" for p in pages() for b in blocks(p)
           if b.lang not in RUN_LANGUAGES + SHOWN_LANGUAGES]
    assert not bad, "blocks neither run nor in a shown-only language:\n" + "\n".join(bad)


def test_the_site_has_runnable_examples_on_its_main_pages():
    """The pages a newcomer reads first teach by commands that run."""
    for rel in ("getting-started.md", "how-to/compare.md", "how-to/search.md", "how-to/update-index.md"):
        assert any(b.lang in RUN_LANGUAGES for b in blocks(DOCS / rel)), rel


def test_the_substitutions_are_the_documented_ones():
    """The runner changes only what its docstring lists: the README's set-up line, the two bundled dataset names."""
    code = "latechunk compare --dataset chroma --out out/c\nlatechunk train --dataset xquad --out m\n"
    got = substitute(code)
    assert "--dataset chroma " not in got and "eval_mini/chroma" in got and "eval_mini/squad_mini.json" in got
    assert substitute("bash scripts/setup.sh && latechunk embed x --out y") == "latechunk embed x --out y"
    assert substitute("bash scripts/setup.sh && python3 -m pytest -q").startswith(":")
    assert substitute("latechunk embed my_docs/ --out out/a") == "latechunk embed my_docs/ --out out/a"
    assert substitute("latechunk train --ict my_docs/ --out m") == "latechunk train --max-queries 16 --ict my_docs/ --out m"


def test_every_slow_page_exists():
    assert all((DOCS / rel).is_file() for rel in SLOW)


def test_a_failing_block_fails_the_page(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n```bash\ntrue\n```\n\n```bash\nlatechunk search no/such/folder q\n```\n")
    (tmp_path / "run").mkdir()
    with pytest.raises(AssertionError, match=re.escape("page.md:7 (bash) exited with")):
        run_page(page, tmp_path / "run")
