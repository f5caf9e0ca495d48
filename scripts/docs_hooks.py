"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml; issue 40).

- The CLI reference (``reference/cli/*.md``) is generated from the Typer app at build time
  (:func:`gen_cli_docs.cli_pages`) and added to the site and to the nav's "Command line" section, so the pages
  can never disagree with ``--help`` and nothing generated is committed.
- The plots of ``results/`` that the pages show (:data:`IMAGES`) are added to the site from where they are, under
  ``img/``, instead of being copied into docs/ (the repository does not grow).
- A page another engineer writes (:data:`OPTIONAL_PAGES`: ``how-to/serve.md``) joins its nav section once it
  exists, so ``mkdocs build --strict`` passes before and after it lands.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File, InclusionLevel
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from gen_cli_docs import CLI_DIR, cli_pages  # scripts/ is not a package: found through sys.path

#: site path under docs/ -> the plot in results/ it is
IMAGES = {
    "img/map_xquad.png": "results/map/xquad/map.png",
    "img/frontier_xquad.png": "results/map/xquad/frontier.png",
    "img/map_chroma.png": "results/map/chroma/map.png",
    "img/frontier_chroma.png": "results/map/chroma/frontier.png",
    "img/agree_view.png": "results/agree_view.png",
}

#: the nav section the generated command pages are appended to (its index page is the generated index)
CLI_SECTION = "Command line"
#: pages another engineer writes, put in the nav by :func:`on_nav` once they exist (page -> its nav section), so
#: the strict build passes before and after they land
OPTIONAL_PAGES = {"how-to/serve.md": "How-to guides"}

_generated: dict[str, str] = {}


def on_files(files, config):
    """Add the generated CLI pages and the results' plots to the site's files."""
    _generated.clear()
    _generated.update(cli_pages())
    for rel, text in _generated.items():
        file = File.generated(config, rel, content=text)
        if rel != f"{CLI_DIR}/index.md":
            file.inclusion = InclusionLevel.NOT_IN_NAV  # on_nav puts them there; mkdocs would warn before it
        files.append(file)
    for rel in OPTIONAL_PAGES:
        file = files.get_file_from_path(rel)
        if file is not None:
            file.inclusion = InclusionLevel.NOT_IN_NAV  # on_nav puts it there
    for rel, source in IMAGES.items():
        files.append(File.generated(config, rel, abs_src_path=str(ROOT / source)))
    return files


def on_nav(nav, config, files):
    """Put one nav entry per generated command page under the "Command line" section, after its index."""
    section = _find_section(nav.items, CLI_SECTION)
    if section is None:
        raise ValueError(f"mkdocs.yml's nav has no section {CLI_SECTION!r} for the generated CLI pages")
    for rel in sorted(_generated):
        if rel == f"{CLI_DIR}/index.md":
            continue
        file = files.get_file_from_path(rel)
        page = file.page or Page(None, file, config)  # made by get_navigation for a file outside the nav
        page.parent = section
        section.children.append(page)
    for rel, title in OPTIONAL_PAGES.items():
        file = files.get_file_from_path(rel)
        target = _find_section(nav.items, title)
        if file is not None and target is not None and file.page not in target.children:
            page = file.page or Page(None, file, config)
            page.parent = target
            target.children.append(page)
    nav.pages[:] = [p for p in _pages(nav.items)]  # reading order, for the previous/next links
    for before, after in zip(nav.pages, nav.pages[1:]):
        before.next_page, after.previous_page = after, before
    return nav


def _pages(items):
    for item in items:
        if isinstance(item, Page):
            yield item
        yield from _pages(getattr(item, "children", None) or [])


def _find_section(items, title):
    for item in items:
        if getattr(item, "title", None) == title and hasattr(item, "children"):
            return item
        found = _find_section(getattr(item, "children", None) or [], title)
        if found is not None:
            return found
    return None
