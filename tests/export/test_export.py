"""`latechunk export` (latechunk/export/): an output folder into LanceDB, Qdrant and Chroma, with the real clients.

Each store's exact top-5 for 20 real queries (Chroma's questions, encoded with the model's query prompt) equals
FAISS flat's on the folder's own index.faiss, and every hit's record round-trips (spans, heading path, text, the
manifest's hash). A second folder with unnormalised vectors (tiny random model, ``--no-normalize``) checks the
inner-product distance the same way.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.eval.datasets import data_root
from latechunk.export import (
    COLLECTION_KEYS,
    FIELDS,
    chroma_hnsw,
    export_folder,
    parse_target,
    to_chroma,
    to_lancedb,
    to_qdrant,
)
from latechunk.ingest.files import sha256_file
from latechunk.output import OutputFolder
from tests.models import save_tiny_bert

runner = CliRunner()
# Chroma's own notice when a collection is made with embedding_function=None (the vectors come from latechunk)
pytestmark = pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning")
CHROMA = data_root() / "chroma_chunking_eval"
CORPORA = ("state_of_the_union",)
K = 5
ATOL = 1e-5
SECTIONS = ("# Rivers\n\nRivers flow to the sea. They carve valleys over long ages and carry silt downstream.\n\n"
            "## Deltas\n\nA delta forms where a river meets still water and drops its silt in wide fans.\n\n"
            "# Trains\n\nTrains run on rails between cities. Night trains carry sleeping cars across borders.\n")

needs_data = pytest.mark.skipif(not (CHROMA / "corpora").is_dir(), reason="shared data folder not found")


def _embed(src: list[Path], out: Path, *extra: str) -> None:
    res = runner.invoke(app, ["embed", *map(str, src), "--out", str(out), "--device", "cpu", "-q", "--force",
                              "--sentence-workers", "0", "--group-tokens", "2048", *extra])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def minilm_folder(tmp_path_factory):
    """A Chroma corpus and a markdown file with headings, embedded with the bundled MiniLM (two shards)."""
    if not (CHROMA / "corpora").is_dir():
        pytest.skip("shared data folder not found")
    root = tmp_path_factory.mktemp("export")
    md = root / "src" / "sections.md"
    md.parent.mkdir()
    md.write_text(SECTIONS, encoding="utf-8")
    _embed([*(CHROMA / "corpora" / f"{c}.md" for c in CORPORA), md], root / "out", "--strategy", "heading:max_tokens=64")
    return root / "out"


@pytest.fixture(scope="module")
def queries(minilm_folder):
    """20 of Chroma's questions on the embedded corpora, encoded with the model's query prompt: (20, dim)."""
    from tests.models import minilm_encoder

    with open(CHROMA / "questions_df.csv", newline="", encoding="utf-8") as f:
        texts = [r["question"] for r in csv.DictReader(f) if r["corpus_id"] in CORPORA]
    texts = texts[::3][:20]  # spread over the speech
    assert len(texts) == 20
    manifest = OutputFolder(minilm_folder).read_manifest()
    return minilm_encoder().encode_query(texts, normalize=manifest["normalize"])


@pytest.fixture(scope="module")
def truth(minilm_folder):
    """The folder's vectors (FAISS's own copy) and its chunk rows, for exact scores and the round trip."""
    index, rows = _faiss_and_rows(minilm_folder)
    return index, rows


def _faiss_and_rows(folder: Path):
    out = OutputFolder(folder)
    index = out.read_index()
    assert type(index).__name__ == "IndexFlatIP"
    return index, out.read_chunks().to_pylist()


@pytest.fixture(scope="module")
def chroma_client(tmp_path_factory):
    """One persistent Chroma client for the module (its start is slow)."""
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(str(tmp_path_factory.mktemp("chroma")), settings=Settings(anonymized_telemetry=False))


# ---------------------------------------------------------------------------------------------------- searches
def _search_lancedb(path: Path, collection: str, xq: np.ndarray, k: int):
    import lancedb

    table = lancedb.connect(str(path)).open_table(collection)
    distance = table.schema.metadata[b"latechunk.distance"].decode()
    hits = []
    for q in xq:
        r = table.search(q).distance_type(distance).limit(k).to_arrow()  # no ANN index: flat, exact
        assert "_distance" in r.column_names
        hits.append([(row["vector_id"], 1.0 - row["_distance"], row) for row in r.to_pylist()])
    return hits


def _search_qdrant(path: Path, collection: str, xq: np.ndarray, k: int):
    from qdrant_client import QdrantClient

    qc = QdrantClient(path=str(path))  # local mode: exact search
    try:
        points = [qc.query_points(collection, query=q.tolist(), limit=k, with_payload=True).points for q in xq]
    finally:
        qc.close()
    assert all(str(p.id) == p.payload["chunk_id"] for ps in points for p in ps)  # the point id is the chunk id
    return [[(p.payload["vector_id"], p.score, p.payload) for p in ps] for ps in points]


def _search_chroma(client, collection: str, xq: np.ndarray, k: int):
    col = client.get_collection(collection)
    # Exact top-k from Chroma's HNSW: ask for every vector, with ef_search >= the collection size, so the search
    # visits every vector (it cannot stop early) and ranks them all; the first k are the exact top-k. (With
    # n_results=k, HNSW over unnormalised vectors and inner product may miss one: it is approximate.)
    n = col.count()
    col.modify(configuration={"hnsw": {"ef_search": n}})
    r = col.query(query_embeddings=xq, n_results=n, include=["distances", "metadatas", "documents"])
    assert all(len(ids) == n for ids in r["ids"]), "Chroma's HNSW did not reach every vector"
    assert all(i == m["chunk_id"] for ids, ms in zip(r["ids"], r["metadatas"]) for i, m in zip(ids, ms))
    return [[(m["vector_id"], 1.0 - d, {**m, "text": doc}) for d, m, doc in zip(ds[:k], ms[:k], docs[:k])]
            for ds, ms, docs in zip(r["distances"], r["metadatas"], r["documents"])]


def _assert_same_top_k(hits, index, xq: np.ndarray, k: int = K) -> int:
    """Each query's store top-k equals FAISS flat's: scores rank by rank within ATOL; an id that differs must
    tie (within ATOL) with FAISS's k-th score; and each store score is the exact inner product of its id's vector.
    Returns the number of queries whose id lists are identical."""
    D, I = index.search(np.ascontiguousarray(xq, dtype=np.float32), k)
    xb = index.reconstruct_n(0, index.ntotal)
    same = 0
    for q, (got, d, ids) in enumerate(zip(hits, D, I)):
        got_ids = [int(i) for i, _, _ in got]
        got_scores = np.array([s for _, s, _ in got])
        assert len(got_ids) == k, (q, got_ids)
        np.testing.assert_allclose(got_scores, d, atol=ATOL, err_msg=f"query {q}: store scores vs FAISS")
        np.testing.assert_allclose(got_scores, xb[got_ids] @ xq[q], atol=ATOL,
                                   err_msg=f"query {q}: a store id does not hold that vector")
        for i in set(got_ids) ^ set(ids.tolist()):  # only ties at the cut may swap
            assert abs(float(xb[i] @ xq[q]) - float(d[-1])) < ATOL, (q, got_ids, ids.tolist())
        same += got_ids == ids.tolist()
    return same


def _assert_records(hits, rows: list[dict], manifest_sha256: str, chroma: bool = False) -> None:
    for query_hits in hits:
        for vid, _, rec in query_hits:
            row = rows[vid]
            assert rec["vector_id"] == vid
            for c in ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "strategy",
                      "text"):
                assert rec[c] == row[c], (vid, c)
            # Chroma refuses an empty list as a metadata value: an empty heading path is left out
            assert list(rec.get("heading_path", []) if chroma else rec["heading_path"]) == row["heading_path"], vid
            assert rec["manifest_sha256"] == manifest_sha256


# ---------------------------------------------------------------------------------------------------- round trips
@pytest.fixture(scope="module")
def exported(minilm_folder, chroma_client, tmp_path_factory):
    """The MiniLM folder exported to all three stores (small batches, so batches cross shard ends)."""
    root = tmp_path_factory.mktemp("stores")
    return {
        "lancedb": (root / "lance", to_lancedb(minilm_folder, root / "lance", batch_size=50)),
        "qdrant": (root / "qdrant", to_qdrant(minilm_folder, root / "qdrant", batch_size=50)),
        "chroma": (None, to_chroma(minilm_folder, "unused", batch_size=50, client=chroma_client)),
    }


def _hits(store: str, exported, chroma_client, xq: np.ndarray, k: int = K):
    path, res = exported[store]
    if store == "lancedb":
        return _search_lancedb(path, res.collection, xq, k)
    if store == "qdrant":
        return _search_qdrant(path, res.collection, xq, k)
    return _search_chroma(chroma_client, res.collection, xq, k)


@needs_data
@pytest.mark.parametrize("store", ["lancedb", "qdrant", "chroma"])
def test_store_top5_equals_faiss_flat_and_records_round_trip(store, exported, chroma_client, queries, truth,
                                                             minilm_folder):
    index, rows = truth
    res = exported[store][1]
    manifest_sha256 = sha256_file(minilm_folder / "manifest.json")
    assert (res.rows, res.dim, res.distance, res.manifest_sha256) == (index.ntotal, index.d, "cosine", manifest_sha256)
    assert len(OutputFolder(minilm_folder).read_manifest()["shards"]) >= 2 and res.rows > 150
    hits = _hits(store, exported, chroma_client, queries)
    same = _assert_same_top_k(hits, index, queries)
    assert same >= 18, f"{store}: only {same}/20 queries with FAISS's exact id order"
    _assert_records(hits, rows, manifest_sha256, chroma=store == "chroma")


@needs_data
def test_every_row_is_its_vector_id_with_its_record(exported, chroma_client, truth):
    """All rows, not only hits: each store holds one row per vector id 0..n-1 (none missing) with row i's record and
    vector, under its chunk id (one id per row, the same id in every store: a UUID), heading paths both empty and
    not, and the collection's record of its source."""
    import uuid

    index, rows = truth
    with_path = [i for i, r in enumerate(rows) if r["heading_path"]]
    assert with_path and len(with_path) < len(rows)  # both kinds: ("Rivers", "Deltas") and none
    col = chroma_client.get_collection(exported["chroma"][1].collection)
    got = col.get(include=["metadatas", "embeddings"])
    assert sorted(m["vector_id"] for m in got["metadatas"]) == list(range(len(rows)))
    assert got["ids"] == [m["chunk_id"] for m in got["metadatas"]] and len(set(got["ids"])) == len(rows)
    assert all(uuid.UUID(i).version == 5 for i in got["ids"])
    chroma_ids = {m["vector_id"]: i for i, m in zip(got["ids"], got["metadatas"])}
    by_id = {m["vector_id"]: (m, e) for m, e in zip(got["metadatas"], got["embeddings"])}
    xb = index.reconstruct_n(0, index.ntotal)
    for i, r in enumerate(rows):
        m, e = by_id[i]
        assert m["doc_id"] == r["doc_id"] and m["chunk_index"] == r["chunk_index"]
        assert m.get("heading_path", []) == r["heading_path"]
        np.testing.assert_allclose(e, xb[i], atol=1e-6)
    import lancedb

    path, res = exported["lancedb"]
    table = lancedb.connect(str(path)).open_table(res.collection)
    t = table.to_arrow().sort_by("vector_id")
    assert t.column("vector_id").to_pylist() == list(range(len(rows)))
    assert t.column("chunk_id").to_pylist() == [chroma_ids[i] for i in range(len(rows))]  # one id in every store
    assert t.column("heading_path").to_pylist() == [r["heading_path"] for r in rows]
    np.testing.assert_array_equal(np.stack(t.column("vector").to_numpy(zero_copy_only=False)), xb)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert set(COLLECTION_KEYS) <= set(meta) and meta["latechunk.rows"] == str(len(rows))
    assert meta["latechunk.model"] == "all-MiniLM-L6-v2" and meta["latechunk.distance"] == "cosine"
    assert meta["latechunk.ids"] == "chunk_id/1"
    assert [f for f in t.column_names if f != "vector"] == list(FIELDS)
    from qdrant_client import QdrantClient

    path, res = exported["qdrant"]
    qc = QdrantClient(path=str(path))
    try:
        points, _ = qc.scroll(res.collection, limit=len(rows) + 1, with_payload=True, with_vectors=True)
        assert qc.get_collection(res.collection).config.metadata == meta
    finally:
        qc.close()
    assert sorted(p.payload["vector_id"] for p in points) == list(range(len(rows)))
    for p in points:
        vid = p.payload["vector_id"]
        assert list(p.payload) == list(FIELDS) and str(p.id) == p.payload["chunk_id"] == chroma_ids[vid]
        skip = ("chunk_id", "vector_id", "fields_sha256", "manifest_sha256")
        assert {k: p.payload[k] for k in FIELDS if k not in skip} == rows[vid]
        np.testing.assert_allclose(p.vector, xb[vid] / np.linalg.norm(xb[vid]), atol=1e-6)  # cosine: stored unit


