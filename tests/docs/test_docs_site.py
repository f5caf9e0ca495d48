"""The documentation site (issue 40): it builds with ``mkdocs build --strict``, its paragraphs are short, its CLI
reference is generated from the Typer app, and a headless browser shows its pages (as tests/test_agree.py does
for the agree view)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.docs.examples import DOCS, ROOT, pages
from tests.scripts import load_script

#: the longest paragraph a docs page may hold, in characters (issue 40: "paragraphs short")
MAX_PARAGRAPH = 1200
_FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.MULTILINE | re.DOTALL)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a markdown page: fenced blocks, tables and headings left out, each list item its
    own paragraph, each paragraph joined into one line."""
    text = _FENCE.sub("", text)
    found = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith(("|", "#"))]
        current: list[str] = []
        for line in lines:
            if _ITEM.match(line) and current:
                found.append(" ".join(current))
                current = []
            current.append(line.strip())
        if current:
            found.append(" ".join(current))
    return found


def test_no_paragraph_in_the_docs_is_over_1200_characters():
    long = [(len(p), f"{page.relative_to(ROOT)}: {p[:80]}...") for page in pages() for p in paragraphs(
        page.read_text(encoding="utf-8")) if len(p) > MAX_PARAGRAPH]
    assert not long, f"paragraphs over {MAX_PARAGRAPH} characters:\n" + "\n".join(f"{n}: {w}" for n, w in long)


def test_the_paragraph_splitter_sees_long_paragraphs_and_skips_code():
    text = "# T\n\n" + "word " * 300 + "\n\n```bash\n" + "x" * 2000 + "\n```\n\n- a\n- " + "b" * 1300 + "\n"
    got = paragraphs(text)
    assert [len(p) for p in got] == [len("word " * 300) - 1, 3, 1302]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with ``mkdocs build --strict`` (a warning fails it: a broken link, a missing page, a
    docstring the API reference cannot read)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return out


def test_the_site_builds_strict_with_every_page(site):
    for rel in ("index.html", "getting-started/index.html", "reference/api/index.html", "troubleshooting/index.html",
                "limits/index.html", "benchmarks/index.html", "img/map_xquad.png", "reference/cli/index.html"):
        assert (site / rel).is_file(), rel
    for md in DOCS.rglob("*.md"):
        rel = md.relative_to(DOCS).with_suffix("")
        html = site / ("index.html" if rel.name == "index" and rel.parent == Path(".") else rel / "index.html")
        if rel.name == "index" and rel.parent != Path("."):
            html = site / rel.parent / "index.html"
        assert html.is_file(), f"{md} has no page in the site"
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "LateChunker" in api and "export_folder" in api and "Index" in api


def test_the_cli_reference_is_the_app(site):
    """One page per command, generated from the Typer app: every visible option of every command is on its page
    with the help --help prints, and the pages are in the nav."""
    gen = load_script("gen_cli_docs")
    commands = gen.commands()
    assert {"embed", "search", "compare", "export", "train"} <= set(commands)
    pages_ = gen.cli_pages()
    index = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    import click

    root = gen._root_command()
    for name, command in commands.items():
        html = (site / "reference" / "cli" / name / "index.html").read_text(encoding="utf-8")
        assert f"latechunk {name}" in html and f"{name}/" in index
        ctx = click.Context(command, info_name=name, parent=click.Context(root, info_name="latechunk"))
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            opts = " ".join(record[0].split())
            assert f"`{opts}`" in pages_[f"reference/cli/{name}.md"], (name, opts)
            first = record[1].split()[:4]
            assert all(w.replace("<", "&lt;").replace(">", "&gt;").replace("&", "&amp;") in html or w in html
                       for w in first if w.isalpha()), (name, opts)
    # hidden options (old spellings) are not documented
    assert "| `--window-overlap" not in pages_["reference/cli/compare.md"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs Debian's chromium)")
@pytest.mark.parametrize(("page", "title"), [("index.html", "latechunk"),
                                             ("reference/cli/embed/index.html", "latechunk embed")])
def test_a_headless_browser_shows_the_page(site, tmp_path, page, title):
    """The built home page and one CLI reference page, rendered by headless Chromium: the DOM has the page's title
    and heading, and the screenshot is not blank (many colours, not one background)."""
    from PIL import Image

    url = (site / page).as_uri()
    dom = subprocess.run([CHROMIUM, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert re.search(rf"<title>[^<]*{re.escape(title)}", dom), dom[:500]
    assert f">{title}<" in dom or f">{title}</h1>" in dom or title in dom
    shot = tmp_path / "page.png"
    subprocess.run([CHROMIUM, *FLAGS, "--window-size=1200,1000", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    colours = {tuple(p) for p in pixels[:: max(1, len(pixels) // 200_000)].tolist()}
    background = np.mean(np.all(pixels == pixels[0], axis=1))
    assert len(colours) > 20 and background < 0.97, (len(colours), background)
