"""`latechunk verify DIR` (latechunk/verify/): a clean output passes; each fault is caught, one test per fault."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from tests.models import save_tiny_bert

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = {
    "rivers.md": "# Rivers\n\nRivers flow to the sea. They carve valleys over long ages.\n\n"
                 "## Deltas\n\nA delta forms where a river meets still water and drops its silt.\n",
    "trains.md": "Trains run on rails. " * 30,
    "notes/apples.txt": "Apples grow on trees. Orchards need bees in spring. " * 12,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A source folder and its embedded output, side by side (verify finds the sources relative to the output)."""
    root = tmp_path_factory.mktemp("verify")
    src = root / "src"
    for rel, text in TEXTS.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    (src / "docs.jsonl").write_text('{"id": "j1", "text": "A line about lamps and light."}\nnot json\n')
    pq.write_table(pa.table({"id": ["p1", "p2"], "text": ["Parquet rows are documents too.", "Second row here."]}),
                   src / "rows.parquet")
    model = save_tiny_bert(root / "model")
    res = runner.invoke(app, ["embed", str(src), "--out", str(root / "out"), "--model", str(model), "--device", "cpu",
                              "--quiet", "--strategy", "fixed:size=16", "--group-tokens", "64"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return root


@pytest.fixture
def copy(built, tmp_path):
    """A private copy of sources + output for a test to damage."""
    dst = tmp_path / "w"
    shutil.copytree(built, dst, ignore=shutil.ignore_patterns("model"))
    return dst


def _verify(out: Path):
    return runner.invoke(app, ["verify", str(out)], catch_exceptions=False)


def test_clean_output_verifies(copy):
    res = _verify(copy / "out")
    assert res.exit_code == 0, res.output
    assert res.output.startswith("ok:") and "sources hashed" in res.output
    m = json.loads((copy / "out" / "manifest.json").read_text())
    assert len(m["shards"]) >= 2 and m["counts"]["documents_skipped"] == 1


def test_verify_catches_a_truncated_shard(copy):
    npy = copy / "out" / "shards" / "00001.npy"
    data = npy.read_bytes()
    npy.write_bytes(data[: len(data) // 2])
    res = _verify(copy / "out")
    assert res.exit_code == 1
    assert "problem: shards/00001.npy has" in res.output and "truncated" in res.output


def test_verify_catches_parquet_rows_differing_from_ntotal(copy):
    path = copy / "out" / "chunks.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 1), path)
    res = _verify(copy / "out")
    assert res.exit_code == 1
    assert f"index.faiss has {table.num_rows} vectors but chunks.parquet has {table.num_rows - 1} rows" in res.output


def test_verify_catches_a_source_changed_after_embedding(copy):
    src = copy / "src" / "notes" / "apples.txt"
    src.write_text(src.read_text(encoding="utf-8").replace("bees", "wasps"), encoding="utf-8")
    res = _verify(copy / "out")
    assert res.exit_code == 1
    assert "source of 'notes/apples.txt' (notes/apples.txt) changed after embedding" in res.output
    assert res.output.count("problem:") == 1  # nothing else is wrong


def test_verify_catches_a_document_listed_twice(copy):
    path = copy / "out" / "manifest.json"
    m = json.loads(path.read_text())
    m["documents"].append(dict(m["documents"][0]))
    path.write_text(json.dumps(m))
    res = _verify(copy / "out")
    assert res.exit_code == 1
    assert f"manifest lists document {m['documents'][0]['doc_id']!r} twice" in res.output


def test_verify_reports_every_problem_not_only_the_first(copy):
    out = copy / "out"
    (out / "shards" / "00000.parquet").write_bytes(b"PAR1 broken")
    (copy / "src" / "trains.md").unlink()
    (copy / "src" / "new.md").write_text("Added after the run.", encoding="utf-8")
    res = _verify(out)
    assert res.exit_code == 1
    assert "shards/00000.parquet has" in res.output
    assert "source of 'trains.md' (trains.md) is gone" in res.output
    assert "source document 'new.md'" in res.output and "not in the manifest" in res.output


def test_verify_without_an_output_fails_clearly(tmp_path):
    res = _verify(tmp_path)
    assert res.exit_code == 1 and "manifest.json is missing" in res.output


def test_verify_catches_index_vectors_that_differ_from_the_shards(copy):
    """The index holds the shard vectors exactly as written (normalised once, in the pipeline)."""
    import faiss

    path = copy / "out" / "index.faiss"
    index = faiss.read_index(str(path))
    x = index.reconstruct_n(0, index.ntotal)
    x[2] *= 0.5
    damaged = faiss.IndexFlatIP(index.d)
    damaged.add(x)
    faiss.write_index(damaged, str(path))
    res = _verify(copy / "out")
    assert res.exit_code == 1
    assert "index.faiss vectors [0, " in res.output and "differ from shards/00000.npy" in res.output
    assert res.output.count("problem:") == 1


def test_verify_is_not_upset_by_an_index_or_docx_added_to_the_corpus_but_sees_a_new_document(copy):
    """Issue 10: entries never opened (unsupported type, output folder) are now listed as skipped; one that
    appears after the run changes nothing embedded, so verify does not count it. A new document still counts."""
    src = copy / "src"
    (src / "report.docx").write_bytes(b"PK\x03\x04 zip")
    shutil.copytree(copy / "out", src / "idx2")  # another index written into the corpus folder
    res = _verify(copy / "out")
    assert res.exit_code == 0, res.output
    (src / "new.md").write_text("A document added after the run.", encoding="utf-8")
    res = _verify(copy / "out")
    assert res.exit_code == 1 and "'new.md'" in res.output


def test_verify_on_an_output_with_0_vectors_is_ok(tmp_path):
    """Issue 10: 0 rows, 0 vectors (every document skipped) verify like any other output."""
    from latechunk.config import EmbedConfig, PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.ingest import ingest

    src = tmp_path / "src"
    src.mkdir()
    (src / "blank.md").write_text("   \n", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model")
    config = EmbedConfig(inputs=(src,), out=tmp_path / "out", pipeline=PipelineConfig(("fixed:size=16",)))
    manifest = ingest(config, Encoder(str(model), device="cpu"))
    assert manifest["counts"]["chunks"] == 0 and manifest["counts"]["documents_skipped"] == 1
    res = _verify(tmp_path / "out")
    assert res.exit_code == 0 and res.output.startswith("ok: 0 vectors, 0 rows"), res.output


def test_an_empty_record_before_one_with_text_under_the_same_id_is_no_problem(tmp_path):
    """Scale trial: `{"id": "a", "text": ""}` then `{"id": "a", "text": "..."}`: embed skips the first (empty)
    and embeds the second; verify of the untouched folder reported "'a' was embedded but its source is now
    skipped". A source that *became* empty is still a problem."""
    src = tmp_path / "c.jsonl"
    src.write_text('{"id": "a", "text": ""}\n{"id": "a", "text": "Herons wait by the reeds."}\n'
                   '{"id": "b", "text": "Otters float on their backs."}\n', encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "-q", "--strategy", "fixed"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 0, res.output
    src.write_text('{"id": "a", "text": ""}\n{"id": "a", "text": "  "}\n'
                   '{"id": "b", "text": "Otters float on their backs."}\n', encoding="utf-8")
    res = runner.invoke(app, ["verify", str(out)])
    assert res.exit_code == 1 and "'a' was embedded but its source is now skipped" in res.output, res.output


def _append(src: Path, out: Path, model: Path):
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu",
                              "--quiet", "--append"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def _fresh(tmp_path: Path, files: dict, out: Path | None = None):
    """A folder ``tmp_path/src`` holding ``files`` (relative path -> text or bytes), embedded with a tiny model
    into ``out`` (default ``tmp_path/out``); returns ``(src, out, model)``."""
    src = tmp_path / "src"
    for rel, body in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            (src / rel).write_bytes(body)
        else:
            (src / rel).write_text(body, encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model")
    out = out or tmp_path / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    return src, out, model


def test_appending_the_same_folder_after_it_grew_verifies_and_a_later_change_is_still_caught(copy, built):
    """Trial: `embed DIR --out OUT --append` after DIR gained a file succeeded, then `verify OUT` failed "the
    inputs now hold 18 items but the manifest accounts for 12": the manifest lists DIR twice (the first run read
    what it held then, the append what it holds now) and verify read it twice. Each root is now read once and a
    run whose roots a later run lists again no longer counts; a document removed afterwards is still reported."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "new.md").write_text("A document added after the first run, then appended.", encoding="utf-8")
    _append(src, out, model)
    (src / "newer.md").write_text("One more document, appended from the same folder again.", encoding="utf-8")
    _append(src, out, model)
    m = json.loads((out / "manifest.json").read_text())
    assert m["inputs_from_out"] == ["../src"] * 3 and m["counts"]["documents_embedded"] == 8
    res = _verify(out)
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output
    (src / "rows.parquet").unlink()  # two embedded documents gone
    res = _verify(out)
    assert res.exit_code == 1 and "source of 'p1'" in res.output and "is gone" in res.output, res.output
    assert "items but the manifest accounts for" in res.output, res.output


def test_a_run_partly_read_again_by_an_append_checks_every_item_but_not_the_count(copy, built, tmp_path):
    """A first run of two inputs, then an append of one of them: how many of the first run's items came from
    which input is not recorded, so the count is not compared; every item still is (a new file is reported)."""
    from latechunk.verify import _runs_of_roots

    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text("Owls hunt at night over the fields.", encoding="utf-8")
    src, model = copy / "src", built / "model"
    out = tmp_path / "two"
    res = runner.invoke(app, ["embed", str(src), str(other), "--out", str(out), "--model", str(model), "--device",
                              "cpu", "--quiet"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (other / "o2.md").write_text("Voles hide in the long grass.", encoding="utf-8")
    _append(other, out, model)
    m = json.loads((out / "manifest.json").read_text())
    roots, expected = _runs_of_roots(m, [Path(p) for p in m["inputs"]])
    assert roots == [src, other] and expected is None
    assert _verify(out).exit_code == 0
    (src / "late.md").write_text("Added after every run and never embedded.", encoding="utf-8")
    res = _verify(out)
    assert res.exit_code == 1 and "'late.md'" in res.output and "not in the manifest" in res.output, res.output


def test_rows_of_every_document_are_checked_when_an_appended_one_is_read_first(copy, built):
    """Review: with the root read once, a file appended later but sorting first came before the first run's
    documents; the reader then stood past their rows and skipped their slice and citation checks (verify said
    ok over a damaged row). Rows are now taken by each document's first row."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "a_first.md").write_text("An appended document whose name sorts before every other.", encoding="utf-8")
    _append(src, out, model)
    assert _verify(out).exit_code == 0
    path = out / "chunks.parquet"
    table = pq.read_table(path)
    docs = table.column("doc_id").to_pylist()
    k = docs.index("trains.md")  # a first-run document, read after a_first.md
    texts = table.column("text").to_pylist()
    texts[k] = "X" + texts[k][1:]
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts)), path)
    res = _verify(out)
    assert res.exit_code == 1 and "of 'trains.md' is not the exact slice" in res.output, res.output


def test_each_repeated_input_may_be_given_once_with_inputs(copy, built, tmp_path):
    """Review: a folder appended again is listed twice; `--inputs` may now give each input once (in order of
    first appearance) as well as once per listing, and one folder spelt two ways is read once."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "new.md").write_text("A document added after the first run, then appended.", encoding="utf-8")
    _append(src, out, model)
    moved = tmp_path / "moved"
    shutil.move(str(src), moved)
    assert _verify(out).exit_code == 1  # the recorded place is gone
    for given in ([moved], [moved, moved], [moved, tmp_path / "." / "moved"]):
        res = runner.invoke(app, ["verify", str(out), *[a for p in given for a in ("--inputs", str(p))]])
        assert res.exit_code == 0 and res.output.startswith("ok:"), (given, res.output)


def test_a_file_of_an_embedded_folder_appended_on_its_own_verifies(copy, built):
    """Trial: `embed M`, add M/m3.md, `embed M/m3.md --append`: verify failed "the inputs now hold 4 items but the
    manifest accounts for 3" (the folder now holds the file, and the file is its own input too). A root inside
    another is not counted; every document still is checked, and a file added later still is reported."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "m3.md").write_text("A new file appended on its own, from inside the embedded folder.", encoding="utf-8")
    _append(src / "m3.md", out, model)
    res = _verify(out)
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output
    (src / "m4.md").write_text("Added and never embedded.", encoding="utf-8")
    res = _verify(out)
    assert res.exit_code == 1 and "'m4.md'" in res.output, res.output


def test_inputs_in_a_number_that_fits_no_form_is_one_clear_problem(copy, built, tmp_path):
    """Trial: `--inputs` in the wrong number gave "the inputs now hold 6 items but the manifest accounts for 20";
    it now says how many inputs the manifest lists and the two forms it takes."""
    src, out, model = copy / "src", copy / "out", built / "model"
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text("Owls hunt at night over the fields.", encoding="utf-8")
    _append(other, out, model)
    (src / "new.md").write_text("A document added after the first run, then appended.", encoding="utf-8")
    _append(src, out, model)  # listed: src, other, src
    res = runner.invoke(app, ["verify", str(out), "--inputs", str(src)])
    assert res.exit_code == 1, res.output
    assert "--inputs gave 1 path(s) but the manifest lists 3 input(s) outside the folder" in res.output
    assert "one per distinct input (2)" in res.output
    for given in ([src, other], [src, other, src]):
        res = runner.invoke(app, ["verify", str(out), *[a for p in given for a in ("--inputs", str(p))]])
        assert res.exit_code == 0, (given, res.output)


def test_inputs_need_not_name_the_documents_index_add_wrote_into_the_folder(tmp_path):
    """Trial: after Index.add, `verify --inputs MOVED` reported "source of 'extra' (00001.jsonl:1) is gone": the
    folder's own appended/00001.jsonl had to be given too. Inputs inside the output folder move with it."""
    from latechunk.api import Index
    from latechunk.types import Document

    src, out, _ = _fresh(tmp_path, {"a.md": "Rivers carve valleys over long ages."})
    Index.load(out, device="cpu").add([Document("extra", "Tides rise and fall twice a day.")])
    moved = tmp_path / "moved"
    shutil.move(str(src), moved)
    res = runner.invoke(app, ["verify", str(out), "--inputs", str(moved)])
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output


def test_a_skipped_empty_file_that_later_gains_text_is_reported(tmp_path):
    """Trial: a file skipped as empty, then given text: `--append` refuses it (its id is listed as skipped) and
    verify said ok, though its text is in no vector. verify now says so."""
    src, out, _ = _fresh(tmp_path, {"a.md": "Rivers carve valleys over long ages.", "h2.md": "  \n"})
    assert _verify(out).exit_code == 0
    (src / "h2.md").write_text("Now it has text.", encoding="utf-8")
    res = _verify(out)
    assert res.exit_code == 1 and "'h2.md' was skipped at embedding (empty" in res.output, res.output
    assert "its text is in no vector" in res.output


def test_reader_skips_that_gain_text_are_reported_and_pipeline_skips_are_not(tmp_path):
    """Review: a file of nothing but a zero-width space is read as a document and skipped by the pipeline ("empty or
    whitespace-only (no tokens)"): unchanged, it is no problem; a binary file given text afterwards is one."""
    src, out, _ = _fresh(tmp_path, {"a.md": "Rivers carve valleys over long ages.", "zw.md": "\u200b",
                                    "bin.md": b"\x00\x01\x02binary"})
    res = _verify(out)
    assert res.exit_code == 0, res.output
    (src / "bin.md").write_text("Now a text file.", encoding="utf-8")
    res = _verify(out)
    assert res.exit_code == 1 and "'bin.md' was skipped at embedding (binary" in res.output, res.output
    assert "zw.md" not in res.output


def test_an_embedded_file_emptied_before_an_append_is_reported_as_skipped_not_gone(copy, built):
    """Second trial: a.md embedded, then emptied, then the folder appended (the append records a.md as skipped,
    empty): verify said "source of 'rivers.md' is gone" though the file is there; it says it is now skipped."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "rivers.md").write_text("", encoding="utf-8")
    (src / "f.md").write_text("Foxtrot is a dance.", encoding="utf-8")
    _append(src, out, model)
    res = _verify(out)
    assert res.exit_code == 1, res.output
    assert "'rivers.md' was embedded but its source is now skipped: empty" in res.output and "is gone" not in res.output


def test_a_folder_moved_then_appended_from_its_new_place_verifies_with_its_place_given_twice(tmp_path):
    """Second trial: embed D, move it to D2, append D2: the manifest lists D and D2; `verify --inputs D2 --inputs
    D2` said "the inputs now hold 8 items but the manifest accounts for 7". The places given say which listings
    are one input now: read once, the earlier run superseded."""
    d = tmp_path / "dM"
    d.mkdir()
    for name in ("a.md", "b.md"):
        (d / name).write_text(f"Text of {name} about rivers and the sea.", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model")
    out = tmp_path / "oM"
    res = runner.invoke(app, ["embed", str(d), "--out", str(out), "--model", str(model), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    moved = tmp_path / "dM2"
    shutil.move(str(d), moved)
    (moved / "n.md").write_text("November is a month.", encoding="utf-8")
    _append(moved, out, model)
    res = runner.invoke(app, ["verify", str(out), "--inputs", str(moved), "--inputs", str(moved)])
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output
    res = runner.invoke(app, ["verify", str(out), "--inputs", str(moved), "--inputs", str(moved), "--inputs", "x"])
    assert res.exit_code == 1 and f"({d}, {moved}, as given when embedded)" in res.output, res.output


def test_append_refuses_an_input_that_would_give_indexed_documents_new_ids(copy, built, tmp_path):
    """Second trial: `embed D`, then `--append D/sub` (or D/sub/h.md) embedded D's sub/c.md again as c.md (the
    index held the text twice; verify then failed). Such an append is refused, as a first run refuses nested
    inputs; a file directly inside the listed folder (same id) is still appended."""
    src, out, model = copy / "src", copy / "out", built / "model"
    (src / "notes" / "h.md").write_text("Hotel is a word.", encoding="utf-8")
    for bad in (src / "notes", src / "notes" / "h.md", copy):
        res = runner.invoke(app, ["embed", str(bad), "--out", str(out), "--model", str(model), "--device", "cpu",
                                  "--quiet", "--append"])
        assert res.exit_code != 0 and "already lists" in res.output and "other ids" in res.output, (bad, res.output)
    (src / "top.md").write_text("A top-level file appended on its own keeps its id.", encoding="utf-8")
    _append(src / "top.md", out, model)
    _append(src, out, model)  # the folder itself: notes/h.md is new, top.md already in the index
    assert _verify(out).exit_code == 0


def test_index_add_works_for_a_folder_written_inside_its_input_folder(tmp_path):
    """The append check above leaves alone the folder's own appended/*.jsonl, even where the output folder lies
    inside the input folder it lists (allowed: an index is never read back as documents)."""
    from latechunk.api import Index
    from latechunk.types import Document

    _, out, _ = _fresh(tmp_path, {"a.md": "Rivers carve valleys over long ages."}, out=tmp_path / "src" / "idx")
    Index.load(out, device="cpu").add([Document("extra", "Tides rise and fall twice a day.")])
    res = _verify(out)
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output


def test_the_append_check_allows_tables_hidden_files_and_an_index_inside_its_input(tmp_path):
    """Review: a JSONL file deeper in a listed folder keeps its records' ids (it was refused); a hidden file in a
    subfolder is walked by the folder's reader (it was let through); after Index.add into a folder written inside
    its input folder, appending that input folder again was refused (its appended/*.jsonl looked nested)."""
    from latechunk.api import Index
    from latechunk.types import Document

    src = tmp_path / "a"
    (src / "sub").mkdir(parents=True)
    (src / "x.md").write_text("Rivers carve valleys over long ages.", encoding="utf-8")
    (src / "sub" / "d.jsonl").write_text('{"id": "r1", "text": "Record one about tides."}\n', encoding="utf-8")
    (src / "sub" / ".h.md").write_text("A hidden file the folder's reader reads.", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "model")
    out = src / "idx"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    with (src / "sub" / "d.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "r2", "text": "Record two about waves."}\n')
    _append(src / "sub" / "d.jsonl", out, model)
    res = runner.invoke(app, ["embed", str(src / "sub" / ".h.md"), "--out", str(out), "--model", str(model),
                              "--device", "cpu", "--quiet", "--append"])
    assert res.exit_code != 0 and "other ids" in res.output, res.output
    Index.load(out, device="cpu").add([Document("extra", "Tides rise and fall twice a day.")])
    (src / "z.md").write_text("A new file in the input folder.", encoding="utf-8")
    _append(src, out, model)
    res = _verify(out)
    assert res.exit_code == 0 and res.output.startswith("ok:"), res.output


def _three_documents_embedded(tmp_path: Path) -> tuple[Path, Path]:
    """``src/`` with a.md, b.md, c.md, embedded into ``out/`` (the default model): ``(src, out)``."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a", "b", "c"):
        (src / f"{name}.md").write_text(f"Document {name} is about rivers and lakes.", encoding="utf-8")
    out = tmp_path / "out"
    assert runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet"]).exit_code == 0
    return src, out


def test_re_appending_a_folder_counts_the_unchanged_documents_instead_of_listing_them(tmp_path):
    """Every `embed DIR --append` listed each unchanged document of DIR again in the manifest's skipped list ("already
    in the index"), so a folder re-appended nightly grew its manifest by the whole corpus each night (read by every
    search). They are counted (counts.already_indexed); the shard records keep them, and verify checks both."""
    src, out = _three_documents_embedded(tmp_path)
    for i, name in enumerate(("d", "e")):
        (src / f"{name}.md").write_text(f"Document {name} is about seas.", encoding="utf-8")
        res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--append", "--quiet", "--device", "cpu"])
        assert res.exit_code == 0 and f"skipped {3 + i} document(s) already in the index" in res.output, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"] == [] and m["counts"]["already_indexed"] == 3 + 4
    assert m["counts"]["documents_in"] == 3 + 4 + 5 and m["counts"]["documents_embedded"] == 5
    assert _verify(out).exit_code == 0
    m["counts"]["already_indexed"] = 6  # a count that does not match the shard records is found
    (out / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    assert "already_indexed" in _verify(out).output


def test_a_changed_or_emptied_file_re_appended_is_listed_once(tmp_path):
    """Fifth trial: re-appending a folder whose changed (and emptied) files are skipped each time added them to the
    manifest's skipped list again on every append (d2.md and d3.md three times each). The first skip of an id of
    one kind is listed, its repeats counted (counts.skips_repeated); verify checks the shard records give the same."""
    src, out = _three_documents_embedded(tmp_path)
    (src / "b.md").write_text("Document b now speaks of glaciers.", encoding="utf-8")
    (src / "c.md").write_text("  \n", encoding="utf-8")
    for name in ("d", "e", "f"):
        (src / f"{name}.md").write_text(f"Document {name} is about seas.", encoding="utf-8")
        res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--append", "--quiet", "--device", "cpu"])
        assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert [s["doc_id"] for s in m["skipped"]] == ["b.md", "c.md"]
    assert m["counts"]["skips_repeated"] == 4 and m["counts"]["already_indexed"] == 1 + 2 + 3
    res = runner.invoke(app, ["verify", str(out), "--no-sources"])
    assert res.exit_code == 0, res.output


def test_append_warns_about_emptied_and_earlier_skipped_documents(tmp_path):
    """Fifth trial: an append named changed files in bold but an emptied one (still searchable with its old text)
    was one ordinary skipped line, and a file skipped when first met (empty then) read "already listed as skipped"
    with nothing to say what to do. Both get a bold warning saying how to include or drop them."""
    src = tmp_path / "ph"
    src.mkdir()
    (src / "a.md").write_text("# Real one\n\nRivers flow.", encoding="utf-8")
    (src / "b.md").write_text("# Other\n\nLakes rest.", encoding="utf-8")
    (src / "todo.md").write_text("", encoding="utf-8")
    out = tmp_path / "o"
    assert runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet"]).exit_code == 0
    (src / "todo.md").write_text("# Todo\n\nNow it has content.", encoding="utf-8")
    (src / "b.md").write_text("", encoding="utf-8")
    (src / "c.md").write_text("Seas are salty.", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--append", "--quiet", "--device", "cpu"])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "warning: 1 indexed document(s) now read as nothing and were left as they were: b.md" in text
    assert "warning: 1 document(s) were skipped when first met (listed in the manifest) and were not added now: " \
        "todo.md" in text
    assert "skipped todo.md: duplicate doc_id: listed as skipped in the index when first met (empty" in text
