"""One record (a JSONL line, a table row) as a :class:`Document` or a :class:`Skipped`: its id, text, title, url
and metadata fields checked (:func:`_record`, :func:`metadata_json`, :func:`surrogate_reason`)."""

from __future__ import annotations

import json
import math

from latechunk.types import DEFAULT_ID_FIELDS, Document, RecordFields, Skipped

#: the fields (JSONL) or columns (tables) a record's id is read from, the first present one
_ID_COLUMNS = DEFAULT_ID_FIELDS
DEFAULT_FIELDS = RecordFields()  # the defaults: id (_id, doc_id), text, title


def _degraded(item: Document | Skipped, note: str) -> Document | Skipped:
    """``item`` with ``metadata["degraded"] = note`` when it is a Document and ``note`` is set (a file, line or
    record read with U+FFFD for bytes that are not UTF-8: the manifest's ``degraded`` list)."""
    if not note or not isinstance(item, Document):
        return item
    return Document(item.doc_id, item.text, {**item.metadata, "degraded": note})


def _value_kind(value) -> str:
    """``value``'s type and a short form of it, for a reason: ``a list [1, 2]``, ``a boolean true``, ``null``."""
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list",
             dict: "an object"}
    kind = kinds.get(type(value), "an object" if isinstance(value, dict) else f"a {type(value).__name__}")
    try:
        shown = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}"


def _id_reason(doc_id, field: str | None, fields: RecordFields = DEFAULT_FIELDS) -> str:
    """Why ``doc_id`` (the value of the record's ``field``) is not an id; ``""`` when it is one (a non-blank string
    or an integer, never a boolean)."""
    if field is None:
        return ("no 'id' (or '_id', 'doc_id') field" if fields.id is None
                else f"no {fields.id!r} field (--id-field)")
    if doc_id is None:
        return f"'{field}' is null (an id must be a string or an integer)"
    if isinstance(doc_id, str):
        return "" if doc_id.strip() else f"'{field}' is blank (an id must be a non-blank string or an integer)"
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        return ""
    hint = ""
    if isinstance(doc_id, float) and doc_id.is_integer():
        hint = f"; write {int(doc_id)}, not {doc_id!r}"
    return f"'{field}' is {_value_kind(doc_id)} (an id must be a string or an integer{hint})"


def _record_title(title, field: str = "title") -> tuple[str, str]:
    """``(title, reason)`` of a record's ``title`` value: a string as it is, an integer or a finite float as its
    string form (``5`` -> ``"5"``, as a front-matter title); null, absent or NaN (a missing value, as pandas
    writes one) is no title, ``("", "")``; any other value (a boolean, a list, an object, an infinite float,
    bytes) is ``("", reason)``: the record is skipped rather than embedded without the title it was given."""
    if title is None or isinstance(title, str):
        return title or "", ""
    if isinstance(title, float) and math.isnan(title):
        return "", ""
    if isinstance(title, (int, float)) and not isinstance(title, bool) and math.isfinite(title):
        return str(title), ""
    return "", f"{field!r} is {_value_kind(title)} (a title must be a string or a number)"


#: a JSONL line without a ``text`` field (``_record`` tells it from ``"text": null``)
_NO_FIELD = object()


def surrogate_reason(text: str, what: str = "text") -> str:
    r"""Why ``text`` is not valid Unicode text: a lone surrogate (a JSON ``"\ud800"`` escape without its pair
    decodes to one), which no UTF-8 encoder, hash or tokenizer takes; ``""`` when it has none.

    Args:
        text: A string.
        what: What it is, for the reason (``"text"``, ``"'id'"``, ``"'title'"``).

    Returns:
        ``""``, or e.g. ``"text holds a lone surrogate U+D800 at character 15 (...)"``.
    """
    if text.isascii():
        return ""
    try:
        text.encode("utf-8")
        return ""
    except UnicodeEncodeError as err:
        return (f"{what} holds a lone surrogate U+{ord(text[err.start]):04X} at character {err.start} (not valid "
                "Unicode: in JSON, a \\uD800-\\uDFFF escape without its pair)")