# ---------------------------------------------------------------------------------------------------- inner product
@pytest.fixture(scope="module")
def raw_folder(tmp_path_factory):
    """Unnormalised vectors (tiny random model, --no-normalize): the stores must rank by inner product."""
    root = tmp_path_factory.mktemp("raw")
    src = root / "src"
    src.mkdir()
    for i, topic in enumerate(("rivers and deltas", "trains and rails", "apples and bees", "lamps and light")):
        (src / f"d{i}.md").write_text(f"A note on {topic}. " * (20 + 9 * i), encoding="utf-8")
    model = save_tiny_bert(root / "model")
    _embed([src], root / "out", "--model", str(model), "--no-normalize", "--strategy", "fixed:size=16,overlap=4")
    return root / "out"


def test_unnormalised_vectors_export_for_inner_product(raw_folder, chroma_client, tmp_path):
    index, rows = _faiss_and_rows(raw_folder)
    xb = index.reconstruct_n(0, index.ntotal)
    assert np.abs(np.linalg.norm(xb, axis=1) - 1).max() > 1e-2  # really unnormalised
    rng = np.random.default_rng(0)
    xq = (xb[rng.choice(len(xb), 10, replace=False)] + rng.normal(0, 0.5, (10, xb.shape[1]))).astype(np.float32)
    xq = np.concatenate([xq, rng.normal(0, 1, (10, xb.shape[1])).astype(np.float32)])  # 20 queries
    sha = sha256_file(raw_folder / "manifest.json")
    exported = {
        "lancedb": (tmp_path / "l", export_folder(raw_folder, f"lancedb:{tmp_path / 'l'}", collection="raw")),
        "qdrant": (tmp_path / "q", export_folder(raw_folder, f"qdrant:{tmp_path / 'q'}", collection="raw")),
        # Chroma's HNSW over inner product is approximate (a vector of small norm can be unreachable): with
        # max_neighbors of at least half the collection no neighbour list is ever pruned, so every vector is reached
        "chroma": (None, export_folder(raw_folder, "chroma:unused", collection="raw", client=chroma_client,
                                       hnsw={"max_neighbors": len(rows), "ef_construction": 2 * len(rows)})),
    }
    for store in ("lancedb", "qdrant", "chroma"):
        assert exported[store][1].distance == "dot"
        hits = _hits(store, exported, chroma_client, xq)
        _assert_same_top_k(hits, index, xq)
        _assert_records(hits, rows, sha, chroma=store == "chroma")


