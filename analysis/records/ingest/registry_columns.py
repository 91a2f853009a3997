"""Registry columns found in the records (``family``, ``params_b`` ...): compared, said, not read.

A model's family, sizes and flags come from the registry only: records that carry such a
column are compared with the registry, value by value as the registry reads them
(:func:`selfmodel.records.registry.parse_value`), and every disagreement (``differs``,
``not_in_registry``) is said and recorded in ``ingest.json``; the rule as a user meets it:
``docs/records.md`` ("Registry columns in the records").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from selfmodel.records.contract import REGISTRY_SCHEMA
from selfmodel.records.reduction import MISSING_SPELLINGS, WHITE_SPACE
from selfmodel.records.registry import parse_value

__all__ = ["REGISTRY_COLUMNS", "VALUES_SCHEMA", "contradictions", "registry_values"]

#: The registry's columns other than the join key: a model's attributes.
REGISTRY_COLUMNS: Final = tuple(c for c in REGISTRY_SCHEMA if c != "model")

#: One row per (file, model, column, value): where it is first seen and in how many rows.
VALUES_SCHEMA: Final = {"__file_idx": pl.Int64(), "model": pl.Utf8(), "column": pl.Utf8(),
                        "value": pl.Utf8(), "line": pl.Int64(), "rows": pl.Int64()}


def _text(expr: pl.Expr) -> pl.Expr:
    t = expr.cast(pl.Utf8).str.strip_chars(WHITE_SPACE)
    return pl.when((t != "") & ~t.is_in(MISSING_SPELLINGS)).then(t)


def registry_values(model: pl.Series, frame: pl.DataFrame, unused: Iterable[str], index: int,
                    line: str) -> pl.DataFrame | None:
    """The distinct values of the registry columns among a file's ``unused`` columns.

    ``model`` is the file's canonical ``model`` column (row-aligned with ``frame``), ``line``
    the name of ``frame``'s line-number column. ``None`` when the file has no such column.
    """
    columns = [c for c in REGISTRY_COLUMNS if c in set(unused) and c in frame.columns]
    if not columns:
        return None
    base = frame.select(_text(pl.lit(model)).alias("model"), pl.col(line).alias("line"),
                        *(_text(pl.col(c)).alias(c) for c in columns))
    parts = [
        base.filter(pl.col("model").is_not_null() & pl.col(c).is_not_null())
        .group_by("model", c).agg(pl.col("line").min(), pl.len().alias("rows"))
        .select(pl.lit(index, dtype=pl.Int64).alias("__file_idx"), "model",
                pl.lit(c).alias("column"), pl.col(c).alias("value"), "line",
                pl.col("rows").cast(pl.Int64))
        for c in columns
    ]
    found = pl.concat(parts, how="vertical").cast(pl.Schema(VALUES_SCHEMA))
    # rebuilt from Python values: the few rows found would keep the batch's text buffers
    return pl.DataFrame(found.rows(), schema=VALUES_SCHEMA, orient="row")


def _same(column: str, value: str, registered: Any) -> bool:
    parsed, problem = parse_value(column, value)
    return problem is None and parsed is not None and parsed == registered


def _shown(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


def contradictions(values: Sequence[pl.DataFrame], names: Sequence[str],
                   registry: pl.DataFrame | None, registry_path: Path | str | None
                   ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(registry_columns_in_records, registry_contradictions)`` of ``ingest.json``.

    ``values``: what :func:`registry_values` found in each file; ``names``: the files'
    ``source_file`` names by index. The first: per column the rows with a value and how many
    agree with the registry, differ from it, or belong to a model it does not list. The
    second: one entry per column and kind that occurs, each with its models, rows, an
    example (the first model in name order, its first row) and the sentence said.
    """
    if not values:
        return {}, []
    found = pl.concat(values, how="vertical").sort("column", "model", "__file_idx", "line")
    rows = (registry.to_dicts() if registry is not None else [])
    known = {r["model"]: r for r in rows}
    counts: dict[str, dict[str, int]] = {}
    kinds: dict[tuple[str, str], dict[str, Any]] = {}
    for f, model, column, value, line, n in found.iter_rows():
        entry = counts.setdefault(column, {"rows": 0, "agree": 0, "differ": 0,
                                           "not_in_registry": 0})
        entry["rows"] += n
        if model in known and _same(column, value, known[model][column]):
            entry["agree"] += n
            continue
        kind = "differs" if model in known else "not_in_registry"
        entry["differ" if kind == "differs" else "not_in_registry"] += n
        k = kinds.setdefault((column, kind), {"column": column, "kind": kind, "models": set(),
                                              "rows": 0, "example": None})
        k["models"].add(model)
        k["rows"] += n
        if k["example"] is None:
            k["example"] = {"model": model, "records": value, "file": names[f], "line": line,
                            "registry": known[model][column] if model in known else None}
    notes = []
    for _, k in sorted(kinds.items(), key=lambda item: item[0]):
        note = {**k, "models": len(k["models"])}
        note["text"] = _sentence(note, registry_path)
        notes.append(note)
    return dict(sorted(counts.items())), notes


def _sentence(note: dict[str, Any], registry_path: Path | str | None) -> str:
    ex, column, n, rows = note["example"], note["column"], note["models"], note["rows"]
    models = f"{n:,} model{'s' if n != 1 else ''} ({rows:,} row{'s' if rows != 1 else ''})"
    where = f"{ex['file']}: line {ex['line']}"
    if note["kind"] == "differs":
        return (f"records column '{column}' differs from the registry {registry_path} for "
                f"{models}, e.g. model {ex['model']!r}: {ex['records']!r} in {where}, "
                f"{_shown(ex['registry'])} in the registry. The registry's value is used; the records' "
                f"column is not read (correct the registry, or drop the column).")
    if registry_path is None:
        return (f"records column '{column}' gives values for {models}, e.g. model "
                f"{ex['model']!r}: {ex['records']!r} in {where}, but a model's {column} is "
                "read from a registry only; it is not used (each model is its own family, "
                "without a size). Write it into a registry (--registry).")
    return (f"records column '{column}' gives values for {models} that the registry "
            f"{registry_path} does not list, e.g. model {ex['model']!r}: {ex['records']!r} in "
            f"{where}; it is not used (each is its own family, without a size). Add them "
            "to the registry.")
