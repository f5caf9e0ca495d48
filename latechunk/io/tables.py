"""What parquet and Arrow tables share: the columns to read, a record batch as Python values (string values that
are not UTF-8 kept apart), and its rows as records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from latechunk.io.encoding import _REPLACE_ADVICE, invalid_bytes, offsets_text
from latechunk.io.records import DEFAULT_FIELDS, _degraded, _record
from latechunk.types import Document, RecordFields, Skipped


def _table_columns(names: Sequence[str], fields: RecordFields = DEFAULT_FIELDS) -> list[str] | None:
    """The columns to read (id, text, and title, ``url`` and the kept metadata fields when present) of a table
    with these column names; None when it has no id (``id``/``_id``/``doc_id``, or ``fields.id``) or no text
    (``fields.text``) column."""
    id_col = next((c for c in fields.ids if c in names), None)
    if id_col is None or fields.text not in names:
        return None
    return [id_col, fields.text] + [c for c in (fields.title, "url") if c in names] + \
        fields.metadata_names(c for c in names if c != id_col)


def _batch_pydict(batch) -> tuple[dict, dict[int, list[tuple[str, bytes]]]]:
    """``(columns, bad)``: a record batch as ``{column: values}``, and per row (0-based in the batch) the string
    values that are not UTF-8, ``[(column, bytes)]`` (pyarrow's ``to_pydict`` fails on the whole batch for one: a
    trial lost every later row of a parquet file). Such a value is in ``columns`` decoded with U+FFFD."""
    try:
        return batch.to_pydict(), {}
    except UnicodeDecodeError:
        pass
    import pyarrow as pa

    data: dict = {}
    bad: dict[int, list[tuple[str, bytes]]] = {}
    for name, col in zip(batch.schema.names, batch.columns):
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            raw = col.view(pa.binary() if pa.types.is_string(col.type) else pa.large_binary()).to_pylist()
            values = []
            for i, b in enumerate(raw):
                try:
                    values.append(None if b is None else b.decode("utf-8"))
                except UnicodeDecodeError:
                    values.append(b.decode("utf-8", "replace"))
                    bad.setdefault(i, []).append((name, b))
            data[name] = values
        else:
            data[name] = col.to_pylist()
    return data, bad


def _table_records(data: dict, bad: dict[int, list[tuple[str, bytes]]], id_col: str, fields: RecordFields,
                   root_name: str, row: int) -> Iterator[Document | Skipped]:
    """The rows of one batch of table columns (``data``: ``{column: values}``) as :func:`_record` items, sources
    ``root_name:ROW`` from ``row`` on. A row with values that are not UTF-8 (``bad``, :func:`_batch_pydict`) is
    Skipped naming the column and the bytes' offsets in its value, or with ``fields.encoding_errors`` ``"replace"``
    read with U+FFFD and marked degraded; the other rows are read either way."""
    n = len(data[fields.text])
    nothing = [None] * n
    meta_cols = fields.metadata_names(c for c in data if c != id_col)
    for i, (doc_id, text, title, url) in enumerate(zip(data[id_col], data[fields.text],
                                                       data.get(fields.title) or nothing, data.get("url") or nothing)):
        where = f"{root_name}:{row + i}"
        words = "; ".join(f"column {c!r}: {offsets_text(invalid_bytes(b)[0])}" for c, b in bad.get(i, ()))
        if words and fields.encoding_errors != "replace":
            yield Skipped(where, f"invalid UTF-8 in {words}; {_REPLACE_ADVICE}", where)
            continue
        meta = {c: data[c][i] for c in meta_cols}
        yield _degraded(_record(doc_id, text, title, where, url=url, id_field=id_col, fields=fields, metadata=meta),
                        f"{words} read as U+FFFD" if words else "")


def _columns_reason(what: str, names: Sequence[str], fields: RecordFields = DEFAULT_FIELDS) -> str:
    ids = "an 'id' (or '_id', 'doc_id')" if fields.id is None else f"an {fields.id!r}"
    return (f"{what} needs {ids} and a {fields.text!r} column, has {sorted(names)} (--id-field and --text-field "
            "name other columns)")
