r"""Ingest logged self-prediction records: read, map, validate, deduplicate, account.

:func:`ingest` reads JSONL (``.jsonl``/``.ndjson``), CSV (``.csv``) and Parquet
(``.parquet``) files, or folders of them (searched recursively, hidden files skipped),
into the canonical record table of :mod:`selfmodel.records.contract`. Every row read ends in exactly
one of three places (four with a records mapping whose ``[[rule]]`` leaves rows out,
``records_excluded``), so that ``records_read == records_used + records_quarantined +
records_duplicate + records_excluded`` always holds:

* ``records`` -- valid rows, one per :data:`~selfmodel.records.contract.KEY`;
* ``quarantine`` -- rows that cannot be used, each with its file, line, a reason and the
  raw text (at most 500 characters);
* ``records_duplicate`` -- extra copies of a row that is exactly equal on
  ``prediction, outcome, correct, confidence, status`` to one already kept (the copy from
  the first file in reading order, then the lowest line, is kept).

Reading
-------
Files are read in sorted path order; a path given twice is read once. Each file is read in
batches (:func:`selfmodel.records.ingest.readers.read_batches`: about 16 MiB of whole lines,
250,000 Parquet rows; a smaller file is one batch). The fast path is vectorised polars: a
JSONL batch is parsed with every key read as text, a CSV batch with every column as text, a
Parquet batch as stored. Only when that fails (a truncated line, a non-object line, invalid
UTF-8, fields spanning lines, too many fields) does the batch go line by line -- and for
JSONL even then the good stretches are parsed by polars in chunks, with Python's
:mod:`json` used only on small chunks that contain a bad line. Inputs larger than 256 MiB
are streamed (:mod:`selfmodel.records.ingest.stream`): the same batches, their rows sorted
and de-duplicated on disk, the same outputs.

* A UTF-8 byte-order mark is dropped; CRLF line ends are accepted.
* Blank lines are skipped and not counted as read.
* A JSONL line that is not valid JSON or not an object is quarantined
  (``invalid JSON``, ``not a JSON object``); the rest of the file is read.
* A JSONL line whose object names a key twice is quarantined (``duplicate key``) on
  every path, whatever else the file holds (:mod:`selfmodel.records.ingest.duplicate_keys`).
* Bytes that are not valid UTF-8 are never replaced silently: the line (JSONL) or record
  (CSV) holding them is quarantined as ``invalid UTF-8``, its ``raw`` text shown with
  U+FFFD replacement characters. A CSV *header* that is not UTF-8 is an
  :class:`~selfmodel.records.contract.InputError`.
* A CSV row with more fields than the header is quarantined (``wrong number of fields``);
  a row with fewer has its missing trailing fields read as empty (polars' rule).
* JSONL keys are found from the first 1,000 lines plus the canonical and mapped column
  names, which are always read (a canonical or mapped key counts as present when some line
  gives it a non-null value); an unknown key first appearing after line 1,000 is ignored
  without being listed in ``ignored_columns``.
* An empty or header-only file contributes 0 rows and is listed in ``files``.

Columns
-------
Column names may be mapped (``--map item_id=question_id``, canonical name on the left).
Every mapped source column must exist in every file that has rows (a typo in a mapping is
an error, never a silent fall-back to another column). A ``[defaults]`` value from a config
file fills an unmapped canonical column that a file does not have. A file without a
required column (``model``, ``task``, ``item_id``) raises
:class:`~selfmodel.records.contract.InputError` suggesting ``--map <column>=<closest present>``.
Columns that are not used are listed in ``ignored_columns``.

Validation (first failing rule names the reason)
------------------------------------------------
Text values are stripped of surrounding white space; an empty string is null, and so are
``null``/``None`` (any case) and, except in the numeric columns ``confidence`` and
``sample``, ``NaN``.

1. ``model``, ``task``, ``item_id`` must be non-empty (``missing value``); no identifier
   (``model``, ``predictor``, ``task``, ``item_id``, ``run_id``, ``cluster``,
   ``condition``) may be a list or an object: a JSON array/object, a Parquet list/struct,
   or text written like one (see :func:`selfmodel.records.reduction.looks_nested`), hold
   a control character that is not white space
   (:data:`selfmodel.records.reduction.CONTROL`: a NUL byte ...) or have no visible
   character (:data:`selfmodel.records.reduction.INVISIBLE`: only a zero-width space ...)
   (``invalid identifier``); no other column may hold a list or an object
   (``invalid value``).
2. ``status`` (case-insensitive, default ``ok``) must be one of
   :data:`~selfmodel.records.contract.STATUSES` (``invalid status``).
3. ``confidence`` must be a finite number in [0, 1]; NaN and infinity in any spelling
   are not (``invalid confidence``).
4. ``sample`` must be a non-negative integer (``1``, ``"1"``, ``1.0``); default 0; NaN is
   not one (``invalid sample``).
5. ``correct`` must be a boolean (true/false/1/0/yes/no, any case) (``invalid correct``).
6. With a config listing ``tasks``, ``task`` must be one of them (``unknown task``).
7. A row with status ``ok`` needs an ``outcome`` or a ``correct`` (``no outcome``); a row
   declared ``unparsed``, ``refused`` or ``error`` is kept without one (it is unreadable), and
   so is one declared ``not_asked`` or ``unanswered`` (it has nothing to score).
8. A given ``correct`` must agree with ``prediction == outcome`` when both are present
   and the status is ``ok`` (``correct disagrees``).

``prediction`` and ``outcome`` become ``"true"``/``"false"`` when they read as booleans,
otherwise the stripped text, so free-text predictions compare exactly (case-sensitive).
A row with status ``ok`` but no prediction gets status ``unparsed``. ``correct`` is derived
as ``prediction == outcome`` when absent, and is null whenever the status is not ``ok``
(an unreadable prediction is neither right nor wrong; ``accuracy_strict`` downstream
counts it as wrong). ``predictor`` defaults to ``model``. Text such as ``<script>`` or
``=cmd|' /C calc'!A0`` is kept verbatim as data; escaping it is the report's job.

Duplicates
----------
Rows with the same :data:`~selfmodel.records.contract.KEY` (across files too) that differ in
``prediction, outcome, correct, confidence`` or ``status`` are *all* quarantined with the
reason ``conflicting duplicate of <file>:<line>`` (naming the first other copy).
Rows that agree on those are exact duplicates: one is kept, the others are counted in
``records_duplicate``. Other columns (``cluster``, ``run_id``) do not make rows differ.

Data hash
---------
``summary["sha256"]`` is the SHA-256 of, for each file in reading order: its name (path
relative to the folder argument it was found in, or the bare file name for a file
argument; UTF-8, ``/`` separators), a NUL byte, its size as an 8-byte big-endian integer,
and its bytes. Moving the data folder does not change the hash; renaming a file does.
Mapping, config and registry are not part of it.

Modules
-------
``column_map``
    The ingest column map: ``--map`` options and the TOML ``--config`` file (line-numbered errors, did-you-mean).
``discover``
    Finding the record files of the input paths (file discovery, formats by suffix).
``readers``
    Readers of JSONL, CSV and Parquet record files, with line numbers and raw text for the quarantine.
``duplicate_keys``
    JSON objects that name a key twice: found cheaply, quarantined whatever else the file holds.
``columns``
    Resolving the columns of a file to the canonical record columns (mapping, case variants, suggestions).
``rules``
    The validation rules a record must pass, and the normalisation of its values.
``dedup``
    Ordering and de-duplication of records on the record key.
``tables``
    From validated rows to the record and quarantine tables, in memory or streamed.
``stream``
    Ingest of inputs larger than memory: batches spilled to disk, sorted in buckets, written in row groups.
``registry_columns``
    Registry columns found in the records (``family``, ``params_b`` ...): compared, said, not read.
``run``
    The ingest stage: read, validate and account for every record; write ``records.parquet`` and friends.
"""

from __future__ import annotations

from selfmodel.records.ingest.column_map import (
    INPUT_COLUMNS as INPUT_COLUMNS,
)
from selfmodel.records.ingest.column_map import (
    IngestConfig,
    load_config,
    parse_map_options,
)
from selfmodel.records.ingest.dedup import (
    COMPARED as COMPARED,
)
from selfmodel.records.ingest.discover import (
    FORMATS as FORMATS,
)
from selfmodel.records.ingest.readers import (
    RAW_MAX as RAW_MAX,
)
from selfmodel.records.ingest.run import (
    IngestResult,
    ingest,
    write_ingest,
)

__all__ = [
    "IngestConfig",
    "IngestResult",
    "ingest",
    "load_config",
    "parse_map_options",
    "write_ingest",
]
