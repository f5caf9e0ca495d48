"""Reading input documents: ``.md``/``.txt`` files, source code (``.py``, ``.js``, ``.ts``, ``.go``, ``.rs``,
``.java``: read as text, cut by the ``code`` strategy), HTML pages (``.html``/``.htm``: converted to markdown,
:mod:`latechunk.convert`), reStructuredText (``.rst``: its section titles as markdown headings, the rest verbatim,
:func:`latechunk.convert.rst_to_markdown`), folders of them, ``.jsonl`` (``id``/``text``, optional
``title``), BEIR ``corpus.jsonl`` (``_id``/``title``/``text``), ``.parquet`` (``id``/``text`` columns, optional
``title``; read in row batches), Arrow IPC files (``.arrow``, stream or file format, the same columns) and Hugging
Face ``datasets`` folders written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` (their ``.arrow``
shards memory-mapped and read in record batches, without importing ``datasets``). Streams documents one at a
time: memory does not grow with the corpus.

Nothing is lost: every input either becomes a :class:`Document` or a :class:`Skipped` record with its reason
(empty, invalid UTF-8, binary, unreadable, bad JSON line, bad parquet row, duplicate id), and so does every file
found under an input folder that is not read: an unsupported type (one suffix policy, :func:`unsupported_reason`,
for files named as inputs and files found in folders), a symlink loop or broken symlink, a special file; a
symlinked folder (never followed, so no loop is walked), a version-control folder, another hidden folder (a name
starting with ``.``: ``.venv``, ``.cache``; read when named as an input itself), a latechunk output folder or an
unreadable folder is one Skipped entry (its doc id ends in ``/``).

Encodings: text and JSONL files are UTF-8 unless they start with a byte-order mark: a UTF-8, UTF-16 (LE/BE) or
UTF-32 (LE/BE) BOM selects that encoding, and the BOM itself is not part of the text. Duplicate ids policy: the
first occurrence wins; later ones are skipped with a reason naming both sources (and, when the two come from
different inputs and one is a file's id, its path relative to its input, how to keep both: name the folders'
common parent as one input).

Empty inputs are one Skipped each, never nothing: a text file that is empty or whitespace-only, a markdown file
that is nothing but front matter (:data:`latechunk.front_matter.FRONT_MATTER`, kept out of what the strategies
cut), a JSONL file without a line that is not blank ("empty file: no JSON lines"), a parquet or Arrow file or a
dataset split with the id/text columns but no rows ("empty parquet file: no rows", ...), under the file's (or
split's) own name.

Records (JSONL lines, table rows): the id is the first of the fields ``id``, ``_id``, ``doc_id`` present (even
when null) and must be a non-blank string or an integer (``1`` and ``"1"`` are the same id); a null, blank or
other-typed id (float, boolean, list, object) skips the record, its reason naming the field and the value's type.
``text`` must be a string. ``title`` is optional: a string, or a number used as its string form (``5`` ->
``"5"``); null (or NaN, a missing value as pandas writes it) is no title; any other type (boolean, list,
object) skips the record with a reason naming the field and its type, rather than embed it without the title
it was given.

Sources (``Document.metadata["source"]``, ``Skipped.source``) are stored relative to the input root, never as
absolute paths: ``notes/a.md`` for a file, ``corpus.jsonl:12`` for line 12 (1-based) of a JSONL file,
``docs.parquet:7`` for row 7 (0-based) of a parquet file (``docs.arrow:7`` of an Arrow file). A single-file
input's root is its folder.

A Hugging Face ``datasets`` folder (:func:`hf_dataset_kind`) is one input item like a file, never walked as a folder
(its ``.arrow``/``.json`` files are not listed): a ``Dataset`` folder (``state.json`` + ``dataset_info.json``)
is read shard by shard in the order of ``state.json``'s ``_data_files``, row ``r`` (0-based over all shards) has
the source ``ds:r``; a ``DatasetDict`` folder (``dataset_dict.json``) reads every split in the order it lists
them, sources ``dd/train:r``, ``dd/test:r`` (an id repeated across splits is a duplicate, skipped). To read one
split only, give its sub-folder (``dd/train``, itself a ``Dataset`` folder; sources ``train:r``).

The package, one module per concern:

- :mod:`~latechunk.io.suffixes`: which files are read (:data:`SUPPORTED_SUFFIXES`, :func:`unsupported_reason`) and
  the reasons of entries never opened (:data:`NOT_READ_REASONS`, :func:`is_not_read`).
- :mod:`~latechunk.io.encoding`: byte-order marks (:func:`sniff_bom`), bytes that are not UTF-8
  (:func:`invalid_bytes`, :func:`offsets_text`, :func:`utf8_problem`) and the legacy 8-bit hint
  (:func:`legacy_hint`, :data:`LEGACY_UNDER_REPLACE`).
- :mod:`~latechunk.io.records`: one JSONL line or table row as a Document or a Skipped (:data:`DEFAULT_FIELDS`,
  :func:`metadata_json`, :func:`surrogate_reason`).
- :mod:`~latechunk.io.text`: files read as one document (markdown, text, code, reStructuredText, HTML):
  :func:`read_text_file`, :func:`front_matter_only`.
- :mod:`~latechunk.io.jsonl`: JSONL files.
- :mod:`~latechunk.io.tables`: what parquet and Arrow tables share (columns, record batches as records).
- :mod:`~latechunk.io.parquet`: parquet files (:data:`PARQUET_BATCH_ROWS`).
- :mod:`~latechunk.io.arrow`: Arrow files and Hugging Face dataset folders (:func:`hf_dataset_kind`,
  :data:`ARROW_BATCH_ROWS`), their rows counted.
- :mod:`~latechunk.io.walk`: walking input folders, the reason of each entry not read (:func:`is_output_folder`,
  :data:`VCS_FOLDERS`, :data:`BEIR_QUERIES_REASON`).
- :mod:`~latechunk.io.same_file`: the same-file check (of two paths to one file, the real one read).
- :mod:`~latechunk.io.count`: :func:`count_inputs`, :func:`count_input_bytes` (progress bars' totals).
- :mod:`~latechunk.io.inputs`: :func:`iter_inputs`, :func:`require_documents`, :func:`missing_inputs_message`.
- :mod:`~latechunk.io.quiet`: :func:`quiet_c_stdout` (faiss's C stdout silenced).

Every public name is importable from ``latechunk.io`` as it was from the one module before. Patch a seam in the
module that defines it (``latechunk.io.text.html_to_markdown``: an HTML page is converted there).

Tests: ``tests/test_io*.py``, ``tests/io/test_html.py``.
"""

