"""latechunk/api.py (the package root's LateChunker, Chunk, Index, Hit) and latechunk/ingest/append.py
(``Index.add``, ``embed --append``): chunks are exact slices whose vectors equal ``latechunk embed``'s (late and
naive), ``map`` keeps one list per input, search reads a folder as ``latechunk search`` does, and an append keeps
``latechunk verify`` passing."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import latechunk
from latechunk.cli import app
from latechunk.config import DEFAULT_STRATEGY
from latechunk.output import OutputFolder
from latechunk.strategies import get_strategy
from latechunk.verify import verify_output

runner = CliRunner()

RIVERS = """# Rivers

The Danube flows through ten countries before it reaches the Black Sea. Its delta is a wetland of reeds,
lakes and channels where pelicans nest in spring.

## Bridges

Budapest has many bridges over the Danube; the Chain Bridge was the first permanent one, opened in 1849.
"""
BREAD = """# Bread

Sourdough bread rises because wild yeast and lactic acid bacteria ferment the dough for many hours. A starter
is fed with flour and water every day.
"""
ETNA = "Mount Etna in Sicily is one of the most active volcanoes in Europe; it erupts almost every year."
NAIVE_SPEC = "fixed:size=24,overlap=4"


def _embed(*args) -> None:
    res = runner.invoke(app, ["embed", *map(str, args), "-q", "--device", "cpu", "--sentence-workers", "0"])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    src = tmp_path_factory.mktemp("corpus")
    (src / "rivers.md").write_text(RIVERS, encoding="utf-8")
    (src / "bread.md").write_text(BREAD, encoding="utf-8")
    return src


@pytest.fixture(scope="module")
def chunker():
    return latechunk.LateChunker(device="cpu")  # the bundled model, embed's default strategy, late mode


@pytest.fixture(scope="module")
def late_folder(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "out"
    _embed(corpus, "--out", out)
    return out


def _folder_vectors(out) -> dict[str, tuple[list[dict], np.ndarray]]:
    """``{doc_id: (chunk rows, (n, dim) vectors)}`` of an output folder, vectors read from its shards."""
    folder = OutputFolder(out)
    manifest = folder.read_manifest()
    rows = folder.read_chunks().to_pylist()
    vecs = np.concatenate([folder.read_shard_vectors(s["name"]) for s in manifest["shards"]])
    by_doc: dict[str, tuple[list[dict], list[np.ndarray]]] = {}
    for r, v in zip(rows, vecs):
        by_doc.setdefault(r["doc_id"], ([], []))
        by_doc[r["doc_id"]][0].append(r)
        by_doc[r["doc_id"]][1].append(v)
    return {k: (r, np.stack(v)) for k, (r, v) in by_doc.items()}


def _check_same_as_embed(chunks, rows, vectors, text) -> None:
    assert len(chunks) == len(rows) > 0
    for c, r in zip(chunks, rows):
        assert c.text == text[c.char_start:c.char_end] == r["text"]
        assert (c.char_start, c.char_end, c.token_start, c.token_end) == \
               (r["char_start"], r["char_end"], r["token_start"], r["token_end"])
        assert c.strategy == r["strategy"] and c.heading_path == tuple(r["heading_path"])
        assert c.embedding.shape == (384,) and c.embedding.dtype == np.float32
        assert abs(float(np.linalg.norm(c.embedding)) - 1.0) < 1e-5
    np.testing.assert_allclose(np.stack([c.embedding for c in chunks]), vectors, atol=1e-5, rtol=0)


def test_dir_lists_the_public_names_only():
    """dir(latechunk) listed ``importlib`` and the ``types`` submodule beside the API."""
    assert dir(latechunk) == sorted(latechunk.__all__)
    assert "importlib" not in dir(latechunk) and "LateChunker" in dir(latechunk)


def test_late_chunks_are_exact_slices_with_embeds_vectors(chunker, corpus, late_folder):
    folder = _folder_vectors(late_folder)
    for doc_id, text in (("rivers.md", RIVERS), ("bread.md", BREAD)):
        chunks = chunker(latechunk.Document(doc_id, text))
        assert {c.doc_id for c in chunks} == {doc_id} and [c.chunk_index for c in chunks] == list(range(len(chunks)))
        assert {c.mode for c in chunks} == {"late"} and chunker.strategy == get_strategy(DEFAULT_STRATEGY).spec
        _check_same_as_embed(chunks, *folder[doc_id], text)
    # a plain str is document "0", with the same vectors
    plain = chunker(RIVERS)
    assert plain[0].doc_id == "0"
    np.testing.assert_array_equal(plain[0].embedding, chunker(latechunk.Document("x", RIVERS))[0].embedding)


def test_naive_chunks_equal_embeds_vectors(chunker, corpus, tmp_path):
    out = tmp_path / "naive"
    _embed(corpus, "--out", out, "--mode", "naive", "--strategy", NAIVE_SPEC)
    naive = latechunk.LateChunker(chunker.encoder, strategy=NAIVE_SPEC, mode="naive")
    folder = _folder_vectors(out)
    for doc_id, text in (("rivers.md", RIVERS), ("bread.md", BREAD)):
        chunks = naive(latechunk.Document(doc_id, text))
        assert len(chunks) >= 2 and {c.mode for c in chunks} == {"naive"}
        _check_same_as_embed(chunks, *folder[doc_id], text)
    # naive differs from late over the same spans (the point of the two modes)
    late = latechunk.LateChunker(chunker.encoder, strategy=NAIVE_SPEC)(latechunk.Document("rivers.md", RIVERS))
    assert np.abs(late[1].embedding - naive(latechunk.Document("rivers.md", RIVERS))[1].embedding).max() > 1e-3


def test_map_a_skipped_document_claims_no_id(chunker):
    """Trial: `map([("a", ""), ("a", "real")])` gave `[[], []]`: the empty first document was skipped and still
    made the real one a duplicate. As embed's reader, an empty text (or one with a lone surrogate) claims no id."""
    out = list(latechunk.LateChunker(chunker.encoder).map([("a", ""), ("a", ETNA), ("b", "bad \ud800"),
                                                           ("b", BREAD), ("a", "the same id again")]))
    assert [len(x) > 0 for x in out] == [False, True, False, True, False]
    assert out[1][0].doc_id == "a" and out[3][0].doc_id == "b"


