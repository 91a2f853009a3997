"""From validated rows to the record and quarantine tables, in memory or streamed.

:func:`in_memory` and :func:`streamed` take the valid and the quarantined rows of every
batch (:mod:`selfmodel.records.ingest.run`) and make the same two tables: the used records,
ordered and de-duplicated on the record key, with the binary-task rule applied, and the
quarantine in reading order with each row's raw text. The streamed one keeps memory
bounded (:mod:`selfmodel.records.ingest.stream`). What the summary says about the records
is added up batch by batch (:class:`RecordStats`, :class:`BinaryTasks`), the same way in both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import narwhals as nw
import polars as pl

from selfmodel.records.contract import (
    QUARANTINE_SCHEMA,
    RECORD_SCHEMA,
    UNREADABLE_STATUSES,
    InputError,
    name_key,
    shown,
)
from selfmodel.records.ingest.dedup import order_and_deduplicate
from selfmodel.records.ingest.readers import RawTexts
from selfmodel.records.ingest.rules import GOOD_SCHEMA
from selfmodel.records.ingest.stream import Spill, TableWriter, parts
from selfmodel.records.reduction import binary_task_rule as binary_task_rule_exprs
from selfmodel.records.reduction import binary_tasks, not_boolean

#: The quarantine table while ingesting (file index and reason category kept for sorting).
WORK_QUARANTINE: Final[dict[str, pl.DataType]] = {
    "__file_idx": pl.Int64(),
    "source_line": pl.Int64(),
    "__cat": pl.Utf8(),
    "reason": pl.Utf8(),
    "raw": pl.Utf8(),
}
#: Rows handed at a time to the binary-task rule, the summary and the table writer.
WRITE_SLICE: Final = 65_536
#: Valid rows while ingesting: the record columns and the file's index in reading order.
WORK_GOOD: Final[dict[str, pl.DataType]] = {**GOOD_SCHEMA, "__file_idx": pl.Int64()}


@dataclass
class RecordStats:
    """What the summary says about the used records, added up batch by batch, in order."""

    n: int = 0
    models: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)
    statuses: Counter[str] = field(default_factory=Counter)
    correct_only: int = 0
    not_boolean: Counter[str] = field(default_factory=Counter)
    #: per column (``model``, ``predictor``): each spelling's first record (file, line)
    first: dict[str, dict[str, tuple[str, int]]] = field(
        default_factory=lambda: {"model": {}, "predictor": {}})

    def add(self, records: pl.DataFrame) -> None:
        """Count one batch of used records (batches in record order)."""
        self.n += records.height
        self.models.update(records.get_column("model").unique().to_list())
        self.tasks.update(records.get_column("task").unique().to_list())
        self.statuses.update(dict(records.group_by("status").len().rows()))
        self.correct_only += records.filter(
            pl.col("prediction").is_null() & pl.col("outcome").is_null()
            & pl.col("correct").is_not_null()).height
        for column, seen in self.first.items():
            firsts = records.select(column, "source_file", "source_line").drop_nulls(column)
            for name, f, line in firsts.unique(column, keep="first", maintain_order=True).rows():
                seen.setdefault(name, (f, line))

    @property
    def unreadable(self) -> int:
        """Used records whose prediction could not be read (``unparsed``, ``refused``, ``error``)."""
        return sum(n for s, n in self.statuses.items() if s in UNREADABLE_STATUSES)


class BinaryTasks:
    """The tasks whose used records' outcomes are all booleans, found batch by batch.

    :func:`selfmodel.records.reduction.binary_tasks` on each batch; a task is binary when
    some batch has an outcome for it and every batch that has one finds it binary.
    """

    def __init__(self) -> None:
        self.all_boolean: dict[str, bool] = {}

    def add(self, records: pl.DataFrame) -> None:
        """Look at one batch of used records (before the binary-task rule)."""
        frame = nw.from_native(records).lazy()
        binary = set(binary_tasks(frame, nw.lit(True)).collect().get_column("task").to_list())
        seen = records.filter(pl.col("outcome").is_not_null()).get_column("task").unique()
        for task in seen.to_list():
            self.all_boolean[task] = self.all_boolean.get(task, True) and task in binary

    def tasks(self) -> list[str]:
        """The binary tasks."""
        return sorted(t for t, b in self.all_boolean.items() if b)


def binary_task_rule(records: pl.DataFrame, binary: Sequence[str] | None = None
                     ) -> tuple[pl.DataFrame, dict[str, int]]:
    """:func:`selfmodel.records.reduction.binary_task_rule` on ingest's records.

    ``binary``: the binary tasks (default: those of ``records``). Returns the records and
    ``{task: rows made unreadable}``.
    """
    if binary is None:
        found = BinaryTasks()
        found.add(records)
        binary = found.tasks()
    frame = nw.from_native(records)
    marked = frame.with_columns(not_boolean(nw.col("task").is_in(list(binary)), nw.lit(True)))
    flagged = marked.filter(nw.col("not_boolean")).to_native()
    if flagged.height == 0:
        return records, {}
    counts = dict(sorted(flagged.group_by("task").len().rows()))
    out = marked.with_columns(*binary_task_rule_exprs()).drop("not_boolean").to_native()
    return out, {str(k): int(v) for k, v in counts.items()}


def check_lookalike_names(stats: RecordStats, registry: pl.DataFrame | None,
                          registry_path: Path | str | None) -> None:
    """Stop when two spellings of one model name meet (:func:`selfmodel.records.contract.name_key`).

    Two spellings in the records (``model`` or ``predictor``), or a record's spelling and
    the registry's, that differ only by invisible characters, Unicode normal form or white
    space would be two models, or a model without its registry row: one line names both
    spellings (escaped) and where they are (each spelling's first record, in ``model``
    before ``predictor``), instead of a silent mismatch.
    """
    names: dict[str, str] = {}  # spelling -> column it was found in
    for column in ("model", "predictor"):
        for name in sorted(stats.first[column]):
            names.setdefault(name, column)
    by_key: dict[str, list[str]] = {}
    for name in names:
        by_key.setdefault(name_key(name), []).append(name)
    known = {name_key(m): m for m in registry.get_column("model").to_list()} if (
        registry is not None) else {}

    def where(name: str) -> str:
        col = names[name]
        f, line = stats.first[col][name]
        return f"{f}: line {line}, column '{col}'"

    for key, spellings in by_key.items():
        if len(spellings) > 1:
            a, b = spellings[:2]
            raise InputError(
                f"{where(b)}: model {shown(b)} is also written {shown(a)} ({where(a)}); the "
                "two differ only by invisible characters, Unicode normal form or white space. "
                "Spell one model one way (or give two models names that differ visibly).")
        if key in known and known[key] != spellings[0]:
            raise InputError(
                f"{where(spellings[0])}: model {shown(spellings[0])} is written "
                f"{shown(known[key])} in the registry {registry_path}; the two differ only by "
                "invisible characters, Unicode normal form or white space. Spell it the same "
                "way in both.")


def conflict_rows(conflicts: pl.DataFrame, names: pl.Series) -> pl.DataFrame:
    """Quarantine rows of conflicting duplicates, each naming the first other copy."""
    return conflicts.select(
        pl.col("__file_idx"),
        pl.col("source_line"),
        pl.lit("conflicting duplicate").alias("__cat"),
        pl.format(
            "conflicting duplicate of {}:{}",
            pl.col("__ref_file").map_elements(lambda i: names[i], return_dtype=pl.Utf8),
            pl.col("__ref_line"),
        ).alias("reason"),
        pl.lit(None, dtype=pl.Utf8).alias("raw"),
    )


def fill_raw(quarantine: pl.DataFrame, raws: Sequence[RawTexts]) -> pl.DataFrame:
    """Fill missing ``raw`` texts by asking each file's lookup for its quarantined lines.

    ``quarantine`` is in reading order (files, then lines), so each file is read forward.
    """
    missing = quarantine.filter(pl.col("raw").is_null())
    if missing.height == 0:
        return quarantine
    fills: list[tuple[int, int, str]] = []
    for (file_idx,), part in missing.group_by(["__file_idx"], maintain_order=True):
        lines = part.get_column("source_line").to_list()
        found = raws[int(file_idx)](lines)
        fills.extend((int(file_idx), n, found.get(n, "")) for n in lines)
    fill = pl.DataFrame(
        fills,
        schema={"__file_idx": pl.Int64(), "source_line": pl.Int64(), "__fill": pl.Utf8()},
        orient="row",
    ).unique(["__file_idx", "source_line"], keep="first")
    return (
        quarantine.join(fill, on=["__file_idx", "source_line"], how="left", maintain_order="left")
        .with_columns(pl.coalesce("raw", "__fill").alias("raw"))
        .drop("__fill")
    )


def named(frame: pl.DataFrame, names: pl.Series, columns: Iterable[str]) -> pl.DataFrame:
    """``frame`` with ``source_file`` named from ``__file_idx``, its ``columns`` in order."""
    return frame.with_columns(
        names.gather(frame.get_column("__file_idx")).alias("source_file")).select(list(columns))


@dataclass
class Tables:
    """The two tables and the counts behind them."""

    records: pl.DataFrame | None  # None when streamed: in ``paths``
    quarantine: pl.DataFrame | None
    paths: dict[str, Path] | None
    stats: RecordStats
    reasons: Counter[str]
    n_quarantined: int
    n_copies: int


def in_memory(goods: list[pl.DataFrame], bads: list[pl.DataFrame], names: pl.Series,
              raws: Sequence[RawTexts]) -> Tables:
    """Both tables from the rows of every batch, at once in memory."""
    all_good = (pl.concat(goods, how="vertical", rechunk=False)  # reading order
                if goods else pl.DataFrame(schema=WORK_GOOD))
    goods.clear()
    kept, conflicts, n_copies = order_and_deduplicate(all_good)
    del all_good
    if conflicts.height:
        bads.append(conflict_rows(conflicts, names))
    quarantine_full = (pl.concat(bads, how="vertical").sort("__file_idx", "source_line")
                       if bads else pl.DataFrame(schema=WORK_QUARANTINE))
    quarantine_full = fill_raw(quarantine_full, raws)
    records = named(kept, names, RECORD_SCHEMA)
    del kept
    stats = RecordStats()
    records, stats.not_boolean = _with_counts(binary_task_rule(records))
    stats.add(records)
    quarantine = named(quarantine_full, names, QUARANTINE_SCHEMA).cast(
        pl.Schema(QUARANTINE_SCHEMA))
    reasons = Counter(quarantine_full.get_column("__cat").to_list())
    return Tables(records, quarantine, None, stats, reasons, quarantine.height, n_copies)


def _with_counts(result: tuple[pl.DataFrame, dict[str, int]]) -> tuple[pl.DataFrame, Counter[str]]:
    return result[0], Counter(result[1])


def streamed(spill: Spill, names: pl.Series, raws: Sequence[RawTexts]) -> Tables:
    """Both tables from the spilled rows: sorted on disk a bucket at a time, written in row groups."""
    binary = BinaryTasks()
    n_copies = 0
    for bucket in spill.key_buckets():
        kept, conflicts, copies = order_and_deduplicate(bucket.cast(pl.Schema(WORK_GOOD)))
        del bucket
        n_copies += copies
        if conflicts.height:
            spill.add("bad", conflict_rows(conflicts, names))
        records = named(kept, names, RECORD_SCHEMA)
        binary.add(records)
        spill.add("kept", records)
        del kept, conflicts, records  # before the next bucket is read: one bucket at a time
    stats = RecordStats()
    paths = {"records": spill.folder / "records.parquet",
             "quarantine": spill.folder / "quarantine.parquet"}
    writer = TableWriter(paths["records"], RECORD_SCHEMA)
    try:
        tasks = binary.tasks()
        for part in parts(spill, "kept"):
            for piece in part.iter_slices(WRITE_SLICE):
                records, counts = binary_task_rule(piece, tasks)
                stats.not_boolean.update(counts)
                stats.add(records)
                writer.write(records)
            del part
    finally:
        writer.close()
    reasons: Counter[str] = Counter()
    n_quarantined = 0
    writer = TableWriter(paths["quarantine"], QUARANTINE_SCHEMA)
    try:
        for bucket in spill.bad_buckets():
            for batch in bucket.iter_slices(WRITE_SLICE):
                batch = fill_raw(batch.cast(pl.Schema(WORK_QUARANTINE)), raws)
                reasons.update(batch.get_column("__cat").to_list())
                n_quarantined += batch.height
                writer.write(named(batch, names, QUARANTINE_SCHEMA))
            del bucket
    finally:
        writer.close()
    spill.drop_parts()
    return Tables(None, None, paths, stats, reasons, n_quarantined, n_copies)


def summary_of(tables: Tables) -> dict[str, Any]:
    """The keys of ``ingest.json`` that come from the two tables."""
    s = tables.stats
    return {
        "records_used": s.n,
        "records_quarantined": tables.n_quarantined,
        "records_duplicate": tables.n_copies,
        "models": sorted(s.models),
        "tasks": sorted(s.tasks),
        "quarantine_reasons": dict(sorted(tables.reasons.items())),
        "unreadable_predictions": s.unreadable,
        "statuses": {str(k): int(v) for k, v in sorted(s.statuses.items())},
        "predictions_not_boolean": {str(k): int(v) for k, v in sorted(s.not_boolean.items())},
        "correct_only_records": s.correct_only,
    }
