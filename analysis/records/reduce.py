r"""Streaming reduction of record files to model x task cell counts, for logs larger than memory.

:func:`reduce_cells` reads JSONL, CSV and Parquet record files in bounded memory and
returns the table of ``selfmodel.records.cells.to_cells(ingest(paths).records)`` without
holding the records: memory grows with the distinct (model, task, readable, outcome,
prediction class) combinations, not with the records. :func:`reduce_items` does the same
per ``(model, task, item_id)`` (``to_item_cells``); its memory grows with the model x item
pairs, which is its answer.

How it works (``docs/performance.md``, "Streaming reduction")
--------------------------------------------------------------
Files and columns are found as ingest finds them (:func:`~selfmodel.records.ingest.discover.discover_inputs`,
:func:`~selfmodel.records.ingest.columns.column_sources`). Pass 1: Parquet goes through
polars' lazy scanner; JSONL and CSV are read in blocks of ``chunk_bytes`` cut at line ends
(CSV: only outside quoted fields, the header put in front of each block), because polars'
own NDJSON and CSV scanners hold memory that grows with the file. Each piece becomes raw
rows (:func:`selfmodel.records.reduction.raw_rows`), is normalised and checked by ingest's
rules (:func:`selfmodel.records.reduction.checked`) and counted; the counts are summed as
the pieces go. Pass 2 (tiny): the binary-task rule and the cell GROUP BY
(:func:`selfmodel.records.reduction.cells`) over the summed counts.

A JSONL line that is not valid JSON, not an object or not UTF-8, and a CSV row with the
wrong number of fields, is an :class:`~selfmodel.records.contract.InputError` naming the
file, the line (counted from the start of the file, across blocks), ingest's reason and what
to do, where ingest would quarantine the row: the failing block is read again by ingest's
own reader (:mod:`selfmodel.records.ingest.readers`).

It does not de-duplicate (that needs every key in memory) and keeps no quarantine table,
data hash or per-file accounting: run it on files ``selfmodel ingest`` has checked
(``OUT/records.parquet``) or on logs known to hold one row per key.
``summary["rows_excluded"]`` counts the rows the rules drop, so that a mismatch with
ingest shows. With de-duplication, on DuckDB or Spark: :mod:`selfmodel.records.engines`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import narwhals as nw
import polars as pl

from selfmodel.records.contract import REQUIRED, InputError
from selfmodel.records.ingest.columns import column_sources
from selfmodel.records.ingest.discover import InputFile, discover_inputs
from selfmodel.records.ingest.readers import (
    json_keys,
    read_csv_file,
    read_csv_header,
    read_jsonl_file,
    scan_file,
)
from selfmodel.records.reduction import (
    CELL_SCHEMA,
    INPUT_COLUMNS,
    binary_tasks,
    cells,
    checked,
    finish_cells,
    raw_rows,
)
from selfmodel.records.registry import format_input_error

__all__ = ["ReduceResult", "reduce_cells", "reduce_items"]

#: Bytes of JSONL parsed at a time (peak memory is a small multiple of this).
CHUNK_BYTES: Final = 8 * 2**20

#: Keys of the pass-1 counts: per cell, and per item (:func:`reduce_items`).
CELL_KEYS: Final = ("model", "task", "readable", "outcome", "pred_class")
ITEM_KEYS: Final = ("model", "task", "item_id", "readable", "outcome", "pred_class")

#: Item columns in the order of :func:`selfmodel.records.cells.to_item_cells`.
ITEM_COLUMNS: Final = ("model", "task", "item_id", "n_total", "n", "k", "n_models_item")

#: Cell columns in the order of :func:`selfmodel.records.cells.to_cells`.
CELL_COLUMNS: Final = tuple(CELL_SCHEMA)



@dataclass(frozen=True)
class ReduceResult:
    """What :func:`reduce_cells` returns.

    Attributes
    ----------
    cells
        One row per (model, task), sorted, columns :data:`CELL_COLUMNS`.
    summary
        ``rows_read`` (non-blank rows scanned), ``rows_excluded`` (rows ingest would
        quarantine), ``rows_cross`` (valid rows whose predictor is another model),
        ``files`` (paths in reading order), ``partial_groups`` (rows of the pass-1 table).
    """

    cells: pl.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


#: Files in a folder that are not records (the registry; ingest's quarantine beside its records).
NOT_RECORDS: Final = ("registry.csv", "quarantine.parquet")


def _sources(inp: InputFile, mapping: Mapping[str, str]) -> dict[str, str]:
    """Canonical column -> source column present in the file (ingest's column resolution)."""
    if inp.format == "parquet":
        present = list(pl.read_parquet_schema(inp.path))
    elif inp.format == "csv":
        present = read_csv_header(inp)  # names stripped, as ingest reads them
    else:  # keys are per line: every wanted key but the required ones is read (null if absent)
        optional = (mapping.get(c, c) for c in INPUT_COLUMNS if c not in REQUIRED)
        present = list(dict.fromkeys([*json_keys(inp.path), *optional]))
    sources, _ = column_sources(inp, present, mapping, {})
    return {c: s for c, s in sources.items() if s is not None}


def _blocks(path: Path, chunk_bytes: int, *, quoted: bool = False) -> Iterator[tuple[int, bytes]]:
    """Yield ``(number of its first line, block)``; every block but the last ends at a line end.

    With ``quoted`` (CSV), a block ends only at a line end outside double quotes (an even
    number of ``"`` before it, the rule polars' CSV splitter follows), so that a quoted
    field holding a newline is never cut. A record longer than ``chunk_bytes`` makes one
    longer block. A UTF-8 byte-order mark at the start of the file is dropped.
    """
    line, rest = 1, b""
    with path.open("rb") as fh:
        if fh.read(3) != b"\xef\xbb\xbf":
            fh.seek(0)
        while block := fh.read(chunk_bytes):
            buf = rest + block if rest else block
            cut = buf.rfind(b"\n") + 1
            if quoted:
                odd = buf.count(b'"', 0, cut) % 2
                while cut and odd:
                    prev = buf.rfind(b"\n", 0, cut - 1) + 1
                    odd ^= buf.count(b'"', prev, cut) % 2
                    cut = prev
            if cut:
                yield line, buf[:cut]
                line += buf.count(b"\n", 0, cut)
            rest = buf[cut:]
    if rest:
        yield line, rest


def _header_end(block: bytes) -> int:
    """End of the first CSV record of ``block`` (the header), quotes respected."""
    start, odd = 0, 0
    while (nl := block.find(b"\n", start)) >= 0:
        odd ^= block.count(b'"', start, nl) % 2
        start = nl + 1
        if not odd:
            return start
    return len(block)


def _bad_block(inp: InputFile, wanted: Mapping[str, str], first: int, header: bytes,
               block: bytes, exc: Exception) -> InputError:
    """The error for a block polars could not parse (line ``first`` of the file on).

    The block alone (CSV: after its header) is read by ingest's reader, in a temporary file
    so that memory stays bounded; its first quarantined row is named with ingest's reason.
    A line ingest reads but polars does not (a ``NaN`` literal) is found line by line.
    """
    todo = ("Fix or remove the row, or run `selfmodel ingest` first (it quarantines such "
            "rows) and reduce its records.parquet")
    with tempfile.TemporaryDirectory() as tmp:
        part = replace(inp, path=Path(tmp) / f"block.{inp.format}")
        part.path.write_bytes(header + block)
        scan = functools.cache(lambda: scan_file(part, hashlib.sha256()))
        read = (read_csv_file(part, scan) if inp.format == "csv"
                else read_jsonl_file(part, scan, set(wanted.values())))
    found = [(line, why) for line, _, why, _ in read.bad]
    if not found and inp.format == "jsonl":
        found = [(n, f"invalid JSON for polars ({why})")
                 for n, line in enumerate(block.split(b"\n"), start=1)
                 if line.strip() and (why := _unparsed(line))]
    if not found:
        last = first + block.count(b"\n")
        return InputError(format_input_error(
            inp.name, f"polars could not parse lines {first}-{last} ({exc})", todo))
    line, why = min(found)
    return InputError(format_input_error(
        inp.name, why, todo, line=first + line - 1 - header.count(b"\n")))


def _unparsed(line: bytes) -> str | None:
    """Why polars cannot read one non-blank JSONL line (``None``: it can)."""
    try:
        pl.read_ndjson(io.BytesIO(line))
    except Exception as exc:  # noqa: BLE001 - the message is the answer
        return str(exc)
    return None


def _partial_counts(
    raw: nw.LazyFrame, tasks: Sequence[str] | None, keys: Sequence[str] = CELL_KEYS
) -> pl.LazyFrame:
    """Pass 1: the rules of :mod:`selfmodel.records.reduction`, then counts per ``keys``.

    ``_bad`` marks rows ingest would quarantine, ``_self`` self-predictions.
    """
    rows = checked(raw, tasks=tuple(tasks) if tasks is not None else None).to_native()
    pred = pl.col("prediction")
    staged = rows.select(
        pl.col("_cat").is_not_null().alias("_bad"), "model", "task",
        *([pl.col("item_id")] if "item_id" in keys else []),
        (pl.col("predictor") == pl.col("model")).alias("_self"),
        ((pl.col("status") == "ok") & pl.col("correct").is_not_null()).alias("readable"),
        pl.col("correct").alias("_correct"), "outcome",
        pl.when(pred.is_in(["true", "false"])).then(pred).when(pred.is_null()).then(None)
        .otherwise(pl.lit("other")).alias("pred_class"),
    )
    return staged.group_by("_bad", "_self", *keys).agg(
        pl.len().cast(pl.Int64).alias("count"),
        pl.col("_correct").sum().cast(pl.Int64).alias("correct"),
    )


def _non_boolean_unreadable(partial: pl.DataFrame) -> pl.DataFrame:
    """The binary-task rule (:func:`selfmodel.records.reduction.binary_tasks`) on partial counts.

    In a binary task, a valid row whose prediction is not a boolean is unreadable.
    """
    found = binary_tasks(nw.from_native(partial).lazy(), ~nw.col("_bad")).collect()
    other = (~pl.col("_bad") & pl.col("task").is_in(found.get_column("task").to_list())
             & (pl.col("pred_class") == "other"))
    return partial.with_columns(pl.when(other).then(False).otherwise("readable").alias("readable"))


def _sum_partials(parts: Sequence[pl.DataFrame], keys: Sequence[str]) -> pl.DataFrame:
    """Sum partial counts over blocks or files (the counts are additive)."""
    if len(parts) == 1:
        return parts[0]
    return pl.concat(parts, how="vertical").group_by("_bad", "_self", *keys).agg(
        pl.col("count").sum(), pl.col("correct").sum()
    )


def _cells_from_partial(partial: pl.DataFrame) -> pl.DataFrame:
    """Pass 2: the cell GROUP BY of :mod:`selfmodel.records.reduction` over the partial counts."""
    rows = nw.from_native(partial.rename({"pred_class": "prediction"}).lazy())
    return finish_cells(cells(rows).collect().to_native())


def _items_from_partial(partial: pl.DataFrame) -> pl.DataFrame:
    """Pass 2 for items: the columns and dtypes of ``to_item_cells``."""
    r = pl.col("readable").fill_null(False)
    counts = ("n_total", "n", "k", "n_models_item")
    return (
        partial.group_by("model", "task", "item_id")
        .agg(
            pl.col("count").sum().alias("n_total"),
            pl.when(r).then(pl.col("count")).otherwise(0).sum().alias("n"),
            pl.col("correct").filter(r).sum().alias("k"),
        )
        .with_columns((pl.col("n") > 0).sum().over(["task", "item_id"]).alias("n_models_item"))
        .with_columns([pl.col(c).cast(pl.Int64) for c in counts])
        .select(list(ITEM_COLUMNS))
        .sort("model", "task", "item_id")
    )


def _frames(inp: InputFile, wanted: Mapping[str, str], chunk_bytes: int) -> Iterator[nw.LazyFrame]:
    """One file's raw rows (:func:`selfmodel.records.reduction.raw_rows`), a bounded piece at a time.

    Parquet as one lazy scan; JSONL and CSV a block at a time (CSV: the header put in front
    of each block). A block polars cannot parse is an error naming the line at fault.
    """
    if inp.format == "parquet":
        yield raw_rows(pl.scan_parquet(inp.path), inp.name, wanted, err=None)
        return
    schema = {s: pl.Utf8() for s in sorted(set(wanted.values()))}
    csv_file, header, read = inp.format == "csv", b"", False
    for first, block in _blocks(inp.path, chunk_bytes, quoted=csv_file):
        if csv_file and not header:
            cut = _header_end(block)
            header, block = block[:cut].rstrip(b"\n") + b"\n", block[cut:]
            first += header.count(b"\n")
        if not block or (not csv_file and block.isspace()):
            continue
        try:
            frame = (pl.read_csv(header + block, infer_schema=False) if csv_file
                     else pl.read_ndjson(io.BytesIO(block), schema=schema))
            if csv_file:  # header names stripped, as read_csv_header gives them
                frame.columns = [c.strip() for c in frame.columns]
        except Exception as exc:  # noqa: BLE001 - polars names no line: find it
            raise _bad_block(inp, wanted, first, header, block, exc) from exc
        read = True
        yield raw_rows(frame, inp.name, wanted, err=None)
    if not read:  # no records: an empty frame of the right schema
        yield raw_rows(pl.LazyFrame(schema=schema), inp.name, wanted, err=None)


def _reduce(
    paths: Sequence[Path | str],
    *,
    mapping: Mapping[str, str] | None,
    tasks: Sequence[str] | None,
    keys: Sequence[str],
    chunk_bytes: int,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Pass 1 over every file, summing as it goes; the self-prediction counts and the summary."""
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    inputs = discover_inputs([paths] if isinstance(paths, str | Path) else paths,
                             exclude=NOT_RECORDS)
    partial: pl.DataFrame | None = None
    for inp in inputs:
        for frame in _frames(inp, _sources(inp, mapping or {}), chunk_bytes):
            try:
                part = _partial_counts(frame, tasks, keys).collect(engine="streaming")
            except pl.exceptions.PolarsError as exc:
                raise InputError(format_input_error(
                    inp.name, f"polars could not read the file ({exc})",
                    "Run `selfmodel ingest` on it, which names the rows at fault")) from exc
            partial = part if partial is None else _sum_partials([partial, part], keys)
    assert partial is not None  # discover_inputs finds a file or fails
    partial = _non_boolean_unreadable(partial)
    bad = partial.filter(pl.col("_bad"))
    cross = partial.filter(~pl.col("_bad") & ~pl.col("_self").fill_null(False))
    used = partial.filter(~pl.col("_bad") & pl.col("_self").fill_null(False)).drop("_bad", "_self")
    summary = {
        "rows_read": int(partial["count"].sum()),
        "rows_excluded": int(bad["count"].sum()),
        "rows_cross": int(cross["count"].sum()),
        "files": [inp.name for inp in inputs],
        "partial_groups": partial.height,
    }
    return used, summary


def reduce_cells(
    paths: Sequence[Path | str],
    *,
    mapping: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> ReduceResult:
    r"""Reduce record files to model x task cell counts in one pass, in bounded memory.

    Parameters
    ----------
    paths
        Record files and/or folders (searched recursively; ``registry.csv`` and
        ``quarantine.parquet`` are skipped).
    mapping
        Canonical column -> source column (``{"item_id": "question_id"}``).
    tasks
        Allowed tasks (rows of other tasks are excluded, as ingest quarantines them).
    chunk_bytes
        Bytes of JSONL parsed at a time (peak memory is a small multiple of it).

    Returns
    -------
    ReduceResult
        ``cells`` equal to ``to_cells(ingest(paths).records)`` for files without
        duplicates, and a small ``summary``.

    Raises
    ------
    InputError
        A missing required column, or a JSONL line that is not a JSON object (with its
        file and line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = p.write_text("model,task,item_id,prediction,outcome\n"
    ...                  "m,t,1,yes,true\nm,t,2,no,true\nm,t,3,,false\n")
    >>> reduce_cells([p]).cells.select("n_total", "n", "k", "hits", "n_unreadable").row(0)
    (3, 2, 1, 1, 1)
    """
    used, summary = _reduce(paths, mapping=mapping, tasks=tasks, keys=CELL_KEYS,
                            chunk_bytes=chunk_bytes)
    return ReduceResult(cells=_cells_from_partial(used), summary=summary)


def reduce_items(
    paths: Sequence[Path | str],
    *,
    mapping: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> ReduceResult:
    r"""Reduce record files to model x task x item counts (for ``models/items.py``).

    As :func:`reduce_cells`, but one row per ``(model, task, item_id)``; memory grows
    with the number of such rows, not with the records (repeats are summed).

    Parameters
    ----------
    paths, mapping, tasks, chunk_bytes
        As in :func:`reduce_cells`.

    Returns
    -------
    ReduceResult
        ``cells`` with the columns of :data:`ITEM_COLUMNS`, equal to
        ``to_item_cells(ingest(paths).records)`` for files without duplicates.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text(
    ...     '{"model":"a","task":"t","item_id":"i","prediction":"yes","outcome":"yes"}\n'
    ...     '{"model":"b","task":"t","item_id":"i","prediction":"yes","outcome":"no"}\n')
    >>> reduce_items([p]).cells.select("model", "n", "k", "n_models_item").rows()
    [('a', 1, 1, 2), ('b', 1, 0, 2)]
    """
    used, summary = _reduce(paths, mapping=mapping, tasks=tasks, keys=ITEM_KEYS,
                            chunk_bytes=chunk_bytes)
    return ReduceResult(cells=_items_from_partial(used), summary=summary)
