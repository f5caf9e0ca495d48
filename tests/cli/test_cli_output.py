"""Terminal output prints text literally (issue 16, part 1) and reads well (part 6): chunk text, queries, file
names, doc ids and error messages never go through rich markup; search's layout keeps doc ids whole at 80 columns
and when piped, shows the heading path and a snippet around the query's words; `chunk` takes folders and several
paths in one start-up.

A tiny random BERT (tests/models.py) where the ranking does not matter; the bundled all-MiniLM-L6-v2 only for the
issue's own two searches (the right chunk must come first).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config import DEFAULT_STRATEGY
from latechunk.console import format_hits, snippet, visible
from latechunk.strategies import get_strategy
from tests.models import save_tiny_bert

runner = CliRunner()

STORAGE = ("# Storage\n\nKeep the cache under [/var/cache/demo] and read the [backup guide] before you delete "
           "anything.\n")
COLOURS = "# Colours\n\nPick a colour from the [colour chart] to style the header bar.\n"
#: a JSONL record whose id has brackets and a closing-tag look
NOTE_ID = "notes [/tmp] [bold]draft[/bold]"
NOTE = "# Notes\n\nThe [red]release[/red] notes say: run [/usr/bin/demo --check] first.\n"


def _run(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, **kwargs)


def _issue_corpus(root: Path, colours_name: str = "colours.md") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "storage.md").write_text(STORAGE, encoding="utf-8")
    (root / colours_name).write_text(COLOURS, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    """An index (heading strategy, tiny random model) of the issue's two files, the colours file named with
    brackets, and a JSONL record whose doc id holds rich-markup look-alikes."""
    tmp = tmp_path_factory.mktemp("out_tiny")
    model = save_tiny_bert(tmp / "model")
    src = _issue_corpus(tmp / "docs [v2]", "colours [red] [v2].md")
    (src / "notes.jsonl").write_text(json.dumps({"id": NOTE_ID, "text": NOTE}) + "\n", encoding="utf-8")
    out = tmp / "idx"
    res = _run("embed", src, "--out", out, "--model", model, "--strategy", "heading", "--device", "cpu", "--quiet")
    assert res.exit_code == 0, res.output
    return src, out, model


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory):
    """The issue's exact case: storage.md and colours.md embedded with `heading` by the bundled MiniLM."""
    tmp = tmp_path_factory.mktemp("out_minilm")
    src = _issue_corpus(tmp / "docs")
    out = tmp / "idx"
    res = _run("embed", src, "--out", out, "--strategy", "heading", "--device", "cpu", "--quiet")
    assert res.exit_code == 0, res.output
    return out


# ------------------------------------------------------------------------------------------ printed literally
def test_search_prints_bracketed_chunk_text_of_the_issue_literally(minilm_index):
    """Issue 16 part 1, as reported: the colours chunk lost "[colour chart]"; the storage chunk crashed search
    with MarkupError (closing tag '[/var/cache/demo]')."""
    res = _run("search", minilm_index, "which colour can the header bar use", "-k", 1)
    assert res.exit_code == 0, res.output
    assert "Pick a colour from the [colour chart] to style the header bar." in res.output
    res = _run("search", minilm_index, "where is the cache kept", "-k", 1)
    assert res.exit_code == 0, res.output
    assert "Keep the cache under [/var/cache/demo] and read the [backup guide] before you delete anything." in res.output


def test_search_prints_query_doc_ids_and_file_names_with_brackets_literally(tiny_index):
    _, out, _ = tiny_index
    query = "what does [/note] say about [bold]the cache[/bold]?"
    res = _run("search", out, query, "-k", 3)
    assert res.exit_code == 0, res.output
    text = res.output
    assert f"for: {query}" in text
    assert "colours [red] [v2].md" in text and NOTE_ID in text  # file name and JSONL id, as written
    assert "[/var/cache/demo]" in text and "[colour chart]" in text
    assert "The [red]release[/red] notes say: run [/usr/bin/demo --check] first." in text
    assert "\x1b[" not in text  # piped: no colour codes either


