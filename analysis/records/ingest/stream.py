"""Ingest of inputs larger than memory: batches spilled to disk, sorted by DuckDB, written in row groups.

:func:`selfmodel.records.ingest.ingest` reads every file in batches
(:mod:`~selfmodel.records.ingest.readers`) and validates each batch on its own. What it does
with the batches' rows is the only difference between its two ways of working:

* in memory (inputs up to :data:`STREAM_ABOVE` bytes): the rows of all batches are kept,
  then ordered and de-duplicated at once (:func:`~selfmodel.records.ingest.dedup.order_and_deduplicate`);
* streamed (larger inputs, or ``stream=True``): each batch's rows go to Parquet files in a
  private temporary folder (:class:`Spill`); DuckDB sorts them by the record key on disk
  within :data:`DUCKDB_MEMORY` (:func:`sorted_batches`), and the sorted rows come back in
  batches that end at a key's last copy (:func:`key_groups`), so that the same
  ``order_and_deduplicate`` runs on each. The quarantine is sorted the same way.

Both write ``records.parquet`` and ``quarantine.parquet`` with :class:`TableWriter`, in row
groups of :data:`ROW_GROUP` rows whatever the batches, so the two ways give the same bytes
(``tests/test_ingest_stream.py``). Memory then stays within a bound that does not grow with
the input (measured in ``docs/performance.md``): a batch being validated, DuckDB's limit,
and one row group being written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from selfmodel.common import atomic
from selfmodel.records.contract import KEY, InputError
from selfmodel.records.ingest.discover import env_size
from selfmodel.records.registry import format_input_error

__all__ = [
    "DUCKDB_MEMORY",
    "ROW_GROUP",
    "STREAM_ABOVE",
    "STREAM_ENV",
    "Spill",
    "TableWriter",
    "key_groups",
    "sorted_batches",
    "stream_limit",
]

#: Inputs larger than this (bytes, all files together) are streamed; the environment
#: variable :data:`STREAM_ENV` sets another limit (``0``: always stream).
STREAM_ABOVE: Final = 256 * 2**20
STREAM_ENV: Final = "SELFMODEL_STREAM_ABOVE"
#: DuckDB's memory limit while it sorts the spilled rows (it spills beyond it).
DUCKDB_MEMORY: Final = "256MB"
#: Rows per row group of ``records.parquet`` and ``quarantine.parquet``.
ROW_GROUP: Final = 262_144
#: Rows per batch fetched from DuckDB's sorted result.
FETCH_ROWS: Final = 262_144


def stream_limit() -> int:
    """Bytes of input above which ingest streams (:data:`STREAM_ENV`, else :data:`STREAM_ABOVE`)."""
    return env_size(STREAM_ENV, STREAM_ABOVE)


class TableWriter:
    """A Parquet file written in row groups of exactly :data:`ROW_GROUP` rows (the last fewer).

    The bytes depend only on the rows and their order, not on how they were handed in, so
    one table written whole and the same table written in batches are the same file.
    """

    def __init__(self, path: Path, schema: dict[str, pl.DataType]) -> None:
        self.path = path
        self.columns = list(schema)
        self.schema = _arrow_schema(schema)
        self._writer = pq.ParquetWriter(path, self.schema, compression="zstd")
        self._pending: list[pa.Table] = []
        self._rows = 0

    def write(self, frame: pl.DataFrame) -> None:
        """Append the rows of ``frame`` (its columns are selected and cast to the schema)."""
        if frame.height == 0:
            return
        self._pending.append(frame.select(self.columns).to_arrow().cast(self.schema))
        self._rows += frame.height
        if self._rows >= ROW_GROUP:
            table = pa.concat_tables(self._pending)
            full = (self._rows // ROW_GROUP) * ROW_GROUP
            for start in range(0, full, ROW_GROUP):
                self._group(table.slice(start, ROW_GROUP))
            rest = table.slice(full)
            self._pending, self._rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> None:
        """Write the last row group and close the file."""
        if self._pending:
            self._group(pa.concat_tables(self._pending))
        self._pending, self._rows = [], 0
        self._writer.close()

    def _group(self, table: pa.Table) -> None:
        """One row group, its columns made contiguous: pages do not follow the batches."""
        self._writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP)


#: Arrow types of the polars types of the record and quarantine tables.
_ARROW: Final = ((pl.Utf8, pa.large_string()), (pl.Int64, pa.int64()),
                 (pl.Float64, pa.float64()), (pl.Boolean, pa.bool_()))


def _arrow_schema(schema: dict[str, pl.DataType]) -> pa.Schema:
    """The Arrow schema of a polars schema, text as ``large_string`` (polars' own)."""
    return pa.schema([(c, next(a for p, a in _ARROW if t == p)) for c, t in schema.items()])


def write_table(path: Path, frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> None:
    """Write a whole table as :class:`TableWriter` writes it in batches."""
    writer = TableWriter(path, schema)
    try:
        writer.write(frame)
    finally:
        writer.close()


class Spill:
    """A private temporary folder of Parquet parts (valid rows, quarantined rows, records).

    Made in the system's temporary folder (``TMPDIR``); removed by :meth:`remove`. A full
    disk is an :class:`InputError` that says so.
    """

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="selfmodel-ingest-"))
        self.parts: dict[str, list[Path]] = {"good": [], "bad": [], "kept": []}

    def add(self, kind: str, frame: pl.DataFrame) -> None:
        """Write ``frame`` as the next part of ``kind`` (``good``, ``bad`` or ``kept``)."""
        if frame.height == 0:
            return
        path = self.folder / f"{kind}-{len(self.parts[kind]):06d}.parquet"
        try:
            frame.write_parquet(path, compression="lz4", statistics=False)
        except OSError as exc:
            raise _no_room(self.folder, exc) from exc
        self.parts[kind].append(path)

    def drop_parts(self) -> None:
        """Remove the parts (the finished tables stay)."""
        for paths in self.parts.values():
            for path in paths:
                path.unlink(missing_ok=True)
            paths.clear()
        shutil.rmtree(self.folder / "duckdb", ignore_errors=True)

    def remove(self) -> None:
        """Remove the folder and everything in it."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _no_room(folder: Path, exc: OSError) -> InputError:
    return InputError(format_input_error(
        None, f"ingest could not write its temporary files in {folder.parent} ({exc.strerror})",
        "Free space there, or set TMPDIR to a folder with room (about the input's size)"))


def sorted_batches(spill: Spill, kind: str, order: Sequence[str],
                   schema: dict[str, pl.DataType]) -> Iterator[pl.DataFrame]:
    """The rows of ``kind``'s parts sorted by ``order`` (nulls first), in batches.

    DuckDB sorts on disk beyond :data:`DUCKDB_MEMORY` (its temporary files in the spill
    folder). Text sorts by its bytes and nulls come first, as polars sorts it, so the
    order is the one ``order_and_deduplicate`` and the in-memory quarantine give.
    """
    if not spill.parts[kind]:
        return
    import duckdb  # only a streamed ingest needs it

    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
        con.execute(f"SET threads = {max(1, min(2, os.cpu_count() or 1))}")
        con.execute("SET preserve_insertion_order = false")
        temp = spill.folder / "duckdb"
        con.execute(f"SET temp_directory = '{_sql_text(str(temp))}'")
        files = ", ".join(f"'{_sql_text(p.as_posix())}'" for p in spill.parts[kind])
        by = ", ".join(f'"{c}" NULLS FIRST' for c in order)
        reader = con.sql(f"SELECT * FROM read_parquet([{files}]) ORDER BY {by}"
                         ).to_arrow_reader(FETCH_ROWS)
        for batch in reader:
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield frame.select(list(schema)).cast(pl.Schema(schema))
    except duckdb.IOException as exc:  # the temporary folder is full
        raise InputError(format_input_error(
            None, f"ingest could not sort its temporary files in {spill.folder.parent} ({exc})",
            "Free space there, or set TMPDIR to a folder with room")) from exc
    finally:
        con.close()


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def key_groups(batches: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """Re-cut batches sorted by :data:`KEY` so that each ends with the last copy of a key.

    The rows of the batch's last key wait for the next batch (all copies of a key are then
    in one batch, as ``order_and_deduplicate`` needs them).
    """
    carry: pl.DataFrame | None = None
    for batch in batches:
        frame = batch if carry is None else pl.concat([carry, batch], how="vertical")
        last = frame.row(frame.height - 1, named=True)
        same = pl.all_horizontal([pl.col(c).is_null() if last[c] is None else pl.col(c) == last[c]
                                  for c in KEY]).fill_null(False)
        n_last = int(frame.select(same.sum()).item())
        if n_last < frame.height:
            yield frame.head(frame.height - n_last)
        carry = frame.tail(n_last)
    if carry is not None and carry.height:
        yield carry


def parts(spill: Spill, kind: str) -> Iterator[pl.DataFrame]:
    """The parts of ``kind`` in the order they were written."""
    for path in spill.parts[kind]:
        yield pl.read_parquet(path)


def move_table(source: Path, target: Path) -> None:
    """Move a finished table into the output folder (atomically: it appears whole)."""
    with atomic.atomic_path(target) as tmp:
        shutil.move(source, tmp)


def total_bytes(paths: Sequence[Any]) -> int:
    """Bytes of the record files (decompressed copies of ``.gz`` files)."""
    return sum(Path(p).stat().st_size for p in paths)
