"""The ingest stage: read, validate and account for every record; write ``records.parquet`` and friends."""

from __future__ import annotations

import hashlib
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.common import atomic
from selfmodel.records.contract import (
    EXCLUDED,
    QUARANTINE_SCHEMA,
    RECORD_SCHEMA,
    REQUIRED,
    InputError,
)
from selfmodel.records.ingest.carried import carry, file_sha256
from selfmodel.records.ingest.column_map import (
    INPUT_COLUMNS,
    IngestConfig,
    check_canonical,
    load_config,
)
from selfmodel.records.ingest.columns import resolve_columns
from selfmodel.records.ingest.discover import InputFile, discover_inputs
from selfmodel.records.ingest.hints import repeat_columns, repeat_hint
from selfmodel.records.ingest.readers import (
    LINE,
    FileRead,
    RawTexts,
    read_batches,
    scan_file,
)
from selfmodel.records.ingest.registry_columns import contradictions, registry_values
from selfmodel.records.ingest.rules import validate
from selfmodel.records.ingest.stream import (
    STREAM_ENV,
    Spill,
    input_size,
    move_table,
    stream_limit,
    write_table,
)
from selfmodel.records.ingest.tables import (
    WORK_QUARANTINE,
    Tables,
    binary_task_rule,
    check_lookalike_names,
    in_memory,
    streamed,
    summary_of,
)
from selfmodel.records.registry import format_input_error, load_registry, registry_report
from selfmodel.records.snippets import snippet

__all__ = ["IngestResult", "binary_task_rule", "ingest", "merge_options", "no_records",
           "write_ingest"]


class IngestResult:
    """What :func:`ingest` returns.

    Attributes
    ----------
    records
        Canonical :data:`~selfmodel.records.contract.RECORD_SCHEMA` columns in that order: used rows
        only, deduplicated, sorted by :data:`~selfmodel.records.contract.KEY`, then ``source_file``,
        ``source_line``.
    quarantine
        :data:`~selfmodel.records.contract.QUARANTINE_SCHEMA`: ``source_file``, ``source_line``,
        ``reason``, ``raw`` (the row as text, at most 500 characters), in reading order.
    summary
        JSON-serialisable accounting (see :func:`ingest`).

    A streamed ingest holds its two tables as Parquet files (in a private temporary folder
    until :func:`write_ingest` moves them into the output folder); they are read into memory
    only when ``records`` or ``quarantine`` is asked for.
    """

    def __init__(self, records: pl.DataFrame | None = None,
                 quarantine: pl.DataFrame | None = None,
                 summary: dict[str, Any] | None = None, *,
                 tables: dict[str, Path] | None = None, spill: Spill | None = None) -> None:
        self._frames = {"records": records, "quarantine": quarantine}
        self.summary: dict[str, Any] = summary if summary is not None else {}
        self.tables = tables  # streamed: where records.parquet and quarantine.parquet are
        self._spill = spill
        if spill is not None:
            weakref.finalize(self, spill.remove)

    @property
    def records(self) -> pl.DataFrame:
        """The used records (read from ``records.parquet`` when streamed)."""
        return self._frame("records")

    @property
    def quarantine(self) -> pl.DataFrame:
        """The quarantined rows (read from ``quarantine.parquet`` when streamed)."""
        return self._frame("quarantine")

    def _frame(self, name: str) -> pl.DataFrame:
        frame = self._frames[name]
        if frame is None:
            assert self.tables is not None
            frame = self._frames[name] = pl.read_parquet(self.tables[name])
        return frame

    @property
    def streamed(self) -> bool:
        """Whether the tables were built on disk (see :mod:`selfmodel.records.ingest.stream`)."""
        return self.tables is not None

    def __repr__(self) -> str:
        return f"IngestResult(streamed={self.streamed}, summary={self.summary!r})"


# --------------------------------------------------------------------------- ingest