# ---------------------------------------------------------------------------------------------------- faults
def test_export_reads_only_the_shards(minilm_folder, tmp_path, monkeypatch):
    """Streaming: the assembled chunks.parquet and index.faiss are never read (shards one at a time)."""
    def boom(*a, **k):
        raise AssertionError("export read an assembled file")

    monkeypatch.setattr(OutputFolder, "read_chunks", boom)
    monkeypatch.setattr(OutputFolder, "read_index", boom)
    monkeypatch.setattr("latechunk.output.tables.read_chunk_table", boom)
    res = export_folder(minilm_folder, f"qdrant:{tmp_path / 'q'}", batch_size=7)
    assert res.rows == OutputFolder(minilm_folder).read_manifest()["index"]["ntotal"]


def test_non_empty_collection_is_refused_unless_overwrite(raw_folder, tmp_path):
    target = f"lancedb:{tmp_path / 'l'}"
    n = export_folder(raw_folder, target).rows
    with pytest.raises(ValueError, match=r"lancedb table 'latechunk' .* already holds \d+ rows; pass --overwrite"):
        export_folder(raw_folder, target)
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path / 'q'}", "-q"])
    assert res.exit_code == 0 and f"exported {n} vectors" in res.output, res.output
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path / 'q'}", "-q"])
    assert res.exit_code == 2 and "already holds" in res.output and "--overwrite" in res.output, res.output
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path / 'q'}", "-q", "--overwrite"])
    assert res.exit_code == 0, res.output
    import lancedb

    assert export_folder(raw_folder, target, overwrite=True).rows == n
    assert lancedb.connect(str(tmp_path / "l")).open_table("latechunk").count_rows() == n  # replaced, not appended


