r"""The ingest reduction on an existing SQL engine: DuckDB (embedded) or Apache Spark.

:func:`reduce_records` reads the same files as :func:`selfmodel.records.ingest.ingest` (JSONL, CSV,
Parquet, folders of them), applies the same validation rules and duplicate handling, and
returns the model x task cells of :func:`selfmodel.records.cells.to_cells` with the same row
accounting (``records_read == records_used + records_quarantined + records_duplicate``),
without holding the records in Python: the engine reads, validates and counts, and only
the cells and a few counts come back. The rules and the GROUP BY are written once
(:mod:`selfmodel.records.reduction`, narwhals expressions the engine runs); the engines differ only
in how they read files (:mod:`~selfmodel.records.engines.duckdb_engine`,
:mod:`~selfmodel.records.engines.spark_engine`).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import narwhals as nw
import polars as pl

from selfmodel.records.contract import JSON_ERRORS, REQUIRED, InputError
from selfmodel.records.ingest import IngestConfig
from selfmodel.records.ingest.columns import closest
from selfmodel.records.ingest.discover import InputFile, discover_inputs
from selfmodel.records.ingest.readers import read_csv_header
from selfmodel.records.ingest.run import merge_options
from selfmodel.records.reduction import (
    CELL_KEY,
    ID_COLUMNS,
    INPUT_COLUMNS,
    accounting,
    cell_rows,
    cell_schema,
    cells,
    checked,
    finish_cells,
    grouped,
    variants,
)
from selfmodel.records.registry import format_input_error

__all__ = ["ENGINES", "EngineResult", "EngineUnavailable", "reduce_records"]

#: Engines :func:`reduce_records` knows, the default first.
ENGINES: Final = ("duckdb", "spark")

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

    def columns(self, inp: InputFile) -> list[tuple[str, str]]:
        """``(name, type)`` of the file's columns (JSONL: keys of its first lines, ``json``)."""

    def count(self, inp: InputFile, key: str | None = None) -> int:
        """Rows of the file (with ``key``: JSONL rows where that key is not null)."""

    def file_select(
        self, index: int, inp: InputFile, sources: Mapping[str, str | None],
        defaults: Mapping[str, str], header: Sequence[str],
    ) -> str:
        """SQL of the file's raw rows: ``source_file, _err`` and INPUT_COLUMNS as text."""

    def relation(self, sql: str) -> Any:
        """The engine's native frame of a query (a DuckDB relation, a Spark DataFrame)."""

    def materialize(self, name: str, frame: nw.LazyFrame) -> nw.LazyFrame:
        """Compute ``frame`` into a table (or cached view) the next queries read."""

    def read_failures(self, names: Mapping[str, str]) -> list[str]:
        """Raw-row SQL of rows the reader set aside while materialising (may be empty)."""

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


def csv_header(inp: InputFile) -> list[str]:
    """The header of a CSV file as ingest reads it (names stripped; duplicates an error)."""
    with inp.path.open("rb") as raw:
        if raw.read(3) != b"\xef\xbb\xbf":
            raw.seek(0)
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        return read_csv_header(inp, text)


def csv_blank(inp: InputFile) -> bool:
    """Whether a CSV file holds nothing but white space (ingest reads no header from it)."""
    with inp.path.open("rb") as raw:
        return not raw.read(65536).strip(b"\xef\xbb\xbf \t\r\n")


#: Type names of columns that do not hold scalars (DuckDB and Spark spellings).
NESTED: Final = ("[]", "STRUCT", "MAP", "LIST", "ARRAY", "BLOB", "BINARY", "UNION")