def _record(doc_id, text, title, where: str, url=None, id_field: str | None = "id",
            keys: tuple[str, ...] = (), fields: RecordFields = DEFAULT_FIELDS,
            metadata: dict | None = None) -> Document | Skipped:
    r"""One JSONL line or parquet row as a Document (``title + "\n\n" + text`` when titled) or a Skipped; a
    non-blank string ``url`` (a JSONL ``url`` field, a table's ``url`` column) goes to ``metadata["url"]``.

    ``id_field`` names the field or column ``doc_id`` came from (None: the record has none), for the reason of a
    null or ill-typed id. A number ``title`` is used as its string form; a title of another type skips the
    record (:func:`_record_title`). ``keys``: the record's field names, listed in the reason of a record
    without an id or text field (a corpus whose text field is ``body`` says so on its first line); ``fields``:
    which of them hold the id, text and title (:class:`RecordFields`); ``metadata``: the record's kept
    metadata fields (:meth:`RecordFields.metadata_of`), made JSON-ready into ``metadata["metadata"]``
    (:func:`metadata_json`; a value that cannot be skips the record)."""
    shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
    reason = _id_reason(doc_id, id_field, fields) or (surrogate_reason(doc_id, f"'{id_field}'")
                                                       if isinstance(doc_id, str) else "")
    if reason and id_field is None and keys:  # no id field at all: say which fields there are
        reason += f" (its fields: {shown}; --id-field names the one that holds the id)"
    if reason:
        return Skipped(where, reason, where)
    if not isinstance(text, str):  # listed under the record's own id (it has a valid one), its place as source
        t = fields.text
        if text is _NO_FIELD:
            other = next((k for k in keys if k not in fields.ids and k not in (fields.title, "url")), "body")
            hint = (f" (its fields: {shown}; give the field that holds the text: --text-field {other})"
                    if keys else "")
            return Skipped(str(doc_id), f"no {t!r} field{hint}", where)
        if text is None:
            return Skipped(str(doc_id), f"{t!r} is null", where)
        return Skipped(str(doc_id), f"{t!r} must be a string, got {type(text).__name__}", where)
    title, reason = _record_title(title, fields.title)
    url, url_reason = _record_url(url)
    kept, meta_reason = metadata_json(metadata or {})
    reason = reason or url_reason or meta_reason or surrogate_reason(text) or surrogate_reason(title, "'title'")
    if reason:
        return Skipped(str(doc_id), reason, where)
    if not text.strip():  # a title alone is not a document (a trial's {"text": "", "title": "T"} became "T")
        return Skipped(str(doc_id), "empty or whitespace-only" + (f" {fields.text!r} (its title alone is not "
                                                                  "embedded)" if title else ""), where)
    full = f"{title}\n\n{text}" if title else text
    meta = {"source": where}
    if title:
        meta["title"] = title
        meta["title_from"] = "record"
    if url:
        meta["url"] = url
    if kept:
        meta["metadata"] = kept
    return Document(str(doc_id), full, meta)


def metadata_json(values: dict) -> tuple[dict, str]:
    """A record's metadata fields made JSON-ready (``embed --metadata-fields``): ``(values, reason)``.

    JSON values stay as they are; a NaN float (a table's missing value, or ``NaN`` in a JSON line) becomes None;
    a date, time or datetime becomes its ISO 8601 text, a ``Decimal`` its exact text, a ``timedelta`` its
    seconds. An infinite float (``1e400`` in a JSON line) or a value of another kind (bytes, a set, an object)
    gives ``({}, reason)``: the record is skipped rather than embedded without the metadata asked for.

    Args:
        values: ``{field: value}`` (:meth:`latechunk.types.RecordFields.metadata_of`).

    Returns:
        ``(json_ready, "")``, or ``({}, reason)`` naming the field and the value's type.
    """
    import datetime as dt
    import decimal

    def ready(v, name):
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            if math.isnan(v):
                return None
            if math.isinf(v):
                raise TypeError(f"metadata field {name!r} is an infinite number, which JSON cannot hold")
            return v
        if isinstance(v, (dt.datetime, dt.date, dt.time)):
            return v.isoformat()
        if isinstance(v, decimal.Decimal):
            return str(v)
        if isinstance(v, dt.timedelta):
            return v.total_seconds()
        if isinstance(v, (list, tuple)):
            return [ready(x, name) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: ready(x, name) for k, x in v.items()}
        raise TypeError(f"metadata field {name!r} is {type(v).__name__}, which JSON cannot hold (--metadata-fields "
                        "keeps text, numbers, booleans, dates, lists and objects)")

    try:
        out = {k: ready(v, k) for k, v in values.items()}
    except TypeError as err:
        return {}, str(err)
    bad = next((k for k, v in out.items() if surrogate_reason(json.dumps(v, ensure_ascii=False))), None)
    if bad is not None:
        return {}, surrogate_reason(json.dumps(out[bad], ensure_ascii=False), f"metadata field {bad!r}")
    return out, ""


def _record_url(url) -> tuple[str, str]:
    """``(url, reason)`` of a record's ``url`` value: a string stripped (blank: no url); null, absent or NaN is
    no url; a string holding a lone surrogate, or a value of another type, is ``("", reason)``: the record is
    skipped rather than embedded without the url it was given (as a title, :func:`_record_title`)."""
    if url is None or (isinstance(url, float) and math.isnan(url)):
        return "", ""
    if not isinstance(url, str):
        return "", f"'url' is {_value_kind(url)} (a url must be a string)"
    return url.strip(), surrogate_reason(url, "'url'")
