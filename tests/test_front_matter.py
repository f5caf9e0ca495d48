"""Front matter (BR-022): its title becomes the document's title, recorded in the output."""

from __future__ import annotations

import json

import pytest

from latechunk.front_matter import FRONT_MATTER, front_matter_title

BR022 = "---\ntitle: Pond survey\ntags: field\n---\n\nNotes from the spring count at the north pond.\n\n# Frogs\n\nFrogs call after rain.\n"


@pytest.mark.parametrize(
    "text, title",
    [
        (BR022, "Pond survey"),
        ('+++\ntitle = "Hugo page"\ndraft = true\n+++\n\n# Body\n', "Hugo page"),
        ("\ufeff---\ntitle: 'Quoted: with colon'\n---\ntext\n", "Quoted: with colon"),
        ("---\ntitle: 2024\n---\ntext\n", "2024"),
        ("---\ntags: [a, b]\n---\ntext\n", None),  # no title
        ("---\ntitle: [unclosed\n---\ntext\n", None),  # malformed YAML: no title, no error
        ("---\n- a list\n---\ntext\n", None),  # not a mapping
        ("---\ntitle:   \n---\ntext\n", None),  # blank
        ("# Not front matter\n\ntitle: x\n", None),
        ("text\n---\ntitle: late\n---\n", None),  # only at the very start
    ],
)
def test_br022_front_matter_title(text, title):
    assert front_matter_title(text) == title


def test_br022_front_matter_span_matches_the_case():
    m = FRONT_MATTER.match(BR022)
    assert m is not None and m.end() == 38 and m.group("body") == "title: Pond survey\ntags: field\n"


def test_br022_front_matter_title_is_the_document_title_in_the_manifest(tmp_path):
    """A markdown file's front-matter title is the document's title: Document.metadata["title"], the shard's
    and the manifest's document record; a .txt file's YAML-looking start is not front matter."""
    from typer.testing import CliRunner

    from latechunk.cli import app
    from latechunk.io import iter_inputs

    def run(*args):
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False).exit_code

    src = tmp_path / "in"
    src.mkdir()
    (src / "pond.md").write_text(BR022)
    (src / "plain.txt").write_text(BR022)
    (src / "untitled.md").write_text("# Just a heading\n\nBody text here.\n")
    docs = {d.doc_id: d for d in iter_inputs([src])}
    assert docs["pond.md"].metadata["title"] == "Pond survey"
    assert "title" not in docs["plain.txt"].metadata and "title" not in docs["untitled.md"].metadata
    out = tmp_path / "out"
    assert run("embed", src, "--out", out, "--strategy", "heading:max_tokens=64", "--device", "cpu") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    records = {d["doc_id"]: d for d in manifest["documents"]}
    assert records["pond.md"]["title"] == "Pond survey"
    assert "title" not in records["plain.txt"] and "title" not in records["untitled.md"]
    assert run("verify", out) == 0


@pytest.mark.parametrize(
    "text, words",
    [
        ("---\ntitle: a: b\n---\ntext\n", "not valid YAML at line 2"),
        ('---\ntitle: "unclosed\n---\ntext\n', "not valid YAML at line 3"),
        ("+++\ntitle = \n+++\ntext\n", "not valid TOML"),
        ("---\n- a list\n---\ntext\n", "is a list, not a mapping"),
        ("---\ntitle: [a, b]\nurl: 42\n---\ntext\n", "title is a list, not text: ignored; front matter url is a number"),
        ("---\ntitle: true\n---\ntext\n", "title is a boolean"),
    ],
)
def test_front_matter_problem_names_what_was_ignored(text, words):
    from latechunk.front_matter import front_matter_problem

    assert words in (front_matter_problem(text) or ""), front_matter_problem(text)


@pytest.mark.parametrize("text", [BR022, "---\n---\ntext\n", "---\ntags: [a]\n---\ntext\n", "no front matter\n",
                                  "---\ntitle: 2024\nurl: /docs/\n---\ntext\n"])
def test_front_matter_problem_is_none_for_good_or_absent_front_matter(text):
    from latechunk.front_matter import front_matter_problem

    assert front_matter_problem(text) is None


def test_ignored_front_matter_is_said_by_embed_and_kept_in_the_manifest(tmp_path):
    """Fresh-user trial: invalid YAML front matter was dropped silently (the title fell back to the heading) while
    a JSONL record with a bad title is skipped with its reason. The document is still embedded (its text is
    fine), and embed now says on stderr what was ignored and why; the manifest's record keeps the note."""
    from typer.testing import CliRunner

    from latechunk.cli import app

    src = tmp_path / "in"
    src.mkdir()
    (src / "bad.md").write_text("---\ntitle: Pond: survey\n---\n\n# Frogs\n\nFrogs call after rain.\n")
    (src / "good.md").write_text(BR022)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "note: bad.md: front matter is not valid YAML at line 2" in res.output, res.output
    assert "good.md: front matter" not in res.output
    records = {d["doc_id"]: d for d in json.loads((out / "manifest.json").read_text())["documents"]}
    assert "not valid YAML" in records["bad.md"]["front_matter_problem"]
    assert "front_matter_problem" not in records["good.md"] and records["good.md"]["title"] == "Pond survey"
    assert CliRunner().invoke(app, ["verify", str(out)]).exit_code == 0
    # chunk says it too (trial 2: only embed did)
    res = CliRunner().invoke(app, ["chunk", str(src), "--strategy", "recursive", "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 0 and "note: bad.md: front matter is not valid YAML at line 2" in res.output, res.output
