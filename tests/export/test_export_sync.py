"""Stable chunk ids and ``latechunk export --sync`` (latechunk/export/), with the real Qdrant and Chroma clients.

The daily update of a served store: day 1's folder is exported; day 2's corpus (one document unchanged, one
edited, one gone, one new, one whose url changed, one whose text is unchanged but that now comes after a new one)
is embedded with ``--reuse`` and synced into the same collection. Afterwards the collection equals a fresh export
of day 2's folder (ids, fields, vectors), unchanged chunks kept their ids and were not written, and the counts say
what was added, rewritten and deleted.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.export import FIELDS, chunk_id, export_folder, vectors_key
from latechunk.ingest.files import sha256_file
from tests.models import save_tiny_bert

runner = CliRunner()
pytestmark = pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning")

TOPICS = {
    "alpha": "Rivers carry silt to the sea and build deltas where the water slows. ",
    "bravo": "Trains run on rails between cities and carry sleeping cars at night. ",
    "charlie": "Bees visit apple blossoms in spring and carry pollen from tree to tree. ",
    "delta": "Lighthouses guide ships past rocky coasts with a turning beam of light. ",
    "echo": "Glaciers grind valleys into wide U shapes over thousands of years. ",
    "foxtrot": "Owls hunt at night and hear a mouse move under a foot of snow. ",
}


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _embed(src: Path, out: Path, model: Path, *extra: str) -> None:
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu", "-q",
                              "--sentence-workers", "0", "--strategy", "fixed:size=16,overlap=4",
                              "--dtype", "float32", *extra])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """Day 1 and day 2 folders (day 2 with --reuse of day 1, and a fresh day 2 without it), one tiny model."""
    root = tmp_path_factory.mktemp("days")
    model = save_tiny_bert(root / "model")
    day1 = [{"id": k, "text": TOPICS[k] * (3 + i), "url": f"https://example.org/{k}"}
            for i, k in enumerate(("alpha", "bravo", "charlie", "delta", "foxtrot", "echo"))]
    day2 = [dict(day1[0]),                                                            # alpha: unchanged
            {"id": "aardvark", "text": TOPICS["charlie"] * 2, "url": "https://example.org/a"},  # new, in the middle
            {**day1[1], "text": day1[1]["text"] + "Some trains now run on hydrogen."},  # bravo: edited
            {**day1[3], "url": "https://example.org/delta-moved"},                    # delta: url changed
            dict(day1[5])]                                                            # echo: unchanged, moved
    # charlie and foxtrot are gone; echo moved from line 6 to line 5 of the dump (its `source`) and to other rows. Each day's dump has the same file name (a row's `source`): a renamed dump rewrites every row
    (root / "in1").mkdir()
    (root / "in2").mkdir()
    _embed(_jsonl(root / "in1" / "corpus.jsonl", day1), root / "day1", model)
    _embed(_jsonl(root / "in2" / "corpus.jsonl", day2), root / "day2", model, "--reuse", str(root / "day1"))
    _embed(root / "in2" / "corpus.jsonl", root / "day2_fresh", model)
    return root


def _qdrant_rows(path: Path, collection: str = "latechunk") -> dict[str, tuple[dict, np.ndarray]]:
    from qdrant_client import QdrantClient

    qc = QdrantClient(path=str(path))
    try:
        points, _ = qc.scroll(collection, limit=10_000, with_payload=True, with_vectors=True)
        meta = qc.get_collection(collection).config.metadata
    finally:
        qc.close()
    rows = {str(p.id): (p.payload, np.asarray(p.vector, dtype=np.float32)) for p in points}
    return rows, meta


def _chroma_rows(client, collection: str = "latechunk"):
    col = client.get_collection(collection)
    got = col.get(include=["metadatas", "embeddings", "documents"])
    rows = {i: ({**m, "text": d}, np.asarray(e, dtype=np.float32))
            for i, m, e, d in zip(got["ids"], got["metadatas"], got["embeddings"], got["documents"])}
    return rows, col.metadata


@pytest.fixture
def chroma(tmp_path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))


def _by_doc(rows: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for cid, (payload, _) in rows.items():
        out.setdefault(payload["doc_id"], set()).add(cid)
    return out


@pytest.mark.parametrize("store", ["qdrant", "chroma"])
def test_sync_brings_a_served_collection_to_the_rebuilt_folder(store, days, tmp_path, chroma):
    """Day 1 exported, day 2 (--reuse) synced into it: the collection equals a fresh export of day 2, unchanged
    chunks kept their ids and rows (not written: their manifest hash is day 1's), and the counts add up."""
    target, client = (f"qdrant:{tmp_path / 'q'}", None) if store == "qdrant" else ("chroma:unused", chroma)
    fresh_target = f"qdrant:{tmp_path / 'q2'}" if store == "qdrant" else "chroma:unused"
    read = (lambda c="latechunk": _qdrant_rows(tmp_path / "q", c)) if store == "qdrant" else \
        (lambda c="latechunk": _chroma_rows(chroma, c))
    export_folder(days / "day1", target, client=client)
    before, _ = read()
    res = export_folder(days / "day2", target, client=client, sync=True)
    after, meta = read()
    export_folder(days / "day2", fresh_target, client=client, collection="fresh")
    fresh, fresh_meta = _qdrant_rows(tmp_path / "q2", "fresh") if store == "qdrant" else read("fresh")

    # the synced collection is a fresh export of day 2: the same ids, fields and vectors, and day 2's record
    assert set(after) == set(fresh) and len(after) == res.rows
    for cid, (payload, vec) in fresh.items():
        got, got_vec = after[cid]
        skip = ("manifest_sha256",)
        assert {k: v for k, v in got.items() if k not in skip} == {k: v for k, v in payload.items() if k not in skip}
        np.testing.assert_allclose(got_vec, vec, atol=1e-6)
    assert meta == fresh_meta and meta["latechunk.manifest_sha256"] == sha256_file(days / "day2" / "manifest.json")

    b, a = _by_doc(before), _by_doc(after)
    assert a["alpha"] == b["alpha"]          # unchanged document, same place: same ids, rows untouched
    assert a["delta"] == b["delta"]          # same text, url changed: same ids (the rows were rewritten)
    assert not a["bravo"] & b["bravo"]       # edited: every chunk is a new chunk (late vectors see the whole text)
    assert "charlie" not in a and "foxtrot" not in a and "aardvark" in a and "aardvark" not in b
    day1_sha = sha256_file(days / "day1" / "manifest.json")
    assert {after[c][0]["manifest_sha256"] for c in a["alpha"]} == {day1_sha}            # not written
    assert {after[c][0]["manifest_sha256"] for c in a["delta"]} == {meta["latechunk.manifest_sha256"]}  # written
    assert {after[c][0]["url"] for c in a["delta"]} == {"https://example.org/delta-moved"}
    n = {d: len(ids) for d, ids in a.items()}
    assert res.sync == {"added": n["bravo"] + n["aardvark"], "rewritten": n["delta"],
                        "renumbered": n["echo"], "deleted": len(b["bravo"]) + len(b["charlie"]) + len(b["foxtrot"]),
                        "unchanged": n["alpha"]}
    # echo: the same text at another line of the dump and other rows: vector_id, source and the hash are set
    assert {after[c][0]["manifest_sha256"] for c in a["echo"]} == {meta["latechunk.manifest_sha256"]}
    assert sorted(after[c][0]["vector_id"] for c in a["echo"]) != sorted(before[c][0]["vector_id"] for c in b["echo"])
    assert {before[c][0]["source"] for c in b["echo"]} == {"corpus.jsonl:6"}
    assert {after[c][0]["source"] for c in a["echo"]} == {"corpus.jsonl:5"}
    assert meta["latechunk.sync"] == ""  # the sync finished

    # a second sync has nothing to do
    again = export_folder(days / "day2", target, client=client, sync=True)
    assert again.sync == {"added": 0, "rewritten": 0, "renumbered": 0, "deleted": 0, "unchanged": res.rows}


def test_chunk_ids_are_stable_across_runs_and_change_with_what_decides_a_vector(days, tmp_path):
    """A fresh day-2 run (no --reuse) gives every chunk the id the --reuse run gave it; the id is a UUID of the
    settings, the document's id and text, and the chunk's spans: each of them changes it."""
    export_folder(days / "day2", f"qdrant:{tmp_path / 'a'}")
    export_folder(days / "day2_fresh", f"qdrant:{tmp_path / 'b'}")
    a, _ = _qdrant_rows(tmp_path / "a")
    b, _ = _qdrant_rows(tmp_path / "b")
    assert set(a) == set(b) and all(uuid.UUID(c).version == 5 for c in a)
    for cid, (payload, vec) in a.items():
        np.testing.assert_allclose(vec, b[cid][1], atol=1e-5)  # the same chunk: the same vector (batches differ)
    manifest = json.loads((days / "day2" / "manifest.json").read_text())
    key = vectors_key(manifest)
    base = chunk_id(key, "alpha", "0" * 64, 0, (0, 10), (0, 3))
    assert base == chunk_id(key, "alpha", "0" * 64, 0, (0, 10), (0, 3))
    changed = [chunk_id("f" * 64, "alpha", "0" * 64, 0, (0, 10), (0, 3)),
               chunk_id(key, "alphb", "0" * 64, 0, (0, 10), (0, 3)),
               chunk_id(key, "alpha", "1" * 64, 0, (0, 10), (0, 3)),
               chunk_id(key, "alpha", "0" * 64, 1, (0, 10), (0, 3)),
               chunk_id(key, "alpha", "0" * 64, 0, (0, 11), (0, 3)),
               chunk_id(key, "alpha", "0" * 64, 0, (0, 10), (0, 4))]
    assert len({base, *changed}) == 7
    other = dict(manifest, settings={**manifest["settings"], "macro_window": 64})
    assert vectors_key(other) != key  # a setting that decides the vectors decides the ids
    grown = dict(manifest, settings={**manifest["settings"], "group_tokens": 1})
    assert vectors_key(grown) == key  # one that does not, does not
    truncated = dict(manifest, index={**manifest["index"], "truncate_dim": 16})
    assert vectors_key(truncated) != key  # the exported vectors are cut: other vectors, other ids


def test_sync_refusals_name_the_problem(days, tmp_path, chroma):
    """--sync with --overwrite, into LanceDB, over a collection of another vector space, over one exported before
    chunk ids, over one of another corpus, or with HNSW settings the collection was not made with: each refused
    before anything is written."""
    q = f"qdrant:{tmp_path / 'q'}"
    with pytest.raises(ValueError, match="--sync and --overwrite exclude each other"):
        export_folder(days / "day1", q, sync=True, overwrite=True)
    with pytest.raises(ValueError, match="--sync .* is for qdrant and chroma"):
        export_folder(days / "day1", f"lancedb:{tmp_path / 'l'}", sync=True)
    # a collection that does not exist yet: a plain export
    res = export_folder(days / "day1", q, sync=True)
    assert res.sync is None and res.rows > 0
    # another vector space: a folder of unnormalised vectors
    root = tmp_path / "raw"
    root.mkdir()
    _embed(_jsonl(root / "d.jsonl", [{"id": "alpha", "text": TOPICS["alpha"] * 3}]), root / "out",
           save_tiny_bert(root / "model"), "--no-normalize")
    with pytest.raises(ValueError, match=r"another vector space \(normalize 'true' there, 'false' here; distance "):
        export_folder(root / "out", q, sync=True)
    # a collection of an earlier latechunk (its ids were vector ids): no latechunk.ids in its record
    export_folder(days / "day1", "chroma:unused", client=chroma)
    col = chroma.get_collection("latechunk")
    col.modify(metadata={k: v for k, v in col.metadata.items() if k != "latechunk.ids"})
    with pytest.raises(ValueError, match="not exported with chunk ids .* export it once with --overwrite"):
        export_folder(days / "day2", "chroma:unused", client=chroma, sync=True)
    with pytest.raises(ValueError, match="exported by an earlier latechunk .* pass --overwrite"):  # plain export
        export_folder(days / "day2", "chroma:unused", client=chroma)
    assert chroma.get_collection("latechunk").count() == res.rows  # nothing written
    # another corpus (the same model and settings): no document in common, so every row would go
    other = tmp_path / "other"
    other.mkdir()
    _embed(_jsonl(other / "corpus.jsonl", [{"id": "zulu", "text": TOPICS["foxtrot"] * 3}]), other / "out",
           days / "model")
    with pytest.raises(ValueError, match=r"none of its \d+ rows \(6 documents\) is a chunk of .* would replace them all"):
        export_folder(other / "out", q, sync=True)
    # ... also when its ids are the collection's (JSONL ids 0..n are common): no chunk in common is what counts
    _embed(_jsonl(other / "same_ids.jsonl", [{"id": "alpha", "text": TOPICS["foxtrot"] * 3}]), other / "out2",
           days / "model")
    with pytest.raises(ValueError, match="would replace them all"):
        export_folder(other / "out2", q, sync=True)
    # HNSW: max_neighbors is fixed when the collection is made; ef_search can be set
    export_folder(days / "day1", "chroma:unused", client=chroma, collection="hnsw", hnsw={"ef_search": 130})
    with pytest.raises(ValueError, match=r"other HNSW settings \(max_neighbors 32 there, 8 given\)"):
        export_folder(days / "day2", "chroma:unused", client=chroma, collection="hnsw", sync=True,
                      hnsw={"max_neighbors": 8})
    synced = export_folder(days / "day2", "chroma:unused", client=chroma, collection="hnsw", sync=True,
                           hnsw={"ef_search": 50})
    assert synced.hnsw["ef_search"] == 50 and synced.sync["added"] > 0
    again = export_folder(days / "day2", "chroma:unused", client=chroma, collection="hnsw", sync=True)
    assert again.hnsw["ef_search"] == 50  # set by hand (below the sizing, 128), and the collection did not grow: kept


def test_cli_sync_prints_what_it_did(days, tmp_path):
    q = f"qdrant:{tmp_path / 'q'}"
    first = runner.invoke(app, ["export", str(days / "day1"), "--to", q, "-q"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["export", str(days / "day1"), "--to", q, "-q"])
    assert again.exit_code != 0 and "--sync" in again.output  # the refusal names the way to update it
    res = runner.invoke(app, ["export", str(days / "day2"), "--to", q, "--sync", "-q"])
    assert res.exit_code == 0, res.output
    assert "synced qdrant:" in res.output and " added, " in res.output and " deleted, " in res.output
    assert set(FIELDS) >= {"chunk_id", "fields_sha256"}


def test_a_sync_never_removes_a_row_it_keeps_and_a_killed_one_is_named(days, tmp_path, chroma, monkeypatch):
    """Chroma: rows rewritten by a sync are replaced in place (upsert), so the only ids ever deleted are those the
    new folder lacks. A sync that dies part way leaves ``latechunk.sync`` set: a plain export names the unfinished
    sync, and running the sync again finishes it."""
    import chromadb.api.models.Collection as chroma_collection

    export_folder(days / "day1", "chroma:unused", client=chroma)
    before = set(chroma.get_collection("latechunk").get()["ids"])
    deleted: list[str] = []
    real_delete = chroma_collection.Collection.delete

    def spy(self, ids=None, **kw):
        deleted.extend(ids or [])
        return real_delete(self, ids=ids, **kw)

    monkeypatch.setattr(chroma_collection.Collection, "delete", spy)
    res = export_folder(days / "day2", "chroma:unused", client=chroma, sync=True)
    after = set(chroma.get_collection("latechunk").get()["ids"])
    assert res.sync["rewritten"] > 0 and set(deleted) == before - after  # nothing kept was ever missing
    monkeypatch.undo()

    from latechunk.export import qdrant as export_qdrant

    calls = {"n": 0}
    real_points = export_qdrant._qdrant_points

    def dies(source, b):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("killed")
        return real_points(source, b)

    q = f"qdrant:{tmp_path / 'q'}"
    export_folder(days / "day1", q)
    monkeypatch.setattr(export_qdrant, "_qdrant_points", dies)
    with pytest.raises(RuntimeError, match="killed"):
        export_folder(days / "day2", q, sync=True, batch_size=4)
    monkeypatch.undo()
    day2_sha = sha256_file(days / "day2" / "manifest.json")
    with pytest.raises(ValueError, match=f"left by a --sync that did not finish: from .*day2 \\(this folder\\) "
                                         f"\\(manifest sha256 {day2_sha[:12]}\\)"):
        export_folder(days / "day2", q)
    res = export_folder(days / "day2", q, sync=True)
    rows, meta = _qdrant_rows(tmp_path / "q")
    assert meta["latechunk.sync"] == "" and len(rows) == res.rows


def test_a_client_of_another_store_is_refused_by_name(days, tmp_path, chroma):
    """A trial: a Chroma client given for a qdrant: target (or the reverse) died in an AttributeError."""
    with pytest.raises(ValueError, match="client= is a chromadb.* not a qdrant client"):
        export_folder(days / "day1", f"qdrant:{tmp_path / 'q'}", client=chroma)
    from qdrant_client import QdrantClient

    qc = QdrantClient(path=str(tmp_path / "q2"))
    try:
        with pytest.raises(ValueError, match="client= is a qdrant_client.* not a chroma client"):
            export_folder(days / "day1", "chroma:unused", client=qc)
    finally:
        qc.close()


def test_search_hits_carry_the_chunk_id_their_store_row_has(days, tmp_path):
    """`Index.search` hits and `search --json` rows carry the chunk id `export` gives the same chunk's row, so a
    latechunk hit and a store hit can be matched across folders (ids are in exports and in search results)."""
    import latechunk

    export_folder(days / "day2", f"qdrant:{tmp_path / 'q'}")
    rows, _ = _qdrant_rows(tmp_path / "q")
    by_vid = {payload["vector_id"]: cid for cid, (payload, _) in rows.items()}
    hits = latechunk.Index.load(days / "day2", "cpu").search("trains on rails", k=5)
    assert hits and all(h.chunk_id == by_vid[h.vector_id] for h in hits)
    res = runner.invoke(app, ["search", str(days / "day2"), "trains on rails", "--json", "-k", "3", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert all(r["chunk_id"] == by_vid[r["vector_id"]] for r in json.loads(res.stdout))
