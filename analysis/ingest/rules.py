"""The validation of one file's records: the rules of :mod:`selfmodel.reduction`, with reasons.

The rules themselves (and the reading of values they need) are defined once, in
:func:`selfmodel.reduction.rules`; ingest runs them on polars and, for the failing rows
only, writes each one's reason. :func:`text_of` and :func:`bool_of` read values the same
way for the records mapping (:mod:`selfmodel.importers.mapping`).
"""

from __future__ import annotations

from typing import Final

import polars as pl

from selfmodel.contract import FALSE_STRINGS, MISSING_STRINGS, RECORD_SCHEMA, TRUE_STRINGS
from selfmodel.ingest.readers import LINE
from selfmodel.reduction import ID_COLUMNS, INPUT_COLUMNS, NOT_AN_ID, checked, reasons

__all__ = ["BAD_SCHEMA", "GOOD_SCHEMA", "ID_COLUMNS", "NOT_AN_ID", "bool_of", "text_of",
           "validate"]


def text_of(name: str, dtype: pl.DataType) -> pl.Expr:
    """Stripped text of a column of any scalar dtype; empty, null, NaN, None become null."""
    expr = pl.col(name)
    if dtype != pl.Utf8:
        expr = expr.cast(pl.Utf8)
    expr = expr.str.strip_chars()
    missing = (expr == "") | expr.str.to_lowercase().is_in(sorted(MISSING_STRINGS))
    return pl.when(missing).then(None).otherwise(expr)


def bool_of(text: pl.Expr) -> pl.Expr:
    """True/false for a boolean written any way (true/1/1.0/yes/y/t, any case), else null."""
    low = text.str.to_lowercase()
    return (pl.when(low.is_in(sorted(TRUE_STRINGS))).then(True)
            .when(low.is_in(sorted(FALSE_STRINGS))).then(False).otherwise(None))


#: Columns of the valid rows :func:`validate` returns (``source_file`` is added at the end).
GOOD_SCHEMA: Final = {c: t for c, t in RECORD_SCHEMA.items() if c != "source_file"}
BAD_SCHEMA: Final = {LINE: pl.Int64(), "__cat": pl.Utf8(), "__reason": pl.Utf8()}


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
    rows = checked(raw.lazy(), tasks=tasks, keep=(LINE,)).to_native().collect()
    valid = rows.get_column("_cat").is_null()
    good = rows.filter(valid).select(*INPUT_COLUMNS, pl.col(LINE).alias("source_line"))
    good = good.cast(pl.Schema(GOOD_SCHEMA))
    if valid.all():
        return good, pl.DataFrame(schema=BAD_SCHEMA)
    bad = reasons(raw.filter(~valid).lazy(), tasks=tasks, keep=(LINE,)).to_native().collect()
    return good, bad.rename({"_cat": "__cat", "_reason": "__reason"}).cast(pl.Schema(BAD_SCHEMA))
