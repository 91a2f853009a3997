r"""The ingest reduction on an existing SQL engine: DuckDB (embedded) or Apache Spark.

:func:`reduce_records` reads the same files as :func:`selfmodel.records.ingest.ingest` (JSONL, CSV,
Parquet, folders of them), applies the same validation rules and duplicate handling, and
returns the model x task cells of :func:`selfmodel.records.cells.to_cells` with the same row
accounting (``records_read == records_used + records_quarantined + records_duplicate``),
without holding the records in Python: the engine reads, validates and counts, and only
the cells and a few counts come back. The SQL is written once (:mod:`selfmodel.records.engines.sql`);
the engines differ in how they read files (:mod:`~selfmodel.records.engines.duckdb_engine`,
:mod:`~selfmodel.records.engines.spark_engine`) and in a handful of functions (``Dialect``).

What is the same as ingest
--------------------------
File discovery and names (folders walked following links, ``.jsonl.gz``/``.csv.gz``
read), column mapping (``--map``, a config's ``[map]``, ``tasks`` and ``[defaults]``),
the missing-column and mapped-column errors, the reading of values (``null``/``NaN``/
``None`` missing, ``1.0``/``0.0`` booleans), rules 1-8 of :mod:`selfmodel.records.ingest`,
unreadable rows of JSONL (``invalid JSON``, ``not a JSON object``, ``invalid UTF-8``,
``duplicate key``), identifiers that are lists or objects (``invalid identifier``; a
Parquet list or struct column is read as JSON text) and
CSV (``wrong number of fields``, ``invalid UTF-8``), exact and conflicting duplicates
across files (``run_id`` in the key), the binary-task rule (``predictions_not_boolean``),
and the "no records to analyse" error.

What it does not produce
------------------------
No ``records.parquet``, no quarantine *rows* (file and line of each) and no data hash:
the summary has the counts per reason and per file. To list the quarantined rows of a
file, run ``selfmodel ingest`` on it. Known differences of reading, none of which changes
a count on logs written by a program, are listed in ``docs/engines.md``.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import polars as pl

from selfmodel.records.contract import JSON_ERRORS, REQUIRED, InputError
from selfmodel.records.engines.sql import (
    Dialect,
    accounting_sql,
    cells_sql,
    checked_sql,
    grouped_sql,
    variants_sql,
)
from selfmodel.records.ingest import INPUT_COLUMNS, IngestConfig
from selfmodel.records.ingest.columns import _closest
from selfmodel.records.ingest.discover import _discover, _Input
from selfmodel.records.ingest.readers import _csv_header
from selfmodel.records.ingest.rules import ID_COLUMNS
from selfmodel.records.ingest.run import _merge_options
from selfmodel.records.registry import format_input_error

__all__ = ["ENGINES", "EngineResult", "EngineUnavailable", "reduce_records"]

#: Engines :func:`reduce_records` knows, the default first.
ENGINES: Final = ("duckdb", "spark")

#: Cell columns and dtypes, as :func:`selfmodel.records.cells.to_cells` returns them.
CELL_SCHEMA: Final[dict[str, pl.DataType]] = {
    "model": pl.Utf8(), "task": pl.Utf8(), "n_total": pl.Int64(), "n": pl.Int64(),
    "k": pl.Int64(), "n_unreadable": pl.Int64(), "binary": pl.Boolean(),
    "n_signal": pl.Int64(), "n_noise": pl.Int64(), "hits": pl.Int64(),
    "false_alarms": pl.Int64(), "n_pred_yes": pl.Int64(), "k_strict": pl.Int64(),
    "mode_outcome_share": pl.Float64(),
}
#: Column order of ``to_cells``.
TO_CELLS_ORDER: Final = (
    "model", "task", "n_total", "n", "k", "n_unreadable", "binary", "n_signal", "n_noise",
    "hits", "false_alarms", "n_pred_yes", "k_strict", "mode_outcome_share",
)

_JSON_SAMPLE_LINES: Final = 1000


class EngineUnavailable(InputError):
    """The engine's Python package (or Java, for Spark) is not installed."""