def test_map_yields_one_list_per_input_in_order(chunker, caplog):
    docs = [BREAD, "", ("etna", ETNA), ("etna", "the same id again"), latechunk.Document("r", RIVERS, {"title": "R"}),
            (7, "An integer id is taken as text.")]
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        out = list(latechunk.LateChunker(chunker.encoder, progress=True).map(iter(docs)))
    assert len(out) == len(docs)
    assert [bool(x) for x in out] == [True, False, True, False, True, True]
    assert [x[0].doc_id for x in out if x] == ["0", "etna", "r", "7"]
    assert out[4][0].metadata == {"title": "R"} and out[2][0].text == ETNA
    log = caplog.text
    assert "'1' not chunked: empty or whitespace-only" in log
    assert "'etna' not chunked: duplicate doc_id: documents[3] repeats the id of documents[2]" in log
    # the same document alone gives the same vector (one pass per document, whatever the group)
    np.testing.assert_allclose(out[2][0].embedding, chunker(ETNA)[0].embedding, atol=1e-6)


def test_bad_input_is_a_clear_error(chunker, caplog):
    with pytest.raises(TypeError, match=r"documents\[1\]: expected a str, an \(id, text\) pair or a latechunk.Document, got dict"):
        list(chunker.map(["fine", {"id": 1}]))
    with pytest.raises(TypeError, match=r"takes an iterable of documents.*chunker.map\(\[text\]\), or chunker\(text\)"):
        next(chunker.map("one text"))
    from latechunk.api import _check_iterable

    with pytest.raises(TypeError, match=r"give a list of one: index.add\(\[text\]\)"):  # said "chunker(text)"
        _check_iterable("one text", "Index.add")
    with pytest.raises(TypeError, match=r"documents\[0\] \(id 'a'\): text must be a str, got int"):
        list(chunker.map([("a", 3)]))
    # a blank id is a bad document, not a bad call: [] and its reason logged, the rest of the stream goes on
    # (trials: it raised without a position, then raised and ended the stream)
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        assert [len(c) > 0 for c in chunker.map(["a text", ("  ", "text"), ("ok", "fine text")])] == \
            [True, False, True]
    assert any("documents[1]" in m and "blank id" in m for m in caplog.messages)
    with pytest.raises(TypeError, match="LateChunker takes a str or a latechunk.Document"):
        chunker(["a list"])
    with pytest.raises(ValueError, match="mode must be one of 'late', 'naive', 'contextual', 'fused', got 'early'"):
        latechunk.LateChunker(chunker.encoder, mode="early")
    with pytest.raises(ValueError, match="unknown strategy"):
        latechunk.LateChunker(chunker.encoder, strategy="no_such_strategy")
    assert chunker("   ") == []


