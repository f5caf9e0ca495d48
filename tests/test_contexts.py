"""Issue 12 items 8 and 6: the chunk table's citation metadata (title, section, source, url, header) through
``search --json``, ``Index.search`` and older folders; and ``--expand section|neighbors:N|document``
(latechunk/contexts.py): contexts from the chunk table's offsets, overlapping hits of one document merged."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import latechunk
from latechunk.cli import app
from latechunk.contexts import expand_hits, parse_expand
from latechunk.ingest.files import sha256_file
from latechunk.output import LEGACY_COLUMNS, SOURCE_COLUMNS, OutputFolder, chunk_table, search_records
from latechunk.types import Boundaries, Document
from latechunk.verify import verify_output

runner = CliRunner()

# ---------------------------------------------------------------------------------------------- pure: expand_hits
#            0         1         2         3         4         5
#            0123456789012345678901234567890123456789012345678901234
DOC_A = "# A\n\nalpha one.\n\nalpha two.\n\n## B\n\nbeta one.\nbeta two."
SPANS_A = [[0, 3], [5, 15], [17, 27], [29, 33], [35, 44], [45, 54]]
PATHS_A = [("A",), ("A",), ("A",), ("A", "B"), ("A", "B"), ("A", "B")]
DOC_B = "other document text"


@pytest.fixture(scope="module")
def table():
    docs = [Document("a", DOC_A, {"source": "a.md"}), Document("b", DOC_B, {"source": "b.md"})]
    bounds = [Boundaries("a", [[i + 1, i + 2] for i in range(6)], SPANS_A, heading_paths=PATHS_A),
              Boundaries("b", [[1, 4]], [[0, len(DOC_B)]])]
    return chunk_table(docs, bounds, "s")


def _hits(table, rows_scores):
    """Hit records (as ``search`` gives them) of the given ``(row, score)`` pairs."""
    import numpy as np

    rows_scores = sorted(rows_scores, key=lambda t: -t[1])
    return search_records(table, np.array([s for _, s in rows_scores], np.float32),
                          np.array([r for r, _ in rows_scores], np.int64))


def test_two_adjacent_hits_with_neighbors_1_give_one_merged_context(table):
    ctx = expand_hits(table, _hits(table, [(1, 0.9), (2, 0.5)]), "neighbors:1")
    assert len(ctx) == 1
    c = ctx[0]
    assert (c["doc_id"], c["chunk_start"], c["chunk_end"], c["score"]) == ("a", 0, 4, pytest.approx(0.9))
    assert [h["vector_id"] for h in c["hits"]] == [1, 2]  # the hits it holds, best first
    assert c["text"] == DOC_A[0:33]  # gaps of "\n\n" are filled with "\n\n": here the exact document text
    assert c["spans"] == [[0, 3], [5, 15], [17, 27], [29, 33]] and (c["char_start"], c["char_end"]) == (0, 33)
    assert c["source"] == "a.md" and c["section"] == "A" and c["expand"] == "neighbors:1"
    # apart (chunks 0 and 5 with neighbors:1: ranges [0, 2) and [4, 6) do not touch): two contexts, best first
    two = expand_hits(table, _hits(table, [(0, 0.4), (5, 0.8)]), "neighbors:1")
    assert [(c["chunk_start"], c["chunk_end"], c["rank"]) for c in two] == [(4, 6, 1), (0, 2, 2)]
    assert two[0]["text"] == "beta one.\nbeta two." and two[0]["spans"] == [[35, 44], [45, 54]]  # 1-char gap
    # neighbors:0 is the chunk alone; a window stops at its document's end
    assert expand_hits(table, _hits(table, [(6, 1.0)]), "neighbors:3")[0]["text"] == DOC_B
    assert expand_hits(table, _hits(table, [(4, 1.0)]), "neighbors:0")[0]["text"] == "beta one."


def test_section_and_document(table):
    sec = expand_hits(table, _hits(table, [(4, 0.7)]), "section")
    assert [(c["chunk_start"], c["chunk_end"]) for c in sec] == [(3, 6)]  # the chunks of "A > B"
    assert sec[0]["text"] == DOC_A[29:] and sec[0]["section"] == "A > B"
    doc = expand_hits(table, _hits(table, [(4, 0.7), (1, 0.6), (6, 0.2)]), "document")
    assert [c["doc_id"] for c in doc] == ["a", "b"]
    assert doc[0]["text"] == DOC_A and len(doc[0]["hits"]) == 2 and doc[1]["text"] == DOC_B


def test_overlapping_chunks_are_reassembled_once():
    text = "one two three four five six"
    b = Boundaries("d", [[1, 3], [2, 5], [4, 7]], [[0, 13], [8, 23], [14, 27]])
    t = chunk_table([Document("d", text)], [b], "fixed:size=2,overlap=1")
    ctx = expand_hits(t, _hits(t, [(0, 0.9), (2, 0.8)]), "neighbors:1")
    assert len(ctx) == 1 and ctx[0]["text"] == text and ctx[0]["spans"] == [[0, 27]]


def test_bad_expand_and_foreign_hits_are_clear_errors(table):
    assert parse_expand("neighbors:2") == ("neighbors", 2) and parse_expand("Section") == ("section", 0)
    for bad in ("paragraph", "neighbors:-1", "neighbors:x", "document:2"):
        with pytest.raises(ValueError, match="--expand"):
            parse_expand(bad)
    with pytest.raises(ValueError, match="is not row 9"):
        expand_hits(table, [{"vector_id": 9, "score": 1.0, "doc_id": "a", "chunk_index": 0}], "section")


# --------------------------------------------------------------------------------------- embed -> search (MiniLM)
GUIDE = """---
title: Field Guide
url: https://example.org/guide
---
# Birds

