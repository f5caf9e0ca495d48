"""``--metadata-fields``: a record's own fields (lang, tags, dates) kept with each of its chunks, filtered on by
``search --where`` / ``Index.search(where=...)``, carried by ``--append``/``Index.add``, checked by ``verify`` and
exported (a trial: a user's ``lang``/``url``/``tags`` were dropped and there was nothing to filter on)."""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk import Document, Index
from latechunk.cli import app
from latechunk.config import IndexConfig
from latechunk.index import build_index, search_index
from latechunk.io import iter_inputs, metadata_json
from latechunk.output import allowed_rows, parse_where
from latechunk.types import RecordFields, Skipped
from latechunk.verify import verify_output

runner = CliRunner()
RECORDS = [
    {"id": "heron", "text": "Herons stand in the reeds and wait for fish at dawn.", "lang": "en",
     "tags": ["birds", "water"], "year": 2021, "url": "https://example.org/heron"},
    {"id": "reiher", "text": "Der Reiher steht im Schilf und wartet auf Fische.", "lang": "de", "tags": ["birds"],
     "year": 2022},
    {"id": "bread", "text": "Sourdough bread rises slowly overnight in a cool kitchen.", "lang": "en", "tags": [],
     "year": 2021.0, "note": {"by": "ann"}},
    {"id": "plain", "text": "A record with none of the kept fields at all."},
]


def _jsonl(path, records=RECORDS):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _embed(*args):
    res = runner.invoke(app, ["embed", *map(str, args), "-q", "--device", "cpu", "--sentence-workers", "0"])
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("meta")
    out = tmp / "o"
    _embed(_jsonl(tmp / "notes.jsonl"), "--out", out, "--metadata-fields", "lang,tags,year")
    return out


def test_record_fields_validate_and_round_trip():
    f = RecordFields(metadata=("lang", " tags ", "lang"))
    assert f.metadata == ("lang", "tags") and RecordFields.from_dict(f.to_dict()) == f
    assert RecordFields().to_dict() == {}  # folders without the setting read as before
    with pytest.raises(ValueError, match="own column"):
        RecordFields(metadata=("lang", "url"))
    with pytest.raises(ValueError, match="own column"):
        RecordFields(text="body", metadata=("body",))
    with pytest.raises(ValueError, match="takes no other name"):
        RecordFields(metadata=("all", "lang"))
    rec = {"id": "x", "_id": "y", "text": "t", "title": "T", "url": "u", "lang": "en", "n": 1}
    assert RecordFields(metadata=("all",)).metadata_of(rec) == {"lang": "en", "n": 1}
    assert RecordFields(metadata=("n", "missing")).metadata_of(rec) == {"n": 1}


def test_values_are_made_json_ready_or_the_record_is_skipped():
    import decimal

    ok, reason = metadata_json({"d": dt.date(2024, 5, 1), "t": dt.datetime(2024, 5, 1, 12, 30), "x": float("nan"),
                                "m": decimal.Decimal("1.10"), "l": [1, float("nan")], "o": {"a": (1, 2)}})
    assert reason == "" and ok == {"d": "2024-05-01", "t": "2024-05-01T12:30:00", "x": None, "m": "1.10",
                                   "l": [1, None], "o": {"a": [1, 2]}}
    # an infinite number (1e400 in a JSON line) is not a missing value: the record is skipped, and says why
    bad, reason = metadata_json({"huge": float("inf")})
    assert bad == {} and "'huge' is an infinite number" in reason
    bad, reason = metadata_json({"blob": b"\x00\x01"})
    assert bad == {} and "'blob' is bytes" in reason