def _resolve(
    eng: Engine, inp: InputFile, options: IngestConfig
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
                guess = closest(mapped, unused)
                todo = f"Fix the mapping, e.g. --map {c}={guess}" if guess else "Fix it"
            raise InputError(format_input_error(
                inp.name,
                f"mapped column '{mapped}' (--map {c}={mapped}) is not in the file "
                f"(present: {shown or 'none'})",
                todo, line=line, column=mapped))
        guess = closest(c, unused)
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
    keys: Sequence[str] = CELL_KEY,
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
    keys
        The cell key, as for :func:`selfmodel.records.cells.to_cells`: model x task, or
        ``CONDITION_CELL_KEY`` (one cell per condition too).

    Returns
    -------
    EngineResult
        ``cells`` equal to ``to_cells(ingest(paths).records, keys=keys)`` and the
        accounting.

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
    options = merge_options(mapping, config)
    inputs = discover_inputs([paths] if isinstance(paths, str | Path) else paths)
    eng = make_engine(engine, **dict(engine_options or {}))
    try:
        selects: list[str] = []
        ignored: set[str] = set()
        for index, inp in enumerate(inputs):
            sources, header, unused = _resolve(eng, inp, options)
            if not sources:
                continue
            ignored |= unused
            selects.append(eng.file_select(index, inp, sources, options.defaults, header))
        names = {inp.path.as_posix(): inp.name for inp in inputs}
        parts: list[nw.LazyFrame] = []
        for sql in (selects, None):  # reader rejects are known once the first part is read
            sql = sql if sql is not None else eng.read_failures(names)
            if sql:
                raw = eng.relation("\nUNION ALL\n".join(sql))
                parts.append(eng.materialize(f"sm_grouped_{len(parts)}",
                                             grouped(checked(raw, tasks=options.tasks))))
        if not parts:
            per_file = pl.DataFrame(schema={"source_file": pl.Utf8, "_cat": pl.Utf8, "n": pl.Int64})
            per_variant = pl.DataFrame(schema=_VARIANT_SCHEMA)
            got = pl.DataFrame(schema=cell_schema(keys))
        else:
            g = parts[0] if len(parts) == 1 else eng.materialize("sm_grouped", nw.concat(parts))
            v = eng.materialize("sm_variants", variants(g))
            used = v.filter(~nw.col("conflicting"))
            got = finish_cells(_collect(cells(cell_rows(used, keys=keys), keys=keys)), keys=keys)
            per_file, per_variant = (_collect(t) for t in accounting(g, v))
    finally:
        eng.close()
    return EngineResult(cells=got, summary=_summary(engine, inputs, options, per_file,
                                                    per_variant, ignored, paths))


_VARIANT_SCHEMA: Final = {"conflicting": pl.Boolean, "status": pl.Utf8, "model": pl.Utf8,
                          "task": pl.Utf8, "not_boolean": pl.Boolean, "keys": pl.Int64,
                          "n": pl.Int64}


def _collect(frame: nw.LazyFrame) -> pl.DataFrame:
    """A small result of the engine as a polars frame."""
    return frame.collect(backend="polars").to_native()


def _summary(
    engine: str, inputs: Sequence[InputFile], options: IngestConfig, per_file: pl.DataFrame,
    per_variant: pl.DataFrame, ignored: set[str], paths: Any,
) -> dict[str, Any]:
    def count(frame: pl.DataFrame, by: str, value: str = "n") -> dict[str, int]:
        sums = frame.filter(pl.col(by).is_not_null()).group_by(by).agg(pl.col(value).sum())
        return {str(k): int(n) for k, n in sums.sort(by).iter_rows() if n}

    used_rows = per_variant.filter(~pl.col("conflicting"))
    files = count(per_file, "source_file")
    reasons = count(per_file, "_cat")
    conflicting = int(per_variant.filter(pl.col("conflicting"))["n"].sum())
    if conflicting:
        reasons = dict(sorted({**reasons, "conflicting duplicate": conflicting}.items()))
    used = int(used_rows["keys"].sum())
    duplicate = int(used_rows["n"].sum()) - used
    read, quarantined = sum(files.values()), sum(reasons.values())
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
    statuses = count(used_rows, "status", "keys")
    return {
        "engine": engine,
        "records_read": read,
        "records_used": used,
        "records_quarantined": quarantined,
        "records_duplicate": duplicate,
        "quarantine_reasons": reasons,
        "files": [{"path": i.name, "format": i.format, "rows": files.get(i.name, 0)}
                  for i in inputs],
        "models": sorted(count(used_rows, "model", "keys")),
        "tasks": sorted(count(used_rows, "task", "keys")),
        "statuses": statuses,
        "unreadable_predictions": sum(n for s, n in statuses.items() if s != "ok"),
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(ignored),
        "predictions_not_boolean": count(used_rows.filter(pl.col("not_boolean")), "task", "keys"),
    }