def test_a_folder_of_another_store_or_an_output_folder_is_refused(raw_folder, tmp_path):
    """One store of one kind per folder: each store's folder is refused to the other two (before the store is
    touched), and so is a latechunk output folder; the same store's folder and an empty folder are taken."""
    folders = {store: tmp_path / store for store in ("lancedb", "qdrant", "chroma")}
    for store, path in folders.items():
        assert export_folder(raw_folder, f"{store}:{path}").rows > 0
    evidence = {"lancedb": "latechunk.lance", "qdrant": "meta.json and collection/", "chroma": "chroma.sqlite3"}
    for store, path in folders.items():
        before = sorted(p.relative_to(path) for p in path.rglob("*"))
        for other in folders:
            if other == store:
                continue
            with pytest.raises(ValueError) as err:
                export_folder(raw_folder, f"{other}:{path}")
            msg = str(err.value)
            assert f"holds a {store} store ({evidence[store]})" in msg and "a folder of its own" in msg, msg
        assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written beside it
        assert export_folder(raw_folder, f"{store}:{path}", collection="second").rows > 0  # its own kind: taken
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"chroma:{raw_folder}", "-q"])
    assert res.exit_code == 2 and "holds a latechunk output folder" in " ".join(res.output.split()), res.output
    assert not (raw_folder / "chroma.sqlite3").exists()
    for inside in (raw_folder / "shards", raw_folder / "new" / "store"):  # inside an output folder: refused
        with pytest.raises(ValueError, match=r"is inside the latechunk output folder .*; export into a folder of"):
            export_folder(raw_folder, f"qdrant:{inside}")
    assert not (raw_folder / "new").exists() and not (raw_folder / "shards" / "meta.json").exists()
    (tmp_path / "empty").mkdir()
    assert export_folder(raw_folder, f"chroma:{tmp_path / 'empty'}").rows > 0