def test_jsonl_and_parquet_records_keep_the_named_fields(tmp_path):
    fields = RecordFields(metadata=("lang", "tags", "when"))
    docs = list(iter_inputs([_jsonl(tmp_path / "n.jsonl")], fields))
    assert [d.metadata.get("metadata") for d in docs] == [{"lang": "en", "tags": ["birds", "water"]},
                                                         {"lang": "de", "tags": ["birds"]}, {"lang": "en", "tags": []},
                                                         None]
    table = pa.table({"id": ["a", "b", "c"], "text": ["One text.", "Two texts.", "Three texts."],
                      "lang": ["en", None, "fr"], "when": [dt.date(2020, 1, 2), None, dt.date(2021, 3, 4)],
                      "blob": [b"x", b"y", b"z"]})
    pq.write_table(table, tmp_path / "t.parquet")
    docs = list(iter_inputs([tmp_path / "t.parquet"], fields))
    assert [d.metadata["metadata"] for d in docs] == [{"lang": "en", "when": "2020-01-02"},
                                                     {"lang": None, "when": None},
                                                     {"lang": "fr", "when": "2021-03-04"}]
    # a column JSON cannot hold, asked for by name (or by all): the record is skipped with the reason, not embedded
    # without it
    items = list(iter_inputs([tmp_path / "t.parquet"], RecordFields(metadata=("all",))))
    assert all(isinstance(i, Skipped) and "'blob' is bytes" in i.reason for i in items)
    # a kept field given twice in one JSON object: which value is meant is unknown
    (tmp_path / "dup.jsonl").write_text('{"id": "d", "text": "T.", "lang": "en", "lang": "de"}\n', encoding="utf-8")
    (item,) = iter_inputs([tmp_path / "dup.jsonl"], fields)
    assert isinstance(item, Skipped) and "'lang'" in item.reason and "twice" in item.reason


def test_embed_keeps_them_in_the_chunk_table_and_run(folder):
    rows = pq.read_table(folder / "chunks.parquet").to_pylist()
    by_doc = {r["doc_id"]: r["metadata"] for r in rows}
    assert json.loads(by_doc["heron"]) == {"lang": "en", "tags": ["birds", "water"], "year": 2021}
    assert json.loads(by_doc["bread"]) == {"lang": "en", "tags": [], "year": 2021.0}  # "note" not asked for
    assert by_doc["plain"] is None
    assert json.loads((folder / "run.json").read_text())["settings"]["record_fields"] == \
        {"metadata": ["lang", "tags", "year"]}
    assert verify_output(folder)[0] == []


def test_search_where_filters_on_them(folder):
    def ids(*args):
        res = runner.invoke(app, ["search", str(folder), "a bird waiting for fish", "-k", "4", "--json",
                                  "--device", "cpu", *args])
        assert res.exit_code == 0, res.output
        hits = json.loads(res.stdout)
        return [h["doc_id"] for h in hits], hits

    everything, hits = ids()
    assert set(everything) == {"heron", "reiher", "bread", "plain"}
    assert next(h for h in hits if h["doc_id"] == "heron")["metadata"]["tags"] == ["birds", "water"]
    assert set(ids("--where", "lang=en")[0]) == {"heron", "bread"}
    assert set(ids("--where", "tags=birds")[0]) == {"heron", "reiher"}  # a list field: any of its items
    assert ids("--where", "lang=en", "--where", "tags=birds")[0] == ["heron"]  # all conditions at once
    assert set(ids("--where", "year=2021")[0]) == {"heron", "bread"}  # 2021 and 2021.0, as numbers
    # in the order of the unfiltered ranking
    assert ids("--where", "lang=en")[0] == [d for d in everything if d in {"heron", "bread"}]
    res = runner.invoke(app, ["search", str(folder), "bird", "--where", "lang=fr", "--device", "cpu"])
    assert res.exit_code == 0 and "no chunk" in res.output and "lang, tags, year" in res.output, res.output
    res = runner.invoke(app, ["search", str(folder), "bird", "--where", "lang"])
    assert res.exit_code == 2 and "FIELD=VALUE" in res.output


def test_index_search_where_and_hit_metadata(folder):
    index = Index.load(folder, "cpu")
    hits = index.search("bread in the kitchen", k=4, where={"lang": "en"})
    assert {h.doc_id for h in hits} == {"heron", "bread"}
    assert next(h for h in hits if h.doc_id == "bread").metadata == {"lang": "en", "tags": [], "year": 2021.0}
    assert index.search("bread", where={"lang": "xx"}) == []
    assert index.search(["bread", "heron"], k=2, where=["tags=birds"])[0][0].doc_id in {"heron", "reiher"}