def test_search_expand_prints_contexts_literally(tiny_index):
    _, out, _ = tiny_index
    res = _run("search", out, "[/x] cache", "-k", 3, "--expand", "section")
    assert res.exit_code == 0, res.output
    assert "contexts (section) for: [/x] cache" in res.output and "[/var/cache/demo]" in res.output
    heads = [line for line in res.output.splitlines() if "  holds hit" in line]
    assert heads and all(re.search(r"  holds hits? #\d+(, #\d+)*$", h) for h in heads), res.output
    held = [int(x) for h in heads for x in re.findall(r"#(\d+)", h)]
    assert sorted(held) == list(range(1, len(held) + 1)) and len(held) <= 3  # each hit's rank once, in one context


def test_search_json_is_unchanged_by_the_layout(tiny_index):
    _, out, _ = tiny_index
    res = _run("search", out, "cache [/note]", "-k", 3, "--json")
    hits = json.loads(res.stdout)
    assert {h["doc_id"] for h in hits} == {"storage.md", "colours [red] [v2].md", NOTE_ID}
    assert {"rank", "score", "doc_id", "char_start", "char_end", "heading_path", "text"} <= set(hits[0])


def test_errors_name_paths_with_brackets_literally(tmp_path):
    missing = tmp_path / "idx [/old]"
    res = runner.invoke(app, ["search", str(missing), "query"])
    assert res.exit_code == 2 and str(missing) in res.output
    res = runner.invoke(app, ["chunk", str(tmp_path / "a [/b].md")])
    assert res.exit_code == 2 and "a [/b].md" in res.output
    res = runner.invoke(app, ["verify", str(tmp_path / "v [/x]")])
    # missing: said as search says it (fresh-user trial: verify said "is not a folder", search "does not exist")
    assert res.exit_code == 2 and "v [/x] does not exist (give an output folder" in " ".join(res.output.split())
    (tmp_path / "f [y]").write_text("a file", encoding="utf-8")
    res = runner.invoke(app, ["verify", str(tmp_path / "f [y]")])
    assert res.exit_code == 2 and "f [y] is not a folder" in res.output