@dataclass(frozen=True)
class EngineResult:
    """What :func:`reduce_records` returns.

    Attributes
    ----------
    cells
        The table of :func:`selfmodel.records.cells.to_cells` (same columns, dtypes, order).
    summary
        ``engine``, ``records_read``, ``records_used``, ``records_quarantined``,
        ``records_duplicate``, ``quarantine_reasons`` (``{category: count}``), ``files``
        (``[{path, format, rows}]``), ``models``, ``tasks``, ``statuses``,
        ``unreadable_predictions``, ``mapping``, ``defaults``, ``allowed_tasks``,
        ``ignored_columns``, ``predictions_not_boolean`` (``{task: count}``) -- the keys
        of ingest's summary that do not need the rows.
    """

    cells: pl.DataFrame
    summary: dict[str, Any]


class Engine(Protocol):
    """What an engine module provides (see ``duckdb_engine.DuckDBEngine``)."""

    dialect: Dialect

    def columns(self, inp: _Input) -> list[tuple[str, str]]:
        """``(name, type)`` of the file's columns (JSONL: keys of its first lines, ``json``)."""

    def count(self, inp: _Input, key: str | None = None) -> int:
        """Rows of the file (with ``key``: JSONL rows where that key is not null)."""

    def file_select(
        self, index: int, inp: _Input, sources: Mapping[str, str | None],
        defaults: Mapping[str, str], header: Sequence[str],
    ) -> str:
        """SQL of the file's raw rows: ``source_file, _err`` and INPUT_COLUMNS as text."""

    def materialize(self, name: str, sql: str) -> str:
        """Run ``sql`` into a table the next queries read; return its name."""

    def read_failures(self, names: Mapping[str, str]) -> list[str]:
        """Raw-row SQL of rows the reader set aside while materialising (may be empty)."""

    def fetch(self, sql: str) -> pl.DataFrame:
        """Run a query with a small result and return it."""

    def close(self) -> None:
        """Release the engine."""


def make_engine(name: str, **options: Any) -> Engine:
    """An engine by name (``duckdb`` or ``spark``); :class:`EngineUnavailable` if absent."""
    # Imported here: each engine module imports this package (a cycle at the top), and only
    # the chosen engine is loaded.
    if name == "duckdb":
        from selfmodel.records.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(**options)
    if name == "spark":
        from selfmodel.records.engines.spark_engine import SparkEngine

        return SparkEngine(**options)
    raise InputError(f"unknown engine '{name}'. Use one of: {', '.join(ENGINES)}.")


def json_keys(path: Path) -> list[str]:
    """Keys of the JSON objects on the first 1,000 lines of a JSONL file (as ingest samples)."""
    keys: dict[str, None] = {}
    with path.open("rb") as fh:
        head = fh.read(3)
        if head != b"\xef\xbb\xbf":
            fh.seek(0)
        for _, line in zip(range(_JSON_SAMPLE_LINES), fh, strict=False):
            try:
                obj = json.loads(line)
            except JSON_ERRORS:
                continue
            if isinstance(obj, dict):
                keys.update(dict.fromkeys(obj))
    return list(keys)


def csv_header(inp: _Input) -> list[str]:
    """The header of a CSV file as ingest reads it (names stripped; duplicates an error)."""
    with inp.path.open("rb") as raw:
        if raw.read(3) != b"\xef\xbb\xbf":
            raw.seek(0)
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        return _csv_header(inp, text)


def csv_blank(inp: _Input) -> bool:
    """Whether a CSV file holds nothing but white space (ingest reads no header from it)."""
    with inp.path.open("rb") as raw:
        return not raw.read(65536).strip(b"\xef\xbb\xbf \t\r\n")


#: Type names of columns that do not hold scalars (DuckDB and Spark spellings).
NESTED: Final = ("[]", "STRUCT", "MAP", "LIST", "ARRAY", "BLOB", "BINARY", "UNION")