def test_where_names_chunk_table_columns_too(folder, tmp_path):
    """``--where doc_id=...`` (one document), ``url``, ``source``, ``heading_path`` (one of its headings): columns
    of the chunk table, with or without --metadata-fields; ``metadata.NAME`` names a metadata field explicitly; a
    column and a metadata condition hold together."""
    index = Index.load(folder, "cpu")
    assert {h.doc_id for h in index.search("bird", k=4, where={"doc_id": "reiher"})} == {"reiher"}
    assert {h.doc_id for h in index.search("bird", k=4, where={"url": "https://example.org/heron"})} == {"heron"}
    assert {h.doc_id for h in index.search("bird", k=4, where={"source": "notes.jsonl:3"})} == {"bread"}
    assert {h.doc_id for h in index.search("bird", k=4, where={"metadata.lang": "de"})} == {"reiher"}
    assert index.search("bird", k=4, where={"doc_id": "heron", "lang": "de"}) == []  # both must hold
    assert [h.doc_id for h in index.search("bird", k=4, where={"doc_id": "heron", "lang": "en"})] == ["heron"]
    # a field that is neither a column nor anyone's metadata is an error naming both (a trial: a typo gave [])
    with pytest.raises(ValueError, match="--where lnag: no chunk of .* has such a field .*lang, tags, year; columns: doc_id"):
        index.search("bird", where={"lnag": "en"})
    res = runner.invoke(app, ["search", str(folder), "bird", "--where", "lnag=en", "--device", "cpu"])
    assert res.exit_code != 0 and "no chunk of" in res.output and "lang, tags, year" in res.output
    # a JSON string value is the string (the README: "or as JSON"; a trial: 'lang="de"' matched nothing)
    assert {h.doc_id for h in index.search("bird", k=4, where=['lang="de"'])} == {"reiher"}
    md = tmp_path / "md"
    md.mkdir()
    (md / "notes.md").write_text("# Rivers\n\nRivers carry silt to the sea.\n\n# Trains\n\nTrains run on rails.\n",
                                 encoding="utf-8")
    _embed(md, "--out", tmp_path / "o", "--strategy", "heading")  # no --metadata-fields: columns still filter
    hits = Index.load(tmp_path / "o", "cpu").search("what runs on rails?", k=5, where={"heading_path": "Rivers"})
    assert hits and all(h.heading_path[:1] == ("Rivers",) for h in hits)
    res = runner.invoke(app, ["search", str(tmp_path / "o"), "rails", "--where", "doc_id=nothing.md",
                              "--device", "cpu"])
    assert res.exit_code == 0 and "no chunk" in res.output and "--metadata-fields" not in res.output, res.output


def test_append_and_add_keep_them_and_verify_checks_them(folder, tmp_path):
    import shutil

    out = tmp_path / "o"
    shutil.copytree(folder, out)
    shutil.copy(folder.parent / "notes.jsonl", tmp_path)  # the recorded input, beside the copy as beside the folder
    new = _jsonl(tmp_path / "more.jsonl", [{"id": "owl", "text": "An owl hunts at night over the meadow.",
                                            "lang": "en", "tags": ["birds", "night"], "year": 2023}])
    _embed(new, "--out", out, "--append")
    index = Index.load(out, "cpu")
    res = index.add([Document("kite", "A red kite circles over the hills.", {"lang": "en", "tags": ["birds"]})])
    assert res.added == ("kite",)
    index = Index.load(out, "cpu")
    meta = {h.doc_id: h.metadata for h in index.search("a bird of prey", k=10, where={"tags": "birds"})}
    assert meta["owl"] == {"lang": "en", "tags": ["birds", "night"], "year": 2023}
    assert meta["kite"] == {"lang": "en", "tags": ["birds"]}
    assert verify_output(out)[0] == []
    # a kept field that changes in the source with the text unchanged: verify names it
    records = [json.loads(line) for line in (out.parent / "more.jsonl").read_text().splitlines()]
    records[0]["lang"] = "fr"
    _jsonl(out.parent / "more.jsonl", records)
    problems = verify_output(out)[0]
    assert any("owl" in p and "metadata" in p for p in problems), problems


def test_a_field_no_record_has_is_named(tmp_path):
    res = _embed(_jsonl(tmp_path / "n.jsonl"), "--out", tmp_path / "o", "--metadata-fields", "lang,langauge")
    assert "no embedded record has the field(s) langauge" in " ".join(res.output.split()), res.output