def test_import_latechunk_stays_light():
    code = ("import sys, latechunk; heavy = [m for m in ('torch', 'faiss', 'transformers', 'pyarrow') if m in sys.modules]; "
            "assert not heavy, heavy; from latechunk import Chunk, Hit; assert 'torch' not in sys.modules; "
            "assert latechunk.LateChunker.__module__ == 'latechunk.api'; print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        latechunk.NoSuchThing  # noqa: B018
    # a submodule named as an attribute after a plain `import latechunk`, as the README writes them (a trial:
    # latechunk.convert.html_to_markdown raised AttributeError until something else had imported it)
    code = ("import sys, latechunk; md = latechunk.convert.html_to_markdown('<h1>Title</h1><p>x</p>').markdown; "
            "assert md.startswith('# Title'), md; assert callable(latechunk.index.query_transform); "
            "assert callable(latechunk.export.export_folder); print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_index_search(late_folder, chunker):
    index = latechunk.Index.load(late_folder, device="cpu")
    assert len(index) == index.manifest["counts"]["chunks"] > 0 and index.dim == 384
    hits = index.search("Which bridge over the Danube was the first permanent one?", k=10)
    assert len(hits) == len(index) and hits[0].doc_id == "rivers.md" and "Chain Bridge" in hits[0].text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    rows = OutputFolder(late_folder).read_chunks().to_pylist()
    for h in hits:
        r = rows[h.vector_id]
        assert (h.doc_id, h.chunk_index, h.char_start, h.char_end, h.text) == \
               (r["doc_id"], r["chunk_index"], r["char_start"], r["char_end"], r["text"])
    many = index.search(["How does sourdough rise?", "Danube bridges"], k=1)
    assert [h[0].doc_id for h in many] == ["bread.md", "rivers.md"]
    # the score is the inner product of the query vector and the chunk vector
    q = index.encoder.encode_query(["How does sourdough rise?"])[0]
    bread = chunker(latechunk.Document("bread.md", BREAD))[0]
    assert abs(many[0][0].score - float(q @ bread.embedding)) < 1e-5
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        index.search("bread", k=0)
    with pytest.raises(ValueError, match="the query is empty"):
        index.search("  ")
    with pytest.raises(ValueError, match="the query is empty"):  # zero-width marks only: nothing to read
        index.search("\u200b \ufeff")
    with pytest.raises(ValueError, match=r"query 1 holds a lone surrogate U\+D800 at character 4"):
        index.search(["bread", "bad \ud800"])  # was the tokenizer's TypeError
    for bad in (None, b"bread", 42, {"q": "bread"}):  # None was "'NoneType' object is not iterable"
        with pytest.raises(TypeError, match=r"query must be a str or a list of str, got "):
            index.search(bad)


def test_index_load_errors_name_the_problem(tmp_path, late_folder):
    with pytest.raises(ValueError, match="does not exist"):
        latechunk.Index.load(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        latechunk.Index.load(tmp_path / "file.txt")
    half = tmp_path / "half"
    shutil.copytree(late_folder, half)
    (half / "manifest.json").unlink()
    with pytest.raises(ValueError, match="manifest.json is missing"):
        latechunk.Index.load(half)


def test_search_of_an_empty_index_is_empty(tmp_path):
    src = tmp_path / "long.md"  # its only document is skipped (too long, macro windows off): 0 vectors
    src.write_text("Rivers flow to the sea. " * 40, encoding="utf-8")
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "-q", "--device", "cpu", "--long-documents",
                              "skip", "--window", "64"])
    assert res.exit_code == 1 and (out / "manifest.json").is_file()
    index = latechunk.Index.load(out)
    assert len(index) == 0 and index.search("anything") == [] and index.search(["a", "b"]) == [[], []]
    assert index._encoder is None  # no model was loaded for it


def test_add_then_verify_passes_and_search_finds_it(late_folder, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    index = latechunk.Index.load(out, device="cpu")
    n0 = len(index)
    res = index.add([("etna", ETNA), "Glaciers in the Alps lose ice every summer."])
    assert res.added == ("etna", "text-" + __import__("hashlib").sha256(
        b"Glaciers in the Alps lose ice every summer.").hexdigest()[:16]) and res.skipped == ()
    assert len(index) == n0 + res.chunks and res.chunks >= 2
    problems, _summary = verify_output(out)
    assert problems == [], problems
    cli = runner.invoke(app, ["verify", str(out)])
    assert cli.exit_code == 0 and cli.stdout.startswith("ok:"), cli.output
    top = latechunk.Index.load(out, device="cpu").search("Which volcano in Sicily erupts almost every year?", k=1)[0]
    assert top.doc_id == "etna" and top.text == ETNA
    manifest = OutputFolder(out).read_manifest()
    assert manifest["inputs_from_out"][-1] == "appended/00001.jsonl"
    assert manifest["appends"][0]["documents_embedded"] == 2 and manifest["counts"]["documents_embedded"] == 4

    # the same documents again: nothing added, each listed as skipped with its reason; verify still passes
    shards_before = sorted(p.name for p in (out / "shards").iterdir())
    again = index.add([("etna", ETNA), ("etna", "Another text under the same id."), ("rivers.md", "New rivers text.")])
    assert again.added == () and again.chunks == 0 and len(index) == n0 + res.chunks
    reasons = [(s.doc_id, s.reason) for s in again.skipped]
    assert reasons[0] == ("etna", "already in the index (same id and text sha256)")
    assert reasons[1][0] == "etna" and reasons[1][1].startswith("duplicate doc_id")
    assert reasons[2][0] == "rivers.md" and "already in the index with another text" in reasons[2][1]
    # each is placed in the caller's list (the appended/NNNNN.jsonl it was written to is removed: nothing added)
    assert [s.source for s in again.skipped] == ["documents[0]", "documents[1]", "documents[2]"]
    assert reasons[1][1] == "duplicate doc_id: documents[1] repeats the id first seen in documents[0]", reasons[1]
    assert verify_output(out)[0] == []
    # an add that embeds nothing leaves the folder as it was: no shard, no document file, skipped not grown
    assert OutputFolder(out).read_manifest() == manifest
    assert sorted(p.name for p in (out / "shards").iterdir()) == shards_before
    assert sorted(p.name for p in (out / "appended").iterdir()) == ["00001.jsonl"]
    assert index.add([]) == latechunk.AddResult()
    # a blank id is skipped in its place, the others go on (third trial: the whole batch raised)
    mixed = index.add([("etna", ETNA), ("", "A blank id."), ("ponds", "Ponds freeze in a cold winter.")])
    assert mixed.added == ("ponds",)
    assert [(s.source, s.reason.split(" (")[0]) for s in mixed.skipped] == [
        ("documents[0]", "already in the index"), ("documents[1]", "blank id")]
    assert verify_output(out)[0] == []


def test_add_keeps_a_documents_title_and_url(late_folder, tmp_path):
    """Fresh-user trial: ``Index.add`` wrote only id and text, so a Document's title and url were dropped (the
    hit's title '', url None) where the same record through a JSONL input keeps them."""
    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    index = latechunk.Index.load(out, device="cpu")
    doc = latechunk.Document("whale", "Blue whales are the largest animals ever known to have lived.",
                             metadata={"title": "Whale Facts", "url": "https://example.org/whales"})
    assert index.add([doc]).added == ("whale",)
    hit = index.search("the largest animal that ever lived", k=1)[0]
    assert (hit.doc_id, hit.title, hit.url) == ("whale", "Whale Facts", "https://example.org/whales")
    line = json.loads((out / "appended" / "00001.jsonl").read_text(encoding="ascii"))
    assert line == {"id": "whale", "text": doc.text, "title": "Whale Facts", "url": "https://example.org/whales"}
    # read back as embed reads that JSONL record: the same title and url in a fresh folder's chunk table
    src = tmp_path / "whale.jsonl"
    src.write_text(json.dumps(line) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "ref"), "-q", "--model",
                              OutputFolder(out).read_run()["settings"]["model"]["name"], "--device", "cpu"])
    assert res.exit_code == 0, res.output
    ref = latechunk.Index.load(tmp_path / "ref", device="cpu").search("the largest animal that ever lived", k=1)[0]
    assert (ref.title, ref.url, ref.text) == (hit.title, hit.url, hit.text)
    assert verify_output(out)[0] == []
    with pytest.raises(TypeError, match=r"document 'w2': metadata\['url'\] must be a str, got int"):
        index.add([latechunk.Document("w2", "More on whales.", metadata={"url": 42})])