from latechunk.io.arrow import ARROW_BATCH_ROWS as ARROW_BATCH_ROWS
from latechunk.io.arrow import hf_dataset_kind
from latechunk.io.count import count_input_bytes, count_inputs
from latechunk.io.encoding import LEGACY_UNDER_REPLACE as LEGACY_UNDER_REPLACE
from latechunk.io.encoding import invalid_bytes as invalid_bytes
from latechunk.io.encoding import legacy_hint as legacy_hint
from latechunk.io.encoding import offsets_text as offsets_text
from latechunk.io.encoding import sniff_bom as sniff_bom
from latechunk.io.encoding import utf8_problem as utf8_problem
from latechunk.io.inputs import iter_inputs, missing_inputs_message, require_documents
from latechunk.io.parquet import PARQUET_BATCH_ROWS as PARQUET_BATCH_ROWS
from latechunk.io.quiet import quiet_c_stdout as quiet_c_stdout
from latechunk.io.records import DEFAULT_FIELDS
from latechunk.io.records import metadata_json as metadata_json
from latechunk.io.records import surrogate_reason as surrogate_reason
from latechunk.io.suffixes import (
    CODE_SUFFIXES,
    HTML_SUFFIXES,
    NOT_READ_REASONS,
    RST_SUFFIXES,
    SUPPORTED_SUFFIXES,
    TABLE_SUFFIXES,
    TEXT_SUFFIXES,
    is_not_read,
    unsupported_reason,
)
from latechunk.io.text import FRONT_MATTER_ONLY_REASON as FRONT_MATTER_ONLY_REASON
from latechunk.io.text import front_matter_only as front_matter_only
from latechunk.io.text import read_text_file
from latechunk.io.walk import BEIR_QUERIES_REASON as BEIR_QUERIES_REASON
from latechunk.io.walk import VCS_FOLDERS as VCS_FOLDERS
from latechunk.io.walk import is_output_folder as is_output_folder
from latechunk.types import RecordFields

__all__ = ["CODE_SUFFIXES", "HTML_SUFFIXES", "NOT_READ_REASONS", "RST_SUFFIXES", "SUPPORTED_SUFFIXES", "TABLE_SUFFIXES",
           "TEXT_SUFFIXES", "count_input_bytes",
           "DEFAULT_FIELDS", "RecordFields", "count_inputs", "hf_dataset_kind", "missing_inputs_message", "is_not_read",
           "iter_inputs", "read_text_file", "require_documents", "unsupported_reason"]