def merge_options(
    mapping: Mapping[str, str] | None, config: Path | str | IngestConfig | None,
    transform: Any = None,
) -> IngestConfig:
    """The options of a run: ``--map`` options over the config's ``[map]``, tasks, defaults."""
    cfg = (
        config
        if isinstance(config, IngestConfig)
        else (load_config(config) if config is not None else IngestConfig())
    )
    merged = dict(cfg.mapping)
    for canonical, source in (mapping or {}).items():
        check_canonical(canonical, f"mapping '{canonical}={source}'")
        if not isinstance(source, str) or not source.strip():
            raise InputError(
                format_input_error(
                    None,
                    f"mapping '{canonical}={source}': the source column must be a non-empty name",
                    "Write it like --map item_id=question_id",
                )
            )
        merged[canonical] = source.strip()
    return IngestConfig(
        mapping=dict(sorted(merged.items())),
        tasks=cfg.tasks,
        defaults=dict(cfg.defaults),
        path=cfg.path,
        transform=transform if transform is not None else cfg.transform,
        hints={},
    )


def ingest(
    paths: Sequence[Path | str],
    *,
    mapping: Mapping[str, str] | None = None,
    config: Path | str | IngestConfig | None = None,
    registry: Path | str | None = None,
    transform: Any = None,
    stream: bool | None = None,
    say: Callable[[str], None] | None = None,
) -> IngestResult:
    r"""Read, validate and deduplicate self-prediction records, accounting for every row.

    Parameters
    ----------
    paths
        Files (``.jsonl``, ``.ndjson``, ``.csv``, ``.parquet``) and/or folders searched
        recursively for them.
    mapping
        Canonical column -> source column (``{"item_id": "question_id"}``); overrides the
        config's ``[map]``.
    config
        A TOML file read by :func:`load_config` (or an :class:`IngestConfig`).
    registry
        A model registry (see :func:`selfmodel.records.registry.load_registry`); when given, the
        summary gets its ``registry_report``.
    transform
        A records mapping (``--mapping``; see :class:`IngestConfig`) applied to each file's
        rows before validation; the summary gets its ``study_mapping`` account.
    stream
        Build the tables on disk in bounded memory (:mod:`selfmodel.records.ingest.stream`);
        ``None`` (the default): when the record files are larger than
        :func:`~selfmodel.records.ingest.stream.stream_limit` (256 MiB), and then ``say``
        says so. Both ways give the same tables and summary (but ``streamed``).
    say
        Where a switch to streaming is said (a progress line).

    Returns
    -------
    IngestResult
        ``summary`` keys: ``records_read``, ``records_used``, ``records_quarantined``,
        ``records_duplicate``, ``records_excluded`` (rows a records mapping's filter left
        out; read == used + quarantined + duplicate + excluded) and ``excluded_reasons``,
        ``files`` (``[{path, format, rows, sha256}]``), ``sha256`` (``docs/records.md``, "Data hash"),
        ``models``, ``tasks`` (sorted, of used records), ``quarantine_reasons``
        (``{category: count}``), ``unreadable_predictions`` (used records whose status is
        ``unparsed``, ``refused`` or ``error``), ``statuses`` (``{status: count}``, every
        used record under its status's name), ``mapping``, ``defaults``,
        ``allowed_tasks`` (list or null), ``ignored_columns``,
        ``registry_columns_in_records`` and ``registry_contradictions`` (registry columns
        such as ``family`` found in the records: compared with the registry, never read;
        :mod:`selfmodel.records.ingest.registry_columns`), ``streamed`` and, with a
        registry, ``registry_report``.

    Raises
    ------
    InputError
        For a missing path, an unsupported file, a folder without data files, a file
        lacking a required column, bad options, a bad registry, or when no record at all
        is usable.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"model": "m", "task": "t", "item_id": "1", '
    ...                  '"prediction": "yes", "outcome": true}\n{"model": "m"\n')
    >>> res = ingest([p])
    >>> res.records.select("prediction", "outcome", "correct").rows()
    [('true', 'true', True)]
    >>> res.quarantine.select("source_line", "reason").row(0)
    (2, "invalid JSON (Expecting ',' delimiter at column 14)")
    """
    options = merge_options(mapping, config, transform)
    inputs = discover_inputs(paths)
    registry_frame = load_registry(registry) if registry is not None else None
    wanted = set(INPUT_COLUMNS) | set(options.mapping.values())
    if options.transform is not None:
        wanted |= options.transform.read_columns
    size = input_size(inputs)
    if stream is None:
        stream = size > stream_limit()
        if stream and say is not None:
            say(f"{_size(size)} of records (more than {_size(stream_limit())}, "
                f"{STREAM_ENV}): validated in batches and sorted on disk, so that memory stays "
                "bounded (docs/performance.md)")
    spill = Spill() if stream else None
    try:
        reading = _read_files(inputs, options, wanted, _critical(options), spill)
        names = pl.Series("source_file", [i.name for i in inputs], dtype=pl.Utf8)
        if spill is None:
            tables = in_memory(reading.goods, reading.bads, names, reading.raws)
        else:
            tables = streamed(spill, names, reading.raws)
        for raw in reading.raws:
            raw.close()
        summary = _summary(reading, tables, options)
        if tables.stats.n == 0:
            raise no_records(paths, reading.n_read, tables.reasons, tables.n_copies,
                             sum(reading.excluded.values()))
        carry(summary, inputs, reading.files)  # the accounting of ingested records.parquet read
        check_lookalike_names(tables.stats, registry_frame, registry)
        if registry_frame is not None:
            summary["registry_report"] = registry_report(
                pl.DataFrame({"model": sorted(tables.stats.models)}, schema={"model": pl.Utf8}),
                registry_frame)
        in_records, notes = contradictions(reading.registry_values, list(names),
                                           registry_frame, registry)
        summary["registry_columns_in_records"] = in_records
        summary["registry_contradictions"] = notes
        summary["streamed"] = spill is not None
    except BaseException:
        if spill is not None:
            spill.remove()
        raise
    return IngestResult(tables.records, tables.quarantine, summary, tables=tables.paths,
                        spill=spill)


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _critical(options: IngestConfig) -> set[str]:
    """Keys whose presence in a JSONL file decides its columns (see ``read_jsonl_batches``).

    Required columns (or their mapped names), mapped columns, columns with a default and
    the columns a records mapping reads.
    """
    keys = {options.mapping.get(c, c) for c in REQUIRED} | set(options.mapping.values())
    keys |= {c for c in options.defaults if c not in options.mapping}
    if options.transform is not None:
        keys |= options.transform.read_columns
    return keys