def test_embed_append_adds_and_refuses_other_settings(late_folder, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    new = tmp_path / "new"
    new.mkdir()
    (new / "etna.md").write_text("# Volcanoes\n\n" + ETNA + "\n", encoding="utf-8")
    before = OutputFolder(out).read_manifest()

    bad = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "--strategy", "fixed:size=64", "-q"])
    assert bad.exit_code == 2 and f"strategy (--strategy) was '{get_strategy(DEFAULT_STRATEGY).spec}', now 'fixed:size=64,overlap=0'" in bad.output
    bad = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "--no-normalize", "-q"])
    assert bad.exit_code == 2 and "normalize (--normalize/--no-normalize) was True, now False" in bad.output
    bad = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "--resume", "-q"])
    assert bad.exit_code == 2 and "--append excludes --force and --resume" in bad.output
    bad = runner.invoke(app, ["embed", str(new), "--out", str(tmp_path / "none"), "--append", "-q"])
    assert bad.exit_code == 2 and "is not a folder" in bad.output
    assert OutputFolder(out).read_manifest() == before  # nothing written by a refused append

    _embed(new, "--out", out, "--append")
    manifest = OutputFolder(out).read_manifest()
    assert manifest["counts"]["documents_embedded"] == before["counts"]["documents_embedded"] + 1
    assert manifest["inputs_from_out"][-1] == "../new" and len(manifest["shards"]) == len(before["shards"]) + 1
    assert verify_output(out)[0] == []
    res = runner.invoke(app, ["search", str(out), "active volcano in Sicily", "-k", "1", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["doc_id"] == "etna.md"
    once = OutputFolder(out).read_manifest()
    for _ in range(2):  # appending the same documents again adds nothing: exit 0, the folder unchanged
        again = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "-q", "--device", "cpu",
                                    "--sentence-workers", "0"])
        assert again.exit_code == 0 and "skipped 1 document(s) already in the index" in again.output
        assert "nothing new to append" in again.output and "unchanged" in again.output
        assert OutputFolder(out).read_manifest() == once  # no empty shard, no duplicate skipped entries
    assert len(list((out / "shards").glob("*.json"))) == len(once["shards"])
    assert verify_output(out)[0] == []


