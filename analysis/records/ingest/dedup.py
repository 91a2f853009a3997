"""Ordering and de-duplication of records on the record key."""

from __future__ import annotations

from typing import Final

import polars as pl

from selfmodel.records.contract import (
    KEY,
)

#: Columns that must agree for two rows with the same KEY to be exact duplicates.
COMPARED: Final = ("prediction", "outcome", "correct", "confidence", "status")


def _key_codes(records: pl.DataFrame) -> pl.Expr | list[str]:
    """One ``UInt64`` sort key that orders rows as ``KEY`` does, or the columns to sort by.

    Each key column becomes the rank of its value among the column's distinct values
    (strings in byte order, as polars sorts them), and the ranks are packed into one
    integer: sorting that is much cheaper than a multi-column string sort. When the packed
    ranks would not fit in 64 bits, the ``KEY`` columns themselves are returned.
    """
    codes: list[tuple[pl.Expr, int]] = []
    total = 1
    for c in KEY:
        column = records.get_column(c)
        if column.dtype == pl.Utf8:
            # run_id may be missing: "" sorts first, as null does in a multi-column sort
            column = column.fill_null("")
            levels = column.unique().sort()
            n_levels = levels.len()
            if n_levels * 4 <= column.len():
                code = pl.col(c).fill_null("").cast(pl.Enum(levels)).to_physical()
                code = code.cast(pl.UInt64)
            else:  # many distinct values: ranking sorts the column anyway
                code = pl.col(c).fill_null("").rank("dense").cast(pl.UInt64) - 1
        else:  # sample: a non-negative Int64
            low, high = column.min(), column.max()
            if not isinstance(low, int) or not isinstance(high, int) or low < 0 or high >= 2**32:
                return list(KEY)
            n_levels = high + 1
            code = pl.col(c).cast(pl.UInt64)
        total *= max(n_levels, 1)
        if total >= 2**63:
            return list(KEY)
        codes.append((code, max(n_levels, 1)))
    packed = pl.lit(0, dtype=pl.UInt64)
    for code, size in codes:
        packed = packed * pl.lit(size, dtype=pl.UInt64) + code
    return packed


def order_and_deduplicate(
    records: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Sort valid rows by ``KEY`` and reading order; return ``(kept, conflicts, n_copies)``.

    ``records`` must be in reading order (files by index, lines ascending): the sort is
    stable, so rows with equal keys stay in reading order, which is the order of
    ``source_file, source_line`` (files are indexed in sorted name order). Copies of a key
    are then adjacent. ``conflicts`` has ``__file_idx``, ``source_line``, ``__ref_file``,
    ``__ref_line`` (the first other copy) of every conflicting copy.
    """
    empty_conflicts = pl.DataFrame(
        schema={
            "__file_idx": pl.Int64(),
            "source_line": pl.Int64(),
            "__ref_file": pl.Int64(),
            "__ref_line": pl.Int64(),
        }
    )
    if records.height == 0:
        return records, empty_conflicts, 0
    key = _key_codes(records)
    if isinstance(key, list):
        same = pl.all_horizontal(
            [pl.col(c).eq_missing(pl.col(c).shift(1)) for c in key]
        ).fill_null(False)
        ordered = records.sort(key, maintain_order=True).with_columns(
            (~same).cum_sum().alias("__key")
        )
    else:
        ordered = records.with_columns(key.alias("__key"))
        # rows already in key order (e.g. records ingest wrote): a stable sort is the
        # identity, so skip moving every column (one pass over the key instead)
        if not ordered.get_column("__key").is_sorted():
            ordered = ordered.sort("__key", maintain_order=True)
    k = pl.col("__key")
    in_group = ((k == k.shift(1)) | (k == k.shift(-1))).fill_null(False)
    flags = ordered.select(in_group.alias("__multi")).get_column("__multi")
    if not flags.any():
        return ordered.drop("__key"), empty_conflicts, 0
    multi = (
        ordered.with_row_index("__row")
        .filter(flags)
        .with_columns(
            pl.struct(list(COMPARED)).n_unique().over("__key").alias("__nv"),
            pl.int_range(pl.len()).over("__key").alias("__rank"),
        )
    )

    def ref(col: str) -> pl.Expr:
        first = pl.col(col).first().over("__key")
        second = pl.col(col).slice(1, 1).first().over("__key")
        return pl.when(pl.col("__rank") == 0).then(second).otherwise(first)

    conflicts = multi.filter(pl.col("__nv") > 1).select(
        pl.col("__file_idx"),
        pl.col("source_line"),
        ref("__file_idx").alias("__ref_file"),
        ref("source_line").alias("__ref_line"),
    )
    dropped = multi.filter((pl.col("__nv") > 1) | (pl.col("__rank") > 0))
    n_copies = dropped.height - conflicts.height
    kept = (
        ordered.with_row_index("__row")
        .filter(~pl.col("__row").is_in(dropped.get_column("__row").implode()))
        .drop("__row", "__key")
    )
    return kept, conflicts, n_copies
