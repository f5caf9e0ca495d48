"""``--where`` and ``Index.search(where=...)``: conditions parsed, values matched, the rows that meet them.

Tests: ``tests/output/test_metadata_fields.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping

import numpy as np


def parse_where(conditions: Iterable[str] | Mapping | None) -> dict:
    """Search conditions (``search --where lang=en``, ``--where doc_id=finance.md``, ``Index.search(where={"lang":
    "en"})``) as ``{field: wanted}`` (:func:`allowed_rows` says which fields are columns, which metadata).

    Args:
        conditions: ``"FIELD=VALUE"`` strings (both sides stripped; VALUE is text, compared as
            :func:`metadata_matches` says), or a mapping ``{field: value}`` whose values are JSON values (a str,
            number, bool, None, list or object), or None.

    Returns:
        ``{field: wanted}``, all conditions to hold at once (AND).

    Raises:
        ValueError: for a condition without ``=`` or with an empty field name, or a field given twice.
    """
    out: dict = {}
    if conditions is None:
        return out
    if isinstance(conditions, str):
        conditions = [conditions]
    if isinstance(conditions, Mapping):
        pairs = list(conditions.items())
    else:
        pairs = []
        for c in conditions:
            name, eq, value = str(c).partition("=")
            if not eq or not name.strip():
                raise ValueError(f"--where {c!r}: give FIELD=VALUE (e.g. lang=en), a field of the records' "
                                 "metadata (embed --metadata-fields)")
            pairs.append((name.strip(), value.strip()))
    for name, value in pairs:
        if name in out:
            raise ValueError(f"--where gives the field {name!r} twice (conditions all hold at once: one value each)")
        out[name] = value
    return out


def _number(text: str) -> int | float | None:
    """The number a ``--where`` text names (an int exactly, else a float), or None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        f = float(text)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _same_number(a, b) -> bool:
    """Two JSON numbers equal as numbers: integers exactly (9007199254740993 is not ...992), else as floats."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return float(a) == float(b)
    except OverflowError:  # an integer beyond any float: equal to no float
        return False


def metadata_matches(value, wanted) -> bool:
    """Whether one metadata value meets a condition.

    ``wanted`` text (``--where FIELD=VALUE``) meets a string equal to it, a number equal to the number it names
    (``3`` meets 3 and 3.0; integers compare exactly), ``true``/``false``/``null`` the JSON values, and an object
    or list equal to the JSON it parses to; ``wanted`` given as a JSON value (``Index.search(where=...)``) meets
    an equal value (objects whatever their key order; a bool is never a number). Either way a list field also
    meets a condition that one of its items meets.

    Args:
        value: The field's value in a chunk's metadata (JSON: str, int, float, bool, None, list, dict).
        wanted: The condition's value: text, or a JSON value.

    Returns:
        True when the value meets the condition.
    """
    if isinstance(value, list) and not isinstance(wanted, list) and any(metadata_matches(v, wanted) for v in value):
        return True
    if isinstance(value, str) and isinstance(wanted, str) and len(wanted) > 1 and wanted[0] == wanted[-1] == '"':
        try:  # a JSON string (--where 'lang="de"'), as the README's "or as JSON" says (a trial)
            return value == wanted or value == json.loads(wanted)
        except ValueError:
            pass
    if isinstance(wanted, str) and not isinstance(value, str):
        if isinstance(value, bool) or value is None:
            return json.dumps(value) == wanted
        if isinstance(value, (int, float)):
            n = _number(wanted)
            return n is not None and _same_number(value, n)
        try:
            wanted = json.loads(wanted)  # an object or a list, as JSON text
        except ValueError:
            return False
    if isinstance(value, bool) or isinstance(wanted, bool) or value is None or wanted is None:
        return value is wanted or (value == wanted and type(value) is type(wanted))
    if isinstance(value, (int, float)) and isinstance(wanted, (int, float)):
        return _same_number(value, wanted)
    return value == wanted


def metadata_fields(table) -> list[str]:
    """The metadata field names a chunk table's rows hold (the union over its documents), sorted; ``[]`` when
    it keeps none."""
    import pyarrow.compute as pc

    if "metadata" not in table.column_names or table.column("metadata").null_count == table.num_rows:
        return []
    texts = pc.unique(table.column("metadata").drop_null()).to_pylist()
    return sorted({k for t in texts for k in json.loads(t)})


#: chunk-table columns a ``--where`` condition names directly (``--where doc_id=finance.md``); any other field,
#: or one written ``metadata.NAME``, is a field of the records' metadata (``embed --metadata-fields``)
WHERE_COLUMNS = ("doc_id", "source", "title", "url", "section", "header", "heading_path")


def _dictionary_mask(column, meets) -> np.ndarray:
    """(n,) bool: rows whose value ``meets(value)`` (called once per distinct value; a null never meets)."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    ok = np.array([meets(v) for v in encoded.dictionary.to_pylist()], dtype=bool)
    idx = encoded.indices.to_numpy(zero_copy_only=False)
    valid = ~np.asarray(encoded.indices.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    hit = np.zeros(len(idx), dtype=bool)
    hit[valid] = ok[idx[valid].astype(np.int64)] if len(ok) else False
    return hit


def allowed_rows(table, where: Mapping) -> np.ndarray:
    """The rows (vector ids) of a chunk table that meet every condition of ``where``.

    A condition on one of :data:`WHERE_COLUMNS` is met by a row whose column value equals it (as
    :func:`metadata_matches` says; ``heading_path``: one of its headings); any other field, or one written
    ``metadata.NAME``, by a row whose ``metadata`` has the field with a value that :func:`metadata_matches` it.
    Each distinct value is compared once (chunks of one document share their metadata text and citation fields),
    so the cost is one pass over each named column plus one comparison per document.

    Args:
        table: The chunk table (``pyarrow.Table``; a folder written before the ``metadata`` column, or without
            ``--metadata-fields``, has no metadata set: no row meets a metadata condition).
        where: ``{field: wanted}`` (:func:`parse_where`).

    Returns:
        (m,) int64 row numbers, ascending.
    """
    hit = np.ones(table.num_rows, dtype=bool)
    meta_where = {}
    for field, wanted in where.items():
        if field in WHERE_COLUMNS:
            if field not in table.column_names:  # a folder written before the column
                return np.zeros(0, np.int64)
            if field == "heading_path":
                hit &= np.array([any(metadata_matches(h, wanted) for h in (p or ()))
                                 for p in table.column(field).to_pylist()], dtype=bool)
            else:
                hit &= _dictionary_mask(table.column(field), lambda v, w=wanted: metadata_matches(v, w))
        else:
            meta_where[field.removeprefix("metadata.") if field.startswith("metadata.") else field] = wanted
    if meta_where:
        column = table.column("metadata") if "metadata" in table.column_names else None
        if column is None or column.null_count == len(column):
            return np.zeros(0, np.int64)
        hit &= _dictionary_mask(column, lambda t: all(k in m and metadata_matches(m[k], v)
                                                      for m in (json.loads(t),) for k, v in meta_where.items()))
    return np.nonzero(hit)[0].astype(np.int64)
