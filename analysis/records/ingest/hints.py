"""Hints about the columns ingest ignores: repeats told apart only by an unmapped column.

Rows that share a record key (:data:`~selfmodel.records.contract.KEY`) are duplicates (kept once) or
conflicting duplicates (quarantined). When such rows are told apart by a column ingest does
not read (``iteration``, ``repeat``, ``seed``), they are most likely repeats of one item, and
mapping that column to ``sample`` keeps them all. :func:`repeat_columns` finds those columns
(within each file; only columns of non-negative integers, which ``sample`` must be); ingest
turns them into a hint (``ingest.json`` ``hints``).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from selfmodel.records.contract import KEY
from selfmodel.records.snippets import snippet

#: At most this many ignored columns are examined per file.
MAX_COLUMNS = 20


def repeat_columns(canonical: pl.DataFrame, raw: pl.DataFrame, unused: Iterable[str]
                   ) -> dict[str, int]:
    """Ignored columns whose values differ among rows that share a record key.

    Parameters
    ----------
    canonical
        The file's canonical columns (before validation), row-aligned with ``raw``.
    raw
        The file's columns as read.
    unused
        The columns ingest ignores.

    Returns
    -------
    dict
        Column -> number of rows sharing a key with another row that has another value in it.

    Examples
    --------
    >>> can = pl.DataFrame({k: ["a", "a", "b"] if k == "item_id" else ["x"] * 3 for k in KEY})
    >>> raw = pl.DataFrame({"iteration": ["1", "2", "1"], "note": ["n", "n", "n"],
    ...                     "latency": ["0.5", "0.7", "0.2"]})
    >>> repeat_columns(can, raw, ["iteration", "note", "latency"])
    {'iteration': 2}
    """
    cols = [c for c in unused if c in raw.columns][:MAX_COLUMNS]
    if not cols or canonical.height < 2:
        return {}
    keys = canonical.select([pl.col(k).cast(pl.Utf8).alias(f"__k_{k}") for k in KEY])
    frame = pl.concat([keys, raw.select(pl.col(c).cast(pl.Utf8) for c in cols)],
                      how="horizontal")
    names = list(keys.columns)
    dup = frame.filter(pl.struct(names).is_duplicated())
    if dup.height == 0:
        return {}
    out: dict[str, int] = {}
    for c in cols:
        values = dup.get_column(c).drop_nulls().str.strip_chars().cast(pl.Float64, strict=False)
        if values.len() == 0 or values.null_count() or not ((values >= 0)
                                                           & (values == values.floor())).all():
            continue  # only a column of non-negative integers can be the sample index
        n = (dup.group_by(names).agg(pl.col(c).n_unique().alias("u"), pl.len().alias("n"))
             .filter(pl.col("u") > 1)["n"].sum())
        if n:
            out[c] = int(n)
    return out


def repeat_hint(counts: dict[str, int]) -> str | None:
    """The hint sentence for :func:`repeat_columns` (summed over files), or ``None``."""
    if not counts:
        return None
    col, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    return (f"{n} rows share model, task and item_id and are told apart only by the ignored "
            f"column '{col}': if they are repeats of an item, map it to sample "
            f"({snippet(f'--map sample={col}', kind='cli')}, or "
            f"{snippet(f'sample = {_quoted(col)}', table='map')} in a mapping file).")


def _quoted(text: str) -> str:
    """``text`` as a TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