def test_append_takes_the_folders_settings_for_options_not_given(corpus, tmp_path):
    out = tmp_path / "o1"
    _embed(corpus, "--out", out, "--precision", "int8", "--truncate-dim", "128", "--strategy", "fixed:size=32")
    new = tmp_path / "new"
    new.mkdir()
    (new / "etna.md").write_text(ETNA + "\n", encoding="utf-8")
    bad = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "-q", "--precision", "float16"])
    assert bad.exit_code == 2 and "index.precision (--precision) was 'int8', now 'float16'" in bad.output
    assert "renormalize" not in bad.output and "strategy" not in bad.output  # only what was given and differs
    bad = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "-q", "--no-normalize"])
    assert bad.exit_code == 2 and "normalize (--normalize/--no-normalize) was True, now False" in bad.output and "renormalize" not in bad.output
    _embed(new, "--out", out, "--append")  # a plain --append: strategy, precision, truncate-dim from run.json
    m = OutputFolder(out).read_manifest()
    assert m["index"]["precision"] == "int8" and m["index"]["truncate_dim"] == 128
    assert m["settings"]["strategy"].startswith("fixed:size=32") and m["documents"][-1]["doc_id"] == "etna.md"
    assert verify_output(out)[0] == []
    (new / "b.md").write_text(BREAD.replace("Sourdough", "Rye"), encoding="utf-8")  # options given and equal: fine
    _embed(new, "--out", out, "--append", "--precision", "int8", "--truncate-dim", "128", "--strategy",
           "fixed:size=32")
    assert OutputFolder(out).read_manifest()["documents"][-1]["doc_id"] == "b.md"
    hits = latechunk.Index.load(out, "cpu").search("Which volcano in Sicily erupts almost every year?", k=1)
    assert hits[0].doc_id == "etna.md"


def test_index_load_device_positional_model_checked_unfinished_run_named(late_folder, tmp_path):
    index = latechunk.Index.load(late_folder, "cpu")  # device may be positional, as the README shows
    assert index._device == "cpu"
    with pytest.raises(ValueError, match="nonexistent"):  # a model that does not resolve fails at load
        latechunk.Index.load(late_folder, model=tmp_path / "nonexistent")
    half = tmp_path / "half"  # a killed run: run.json and shards, no assembled files
    shutil.copytree(late_folder, half)
    for name in ("index.faiss", "chunks.parquet", "manifest.json"):
        (half / name).unlink()
    with pytest.raises(ValueError, match="unfinished .*--resume"):
        latechunk.Index.load(half)
    res = runner.invoke(app, ["search", str(half), "rivers"])
    assert res.exit_code == 2 and "--resume" in res.output
    res = runner.invoke(app, ["search", str(tmp_path / "nowhere"), "rivers"])
    assert res.exit_code == 2 and "does not exist" in res.output and "index.faiss" not in res.output


