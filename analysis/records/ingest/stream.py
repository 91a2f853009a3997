"""Ingest of inputs larger than memory: batches spilled to disk, sorted in buckets, written in row groups.

:func:`selfmodel.records.ingest.ingest` reads every file in batches
(:mod:`~selfmodel.records.ingest.readers`) and validates each batch on its own. What it does
with the batches' rows is the only difference between its two ways of working:

* in memory (inputs up to :data:`STREAM_ABOVE` bytes): the rows of all batches are kept,
  then ordered and de-duplicated at once (:func:`~selfmodel.records.ingest.dedup.order_and_deduplicate`);
* streamed (larger inputs, or ``stream=True``): each batch's rows go to Parquet parts in a
  private temporary folder (:class:`Spill`), then are sorted by an external bucket sort in
  polars, with the memory of one bucket at a time:

  - the valid rows by the record key. Each row's key is written as one text (:func:`sort_key`)
    whose byte order is the key's order (nulls first); a sample of the keys (one row in
    :data:`SAMPLE_EVERY`, by hash) gives the bounds of key ranges of about
    :data:`BUCKET_ROWS` rows each; the parts are split into those ranges (one pass), and
    each range is read in reading order and handed to the same ``order_and_deduplicate``
    (:meth:`Spill.key_buckets`). All copies of a key are in one range; the ranges in order
    are the records in order.
  - the quarantined rows (and the conflicting duplicates found above) by file and line:
    their buckets are :data:`QUARANTINE_BUCKET_LINES` lines of one file
    (:meth:`Spill.bad_buckets`), so a bucket never holds more rows than that.

Both ways write ``records.parquet`` and ``quarantine.parquet`` with :class:`TableWriter`, in
row groups of :data:`ROW_GROUP` rows whatever the batches, so they give the same bytes
(``tests/records/test_ingest_stream.py``). Memory then stays within a bound that does not grow with
the input (measured in ``docs/performance.md``): a batch being validated, one bucket being
de-duplicated, one row group being written, and the key sample (about 1 key in
:data:`SAMPLE_EVERY`). One record key with more copies than a bucket holds makes its bucket
that large: the only way the bound can be exceeded.
"""

from __future__ import annotations

import math
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
    "BUCKET_ROWS",
    "QUARANTINE_BUCKET_LINES",
    "ROW_GROUP",
    "STREAM_ABOVE",
    "STREAM_ENV",
    "Spill",
    "TableWriter",
    "sort_key",
    "stream_limit",
]

#: Inputs larger than this (bytes, all files together) are streamed; the environment
#: variable :data:`STREAM_ENV` sets another limit (``0``: always stream).
STREAM_ABOVE: Final = 256 * 2**20
STREAM_ENV: Final = "SELFMODEL_STREAM_ABOVE"
#: Valid rows per key range of the bucket sort (the most held in memory at once, but for
#: one key with more copies).
BUCKET_ROWS: Final = 200_000
#: One valid row in this many (by hash of its key) is kept as a sample for the key ranges.
SAMPLE_EVERY: Final = 64
#: Lines of one file per bucket of quarantined rows.
QUARANTINE_BUCKET_LINES: Final = 400_000
#: Rows per row group of ``records.parquet`` and ``quarantine.parquet``.
ROW_GROUP: Final = 262_144
#: The width of a sample index written as text in :func:`sort_key` (2**63 has 19 digits).
_SAMPLE_DIGITS: Final = 19


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
        for piece in frame.iter_slices(ROW_GROUP):
            writer.write(piece)
    finally:
        writer.close()


def sort_key() -> pl.Expr:
    r"""One text per row whose byte order is the order of the record key (nulls first).

    Each text column of :data:`~selfmodel.records.contract.KEY` becomes ``\x01`` when null,
    else ``\x02``, its text and ``\x00``; ``sample`` (a non-negative integer) is written
    with 19 digits. A valid row's identifiers hold no control character (the rules quarantine
    them), so no text holds the ``\x00`` that ends it, and comparing the joined texts byte
    by byte compares the key column by column, as polars sorts it.
    """
    parts = [pl.col(c).cast(pl.Utf8).str.zfill(_SAMPLE_DIGITS) if c == "sample" else
             pl.when(pl.col(c).is_null()).then(pl.lit("\x01"))
             .otherwise(pl.concat_str([pl.lit("\x02"), pl.col(c), pl.lit("\x00")]))
             for c in KEY]
    return pl.concat_str(parts)


