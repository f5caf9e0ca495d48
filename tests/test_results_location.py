"""Measured results live in ``results/`` at the repository top, not inside the ``eval/`` source folder (which
installs as ``latechunk.eval``; issue 37 §6): no tracked file points at the old ``eval/results`` place, and every
relative Markdown link into or inside ``results/`` resolves. That nothing of them is in the wheel or the sdist is
checked in tests/test_packaging.py, which builds both."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"

OLD = "eval/" + "results"
"""The old place (spelled in two parts so that this file does not mention it)."""
ALLOWED = {"ARCHITECTURE.md": ["(formerly " + OLD + "/)"]}
"""Files that name the old place on purpose, to describe the move -> the exact phrases that may do it."""
# the old place built from path parts: "eval" / "results", ("eval", "results"), "eval", "results" in a join
_PATH_PARTS = re.compile(r"""["']eval["']\s*[/,]\s*["']results["']""")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _tracked() -> list[Path]:
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout ({ROOT}): {proc.stderr.decode(errors='replace').strip()[-200:]}")
    return [ROOT / name for name in proc.stdout.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    """The file's text, or None for a binary file (a NUL in its first 8 KiB, as git decides) or a missing one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # deleted in the working tree, not yet committed
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def old_place_mentions(files: list[Path], root: Path = ROOT) -> list[str]:
    """``file:line: text`` for each line of ``files`` outside ``results/`` that names ``eval/results``, as a path
    string or built from path parts, less the phrases of :data:`ALLOWED`."""
    found = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel.startswith("results/") or path == Path(__file__).resolve():
            continue
        text = _text(path)
        if text is None or ("results" not in text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            kept = line
            for phrase in ALLOWED.get(rel, []):
                kept = kept.replace(phrase, "")
            if OLD in kept or _PATH_PARTS.search(kept):
                found.append(f"{rel}:{number}: {line.strip()[:160]}")
    return found


def test_no_tracked_file_outside_results_points_at_eval_results():
    """issue 37: ``eval/results`` moved to ``results/``; a docstring, help string, default ``--out`` path, test or
    document that still names the old place (or builds it as ``"eval" / "results"``) points at nothing."""
    found = old_place_mentions(_tracked())
    assert not found, "still naming the old eval/results (now results/):\n" + "\n".join(found)


def test_the_old_place_check_finds_a_path_string_and_path_parts(tmp_path):
    """The check itself: a path string and a path built from parts are found; the allowed phrase is not."""
    bad = tmp_path / "a.py"
    bad.write_text(f'OUT = "{OLD}/peers.md"\nDIR = REPO / "eval" / "results"\nOK = "results/peers.md"\n')
    arch = tmp_path / "ARCHITECTURE.md"
    arch.write_text(ALLOWED["ARCHITECTURE.md"][0] + "\n")
    found = old_place_mentions([bad, arch], root=tmp_path)
    assert [f.split(": ", 1)[0] for f in found] == ["a.py:1", "a.py:2"]


def test_eval_source_folder_holds_no_results():
    """The source folder that installs as ``latechunk.eval`` holds code only; the measured results are at the top."""
    assert not (ROOT / "eval" / "results").exists()
    assert (RESULTS / "compare.md").is_file() and (RESULTS / "chroma_full" / "results.json").is_file()


def test_relative_markdown_links_into_and_inside_results_resolve():
    """A move changes the depth of relative links: every relative link out of its own folder in
    ``results/**/*.md`` and every link to ``results/`` in the top-level documents names a file or folder that
    exists. (A link to a file beside the page moves with it; some report folders were committed without the
    ``plot.png`` their report.md shows.)"""
    docs = sorted(RESULTS.rglob("*.md")) + [ROOT / n for n in ("README.md", "ARCHITECTURE.md", "SCALE.md")]
    broken = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8", errors="replace")
        for target in _LINK.findall(text):
            target = target.split("#", 1)[0]
            if not target or re.match(r"[a-z]+:", target):  # anchors and URLs
                continue
            if "/" not in target or (doc.parent == ROOT and not target.startswith("results/")):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, "links that name nothing:\n" + "\n".join(broken)