def test_add_embeds_with_the_folders_model_when_queries_use_another(late_folder, tmp_path):
    from tests.models import save_tiny_bert

    tiny = tmp_path / "tiny"
    save_tiny_bert(tiny)
    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    index = latechunk.Index.load(out, "cpu", model=tiny)
    res = index.add([("etna", ETNA)])  # the tiny model's 32-dim vectors would not fit the 384-dim folder
    assert res.added == ("etna",) and verify_output(out)[0] == []
    top = latechunk.Index.load(out, "cpu").search("Which volcano in Sicily erupts almost every year?", k=1)[0]
    assert top.doc_id == "etna"


_HOLD = """
import sys
from latechunk.ingest.folder import writer_lock
with writer_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_one_writer_at_a_time_a_second_fails_at_once_and_nothing_is_lost(late_folder, tmp_path):
    from latechunk.ingest.folder import FolderLocked

    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    new = tmp_path / "new"
    new.mkdir()
    (new / "etna.md").write_text(ETNA + "\n", encoding="utf-8")
    before = OutputFolder(out).read_manifest()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        res = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "-q", "--device", "cpu"])
        assert res.exit_code == 2 and "being written by another latechunk process" in res.output
        assert f"pid {holder.pid}" in res.output and str(out) in res.output
        res = runner.invoke(app, ["embed", str(new), "--out", str(out), "--force", "-q", "--device", "cpu"])
        assert res.exit_code == 2 and "being written by another" in res.output
        index = latechunk.Index.load(out, "cpu")
        with pytest.raises(FolderLocked, match=f"pid {holder.pid}"):
            index.add([("etna", ETNA)])
        assert OutputFolder(out).read_manifest() == before and not (out / "appended").exists()
    finally:
        holder.communicate("", timeout=60)
    # the holder is gone: both writers now succeed, one after the other, and every document is there
    _embed(new, "--out", out, "--append")
    assert index.add([("glacier", "Glaciers in the Alps lose ice every summer.")]).added == ("glacier",)
    ids = [d["doc_id"] for d in OutputFolder(out).read_manifest()["documents"]]
    assert ids == [d["doc_id"] for d in before["documents"]] + ["etna.md", "glacier"]
    assert (out / ".latechunk.lock").is_file() and verify_output(out)[0] == []


def test_the_lock_file_is_not_content(tmp_path, corpus):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".latechunk.lock").write_text("123\n")  # left by an earlier writer: the folder still counts as empty
    _embed(corpus, "--out", out, "--strategy", "fixed:size=64")
    _embed(corpus, "--out", out, "--strategy", "fixed:size=64", "--force")  # --force leaves the lock file alone
    assert (out / ".latechunk.lock").is_file() and verify_output(out)[0] == []


def test_latechunker_takes_a_dtype_and_refuses_one_for_a_loaded_encoder(tmp_path, chunker):
    """``LateChunker(dtype="bf16")`` runs the encoder in bfloat16 (as ``embed --dtype``); its vectors stay float32
    and agree with the fp32 chunker's; a dtype beside an already loaded Encoder is an error, not ignored."""
    bf16 = latechunk.LateChunker(device="cpu", dtype="bf16")
    assert "bfloat16" in str(bf16.encoder.dtype) and "dtype='bfloat16'" in repr(bf16)
    a, b = bf16(ETNA), chunker(ETNA)
    assert [(c.char_start, c.char_end) for c in a] == [(c.char_start, c.char_end) for c in b]
    va, vb = np.stack([c.embedding for c in a]), np.stack([c.embedding for c in b])
    assert va.dtype == np.float32 and (va * vb).sum(axis=1).min() > 0.99
    with pytest.raises(ValueError, match="already loaded"):
        latechunk.LateChunker(chunker.encoder, dtype="float32")
    with pytest.raises(ValueError, match="dtype must be"):
        latechunk.LateChunker(device="cpu", dtype="int4")


FRONT_MATTER_MD = ("---\ntitle: Rivers\ntags: [water]\n---\n\n# Rivers\n\nThe Danube flows to the Black Sea. It "
                   "crosses ten countries.\n\n## Deltas\n\nA delta forms where a river meets the sea.\n")


