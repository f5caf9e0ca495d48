"""`--id-field`, `--text-field`, `--title-field` (latechunk.config.RecordFields): a corpus whose records keep their
text in `body` or `contents` is read as is, in JSONL, parquet and Arrow, by embed, chunk, --append, Index.add,
--resume and verify alike (a setting of the run, in run.json only where it differs from the defaults)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import latechunk
from latechunk.cli import app
from latechunk.config import RecordFields
from latechunk.io import count_input_bytes, count_inputs, iter_inputs
from latechunk.types import Document, Skipped

runner = CliRunner()
FIELDS = RecordFields(id="key", text="body", title="name")
ARGS = ["--device", "cpu", "--quiet", "--strategy", "fixed:size=32"]


def _records(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rows = [{"key": "r1", "body": "Rivers flow to the sea and carry silt.", "name": "Rivers"},
            {"key": "r2", "body": "Lakes are still and hold fresh water.", "lang": "en"}]
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    table = pa.table({"key": ["p1"], "body": ["Glaciers carve valleys."], "name": ["Ice"]})
    pq.write_table(table, src / "b.parquet")
    wells = pa.table({"key": ["w1"], "body": ["Wells reach ground water."], "name": pa.array([None], pa.string())})
    with pa.ipc.new_file(str(src / "c.arrow"), wells.schema) as w:
        w.write_table(wells)
    return src


def test_record_fields_validate_and_record_only_what_differs():
    assert RecordFields().to_dict() == {} and RecordFields().ids == ("id", "_id", "doc_id")
    assert FIELDS.to_dict() == {"id": "key", "text": "body", "title": "name"} and FIELDS.ids == ("key",)
    assert RecordFields.from_dict(FIELDS.to_dict()) == FIELDS and RecordFields.from_dict({}) == RecordFields()
    with pytest.raises(ValueError, match="--text-field must be a field name"):
        RecordFields(text=" ")
    with pytest.raises(ValueError, match="must name different fields"):
        RecordFields(id="body", text="body")


def test_every_table_kind_reads_the_named_fields(tmp_path):
    src = _records(tmp_path)
    default = list(iter_inputs([src]))
    assert not [d for d in default if isinstance(d, Document)]  # nothing reads without the names
    assert "no 'id' (or '_id', 'doc_id') field (its fields: 'key', 'body', 'name'; --id-field" in default[0].reason
    assert "--id-field and --text-field name other columns" in default[-1].reason  # a table: its columns
    docs = list(iter_inputs([src], FIELDS))
    assert all(isinstance(d, Document) for d in docs), docs
    assert [(d.doc_id, d.text, d.metadata.get("title")) for d in docs] == [
        ("r1", "Rivers\n\nRivers flow to the sea and carry silt.", "Rivers"),
        ("r2", "Lakes are still and hold fresh water.", None),
        ("p1", "Ice\n\nGlaciers carve valleys.", "Ice"),
        ("w1", "Wells reach ground water.", None)]
    assert count_inputs([src], FIELDS) == 4
    for table in ("b.parquet", "c.arrow"):  # the progress bar's bytes come from the named text column
        assert count_input_bytes([src / table], FIELDS) > 0 == count_input_bytes([src / table])
    only_text = list(iter_inputs([src / "a.jsonl"], RecordFields(id="key", text="name")))
    assert isinstance(only_text[1], Skipped) and only_text[1].reason.startswith("no 'name' field (its fields:")
    assert "--text-field body" in only_text[1].reason or "--text-field lang" in only_text[1].reason


def test_embed_append_add_verify_and_chunk_read_the_folders_fields(tmp_path):
    src = _records(tmp_path)
    out = tmp_path / "out"
    names = ["--id-field", "key", "--text-field", "body", "--title-field", "name"]
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), *ARGS, *names])
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["record_fields"] == FIELDS.to_dict()
    assert [d["doc_id"] for d in json.loads((out / "manifest.json").read_text())["documents"]] == \
        ["r1", "r2", "p1", "w1"]
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"key": "n1", "body": "Seas are salty."}) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "--quiet", "--device", "cpu"])
    assert res.exit_code == 0 and "appended 1/1" in res.output, res.output  # the folder's names, not given again
    res = runner.invoke(app, ["embed", str(new), "--out", str(out), "--append", "--quiet", "--text-field", "text"])
    assert res.exit_code == 2 and "record_fields" in res.output, res.output  # another name: a changed setting
    added = latechunk.Index.load(out, device="cpu").add([("k9", "Ponds freeze in winter.")])
    assert added.added == ("k9",)
    (jsonl,) = sorted((out / "appended").glob("*.jsonl"))
    assert json.loads(jsonl.read_text()) == {"key": "k9", "body": "Ponds freeze in winter."}
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0
    res = runner.invoke(app, ["chunk", str(src / "a.jsonl"), *names])
    assert res.exit_code == 0 and [json.loads(x)["doc_id"] for x in res.stdout.splitlines()] == ["r1", "r2"]