def _resolve(
    eng: Engine, inp: _Input, options: IngestConfig
) -> tuple[dict[str, str | None], list[str], set[str]]:
    """Source column of each canonical column in one file, as ``selfmodel.records.ingest`` resolves it.

    Returns the sources (empty for a blank CSV file: nothing to read), the file's columns
    (CSV: its header) and the unused columns. A missing required or mapped column is an
    error only when the file has rows (as ingest); otherwise it reads as NULL.
    """
    cols = eng.columns(inp)
    if inp.format == "csv" and not cols:  # blank: no header, no rows
        return {}, [], set()
    present = [c for c, _ in cols]
    types = dict(cols)
    mapping, defaults = options.mapping, options.defaults
    wanted = {c: mapping.get(c, c) for c in INPUT_COLUMNS}
    if inp.format == "jsonl":  # a key not in the first lines is present if some line has it
        for c, source in wanted.items():
            if source not in types and (c in REQUIRED or c in mapping or c in defaults):
                if eng.count(inp, source) > 0:
                    present.append(source)
                    types[source] = "json"
    present_set = set(present)
    sources: dict[str, str | None] = {
        c: (s if s in present_set else None) for c, s in wanted.items()
    }
    if inp.format == "jsonl":  # canonical keys are always read (null when absent)
        sources = {
            c: sources[c] or (None if c in mapping or c in defaults else c) for c in INPUT_COLUMNS
        }
    used = {s for c, s in sources.items() if s is not None and s in present_set}
    unused = [c for c in present if c not in used]
    shown = ", ".join(present[:20]) + (", ..." if len(present) > 20 else "")
    line = 1 if inp.format == "csv" else None
    for c in INPUT_COLUMNS:
        mapped = mapping.get(c)
        if wanted[c] in present_set or (mapped is None and c in defaults):
            continue
        if mapped is None and c not in REQUIRED:
            continue
        if eng.count(inp) == 0:  # no rows (JSONL: no object): nothing to check
            break
        if mapped is not None:
            if c in unused:
                todo = f"Drop --map {c}={mapped} to use the file's own '{c}' column"
            else:
                guess = _closest(mapped, unused)
                todo = f"Fix the mapping, e.g. --map {c}={guess}" if guess else "Fix it"
            raise InputError(format_input_error(
                inp.name,
                f"mapped column '{mapped}' (--map {c}={mapped}) is not in the file "
                f"(present: {shown or 'none'})",
                todo, line=line, column=mapped))
        guess = _closest(c, unused)
        raise InputError(format_input_error(
            inp.name, f"required column '{c}' is missing (present: {shown or 'none'})",
            f"Map it with --map {c}={guess}" if guess else f"Add a '{c}' column",
            line=line, column=c))
    for c, s in sources.items():
        if c in ID_COLUMNS:  # a list or struct identifier: each row quarantined (SQL rule)
            continue
        if s is not None and s in types and any(n in types[s].upper() for n in NESTED):
            raise InputError(format_input_error(
                inp.name, f"column '{s}' holds {types[s]} values, not scalars",
                "Flatten it to text or numbers before reducing", column=s))
    return sources, present, set(unused)


def reduce_records(
    paths: Sequence[Path | str] | Path | str,
    *,
    engine: str = "duckdb",
    mapping: Mapping[str, str] | None = None,
    config: Path | str | IngestConfig | None = None,
    engine_options: Mapping[str, Any] | None = None,
) -> EngineResult:
    r"""Validate, de-duplicate and reduce record files to cells on a SQL engine.

    Parameters
    ----------
    paths
        Files and/or folders, as for :func:`selfmodel.records.ingest.ingest`.
    engine
        ``"duckdb"`` (embedded, the default) or ``"spark"`` (pyspark; local mode unless
        ``engine_options`` names a master).
    mapping, config
        As for :func:`selfmodel.records.ingest.ingest`.
    engine_options
        Passed to the engine (DuckDB: ``threads``, ``memory_limit``; Spark: ``master``,
        ``conf``, ``session``).

    Returns
    -------
    EngineResult
        ``cells`` equal to ``to_cells(ingest(paths).records)`` and the accounting.

    Raises
    ------
    InputError
        As ingest: a missing path or column, a bad mapping, no usable record; and
        :class:`EngineUnavailable` when the engine is not installed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = p.write_text("model,task,item_id,prediction,outcome\n"
    ...                  "m,t,1,yes,true\nm,t,2,no,true\nm,t,2,no,true\nm,t,3,,false\n")
    >>> res = reduce_records([p])                                   # doctest: +SKIP
    >>> res.cells.select("n_total", "n", "k", "hits").row(0)        # doctest: +SKIP
    (3, 2, 1, 1)
    >>> res.summary["records_duplicate"]                            # doctest: +SKIP
    1
    """
    options = _merge_options(mapping, config)
    inputs = _discover([paths] if isinstance(paths, str | Path) else paths)
    eng = make_engine(engine, **dict(engine_options or {}))
    try:
        d = eng.dialect
        selects: list[str] = []
        ignored: set[str] = set()
        for index, inp in enumerate(inputs):
            sources, header, unused = _resolve(eng, inp, options)
            if not sources:
                continue
            ignored |= unused
            selects.append(eng.file_select(index, inp, sources, options.defaults, header))
        names = {inp.path.as_posix(): inp.name for inp in inputs}
        grouped = None
        if selects:
            raw = "(" + "\nUNION ALL\n".join(selects) + ") AS raw"
            checked = f"({checked_sql(raw, d, tasks=options.tasks)}) AS checked"
            grouped = eng.materialize("sm_grouped", grouped_sql(checked))
        late = eng.read_failures(names)
        if late:
            raw = "(" + "\nUNION ALL\n".join(late) + ") AS raw_late"
            checked = f"({checked_sql(raw, d, tasks=options.tasks)}) AS checked_late"
            late_grouped = eng.materialize("sm_grouped_late", grouped_sql(checked))
            grouped = (late_grouped if grouped is None else eng.materialize(
                "sm_grouped_all", f"SELECT * FROM {grouped} UNION ALL SELECT * FROM {late_grouped}"))
        if grouped is None:
            acct = pl.DataFrame(schema={"what": pl.Utf8, "label": pl.Utf8, "n": pl.Int64})
            cells = pl.DataFrame(schema=CELL_SCHEMA)
        else:
            variants = eng.materialize("sm_variants", variants_sql(grouped))
            cells = eng.fetch(cells_sql(variants))
            acct = eng.fetch(accounting_sql(grouped, variants))
    finally:
        eng.close()
    return EngineResult(cells=_as_cells(cells), summary=_summary(engine, inputs, options, acct,
                                                                ignored, paths))