def test_a_folder_of_other_files_is_refused(raw_folder, tmp_path):
    """Fresh-user trial: an export into a folder of the user's own files (no store) was taken, and the store's
    files were written among them, though the refusal messages promise "a new or empty folder, or one that
    holds a ... store". Each store now refuses it, naming what is there, and writes nothing."""
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("notes.txt", "b.csv", "c.md", "d.json"):
        (mine / name).write_text("mine", encoding="utf-8")
    for store in ("lancedb", "qdrant", "chroma"):
        with pytest.raises(ValueError, match=rf"{store} path .*mine holds b.csv, c.md, d.json and 1 more but no "
                                             rf"{store} store; export into a folder of its own"):
            export_folder(raw_folder, f"{store}:{mine}")
    assert sorted(p.name for p in mine.iterdir()) == ["b.csv", "c.md", "d.json", "notes.txt"]
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"chroma:{mine}", "-q"])
    assert res.exit_code == 2 and "but no chroma store" in " ".join(res.output.split()), res.output


@pytest.mark.parametrize("target, message", [
    ("pinecone:/tmp/x", "unknown vector store 'pinecone'.*known: lancedb, qdrant, chroma"),
    ("lancedb", "not STORE:PATH"),
    ("qdrant:", "has no path"),
])
def test_bad_target_fails_naming_it(target, message):
    with pytest.raises(ValueError, match=message):
        parse_target(target)
    res = runner.invoke(app, ["export", ".", "--to", target])
    assert res.exit_code == 2 and "error:" in res.output, res.output