def test_verify_problems_name_doc_ids_with_brackets_literally(tmp_path, tiny_index):
    src, out, _ = tiny_index
    moved = tmp_path / "sources"
    moved.mkdir()
    (moved / "storage.md").write_text(STORAGE, encoding="utf-8")  # the bracketed file name is missing here
    (moved / "notes.jsonl").write_text((src / "notes.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    res = runner.invoke(app, ["verify", str(out), "--inputs", str(moved)])
    assert res.exit_code == 1, res.output
    assert "colours [red] [v2].md" in res.output


def test_help_text_is_printed_as_written():
    """Help strings are not rich markup either: embed's --mode help names the header "[title > section path]"
    (rich read it as a style tag and dropped it)."""
    res = runner.invoke(app, ["embed", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert "[title > section path]" in " ".join(res.output.split())


def test_every_command_takes_dash_h_and_shows_defaults_without_parentheses():
    """`latechunk embed -h` failed ("No such option: -h"); defaults given as strings printed as "[default: (late)]"
    (click wraps a string show_default in parentheses); now "[default: late]"."""
    names = [c.name or c.callback.__name__ for c in app.registered_commands if not c.hidden]
    assert {"embed", "search", "verify", "compare"} <= set(names)
    for name in names:
        res = runner.invoke(app, [name, "-h"], env={"COLUMNS": "200"}, prog_name="latechunk")
        assert res.exit_code == 0, (name, res.output)
        assert res.output.startswith(f"Usage: latechunk {name}"), (name, res.output[:100])
        assert "[default: (" not in res.output, (name, res.output)
    text = " ".join(runner.invoke(app, ["embed", "-h"], env={"COLUMNS": "200"}).output.split())
    assert "[default: late]" in text and "[default: 4096 on the CPU, 16384 on a GPU]" in text


def test_compare_table_prints_names_literally():
    """print_table: dataset names, SPECs and labels are data (a folder "docs [/v2]" once crashed rich)."""
    from rich.console import Console

    from latechunk.eval.report import load_result, print_table

    folder = Path(__file__).resolve().parents[2] / "results" / "chroma_precision"
    result = load_result(folder)
    result.manifest["dataset"]["name"] = "docs [/v2] [bold]x"
    result.systems[0].label = "late [/y]"
    buf = io.StringIO()
    print_table(result, console=Console(file=buf, width=400, color_system=None))
    text = buf.getvalue()
    assert "docs [/v2] [bold]x" in text and "late [/y]" in text


def test_compare_table_marks_the_late_pass_the_strategies_share():
    """Trial finding: the terminal's `s` column repeated the one late pass's seconds on every late row, as if each
    strategy had cost them; the rows now say (shared) and split encode + pool, as report.md's cost table does."""
    from rich.console import Console

    from latechunk.eval.report import load_result, print_table

    result = load_result(Path(__file__).resolve().parents[2] / "results" / "chroma_full")
    buf = io.StringIO()
    print_table(result, console=Console(file=buf, width=400, color_system=None))
    rows = [line for line in buf.getvalue().splitlines() if "│ late" in line or "│ naive" in line]
    late, naive = [r for r in rows if "│ late" in r], [r for r in rows if "│ naive" in r]
    assert len(late) == len(naive) == 5
    shared = result.systems[0].costs
    assert all(f"{shared['seconds_encode']:.1f} (shared) + " in r for r in late), late
    assert not any("(shared)" in r for r in naive)
    assert "share one encoder pass" in buf.getvalue()


# ------------------------------------------------------------------------------------------ search layout
def _long_results() -> list[dict]:
    doc_id = "reference/configuration/very-long-folder-name-for-plugins/[draft] social-cards-and-more.md"
    text = ("Intro words that say nothing in particular. " * 12 +
            "Set the cache directory with the cache_dir option of the social plugin.")
    return [{"rank": 1, "score": 0.61234, "doc_id": doc_id, "char_start": 120, "char_end": 720,
             "heading_path": ["Setup", "Social cards [beta]", "Caching"], "text": text}]


def test_layout_at_80_columns_keeps_doc_ids_whole_and_wraps_the_rest():
    results = _long_results()
    lines = [line for line, _ in format_hits(results, "where is the cache directory set", width=80)]
    doc_id = results[0]["doc_id"]
    assert any(line.startswith(f"1. {doc_id}  chars 120-720  score 0.6123") for line in lines)  # one piece
    assert "   Setup > Social cards [beta] > Caching" in lines  # the heading path, on its own line
    assert all(len(line) <= 80 for line in lines if doc_id not in line)
    body = " ".join(line.strip() for line in lines[3:])
    assert "cache_dir" in body and body.startswith("Setup > Social cards [beta] > Caching …")  # snippet at the hit


def test_layout_leaves_the_heading_line_to_the_path_line():
    hit = {"rank": 2, "score": 0.5, "doc_id": "a.md", "char_start": 0, "char_end": 40, "heading_path": ["Caching"],
           "text": "## Caching\n\nSet the cache folder [/var/cache]."}
    lines = [line for line, _ in format_hits([hit], "cache", width=None)]
    assert lines[2:5] == ["2. a.md  chars 0-40  score 0.5000", "   Caching", "   Set the cache folder [/var/cache]."]
    no_path = [line for line, _ in format_hits([{**hit, "heading_path": []}], "cache", width=None)]
    assert "   ## Caching Set the cache folder [/var/cache]." in no_path  # no path line: the heading stays


def test_control_characters_in_doc_ids_queries_and_text_print_as_escapes():
    """A doc id with a newline (a hit that fakes a second rank) or a terminal escape (clear screen), and the same
    in the query, heading path and text, print as escapes: one line per field, nothing for the terminal to run."""
    hit = {"rank": 1, "score": 0.5, "doc_id": "evil\n2. fake.md\x1b[2J", "char_start": 0, "char_end": 9,
           "heading_path": ["Top\u2028Next"], "text": "bell\x07 here and\x9b there"}
    lines = [line for line, _ in format_hits([hit], "find\x1b[31m me", width=None)]
    assert lines[0] == "top 1 result for: find\\x1b[31m me"
    assert lines[2] == "1. evil\\n2. fake.md\\x1b[2J  chars 0-9  score 0.5000"
    assert lines[3:5] == ["   Top Next", "   bell\\x07 here and\\x9b there"]
    assert not any(ch in line for line in lines for ch in "\x1b\x07\x9b\u2028\n")
    assert visible("plain [x] é") == "plain [x] é"


def test_layout_when_piped_takes_no_width_and_cuts_nothing():
    results = _long_results()
    lines = [line for line, _ in format_hits(results, "where is the cache directory set", width=None)]
    snip = snippet(results[0]["text"], "where is the cache directory set")
    assert "   " + snip in lines and len("   " + snip) > 80


def test_search_at_columns_80_piped_keeps_long_doc_ids_on_one_line(tmp_path, tiny_index):
    """The CLI, piped (CliRunner), with COLUMNS=80 in the environment: the terminal's width is not used, a long doc
    id is never folded."""
    _, _, model = tiny_index
    doc_id = "guides/" + "a-rather-long-section-folder/" * 3 + "[v2] storage and cache settings.md"
    src = tmp_path / "docs"
    (src / Path(doc_id).parent).mkdir(parents=True)
    (src / doc_id).write_text("# Cache\n\n" + "The cache lives under [/var/cache/demo]. " * 10, encoding="utf-8")
    out = tmp_path / "idx"
    assert _run("embed", src, "--out", out, "--model", model, "--strategy", "heading", "--device", "cpu",
                "--quiet").exit_code == 0
    res = _run("search", out, "where is the cache", "-k", 1, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(line.startswith(f"1. {doc_id}  chars 0-") for line in lines), res.output
    assert "   Cache" in lines and any(len(line) > 80 and "[/var/cache/demo]" in line for line in lines)


# ------------------------------------------------------------------------------------------ chunk over folders
def test_chunk_takes_folders_and_files_in_one_call_and_lists_what_it_skips(tmp_path, tiny_index):
    _, _, model = tiny_index
    src = _issue_corpus(tmp_path / "docs")
    (src / "sub").mkdir()
    (src / "sub" / "deep.md").write_text("# Deep\n\nA nested page about rivers.\n", encoding="utf-8")
    (src / "empty.md").write_text("  \n", encoding="utf-8")
    (src / "manual.pdf").write_bytes(b"%PDF-1.4")
    extra = tmp_path / "extra.txt"
    extra.write_text("A loose text file given beside the folder.\n", encoding="utf-8")
    out = tmp_path / "chunks.jsonl"
    res = _run("chunk", src, extra, "--strategy", "heading", "--model", model, "--out", out)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["doc_id"] for r in rows} == {"colours.md", "storage.md", "sub/deep.md", "extra.txt"}
    assert "skipped empty.md: empty" in res.output and "skipped manual.pdf: unsupported type .pdf" in res.output
    assert "chunks from 4 documents (2 skipped) -> " in res.output
    # the same records as chunking each file alone (doc ids aside)
    alone = _run("chunk", src / "storage.md", "--strategy", "heading", "--model", model)
    one = [json.loads(line) for line in alone.stdout.splitlines()]
    assert [(r["char_start"], r["char_end"], r["token_start"], r["token_end"]) for r in one] == [
        (r["char_start"], r["char_end"], r["token_start"], r["token_end"]) for r in rows if r["doc_id"] == "storage.md"]


def test_chunk_semantic_streams_a_folder_through_the_late_pass(tmp_path, tiny_index):
    src, _, model = tiny_index
    res = _run("chunk", src, "--strategy", "semantic", "--model", model, "--device", "cpu")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert {r["doc_id"] for r in rows} == {"storage.md", "colours [red] [v2].md", NOTE_ID}
    assert "(0 skipped) -> stdout" in res.stderr


def test_chunk_help_teaches_folders_with_examples():
    res = runner.invoke(app, ["chunk", "--help"], env={"COLUMNS": "120"})
    assert "latechunk chunk docs/ --strategy heading --out chunks.jsonl" in res.output
    assert "one start-up" in " ".join(res.output.split())


def test_expand_section_of_a_document_without_headings_says_it_is_the_whole_document(tmp_path):
    """Fresh-user trial: `--expand section` over chunks with no heading path gave the whole 737,905-character
    document as a hit's context, silently; it still does (that is the section), with a note on stderr that
    names the document, its size and `--expand neighbors:N`."""
    model = save_tiny_bert(tmp_path / "model")
    src = tmp_path / "docs"
    src.mkdir()
    (src / "long.txt").write_text("The harbour tide rises at dawn and the ferries leave. " * 600, encoding="utf-8")
    (src / "short.md").write_text("# Ferries\n\nA short note on ferries.\n", encoding="utf-8")
    out = tmp_path / "idx"
    res = _run("embed", src, "--out", out, "--model", model, "--device", "cpu", "--quiet", "--strategy", "heading")
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["search", str(out), "harbour tide", "-k", "3", "--expand", "section", "--json"])
    assert res.exit_code == 0, res.output
    contexts = json.loads(res.stdout)
    whole = [c for c in contexts if c["doc_id"] == "long.txt"]
    assert whole and len(whole[0]["text"]) > 20_000
    note = " ".join(res.stderr.split())
    assert f"note: context {whole[0]['rank']} (long.txt) is the whole document, {len(whole[0]['text']):,} characters" \
        in note and "--expand neighbors:N" in note, res.stderr
    assert "short.md" not in note  # a section under a heading gets no note
    res = runner.invoke(app, ["search", str(out), "harbour tide", "-k", "3", "--expand", "neighbors:1"])
    assert res.exit_code == 0 and "note:" not in res.stderr
    # third trial: under a strategy that records no heading paths (the default, recursive) every section was the
    # whole document, however short, without a word: one note says so, naming the strategy
    plain = tmp_path / "plain"
    assert _run("embed", src, "--out", plain, "--model", model, "--device", "cpu", "--quiet").exit_code == 0
    res = runner.invoke(app, ["search", str(plain), "ferries", "-k", "1", "--expand", "section"])
    note = " ".join(res.stderr.split())
    assert res.exit_code == 0 and f"this index's strategy ({get_strategy(DEFAULT_STRATEGY).spec}) records no heading " \
        "paths" in note and "--strategy heading" in note, res.stderr


def test_a_skipped_line_names_the_items_place_when_its_id_does_not():
    """Trial finding: "skipped 3: no 'text' field" named a JSONL record by its id alone; the line now adds its
    file and line (the manifest has always had them), and a file whose id is its path is not named twice."""
    from latechunk.cli import skipped_line

    assert skipped_line("3", "no 'text' field", "records/kb.jsonl:3") == \
        "skipped 3 (records/kb.jsonl:3): no 'text' field"
    assert skipped_line("notes/a.md", "empty file", "notes/a.md") == "skipped notes/a.md: empty file"
    assert skipped_line("x", "r") == skipped_line("x", "r", "") == "skipped x: r"


def test_search_shortens_a_very_long_heading_path_but_json_keeps_it():
    """Trial finding: a 50-level heading path printed as one line of several KB in `latechunk search`."""
    from latechunk.console import PATH_CHARS, format_hits

    path = [f"Heading level {i} with words" for i in range(50)]
    rec = {"rank": 1, "score": 0.5, "doc_id": "d.md", "char_start": 0, "char_end": 10, "heading_path": path,
           "text": "Body text about rivers."}
    lines = [line for line, _ in format_hits([rec], "rivers")]
    (shown,) = [line.strip() for line in lines if "Heading level 0" in line]
    assert len(shown) <= PATH_CHARS and shown.startswith("Heading level 0 with words > … > ")
    assert shown.endswith("Heading level 49 with words")
    one = format_hits([{**rec, "heading_path": ["X" * 1000]}], "rivers")
    assert max(len(line) for line, _ in one) < PATH_CHARS + 10
    short = format_hits([{**rec, "heading_path": ["A", "B"]}], "rivers")
    assert any(line.strip() == "A > B" for line, _ in short)