def _as_cells(cells: pl.DataFrame) -> pl.DataFrame:
    """The engine's cells with ``to_cells`` dtypes, NULL mode shares (``n = 0``) as NaN."""
    if "is_binary" in cells.columns:
        cells = cells.rename({"is_binary": "binary"})
    out = cells.select(
        [pl.col(c).cast(t) for c, t in CELL_SCHEMA.items()]
    ).with_columns(pl.col("mode_outcome_share").fill_null(math.nan))
    return out.select(list(TO_CELLS_ORDER)).sort("model", "task")


def _summary(
    engine: str, inputs: Sequence[_Input], options: IngestConfig, acct: pl.DataFrame,
    ignored: set[str], paths: Any,
) -> dict[str, Any]:
    def part(what: str) -> dict[str, int]:
        rows = acct.filter((pl.col("what") == what) & pl.col("n").is_not_null())
        out: dict[str, int] = {}
        for label, n in rows.select("label", "n").iter_rows():
            out[str(label)] = out.get(str(label), 0) + int(n)
        return out

    per_file = part("file")
    reasons = {k: v for k, v in sorted(part("reason").items()) if v}
    used = sum(part("used").values())
    duplicate = sum(part("duplicate").values())
    read = sum(per_file.values())
    quarantined = sum(reasons.values())
    if read != used + quarantined + duplicate:  # pragma: no cover - invariant
        raise RuntimeError(f"reduce accounting broken: read {read} != used {used} + "
                           f"quarantined {quarantined} + duplicate {duplicate}")
    if used == 0:
        top = ", ".join(f"{c} {n}" for c, n in sorted(reasons.items(), key=lambda x: -x[1])[:3])
        label = paths if isinstance(paths, str | Path) else ", ".join(str(p) for p in paths)
        raise InputError(format_input_error(
            label,
            f"no records to analyse ({read} read, {quarantined} quarantined"
            + (f": {top}" if top else "") + f", {duplicate} duplicate)",
            "Check that the files hold records with model, task, item_id and an outcome"))
    statuses = part("status")
    return {
        "engine": engine,
        "records_read": read,
        "records_used": used,
        "records_quarantined": quarantined,
        "records_duplicate": duplicate,
        "quarantine_reasons": reasons,
        "files": [{"path": i.name, "format": i.format, "rows": per_file.get(i.name, 0)}
                  for i in inputs],
        "models": sorted(part("model")),
        "tasks": sorted(part("task")),
        "statuses": dict(sorted(statuses.items())),
        "unreadable_predictions": sum(n for s, n in statuses.items() if s != "ok"),
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(ignored),
        "predictions_not_boolean": dict(sorted(part("not_boolean").items())),
    }