def test_incomplete_folder_fails_before_the_store_is_touched(raw_folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(raw_folder, broken)
    name = json.loads((broken / "manifest.json").read_text())["shards"][-1]["name"]
    (broken / "shards" / f"{name}.npy").unlink()
    with pytest.raises(ValueError, match=rf"incomplete or damaged, nothing exported: shards/{name}.npy is missing"):
        export_folder(broken, f"lancedb:{tmp_path / 'l'}")
    (broken / "manifest.json").unlink()  # an unfinished run
    res = runner.invoke(app, ["export", str(broken), "--to", f"qdrant:{tmp_path / 'q'}"])
    assert res.exit_code == 2 and "manifest.json is missing" in res.output and "--resume" in res.output, res.output
    assert not (tmp_path / "l").exists() and not (tmp_path / "q").exists()


def test_bad_collection_batch_size_and_hnsw(raw_folder, tmp_path):
    with pytest.raises(ValueError, match="collection name 'a b'"):
        export_folder(raw_folder, f"qdrant:{tmp_path}", collection="a b")
    # LanceDB and Qdrant take Chroma's rule too: the error and --help say so (a user took "ab" for a LanceDB bug)
    with pytest.raises(ValueError, match="collection name 'ab' .*one rule for every store: Chroma's"):
        export_folder(raw_folder, f"lancedb:{tmp_path / 'l'}", collection="ab")
    helptext = " ".join(runner.invoke(app, ["export", "--help"], terminal_width=200).output.split())
    assert "the same rule for every store" in helptext and "3-512 characters" in helptext, helptext
    with pytest.raises(ValueError, match="hnsw settings are for chroma's index only, not qdrant"):
        export_folder(raw_folder, f"qdrant:{tmp_path}", hnsw={"max_neighbors": 32})
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path}", "--batch-size", "0"])
    assert res.exit_code == 2 and "--batch-size" in res.output, res.output


def test_missing_extra_names_it(raw_folder, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "lancedb", None)  # import lancedb raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'latechunk\[lancedb\]'"):
        export_folder(raw_folder, f"lancedb:{tmp_path / 'l'}")
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"lancedb:{tmp_path / 'l'}"])
    assert res.exit_code == 2 and "latechunk[lancedb]" in res.output, res.output
    assert not (tmp_path / "l").exists()


def test_failed_export_leaves_no_half_filled_collection(raw_folder, tmp_path, monkeypatch):
    from qdrant_client import QdrantClient

    from latechunk.export.source import _Source

    real = _Source.batches

    def one_then_fail(self, batch_size):
        it = real(self, batch_size)
        yield next(it)
        raise OSError("disk went away")

    monkeypatch.setattr(_Source, "batches", one_then_fail)
    with pytest.raises(OSError, match="disk went away"):
        export_folder(raw_folder, f"qdrant:{tmp_path / 'q'}", batch_size=3)
    qc = QdrantClient(path=str(tmp_path / "q"))
    try:
        assert not qc.collection_exists("latechunk")
    finally:
        qc.close()