def test_chunk_prints_them_as_objects(tmp_path):
    res = runner.invoke(app, ["chunk", str(_jsonl(tmp_path / "n.jsonl")), "--metadata-fields", "all"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert rows[2]["metadata"] == {"lang": "en", "tags": [], "year": 2021.0, "note": {"by": "ann"}}
    assert rows[3]["metadata"] is None


@pytest.mark.parametrize("factory", ["flat", "HNSW8", "IVF4,Flat", "OPQ4,IVF4,PQ4x4"])
def test_filtered_search_equals_the_best_allowed(factory):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = build_index(x, IndexConfig.from_option(factory))
    q = x[:3] + 0.01
    allowed = np.arange(0, 300, 7)
    _, I = search_index(index, q, 5, allowed=allowed, nprobe=4 if "IVF" in factory else None)
    assert np.isin(I, allowed).all() and I.shape == (3, 5)
    if factory in ("flat", "IVF4,Flat"):  # exact: the five best allowed rows
        best = allowed[np.argsort(-(q @ x[allowed].T), axis=1)[:, :5]]
        assert (I == best).all()
    # an allowed set of two: two results, whatever the kind (HNSW's graph may not reach them: the exhaustive pass)
    _, I = search_index(index, q, 5, allowed=np.array([11, 250]), nprobe=4 if "IVF" in factory else None)
    assert I.shape == (3, 2) and set(I.ravel()) <= {11, 250}
    assert search_index(index, q, 5, allowed=np.array([], np.int64))[1].shape == (3, 0)


def test_filtered_search_on_a_binary_index_rescores_the_allowed_rows():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 64)).astype(np.float32)
    index = build_index(x, IndexConfig.from_option("flat", precision="ubinary"))
    allowed = np.arange(3, 200, 5)
    _, I = search_index(index, x[:2], 4, allowed=allowed)
    signs = np.where(x[allowed] > 0, 1.0, -1.0) / math.sqrt(64)
    best = allowed[np.argsort(-(x[:2] @ signs.T), axis=1, kind="stable")[:, :4]]
    assert (I == best).all()


def test_where_parsing_and_rows():
    assert parse_where(["lang=en", "t=a=b", " x = y "]) == {"lang": "en", "t": "a=b", "x": "y"}
    assert parse_where({"year": 2021, "ok": True, "n": None}) == {"year": 2021, "ok": True, "n": None}
    with pytest.raises(ValueError, match="twice"):
        parse_where(["lang=en", "lang=de"])
    table = pa.table({"metadata": ['{"lang":"en","ok":true}', None, '{"lang":"de","ok":false}',
                                   '{"lang":"en","ok":true}']})
    assert allowed_rows(table, {"lang": "en"}).tolist() == [0, 3]
    assert allowed_rows(table, {"ok": "false"}).tolist() == [2]
    assert allowed_rows(pa.table({"metadata": pa.nulls(3, pa.string())}), {"lang": "en"}).tolist() == []


@pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning")
def test_exports_carry_them_filterable(folder, tmp_path):
    """LanceDB: the JSON text column; Qdrant: an object in the payload, filtered on ``metadata.lang``; Chroma: the
    JSON text and each scalar field as ``metadata.FIELD``, filtered with ``where``."""
    import chromadb
    import lancedb
    from chromadb.config import Settings
    from qdrant_client import QdrantClient, models

    from latechunk.export import to_chroma, to_lancedb, to_qdrant

    to_lancedb(folder, tmp_path / "lance")
    table = lancedb.connect(str(tmp_path / "lance")).open_table("latechunk")
    meta = table.schema.metadata  # what a reader holding only the store needs to embed a query as the chunks were
    assert meta[b"latechunk.pooling"] == b"mean" and meta[b"latechunk.truncate_dim"] == b"null"
    assert meta[b"latechunk.query_prompt"] == b""
    rows = table.to_arrow().to_pylist()
    assert {r["doc_id"]: r["metadata"] and json.loads(r["metadata"])["lang"] for r in rows} == \
        {"heron": "en", "reiher": "de", "bread": "en", "plain": None}
    to_qdrant(folder, tmp_path / "qdrant")
    qc = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        points, _ = qc.scroll("latechunk", scroll_filter=models.Filter(must=[models.FieldCondition(
            key="metadata.lang", match=models.MatchValue(value="de"))]), with_payload=True)
        assert [p.payload["doc_id"] for p in points] == ["reiher"]
        assert points[0].payload["metadata"] == {"lang": "de", "tags": ["birds"], "year": 2022}
    finally:
        qc.close()
    # an integer beyond 64 bits (a trial: Chroma's export died on it) stays in the JSON text only
    _embed(_jsonl(tmp_path / "huge.jsonl", [{"id": "h", "text": "A huge count.", "n": 10 ** 30, "m": 7}]),
           "--out", tmp_path / "huge", "--metadata-fields", "n,m")
    client = chromadb.PersistentClient(str(tmp_path / "chroma_huge"), settings=Settings(anonymized_telemetry=False))
    to_chroma(tmp_path / "huge", tmp_path / "chroma_huge", client=client)
    (meta,) = client.get_collection("latechunk").get(include=["metadatas"])["metadatas"]
    assert "metadata.n" not in meta and meta["metadata.m"] == 7 and json.loads(meta["metadata"])["n"] == 10 ** 30
    client = chromadb.PersistentClient(str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    to_chroma(folder, tmp_path / "chroma", client=client)
    got = client.get_collection("latechunk").get(where={"metadata.lang": "en"}, include=["metadatas"])
    assert sorted(m["doc_id"] for m in got["metadatas"]) == ["bread", "heron"]
    assert all(json.loads(m["metadata"])["lang"] == "en" and m["metadata.year"] == 2021 for m in got["metadatas"])


def test_markdown_front_matter_keys_are_a_files_fields(tmp_path):
    """A documentation corpus keeps its tags and dates in front matter: the same option keeps them."""
    (tmp_path / "a.md").write_text("---\ntitle: Herons\ntags: [birds, water]\ndate: 2024-05-01\n---\n# Herons\n\n"
                                   "Herons wait in the reeds.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("---\nblob: !!binary aGVsbG8=\ntags: [x]\n---\nText.\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("No front matter.\n", encoding="utf-8")
    docs = {d.doc_id: d for d in iter_inputs([tmp_path], RecordFields(metadata=("tags", "date")))}
    assert docs["a.md"].metadata["metadata"] == {"tags": ["birds", "water"], "date": "2024-05-01"}
    assert docs["a.md"].metadata["title"] == "Herons"  # the title keeps its own column
    assert "metadata" not in docs["c.md"].metadata
    docs = {d.doc_id: d for d in iter_inputs([tmp_path], RecordFields(metadata=("all",)))}
    # a value JSON cannot hold: the file is still read, without its metadata, and the problem is said
    assert "metadata" not in docs["b.md"].metadata and "'blob' is bytes" in docs["b.md"].metadata["front_matter_problem"]
    assert docs["a.md"].metadata["metadata"] == {"tags": ["birds", "water"], "date": "2024-05-01"}


@pytest.mark.parametrize(("value", "wanted", "meets"), [
    ({"a": 1, "b": "x y"}, {"b": "x y", "a": 1}, True),  # objects, whatever the key order (a trial: never matched)
    ({"a": 1, "b": "x y"}, '{"b": "x y", "a": 1}', True),  # ... also given as JSON text on the command line
    ({"a": 1}, {"a": 2}, False),
    (9007199254740993, "9007199254740993", True),  # integers compare exactly (a trial: ...992 matched too)
    (9007199254740992, "9007199254740993", False),
    (9007199254740992, 9007199254740993, False),
    (10 ** 400, "3", False),  # beyond any float: no OverflowError (a trial's traceback)
    (10 ** 400, str(10 ** 400), True),
    (3, "3.0", True), (3.0, "3", True), (3, 3.0, True),
    (True, "true", True), (True, 1, False), (1, True, False), (None, "null", True), (None, None, True),
    (["birds", "water"], "birds", True), (["birds", "water"], ["birds", "water"], True),
    (["birds"], ["birds"], True), (["birds", "water"], ["birds"], False),
    (["birds"], '["birds"]', True), ("3", 3, False), ("en", "en", True), ("en", " en", False),
])
def test_metadata_matches(value, wanted, meets):
    from latechunk.output import metadata_matches

    assert metadata_matches(value, wanted) is meets