def test_markdown_given_as_a_str_chunks_as_embed_reads_the_file(chunker, tmp_path, caplog):
    """Trial finding: `LateChunker(strategy="heading")(open("x.md").read())` chunked the markdown as plain text
    (its front matter a chunk of its own) while `latechunk chunk x.md` parsed it; `markdown=True` (or a
    Document naming a .md file in `source`, or LlamaIndex's `file_path`/`file_name`) reads it as markdown."""
    from latechunk.types import Document

    (tmp_path / "rivers.md").write_text(FRONT_MATTER_MD, encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(tmp_path / "rivers.md"), "--strategy", "heading"])
    assert res.exit_code == 0, res.output
    cli = [(r["char_start"], r["char_end"]) for r in map(json.loads, res.stdout.splitlines()) if r.get("text")]

    def spans(**kw):
        md = kw.pop("markdown", None)
        c = latechunk.LateChunker(chunker.encoder, strategy="heading", markdown=md)
        return [(ch.char_start, ch.char_end) for ch in c(kw.pop("doc", FRONT_MATTER_MD))]

    assert spans(markdown=True) == cli
    # the chunker's flag stays off the chunks' metadata (second trial: it travelled into vector stores)
    made = latechunk.LateChunker(chunker.encoder, strategy="heading", markdown=True)(
        Document("r", FRONT_MATTER_MD, {"lang": "en"}))
    assert all(c.metadata == {"lang": "en"} for c in made)
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"source": "rivers.md"})) == cli
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"file_path": "/data/rivers.md"})) == cli
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"file_name": "rivers.markdown"})) == cli
    plain = spans()
    assert plain != cli and plain == spans(markdown=False)  # a str alone stays plain text
    # a document's own flag wins over the chunker's
    assert spans(markdown=True, doc=Document("r", FRONT_MATTER_MD, {"markdown": False})) == plain
    with pytest.raises(TypeError, match="markdown must be"):
        latechunk.LateChunker(chunker.encoder, markdown="yes")
    # third trial: a JSONL writer's "yes"/"false" were ignored silently, and a URL with a query was plain text
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"markdown": "Yes"})) == cli
    assert spans(markdown=True, doc=Document("r", FRONT_MATTER_MD, {"markdown": "false"})) == plain
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"source": "https://x.org/docs/rivers.md?plain=1#top"})) == cli
    assert spans(doc=Document("r", FRONT_MATTER_MD, {"source": "https://x.org/page?file=rivers.md"})) == plain
    # third trial: a markdown text that is nothing but front matter gave one chunk of it; embed skips the file
    only = "---\ntitle: Rivers\n---\n\n"
    (tmp_path / "only.md").write_text(only, encoding="utf-8")
    res = runner.invoke(app, ["chunk", str(tmp_path / "only.md")])
    assert "nothing but front matter" in res.output
    assert latechunk.LateChunker(chunker.encoder, markdown=True)(only) == []
    assert latechunk.LateChunker(chunker.encoder)(Document("o", only, {"source": "only.md"})) == []
    assert len(latechunk.LateChunker(chunker.encoder)(only)) == 1  # a plain str is plain text, as before
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        assert latechunk.LateChunker(chunker.encoder, strategy="heading")(
            Document("r", FRONT_MATTER_MD, {"markdown": "maybe"})) == []
    assert any("'r'" in m and "metadata 'markdown' must be true or false" in m and "'maybe'" in m
               for m in caplog.messages)


def test_append_warns_about_changed_documents(late_folder, corpus, tmp_path):
    """Trial finding: `embed DIR --append` after a file of DIR was edited exited 0 with one skipped line among many
    ("already in the index with another text"); search kept returning the old text. A bold warning now names the
    changed documents and how to index their new text, whether or not anything else was appended."""
    out = tmp_path / "out"
    shutil.copytree(late_folder, out)
    src = tmp_path / "src"
    shutil.copytree(corpus, src)
    (src / "rivers.md").write_text(RIVERS + "\nThe Danube is 2,850 km long.\n", encoding="utf-8")
    (src / "new.md").write_text("Glaciers in the Alps lose ice every summer.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--append", "-q", "--device", "cpu"])
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "appended 1/3 documents" in text, text
    assert "warning: 1 document(s) have an id the index already holds with another text and were not added: " \
        "rivers.md" in text, text
    assert "rename them before appending" in text  # third trial: another file with the same relative id
    assert "--reuse" in text  # the way to index the new text: a new folder that reuses the unchanged documents