def test_an_interrupted_export_is_refused_as_incomplete(raw_folder, tmp_path):
    """Trial finding: after kill -9 part way through an export (no drop can run then) the next export refused the
    collection as "already holds 73 points" though its metadata says 203 rows: it now names it incomplete."""
    import chromadb
    import lancedb
    from qdrant_client import QdrantClient, models

    for store in ("lancedb", "qdrant", "chroma"):
        export_folder(raw_folder, f"{store}:{tmp_path / store}")
    lancedb.connect(str(tmp_path / "lancedb")).open_table("latechunk").delete("vector_id < 2")
    first_two = models.Filter(must=[models.FieldCondition(key="vector_id", range=models.Range(lt=2))])
    qc = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        qc.delete("latechunk", points_selector=models.FilterSelector(filter=first_two))
    finally:
        qc.close()
    from chromadb.config import Settings

    chroma = chromadb.PersistentClient(str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    chroma.get_collection("latechunk").delete(where={"vector_id": {"$lt": 2}})
    import pyarrow.parquet as pq

    total = len(pq.read_table(raw_folder / "chunks.parquet"))
    for store, what in (("lancedb", "rows"), ("qdrant", "points"), ("chroma", "records")):
        with pytest.raises(ValueError, match=rf"is incomplete: it holds {total - 2} of the {total} {what}"):
            export_folder(raw_folder, f"{store}:{tmp_path / store}")
    # ... and --sync finishes it: the two missing rows are added, nothing else is written
    for store in ("qdrant", "chroma"):
        res = export_folder(raw_folder, f"{store}:{tmp_path / store}", sync=True,
                            client=chroma if store == "chroma" else None)
        assert res.sync == {"added": 2, "rewritten": 0, "renumbered": 0, "deleted": 0, "unchanged": total - 2}, store
    assert chroma.get_collection("latechunk").count() == total


def test_a_folder_grown_by_index_add_exports_whole(raw_folder, tmp_path):
    """``Index.add`` appends shards and rewrites the manifest: the export carries the new rows and the new hash."""
    import lancedb

    import latechunk

    grown = tmp_path / "grown"
    shutil.copytree(raw_folder, grown)
    before = sha256_file(grown / "manifest.json")
    n = OutputFolder(grown).read_manifest()["index"]["ntotal"]
    added = latechunk.Index.load(grown).add([("lighthouse", "Lighthouses guide ships along rocky coasts at night.")])
    res = export_folder(grown, f"lancedb:{tmp_path / 'l'}")
    assert res.rows == n + added.chunks and res.manifest_sha256 == sha256_file(grown / "manifest.json") != before
    rows = lancedb.connect(str(tmp_path / "l")).open_table("latechunk").to_arrow().sort_by("vector_id").to_pylist()
    assert [r["vector_id"] for r in rows] == list(range(n + added.chunks))
    assert {r["doc_id"] for r in rows[n:]} == {"lighthouse"} and "lighthouse" not in {r["doc_id"] for r in rows[:n]}


def test_truncate_dim_folder_exports_the_indexed_vectors(tmp_path):
    """``--truncate-dim`` (Matryoshka): the store holds what index.faiss holds (first N dimensions, renormalised),
    so it ranks as FAISS does; the shards' full vectors would not."""
    src = tmp_path / "src"
    src.mkdir()
    for i, topic in enumerate(("rivers and deltas", "trains and rails", "apples and bees")):
        (src / f"d{i}.md").write_text(f"A note on {topic}. " * (15 + 7 * i), encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model")
    _embed([src], tmp_path / "out", "--model", str(model), "--truncate-dim", "16", "--strategy", "fixed:size=16")
    index, rows = _faiss_and_rows(tmp_path / "out")
    assert index.d == 16
    res = export_folder(tmp_path / "out", f"qdrant:{tmp_path / 'q'}")
    assert (res.dim, res.distance) == (16, "cosine")
    xq = np.random.default_rng(1).normal(0, 1, (20, 16)).astype(np.float32)
    xq /= np.linalg.norm(xq, axis=1, keepdims=True)
    hits = _search_qdrant(tmp_path / "q", res.collection, xq, K)
    _assert_same_top_k(hits, index, xq)
    _assert_records(hits, rows, res.manifest_sha256)


def test_collection_metadata_is_plain_strings_or_json(raw_folder, tmp_path):
    """Every collection-level value reads back: ``latechunk.strategy`` is JSON (it was a Python repr with single
    quotes), the others plain strings or JSON scalars."""
    import lancedb

    export_folder(raw_folder, f"lancedb:{tmp_path / 'l'}")
    meta = {k.decode(): v.decode() for k, v in
            lancedb.connect(str(tmp_path / "l")).open_table("latechunk").schema.metadata.items()
            if k.decode().startswith("latechunk.")}
    assert set(meta) == set(COLLECTION_KEYS)
    manifest = OutputFolder(raw_folder).read_manifest()
    assert json.loads(meta["latechunk.strategy"]) == manifest["strategy"]
    assert json.loads(meta["latechunk.strategy"])["spec"] == "fixed:size=16,overlap=4"
    assert json.loads(meta["latechunk.normalize"]) is False and meta["latechunk.distance"] == "dot"
    assert json.loads(meta["latechunk.dim"]) == manifest["dim"]
    assert json.loads(meta["latechunk.rows"]) == manifest["index"]["ntotal"]
    assert meta["latechunk.mode"] == "late" and len(meta["latechunk.manifest_sha256"]) == 64


def test_a_qdrant_folder_open_elsewhere_fails_clearly(raw_folder, tmp_path):
    from qdrant_client import QdrantClient

    holder = QdrantClient(path=str(tmp_path / "q"))
    try:
        with pytest.raises(ValueError, match=r"qdrant folder .*q is open in another QdrantClient.*client=qc"):
            export_folder(raw_folder, f"qdrant:{tmp_path / 'q'}")
        res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path / 'q'}", "-q"])
        assert res.exit_code == 2 and "error:" in res.output and "open in another QdrantClient" in res.output, \
            res.output
        assert not isinstance(res.exception, RuntimeError)
    finally:
        holder.close()


def test_chroma_gets_hnsw_settings_sized_to_the_collection(raw_folder, chroma_client, tmp_path):
    """Chroma's defaults (max_neighbors 16, ef_search 100) missed FAISS's top hit of the credit-card question on
    Chroma's 1,468 vectors: an export sets M 32, ef_construction 256 and ef_search = rows clamped to
    [128, 1024]; --hnsw-* change them, for Chroma only."""
    assert chroma_hnsw(50) == {"max_neighbors": 32, "ef_construction": 256, "ef_search": 128}
    assert chroma_hnsw(1468)["ef_search"] == 1024 and chroma_hnsw(700)["ef_search"] == 700
    assert chroma_hnsw(700, {"ef_search": 64, "num_threads": 1}) == {
        "max_neighbors": 32, "ef_construction": 256, "ef_search": 64, "num_threads": 1}
    with pytest.raises(ValueError, match="hnsw ef_search must be an integer >= 1, got 0"):
        chroma_hnsw(10, {"ef_search": 0})
    with pytest.raises(ValueError, match="hnsw 'space' is set from the folder's distance"):
        chroma_hnsw(10, {"space": "l2"})
    res = export_folder(raw_folder, "chroma:unused", collection="sized", client=chroma_client)
    hnsw = chroma_client.get_collection("sized").configuration_json["hnsw"]
    assert res.hnsw == chroma_hnsw(res.rows)
    assert (hnsw["max_neighbors"], hnsw["ef_construction"], hnsw["ef_search"], hnsw["space"]) == (
        32, 256, min(max(res.rows, 128), 1024), "ip")
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"chroma:{tmp_path / 'c'}", "-q",
                              "--hnsw-ef", "300", "--hnsw-m", "48", "--hnsw-ef-construction", "400"])
    assert res.exit_code == 0 and "HNSW max_neighbors=48 ef_construction=400 ef_search=300" in res.output, res.output
    res = runner.invoke(app, ["export", str(raw_folder), "--to", f"qdrant:{tmp_path / 'q'}", "--hnsw-ef", "300"])
    assert res.exit_code == 2 and "--hnsw-ef" in res.output and "Chroma" in res.output, res.output
    assert not (tmp_path / "q").exists()


def test_a_second_export_into_one_store_folder_waits_for_the_first(raw_folder, tmp_path, caplog):
    """Trial: two `export --to chroma:PATH` at once both crashed ("database is locked", "table collections
    already exists"). An export holds the store folder's lock; a second one says it waits, and then runs."""
    import fcntl
    import logging
    import threading

    from latechunk.export import STORE_LOCK_FILE

    store = tmp_path / "c"
    store.mkdir()
    holder = open(store / STORE_LOCK_FILE, "a+", encoding="ascii")  # noqa: SIM115  (closed below to end the hold)
    # another export, as the kernel sees it
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    holder.write("4242\n")
    holder.flush()
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(res=export_folder(raw_folder, f"chroma:{store}")))
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        worker.start()
        for _ in range(600):
            if "waiting for another latechunk export" in caplog.text:
                break
            worker.join(0.05)
        assert "waiting for another latechunk export" in caplog.text and "(pid 4242)" in caplog.text
        assert worker.is_alive() and not result and not (store / "chroma.sqlite3").exists()
        holder.close()  # the first export ends
        worker.join(300)
    assert result["res"].rows == OutputFolder(raw_folder).read_manifest()["index"]["ntotal"]