def _study_summary(options: IngestConfig) -> dict[str, Any]:
    """What a study needs said: repeat hints, the records mapping."""
    hint = repeat_hint(options.hints)
    out: dict[str, Any] = {
        "repeat_columns": dict(sorted(options.hints.items())),
        "hints": [hint] if hint else [],
    }
    if options.transform is not None:
        out["study_mapping"] = options.transform.summary()
    return out


@dataclass
class _Reading:
    """What reading every file gave.

    The valid and quarantined rows (in memory, else spilled), the files' raw-text lookups
    and their accounts.
    """

    goods: list[pl.DataFrame] = field(default_factory=list)
    bads: list[pl.DataFrame] = field(default_factory=list)
    raws: list[RawTexts] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    ignored: set[str] = field(default_factory=set)
    registry_values: list[pl.DataFrame] = field(default_factory=list)
    #: rows a records mapping's ``[[rule]]`` left out (``then = "excluded"``), by rule
    excluded: Counter[str] = field(default_factory=Counter)
    n_read: int = 0
    sha256: str = ""
    spill: Spill | None = None

    def good(self, frame: pl.DataFrame) -> None:
        if self.spill is not None:
            self.spill.add("good", frame)
        else:
            self.goods.append(frame)

    def bad(self, frame: pl.DataFrame) -> None:
        if self.spill is not None:
            self.spill.add("bad", frame)
        else:
            self.bads.append(frame)


