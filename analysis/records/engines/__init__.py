r"""The ingest reduction on an existing SQL engine: DuckDB (embedded) or Apache Spark.

:func:`reduce_records` reads the same files as :func:`selfmodel.records.ingest.ingest`,
applies the same validation rules and duplicate handling, and returns the cells of
:func:`selfmodel.records.cells.to_cells` with the same row accounting (``records_read ==
records_used + records_quarantined + records_duplicate``); the engine reads, validates and
counts, and only the cells and a few counts come back to Python.

An engine only turns one file into its native frame of text columns (:meth:`Engine.read`:
a DuckDB relation, a Spark DataFrame) and reports the rows it could not read
(:meth:`Engine.read_failures`); see :mod:`~selfmodel.records.engines.duckdb_engine` and
:mod:`~selfmodel.records.engines.spark_engine`. Everything else is written once and shared:
file discovery and column resolution are ingest's (``ingest/discover.py``,
``ingest/columns.py``), the raw rows, rules, GROUP BY and accounting are
:mod:`selfmodel.records.reduction`, and the summary is :func:`reduce_records`'s own. What
is the same as ingest and what differs: ``docs/engines.md``. No ``records.parquet``,
quarantine rows or data hash are made: to list the quarantined rows of a file, run
``selfmodel ingest`` on it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import narwhals as nw
import polars as pl

from selfmodel.records.contract import REQUIRED, UNREADABLE_STATUSES, InputError
from selfmodel.records.ingest import IngestConfig
from selfmodel.records.ingest.columns import column_sources
from selfmodel.records.ingest.discover import InputFile, discover_inputs
from selfmodel.records.ingest.readers import json_keys, read_csv_header
from selfmodel.records.ingest.run import merge_options, no_records
from selfmodel.records.reduction import (
    CELL_KEY,
    INPUT_COLUMNS,
    accounting,
    cell_rows,
    cells,
    checked,
    finish_cells,
    grouped,
    raw_rows,
    variants,
)
from selfmodel.records.registry import format_input_error

__all__ = ["ENGINES", "EngineResult", "EngineUnavailableError", "reduce_records"]

#: Engines :func:`reduce_records` knows, the default first.
ENGINES: Final = ("duckdb", "spark")


class EngineUnavailableError(InputError):
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

    def read(self, index: int | None, inp: InputFile, keys: Sequence[str],
             types: Mapping[str, pl.DataType]) -> Any:
        """The engine's native frame of the file's rows: ``_err`` and the columns ``keys``.

        ``types``: the file's columns (:func:`columns_of`; a CSV file's header, in order).
        ``index`` ``None``: a look at the file (:func:`count`), not one of the files reduced.
        """

    def materialize(self, name: str, frame: nw.LazyFrame) -> nw.LazyFrame:
        """Compute ``frame`` into a table (or cached view) the next queries read."""

    def read_failures(self) -> list[tuple[int, Any]]:
        """``(file index, frame as read() returns)`` of rows set aside while materialising."""

    def close(self) -> None:
        """Release the engine."""


def make_engine(name: str, **options: Any) -> Engine:
    """An engine by name (``duckdb`` or ``spark``); :class:`EngineUnavailableError` if absent."""
    # Imported here: each engine module imports this package (a cycle at the top), and only
    # the chosen engine is loaded.
    if name == "duckdb":
        from selfmodel.records.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(**options)
    if name == "spark":
        from selfmodel.records.engines.spark_engine import SparkEngine

        return SparkEngine(**options)
    raise InputError(f"unknown engine '{name}'. Use one of: {', '.join(ENGINES)}.")


def columns_of(inp: InputFile) -> dict[str, pl.DataType]:
    """A file's columns and their polars types, in file order (ingest's types of the file).

    JSONL: the keys of its first lines; CSV: its header as ingest reads it
    (none for a blank file); text for both. Parquet: its schema as polars reads it.
    """
    if inp.format == "jsonl":
        return dict.fromkeys(json_keys(inp.path), pl.Utf8())
    if inp.format == "csv":
        with inp.path.open("rb") as raw:
            blank = not raw.read(65536).strip(b"\xef\xbb\xbf \t\r\n")
        return {} if blank else dict.fromkeys(read_csv_header(inp), pl.Utf8())
    return dict(pl.read_parquet_schema(inp.path))


def count(eng: Engine, inp: InputFile, types: Mapping[str, pl.DataType],
          key: str | None = None) -> int:
    """Rows of a file that read without a failure (with ``key``: rows where it has a value).

    Read by the engine's own :meth:`Engine.read`, so the rows are the ones it reduces; as
    ingest's readers, a row that cannot be read (an invalid JSON line, a ragged CSV row) is
    not a row of the file here. ``types`` as :func:`columns_of` gives them.
    """
    # a JSONL file of broken lines has no sampled keys: any name reads as null
    keys = [key] if key is not None else list(types)[:1] or ["model"]
    rows = nw.from_native(eng.read(None, inp, keys, types)).filter(nw.col("_err").is_null())
    if key is not None:
        rows = rows.filter(~nw.col(key).is_null())
    return int(rows.select(nw.len()).collect(backend="polars").item())


def nested(types: Mapping[str, pl.DataType]) -> set[str]:
    """The columns that hold lists or structs: read as JSON text, as ingest reads them."""
    return {c for c, t in types.items() if t.is_nested()}


def _resolve(
    eng: Engine, inp: InputFile, options: IngestConfig
) -> tuple[dict[str, str | None], dict[str, pl.DataType], set[str]]:
    """Source column of each canonical column in one file, as ``selfmodel.records.ingest`` resolves it.

    Returns the sources (empty for a blank CSV file: nothing to read), the file's columns
    and types (:func:`columns_of`) and the unused columns. A missing required or mapped column is an
    error only when the file has rows (as ingest); otherwise it reads as NULL.
    """
    types = columns_of(inp)
    if inp.format == "csv" and not types:  # blank: no header, no rows
        return {}, {}, set()
    mapping, defaults = options.mapping, options.defaults
    if inp.format == "jsonl":  # a key not in the first lines is present if some line has it
        for c in INPUT_COLUMNS:
            source = mapping.get(c, c)
            if source not in types and (c in REQUIRED or c in mapping or c in defaults):
                if count(eng, inp, types, source) > 0:
                    types[source] = pl.Utf8()
    sources, unused = column_sources(inp, list(types), mapping, defaults,
                                     has_rows=functools.cache(lambda: count(eng, inp, types) > 0))
    if inp.format == "jsonl":  # canonical keys are always read (null when absent)
        sources = {c: s or (None if c in mapping or c in defaults else c)
                   for c, s in sources.items()}
    for s in sources.values():  # a list or struct: each value quarantined by its rule
        if s is not None and types.get(s) == pl.Binary:
            raise InputError(format_input_error(
                inp.name, f"column '{s}' holds {types[s]} values, not text or numbers",
                "Decode it to text before reducing", column=s))
    return sources, types, set(unused)


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
        :class:`EngineUnavailableError` when the engine is not installed.

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
        ignored: set[str] = set()
        plans: dict[int, tuple[InputFile, dict[str, str | None]]] = {}
        raws: list[nw.LazyFrame] = []
        for index, inp in enumerate(inputs):
            sources, types, unused = _resolve(eng, inp, options)
            if not sources:
                continue
            ignored |= unused
            plans[index] = (inp, sources)
            columns = list(dict.fromkeys(s for s in sources.values() if s is not None))
            raws.append(raw_rows(eng.read(index, inp, columns, types), inp.name, sources,
                                 options.defaults))
        parts: list[nw.LazyFrame] = []
        for batch in (raws, None):  # reader rejects are known once the first part is read
            batch = batch if batch is not None else [
                raw_rows(frame, plans[i][0].name, plans[i][1], options.defaults)
                for i, frame in eng.read_failures()]
            if batch:
                parts.append(eng.materialize(f"sm_grouped_{len(parts)}", grouped(
                    checked(nw.concat(batch, how="vertical"), tasks=options.tasks))))
        if not parts:  # nothing read: _summary says there are no records, with the counts
            per_file = per_variant = got = pl.DataFrame(schema=_NOTHING_READ)
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


#: The columns of the accounting tables (:func:`selfmodel.records.reduction.accounting`).
_NOTHING_READ: Final = {"source_file": pl.Utf8, "_cat": pl.Utf8, "conflicting": pl.Boolean,
                        "status": pl.Utf8, "model": pl.Utf8, "task": pl.Utf8,
                        "not_boolean": pl.Boolean, "keys": pl.Int64, "n": pl.Int64}


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
        raise no_records(paths, read, reasons, duplicate)
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
        "unreadable_predictions": sum(n for s, n in statuses.items() if s in UNREADABLE_STATUSES),
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(ignored),
        "predictions_not_boolean": count(used_rows.filter(pl.col("not_boolean")), "task", "keys"),
    }
