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

How files are read, the validation rules in order (the first failing one names the reason),
duplicates and the data hash: ``docs/records.md`` ("Ingest in detail"). The modules are listed
in ``docs/stages.md``.
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