def _read_files(inputs: Sequence[InputFile], options: IngestConfig, wanted: set[str],
                critical: set[str], spill: Spill | None) -> _Reading:
    """Read, map and validate every file, batch by batch, in reading order.

    Each file is hashed (and its lines counted) in a second thread while polars parses it:
    hashlib and polars both release the GIL. One file at a time, in reading order.
    """
    reading = _Reading(spill=spill)
    total = hashlib.sha256()
    repeats: dict[str, int] = {}
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-hash")
    try:
        for index, inp in enumerate(inputs):
            scanning = pool.submit(scan_file, inp, total)
            raw = RawTexts(inp)
            reading.raws.append(raw)
            rows = 0
            try:
                for read in read_batches(inp, scanning.result, wanted, critical):
                    before, rows = rows, rows + read.rows
                    raw.records_span_lines |= bool(read.spans)
                    raw.present = read.present
                    _batch(reading, index, inp, read, options, repeats, before)
                    reading.n_read += read.rows  # a mapping's wide table: more records than rows
                info = scanning.result()
            except BaseException:
                scanning.cancel()
                raise
            reading.files.append(
                {"path": inp.name, "format": inp.format, "rows": rows, "sha256": info.sha256})
    finally:
        pool.shutdown(wait=True)
    options.hints.update(repeats)
    reading.sha256 = total.hexdigest()
    return reading


def _batch(reading: _Reading, index: int, inp: InputFile, read: FileRead,
           options: IngestConfig, repeats: dict[str, int], before: int) -> None:
    """Map and validate one batch of a file; its rows go to ``reading``.

    ``before``: the file's rows in the batches before this one (a row's position in its
    file, for a mapping's ``item_id = "@row"``).
    """
    if read.bad:
        reading.bad(_unreadable_rows(index, read.bad))
    if options.transform is not None and read.frame.height:
        # a wide table melts into more records than rows; a mapping's rule may leave
        # rows out (counted as excluded, never gone silently)
        mapped = options.transform(inp.name, read.frame, read.present,
                                   [b[0] for b in read.bad], offset=before)
        read.rows += mapped.records - read.frame.height
        reading.excluded.update(mapped.excluded)
        read.frame, mapped_bad = mapped.frame, mapped.quarantined
        read.present = [c for c in read.frame.columns if c != LINE]
        left_out = [b for b in mapped_bad if b[1] == EXCLUDED]
        reading.excluded.update(str(b[2]) for b in left_out)
        mapped_bad = [b for b in mapped_bad if b[1] != EXCLUDED]
        if mapped_bad:
            reading.bad(_unreadable_rows(index, mapped_bad))
    if read.frame.height == 0:
        return
    canonical, unused = resolve_columns(inp, read, options.mapping, options.defaults)
    for col, n in repeat_columns(canonical, read.frame, unused).items():
        repeats[col] = repeats.get(col, 0) + n
    found = registry_values(canonical.get_column("model"), read.frame, unused, index, LINE)
    if found is not None:
        reading.registry_values.append(found)
    read.frame = read.frame.clear()  # the canonical columns are all that is needed now
    reading.ignored |= unused
    good, bad = validate(canonical, tasks=options.tasks)
    del canonical
    reading.good(good.with_columns(pl.lit(index, dtype=pl.Int64).alias("__file_idx")))
    if bad.height:
        reading.bad(bad.select(
            pl.lit(index, dtype=pl.Int64).alias("__file_idx"),
            pl.col(LINE).alias("source_line"),
            pl.col("__cat"),
            pl.col("__reason").alias("reason"),
            pl.lit(None, dtype=pl.Utf8).alias("raw"),
        ))


def _unreadable_rows(index: int, bad: Sequence[tuple[int, str, str, str | None]]
                     ) -> pl.DataFrame:
    """Quarantine rows of the lines a reader could not read (line, category, reason, raw)."""
    return pl.DataFrame(
        {
            "__file_idx": [index] * len(bad),
            "source_line": [b[0] for b in bad],
            "__cat": [b[1] for b in bad],
            "reason": [b[2] for b in bad],
            "raw": [b[3] for b in bad],
        },
        schema=WORK_QUARANTINE,
    )