def test_search_after_the_models_folder_moved_says_where_the_model_came_from(tmp_path):
    """Trial finding: after a trained model's folder moved, `latechunk search DIR q` said only "model path ...
    does not exist"; it now says the path came from the folder's manifest and that --model gives the new place
    (which works)."""
    from tests.models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "m1")
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers reach the sea. Lakes stay put in their basins.\n", encoding="utf-8")
    out = tmp_path / "out"
    _embed(src, "--out", out, "--model", model, "--strategy", "fixed:size=8")
    model.rename(tmp_path / "moved")
    res = runner.invoke(app, ["search", str(out), "rivers", "--device", "cpu"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "recorded in its manifest.json" in said and "--model PATH" in said, said
    res = runner.invoke(app, ["search", str(out), "rivers", "--device", "cpu", "--model", str(tmp_path / "moved")])
    assert res.exit_code == 0 and "a.md" in res.output, res.output
    with pytest.raises(ValueError, match=r"recorded in its manifest\.json.*model=PATH"):
        latechunk.Index.load(out, device="cpu").search("rivers")
    assert latechunk.Index.load(out, device="cpu", model=tmp_path / "moved").search("rivers")[0].doc_id == "a.md"
    # second trial: add() refused although model= named the moved model; it serves when its weights are the same
    index = latechunk.Index.load(out, device="cpu", model=tmp_path / "moved")
    assert index.add([("b", "Glaciers lose ice every summer in the Alps.")]).added == ("b",)
    assert verify_output(out)[0] == []
    other = save_tiny_bert(tmp_path / "other", hidden=32, layers=1)  # another model: refused as before
    with pytest.warns(UserWarning, match="weights differ"), pytest.raises(ValueError, match="recorded in its manifest"):
        latechunk.Index.load(out, device="cpu", model=other).add([("c", "Lakes stay put.")])
    # and `embed --append` without --model says where the missing model came from (second trial)
    more = tmp_path / "more"
    more.mkdir()
    (more / "c.md").write_text("Lakes stay put.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(more), "--out", str(out), "--append", "-q", "--device", "cpu"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "run.json records; if it moved" in said and "--model PATH" in said, said
    res = runner.invoke(app, ["embed", str(more), "--out", str(out), "--append", "-q", "--device", "cpu",
                              "--model", str(tmp_path / "moved")])
    assert res.exit_code == 0, res.output


def test_index_expand_section_without_heading_paths_warns(late_folder):
    """Fifth trial: `Index.search(expand="section")` on an index whose strategy records no heading paths gave each
    hit's whole document without a word (the CLI notes it); it warns, naming the strategy."""
    import warnings

    index = latechunk.Index.load(late_folder, device="cpu")
    assert not index.strategy.startswith("heading")
    with pytest.warns(UserWarning, match=r"records no heading paths, so expand='section' gives each hit's whole"):
        index.search("Which river flows to the Black Sea?", k=1, expand="section")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.search("Which river flows to the Black Sea?", k=1, expand="neighbors:1")


def test_index_dim_is_the_dimension_the_index_holds(tmp_path):
    """A trial: under --truncate-dim 128 the folder said 384 (the model's), not what a query must have."""
    src = tmp_path / "a.md"
    src.write_text("Herons wait in the reeds for fish.\n", encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "-q", "--device", "cpu", "--truncate-dim", "64",
                              "--sentence-workers", "0"])
    assert res.exit_code == 0, res.output
    index = latechunk.Index.load(out, "cpu")
    assert index.dim == 64 == index.faiss_index.d and index.manifest["dim"] == 384
    assert index.search("heron", k=1)[0].doc_id == "a.md"


def test_a_folder_embedded_with_a_relative_model_path_is_searched_from_anywhere(tmp_path, monkeypatch):
    """A trial: `embed --model models/r` recorded the path as typed, so `search` from another directory could not
    find the model. The manifest records the model's folder as an absolute path."""
    from pathlib import Path

    from tests.models import save_tiny_bert

    work = tmp_path / "work"
    save_tiny_bert(work / "models" / "r")
    (work / "docs").mkdir()
    (work / "docs" / "a.md").write_text("Rivers carry silt to the sea. Trains run on rails.", encoding="utf-8")
    monkeypatch.chdir(work)
    res = CliRunner().invoke(app, ["embed", "docs", "--out", "out", "--model", "models/r", "-q", "--device", "cpu",
                                   "--sentence-workers", "0"])  # the module's runner and app
    assert res.exit_code == 0, res.output
    monkeypatch.chdir(tmp_path)
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    assert Path(manifest["model"]["path"]).is_absolute()
    hits = latechunk.Index.load(work / "out", "cpu").search("rails", k=1)
    assert hits and hits[0].doc_id == "a.md"
