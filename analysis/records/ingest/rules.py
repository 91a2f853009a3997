"""The validation of one file's records: the rules of :mod:`selfmodel.records.reduction`, with reasons.

The rules themselves (and the reading of values they need) are defined once, in
:func:`selfmodel.records.reduction.rules`; ingest runs them on polars and, for the failing rows
only, writes each one's reason.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from selfmodel.records.contract import RECORD_SCHEMA
from selfmodel.records.ingest.readers import LINE
from selfmodel.records.reduction import (
    ID_COLUMNS,
    INPUT_COLUMNS,
    MISSING_SPELLINGS,
    NOT_AN_ID,
    WHITE_SPACE,
    checked,
)

__all__ = ["BAD_SCHEMA", "GOOD_SCHEMA", "ID_COLUMNS", "NOT_AN_ID", "validate"]


#: Columns of the valid rows :func:`validate` returns (``source_file`` is added at the end).
GOOD_SCHEMA: Final = {c: t for c, t in RECORD_SCHEMA.items() if c != "source_file"}
BAD_SCHEMA: Final = {LINE: pl.Int64(), "__cat": pl.Utf8(), "__reason": pl.Utf8()}


#: Rows sampled to judge whether a column has few distinct values.
PROBE: Final = 10_000


def clean_columns(frame: pl.DataFrame) -> set[str]:
    """Text columns that are their own text: no value is empty, missing or needs stripping.

    Found from the distinct values, which is cheap for the usual low-cardinality columns
    (model, task, outcome, status); a column with many distinct values (judged from its
    first rows) is not checked and is normalised row by row.
    """
    clean: set[str] = set()
    for c in INPUT_COLUMNS:
        column = frame.get_column(c)
        if column.dtype != pl.Utf8 or column.head(PROBE).n_unique() > PROBE // 4:
            continue
        values = column.unique().drop_nulls()
        if values.len() * 4 > column.len() and column.len() > PROBE:
            continue
        if not ((values == "").any() or values.is_in(MISSING_SPELLINGS).any()
                or not (values.str.strip_chars(WHITE_SPACE) == values).all()):
            clean.add(c)
    return clean


def validate(
    frame: pl.DataFrame, *, tasks: tuple[str, ...] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split canonical columns of one file into valid records and ``(line, cat, reason)``.

    Every column is read as text (a typed Parquet column through its text, as the SQL
    engines read it); the first failing rule's reason is worked out for the failing rows
    only.
    """
    raw = frame.select(
        pl.lit("").alias("source_file"), pl.lit(None, dtype=pl.Utf8).alias("_err"),
        *(pl.col(c) if frame.schema[c] == pl.Utf8 else pl.col(c).cast(pl.Utf8)
          for c in INPUT_COLUMNS), pl.col(LINE),
    )
    rows = checked(raw.lazy(), tasks=tasks, keep=(LINE,), clean=clean_columns(raw))
    rows = rows.to_native().collect()
    valid = rows.get_column("_cat").is_null()
    good = rows.filter(valid).select(*INPUT_COLUMNS, pl.col(LINE).alias("source_line"))
    good = good.cast(pl.Schema(GOOD_SCHEMA))
    if valid.all():
        return good, pl.DataFrame(schema=BAD_SCHEMA)
    bad = checked(raw.filter(~valid).lazy(), tasks=tasks, keep=(LINE,), why=True).to_native()
    bad = bad.select(LINE, "_cat", "_reason").collect()
    return good, bad.rename({"_cat": "__cat", "_reason": "__reason"}).cast(pl.Schema(BAD_SCHEMA))