def _summary(reading: _Reading, tables: Tables, options: IngestConfig) -> dict[str, Any]:
    """``ingest.json``: the accounting of every row, the files and the options used."""
    counts = summary_of(tables)
    n_used, n_bad, n_copies = (counts["records_used"], counts["records_quarantined"],
                               counts["records_duplicate"])
    n_excluded = sum(reading.excluded.values())
    if reading.n_read != n_used + n_bad + n_copies + n_excluded:  # pragma: no cover
        raise RuntimeError(
            f"ingest accounting broken: read {reading.n_read} != used {n_used} + quarantined "
            f"{n_bad} + duplicate {n_copies} + excluded {n_excluded}"
        )
    return {
        "records_read": reading.n_read,
        **{k: counts[k] for k in ("records_used", "records_quarantined", "records_duplicate")},
        "records_excluded": n_excluded,
        "excluded_reasons": dict(sorted(reading.excluded.items())),
        "files": reading.files,
        "sha256": reading.sha256,
        **{k: counts[k] for k in ("models", "tasks", "quarantine_reasons",
                                  "unreadable_predictions", "statuses")},
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(reading.ignored),
        "predictions_not_boolean": counts["predictions_not_boolean"],
        # read as "the self-prediction was right"; task accuracy needs a mapping to say so
        "correct_only_records": counts["correct_only_records"],
        **_study_summary(options),
    }


def write_ingest(result: IngestResult, out: Path | str) -> None:
    """Write ``records.parquet``, ``quarantine.parquet`` and ``ingest.json`` into ``out``.

    Each file is written atomically (see :mod:`selfmodel.common.atomic`); ``out`` is created if
    needed. The tables are written in row groups of
    :data:`~selfmodel.records.ingest.stream.ROW_GROUP` rows, in memory or streamed alike
    (a streamed result's files are moved there). ``ingest.json`` (and ``result.summary``)
    gets ``records_sha256``, the SHA-256 of the ``records.parquet`` written: a later run that
    reads that file carries this accounting only while the file is unchanged
    (:mod:`selfmodel.records.ingest.carried`).

    Parameters
    ----------
    result
        What :func:`ingest` returned.
    out
        The output folder.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    schemas = {"records": RECORD_SCHEMA, "quarantine": QUARANTINE_SCHEMA}
    for name, schema in schemas.items():
        target = out / f"{name}.parquet"
        if result.tables is not None:
            move_table(result.tables[name], target)
            result.tables[name] = target
        else:
            with atomic.atomic_path(target) as tmp:
                write_table(tmp, getattr(result, name), schema)
    result.summary["records_sha256"] = file_sha256(out / "records.parquet")
    atomic.write_json(out / "ingest.json", result.summary)


def no_records(paths: Any, n_read: int, reasons: Mapping[str, int], n_copies: int,
               excluded: int = 0) -> InputError:
    """The error of a reading that kept no record: the counts and the top three reasons.

    Reasons are ordered by count, then by name (so that every engine says the same); the
    one reading of ingest and of :func:`selfmodel.records.engines.reduce_records`.
    """
    ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
    top = ", ".join(f"{cat} {n}" for cat, n in ranked[:3])
    label = paths if isinstance(paths, str | Path) else ", ".join(str(p) for p in paths)
    scale = (" (a confidence on another scale, 0-10 or 0-100, is declared in a --mapping "
             "file: " + snippet("scale = [0, 10]", table="confidence") + ")"
             if ranked and ranked[0][0] == "invalid confidence" else "")
    return InputError(format_input_error(
        label,
        f"no records to analyse ({n_read} read, {sum(reasons.values())} quarantined"
        + (f": {top}" if top else "") + f", {n_copies} duplicate"
        + (f", {excluded} excluded by the mapping's rules" if excluded else "") + ")",
        "Check that the files hold records with model, task, item_id and an outcome" + scale))