class Spill:
    """A private temporary folder: the parts of valid, quarantined and kept rows, the tables.

    Made in the system's temporary folder (``TMPDIR``); removed by :meth:`remove`. A full
    disk is an :class:`InputError` that says so.
    """

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="selfmodel-ingest-"))
        self.parts: dict[str, list[Path]] = {"good": [], "kept": []}
        self.bad: dict[tuple[int, int], list[Path]] = {}  # (file, line bucket) -> parts
        self.sample: list[str] = []
        self.n_good = 0
        self._count = 0

    def _write(self, frame: pl.DataFrame, kind: str) -> Path:
        path = self.folder / f"{kind}-{self._count:07d}.parquet"
        self._count += 1
        try:
            frame.write_parquet(path, compression="lz4", statistics=False)
        except OSError as exc:
            raise _no_room(self.folder, exc) from exc
        return path

    def add(self, kind: str, frame: pl.DataFrame) -> None:
        """Write ``frame`` as the next part of ``kind`` (``good``, ``bad`` or ``kept``).

        Valid rows get their :func:`sort_key` and add to the sample; quarantined rows go to
        the bucket of their file and lines.
        """
        if frame.height == 0:
            return
        if kind == "good":
            frame = frame.with_columns(sort_key().alias("__k"))
            keys = frame.get_column("__k")
            # as Python text: a filtered polars text column keeps the whole batch's buffers
            self.sample += keys.filter(keys.hash(seed=0) % SAMPLE_EVERY == 0).to_list()
            self.n_good += frame.height
        if kind != "bad":
            self.parts[kind].append(self._write(frame, kind))
            return
        bucket = (pl.col("source_line") // QUARANTINE_BUCKET_LINES).alias("__q")
        for (f, q), part in frame.with_columns(bucket).partition_by(
                "__file_idx", "__q", as_dict=True, maintain_order=True).items():
            self.bad.setdefault((int(f), int(q)), []).append(  # type: ignore[call-overload]
                self._write(part.drop("__q"), "bad"))

    def key_buckets(self) -> Iterator[pl.DataFrame]:
        """The valid rows in key ranges, in key order; each range's rows in reading order."""
        if not self.parts["good"]:
            return
        n = max(1, math.ceil(self.n_good / BUCKET_ROWS))
        sample = pl.Series(self.sample, dtype=pl.Utf8).sort()
        self.sample = []
        bounds = pl.Series([sample[i * sample.len() // n] for i in range(1, n)] if sample.len()
                           else [], dtype=pl.Utf8).unique(maintain_order=True)
        if bounds.len() == 0:
            yield pl.concat([pl.read_parquet(p) for p in self.parts["good"]]).drop("__k")
            return
        buckets: dict[int, _Bucket] = {}
        for path in self.parts["good"]:
            frame = pl.read_parquet(path)
            index = bounds.search_sorted(frame.get_column("__k"), side="right")
            for (i,), part in frame.drop("__k").with_columns(index.alias("__b")).partition_by(
                    "__b", as_dict=True, maintain_order=True).items():
                bucket = buckets.get(int(i))  # type: ignore[call-overload]
                if bucket is None:
                    bucket = buckets[int(i)] = _Bucket(  # type: ignore[call-overload]
                        self.folder / f"bucket-{int(i):06d}.arrow")  # type: ignore[call-overload]
                bucket.write(part.drop("__b"))
            path.unlink()
        self.parts["good"] = []
        for i in sorted(buckets):
            yield buckets.pop(i).read()

    def bad_buckets(self) -> Iterator[pl.DataFrame]:
        """The quarantined rows in reading order (files, then lines), a bucket at a time."""
        for key in sorted(self.bad):
            paths = self.bad.pop(key)
            frame = pl.concat([pl.read_parquet(p) for p in paths], how="vertical")
            for path in paths:
                path.unlink()
            yield frame.sort("__file_idx", "source_line")

    def drop_parts(self) -> None:
        """Remove the parts (the finished tables stay)."""
        for path in [*self.parts["good"], *self.parts["kept"],
                     *(p for paths in self.bad.values() for p in paths)]:
            path.unlink(missing_ok=True)
        self.parts = {"good": [], "kept": []}
        self.bad = {}

    def remove(self) -> None:
        """Remove the folder and everything in it."""
        shutil.rmtree(self.folder, ignore_errors=True)


class _Bucket:
    """One key range of valid rows on disk: an Arrow stream, appended part by part."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: Any = None
        self._schema: pa.Schema | None = None

    def write(self, frame: pl.DataFrame) -> None:
        table = frame.to_arrow()
        try:
            if self._writer is None:
                self._schema = table.schema
                options = pa.ipc.IpcWriteOptions(compression="lz4")
                self._writer = pa.ipc.new_stream(str(self.path), table.schema, options=options)
            self._writer.write_table(table.cast(self._schema))
        except OSError as exc:
            raise _no_room(self.path.parent, exc) from exc

    def read(self) -> pl.DataFrame:
        self._writer.close()
        with pa.ipc.open_stream(str(self.path)) as reader:
            table = reader.read_all()
        self.path.unlink()
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame


def _no_room(folder: Path, exc: OSError) -> InputError:
    return InputError(format_input_error(
        None, f"ingest could not write its temporary files in {folder.parent} ({exc.strerror})",
        "Free space there, or set TMPDIR to a folder with room (about the input's size)"))


def parts(spill: Spill, kind: str) -> Iterator[pl.DataFrame]:
    """The parts of ``kind`` in the order they were written."""
    for path in spill.parts[kind]:
        yield pl.read_parquet(path)


def move_table(source: Path, target: Path) -> None:
    """Move a finished table into the output folder (atomically: it appears whole)."""
    with atomic.atomic_path(target) as tmp:
        shutil.move(source, tmp)


#: What a Parquet row counts for in :func:`input_size` (about its size as a JSONL line):
#: Parquet compresses records ten times or more, so its bytes would understate the rows.
PARQUET_ROW_BYTES: Final = 150


def input_size(files: Sequence[Any]) -> int:
    """The size of the inputs as text, compared with :func:`stream_limit`.

    A JSONL or CSV file counts its bytes (a ``.gz`` file those of its decompressed copy), a
    Parquet file :data:`PARQUET_ROW_BYTES` per row (from its metadata; its bytes if that
    cannot be read: the reader then says why).
    """
    total = 0
    for inp in files:
        if inp.format == "parquet":
            try:
                total += PARQUET_ROW_BYTES * int(
                    pl.scan_parquet(inp.path).select(pl.len()).collect().item())
                continue
            except Exception:  # noqa: BLE001 - a broken file: its reader says so
                pass
        total += Path(inp.path).stat().st_size
    return total