Herons wade in shallow water and spear fish with their long beaks.

## Owls

Owls hunt at night; their soft feathers make their flight almost silent.

## Swifts

Swifts spend almost their whole lives in the air and even sleep on the wing.
"""
NOTES = [{"id": "n1", "text": "Granite is an igneous rock made of quartz and feldspar.",
          "title": "Rocks", "url": "https://example.org/rocks"},
         {"id": "n2", "text": "Basalt forms when lava cools quickly at the surface."}]


def _run(*args):
    return runner.invoke(app, [*map(str, args)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    (src / "guide.md").write_text(GUIDE, encoding="utf-8")
    (src / "notes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in NOTES), encoding="utf-8")
    out = tmp_path_factory.mktemp("out") / "idx"
    res = _run("embed", src, "--out", out, "--strategy", "heading:max_tokens=64", "-q", "--device", "cpu",
               "--sentence-workers", "0")
    assert res.exit_code == 0, res.output
    return out


def _search(out, query, *extra):
    res = _run("search", out, query, "--json", "--device", "cpu", *extra)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_search_json_carries_title_section_source_url(folder):
    hits = _search(folder, "Which bird flies silently at night?", "-k", "1")
    h = hits[0]
    assert set(SOURCE_COLUMNS) | {"vector_id", "rank", "score"} <= set(h)
    assert (h["doc_id"], h["title"], h["title_from"], h["url"]) == \
           ("guide.md", "Field Guide", "front_matter", "https://example.org/guide")
    assert h["heading_path"] == ["Birds", "Owls"] and h["section"] == "Birds > Owls"
    assert h["header"] == "[Field Guide > Birds > Owls]" and h["source"] == "guide.md"
    rock = _search(folder, "What is granite made of?", "-k", "1")[0]
    assert (rock["title"], rock["title_from"], rock["url"], rock["source"]) == \
           ("Rocks", "record", "https://example.org/rocks", "notes.jsonl:1")
    lava = _search(folder, "How does basalt form?", "-k", "1")[0]
    assert lava["url"] is None and lava["source"] == "notes.jsonl:2"
    # the Python API gives the same fields
    index = latechunk.Index.load(folder, device="cpu")
    hit = index.search("Which bird flies silently at night?", k=1)[0]
    assert (hit.title, hit.section, hit.url, hit.citation) == ("Field Guide", "Birds > Owls",
                                                               "https://example.org/guide", "https://example.org/guide")
    assert verify_output(folder)[0] == []  # verify re-reads the sources: the metadata agrees


def test_search_expand_through_the_cli_and_the_api(folder):
    doc = _search(folder, "Which bird flies silently at night?", "-k", "3", "--expand", "document")
    assert doc[0]["doc_id"] == "guide.md" and doc[0]["text"] == GUIDE.strip()  # gaps "\n" and "\n\n": exact
    assert doc[0]["url"] == "https://example.org/guide" and len(doc[0]["hits"]) >= 2
    index = latechunk.Index.load(folder, device="cpu")
    sec = index.search("Which bird flies silently at night?", k=1, expand="section")
    assert isinstance(sec[0], latechunk.Context) and sec[0].section == "Birds > Owls"
    assert sec[0].text.startswith("## Owls") and "Swifts" not in sec[0].text and sec[0].hits[0].section == "Birds > Owls"
    res = _run("search", folder, "owls", "--expand", "paragraph")
    assert res.exit_code != 0 and "not one of section, neighbors:N, document" in res.output
    # a Python caller is told of its keyword argument, not of a CLI flag it never gave
    with pytest.raises(ValueError, match=r"^expand= 'neighbors:-1': N in neighbors:N must be an integer >= 0"):
        index.search("owls", expand="neighbors:-1")


def _make_legacy(out) -> None:
    """Rewrite an output folder as latechunk before issue 12 wrote it: chunk tables without the source columns,
    shard records and manifest hashes to match."""
    folder = OutputFolder(out)
    manifest = folder.read_manifest()
    for i, s in enumerate(manifest["shards"]):
        p = folder.shards_dir / f"{s['name']}.parquet"
        pq.write_table(pq.read_table(p, columns=list(LEGACY_COLUMNS)), p)
        rec = folder.read_json(folder.shards_dir / f"{s['name']}.json")
        rec["files"][p.name] = {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
        (folder.shards_dir / f"{s['name']}.json").write_bytes(OutputFolder.json_bytes(rec))
        manifest["shards"][i]["sha256"] = sha256_file(folder.shards_dir / f"{s['name']}.json")
    pq.write_table(pq.read_table(folder.chunks_path, columns=list(LEGACY_COLUMNS)), folder.chunks_path)
    folder.manifest_path.write_bytes(OutputFolder.json_bytes(manifest))


def test_an_older_folder_still_searches_verifies_and_appends_filled(folder, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(folder, old)
    _make_legacy(old)
    assert set(pq.read_schema(OutputFolder(old).chunks_path).names) == set(LEGACY_COLUMNS)
    assert verify_output(old)[0] == []
    h = _search(old, "Which bird flies silently at night?", "-k", "1")[0]
    assert (h["section"], h["source"], h["title"], h["url"]) == ("Birds > Owls", "guide.md", None, None)
    ctx = _search(old, "Which bird flies silently at night?", "-k", "1", "--expand", "neighbors:1")
    assert "Owls hunt at night" in ctx[0]["text"]
    # --append onto it fills: old rows keep what they know, new rows carry everything, verify passes
    new = tmp_path / "new"
    new.mkdir()
    (new / "mars.md").write_text("---\nurl: https://example.org/mars\n---\n# Mars\n\nMars has two small moons.\n",
                                 encoding="utf-8")
    res = _run("embed", new, "--out", old, "--append", "--strategy", "heading:max_tokens=64", "-q", "--device", "cpu",
               "--sentence-workers", "0")
    assert res.exit_code == 0, res.output
    assert verify_output(old, inputs=None, check_sources=False)[0] == []
    mars = _search(old, "How many moons does Mars have?", "-k", "1")[0]
    assert (mars["title"], mars["url"]) == ("Mars", "https://example.org/mars")
