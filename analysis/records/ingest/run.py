"""The ingest stage: read, validate and account for every record; write ``records.parquet`` and friends."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import narwhals as nw
import polars as pl

from selfmodel.common import atomic
from selfmodel.records.contract import (
    EXCLUDED,
    QUARANTINE_SCHEMA,
    RECORD_SCHEMA,
    UNREADABLE_STATUSES,
    InputError,
    name_key,
    shown,
)
from selfmodel.records.ingest.carried import carry, file_sha256
from selfmodel.records.ingest.columns import resolve_columns
from selfmodel.records.ingest.config import (
    INPUT_COLUMNS,
    IngestConfig,
    check_canonical,
    load_config,
)
from selfmodel.records.ingest.dedup import order_and_deduplicate
from selfmodel.records.ingest.discover import InputFile, discover_inputs
from selfmodel.records.ingest.hints import repeat_columns, repeat_hint
from selfmodel.records.ingest.readers import (
    LINE,
    FileRead,
    read_csv_file,
    read_jsonl_file,
    read_parquet_file,
    scan_file,
)
from selfmodel.records.ingest.rules import GOOD_SCHEMA, validate
from selfmodel.records.reduction import binary_task_rule as binary_task_rule_exprs
from selfmodel.records.reduction import binary_tasks, not_boolean
from selfmodel.records.registry import format_input_error, load_registry, registry_report
from selfmodel.records.snippets import snippet


@dataclass(frozen=True)
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
    """

    records: pl.DataFrame
    quarantine: pl.DataFrame
    summary: dict[str, Any]


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

    Returns
    -------
    IngestResult
        ``summary`` keys: ``records_read``, ``records_used``, ``records_quarantined``,
        ``records_duplicate``, ``records_excluded`` (rows a records mapping's filter left
        out; read == used + quarantined + duplicate + excluded) and ``excluded_reasons``,
        ``files`` (``[{path, format, rows, sha256}]``), ``sha256`` (see the module docstring),
        ``models``, ``tasks`` (sorted, of used records), ``quarantine_reasons``
        (``{category: count}``), ``unreadable_predictions`` (used records whose status is
        ``unparsed``, ``refused`` or ``error``), ``statuses`` (``{status: count}``, every
        used record under its status's name), ``mapping``, ``defaults``,
        ``allowed_tasks`` (list or null), ``ignored_columns`` and, with a registry,
        ``registry_report``.

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

    total = hashlib.sha256()
    excluded: Counter[str] = Counter()
    goods, bads, reads, files, ignored = _read_files(inputs, options, wanted, total, excluded)
    bad_schema = _WORK_QUARANTINE
    names = pl.Series("source_file", [i.name for i in inputs], dtype=pl.Utf8)
    all_good = (
        pl.concat(goods, how="vertical", rechunk=False)  # reading order: files, then lines
        if goods
        else pl.DataFrame(schema={**GOOD_SCHEMA, "__file_idx": pl.Int64()})
    )
    del goods
    kept, conflicts, n_copies = order_and_deduplicate(all_good)
    del all_good
    if conflicts.height:
        bads.append(_conflict_rows(conflicts, names))
    quarantine_full = (
        pl.concat(bads, how="vertical").sort("__file_idx", "source_line")
        if bads
        else pl.DataFrame(schema=bad_schema)
    )
    quarantine_full = _fill_raw(quarantine_full, reads)
    records = kept.with_columns(
        names.gather(kept.get_column("__file_idx")).alias("source_file")
    ).select(list(RECORD_SCHEMA))
    del kept
    records, not_boolean = binary_task_rule(records)
    quarantine = quarantine_full.select(
        pl.col("__file_idx")
        .replace_strict(list(range(len(inputs))), [i.name for i in inputs], return_dtype=pl.Utf8)
        .alias("source_file"),
        "source_line",
        "reason",
        "raw",
    ).cast(pl.Schema(QUARANTINE_SCHEMA))

    n_read = sum(r.rows for r in reads)
    n_excluded = sum(excluded.values())
    if n_read != records.height + quarantine.height + n_copies + n_excluded:  # pragma: no cover
        raise RuntimeError(
            f"ingest accounting broken: read {n_read} != used {records.height} + quarantined "
            f"{quarantine.height} + duplicate {n_copies} + excluded {n_excluded}"
        )
    reasons = Counter(quarantine_full.get_column("__cat").to_list())
    if records.height == 0:
        raise no_records(paths, n_read, reasons, n_copies, n_excluded)
    summary = _summary(records, quarantine, n_read, n_copies, files, total.hexdigest(),
                       reasons, options, ignored)
    summary["records_excluded"] = n_excluded
    summary["excluded_reasons"] = dict(sorted(excluded.items()))
    carry(summary, inputs, files)  # the accounting of ingests whose records.parquet is read
    summary["predictions_not_boolean"] = not_boolean
    check_lookalike_names(records, registry_frame, registry)
    summary.update(_study_summary(records, options))
    if registry_frame is not None:
        summary["registry_report"] = registry_report(records, registry_frame)
    return IngestResult(records=records, quarantine=quarantine, summary=summary)


def _study_summary(records: pl.DataFrame, options: IngestConfig) -> dict[str, Any]:
    """What a study needs said: ``correct``-only records, repeat hints, the records mapping."""
    hint = repeat_hint(options.hints)
    out: dict[str, Any] = {
        # read as "the self-prediction was right"; task accuracy needs a mapping to say so
        "correct_only_records": records.filter(
            pl.col("prediction").is_null() & pl.col("outcome").is_null()
            & pl.col("correct").is_not_null()
        ).height,
        "repeat_columns": dict(sorted(options.hints.items())),
        "hints": [hint] if hint else [],
    }
    if options.transform is not None:
        out["study_mapping"] = options.transform.summary()
    return out


def check_lookalike_names(
    records: pl.DataFrame, registry: pl.DataFrame | None, registry_path: Path | str | None
) -> None:
    """Stop when two spellings of one model name meet (:func:`selfmodel.records.contract.name_key`).

    Two spellings in the records (``model`` or ``predictor``), or a record's spelling and
    the registry's, that differ only by invisible characters, Unicode normal form or white
    space would be two models, or a model without its registry row: one line names both
    spellings (escaped) and where they are, instead of a silent mismatch.
    """
    names: dict[str, str] = {}  # spelling -> column it was found in
    for column in ("model", "predictor"):
        for name in records.get_column(column).drop_nulls().unique().sort().to_list():
            names.setdefault(name, column)
    by_key: dict[str, list[str]] = {}
    for name in names:
        by_key.setdefault(name_key(name), []).append(name)
    known = {name_key(m): m for m in registry.get_column("model").to_list()} if (
        registry is not None) else {}

    def where(name: str) -> str:
        col = names[name]
        row = records.filter(pl.col(col) == name).select("source_file", "source_line").row(0)
        return f"{row[0]}: line {row[1]}, column '{col}'"

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


def _read_files(
    inputs: Sequence[InputFile], options: IngestConfig, wanted: set[str], total: Any,
    excluded: Counter[str],
) -> tuple[
    list[pl.DataFrame], list[pl.DataFrame], list[FileRead], list[dict[str, Any]], set[str]
]:
    """Read, map and validate every file in reading order; ``total`` hashes all bytes.

    Returns the valid rows and the quarantined rows of each file (with ``__file_idx``), the
    reads (for the raw text of quarantined lines), the file list and the ignored columns.
    A records mapping's rows left out by its ``[[rule]]`` (``then = "excluded"``) are no
    records and not quarantined: ``excluded`` counts them by rule.
    """
    goods: list[pl.DataFrame] = []
    bads: list[pl.DataFrame] = []
    reads: list[FileRead] = []
    files: list[dict[str, Any]] = []
    ignored: set[str] = set()
    repeats: dict[str, int] = {}
    # Each file is hashed (and its lines counted) in a second thread while polars parses
    # it: hashlib and polars both release the GIL. One file at a time, in reading order.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-hash")
    for index, inp in enumerate(inputs):
        scanning = pool.submit(scan_file, inp, total)
        try:
            if inp.format == "jsonl":
                read = read_jsonl_file(inp, scanning.result, wanted)
            elif inp.format == "csv":
                read = read_csv_file(inp, scanning.result)
            else:
                read = read_parquet_file(inp)
            info = scanning.result()
        except BaseException:
            scanning.cancel()
            pool.shutdown(wait=True)
            raise
        reads.append(read)
        files.append(
            {"path": inp.name, "format": inp.format, "rows": read.rows, "sha256": info.sha256}
        )
        if read.bad:
            bads.append(_unreadable_rows(index, read.bad))
        if options.transform is not None and read.frame.height:
            # a wide table melts into more records than rows; a mapping's rule may leave
            # rows out (counted as excluded, never gone silently)
            mapped = options.transform(inp.name, read.frame, read.present,
                                       [b[0] for b in read.bad])
            read.rows += mapped.records - read.frame.height
            excluded.update(mapped.excluded)
            read.frame, mapped_bad = mapped.frame, mapped.quarantined
            read.present = [c for c in read.frame.columns if c != LINE]
            left_out = [b for b in mapped_bad if b[1] == EXCLUDED]
            excluded.update(str(b[2]) for b in left_out)
            mapped_bad = [b for b in mapped_bad if b[1] != EXCLUDED]
            if mapped_bad:
                bads.append(_unreadable_rows(index, mapped_bad))
        if read.frame.height == 0:
            continue
        canonical, unused = resolve_columns(inp, read, options.mapping, options.defaults)
        for col, n in repeat_columns(canonical, read.frame, unused).items():
            repeats[col] = repeats.get(col, 0) + n
        read.frame = read.frame.clear()  # the canonical columns are all that is needed now
        ignored |= unused
        good, bad = validate(canonical, tasks=options.tasks)
        del canonical
        goods.append(good.with_columns(pl.lit(index, dtype=pl.Int64).alias("__file_idx")))
        if bad.height:
            bads.append(
                bad.select(
                    pl.lit(index, dtype=pl.Int64).alias("__file_idx"),
                    pl.col(LINE).alias("source_line"),
                    pl.col("__cat"),
                    pl.col("__reason").alias("reason"),
                    pl.lit(None, dtype=pl.Utf8).alias("raw"),
                )
            )

    pool.shutdown(wait=True)
    options.hints.update(repeats)
    return goods, bads, reads, files, ignored


#: The quarantine table while ingesting (file index and reason category kept for sorting).
_WORK_QUARANTINE: dict[str, pl.DataType] = {
    "__file_idx": pl.Int64(),
    "source_line": pl.Int64(),
    "__cat": pl.Utf8(),
    "reason": pl.Utf8(),
    "raw": pl.Utf8(),
}


def _unreadable_rows(index: int, bad: Sequence[tuple[int, str, str, str]]) -> pl.DataFrame:
    """Quarantine rows of the lines a reader could not read (line, category, reason, raw)."""
    return pl.DataFrame(
        {
            "__file_idx": [index] * len(bad),
            "source_line": [b[0] for b in bad],
            "__cat": [b[1] for b in bad],
            "reason": [b[2] for b in bad],
            "raw": [b[3] for b in bad],
        },
        schema=_WORK_QUARANTINE,
    )


def _conflict_rows(conflicts: pl.DataFrame, names: pl.Series) -> pl.DataFrame:
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


def _summary(
    records: pl.DataFrame,
    quarantine: pl.DataFrame,
    n_read: int,
    n_copies: int,
    files: list[dict[str, Any]],
    sha256: str,
    reasons: Counter[str],
    options: IngestConfig,
    ignored: set[str],
) -> dict[str, Any]:
    """``ingest.json``: the accounting of every row, the files and the options used."""
    statuses = records.group_by("status").len().sort("status").rows()
    return {
        "records_read": n_read,
        "records_used": records.height,
        "records_quarantined": quarantine.height,
        "records_duplicate": n_copies,
        "files": files,
        "sha256": sha256,
        "models": sorted(records.get_column("model").unique().to_list()),
        "tasks": sorted(records.get_column("task").unique().to_list()),
        "quarantine_reasons": dict(sorted(reasons.items())),
        "unreadable_predictions": int(
            records.filter(pl.col("status").is_in(list(UNREADABLE_STATUSES))).height),
        "statuses": {str(s): int(n) for s, n in statuses},
        "mapping": dict(options.mapping),
        "defaults": dict(sorted(options.defaults.items())),
        "allowed_tasks": list(options.tasks) if options.tasks is not None else None,
        "ignored_columns": sorted(ignored),
    }


def binary_task_rule(records: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """:func:`selfmodel.records.reduction.binary_task_rule` on ingest's records.

    Returns the records and ``{task: rows made unreadable}``.
    """
    frame = nw.from_native(records)
    binary = binary_tasks(frame.lazy(), nw.lit(True)).collect().get_column("task").to_list()
    marked = frame.with_columns(not_boolean(nw.col("task").is_in(binary), nw.lit(True)))
    flagged = marked.filter(nw.col("not_boolean")).to_native()
    if flagged.height == 0:
        return records, {}
    counts = dict(sorted(flagged.group_by("task").len().rows()))
    out = marked.with_columns(*binary_task_rule_exprs()).drop("not_boolean").to_native()
    return out, {str(k): int(v) for k, v in counts.items()}


def _fill_raw(quarantine: pl.DataFrame, reads: Sequence[FileRead]) -> pl.DataFrame:
    """Fill missing ``raw`` texts by asking each file's lookup for its quarantined lines."""
    missing = quarantine.filter(pl.col("raw").is_null())
    if missing.height == 0:
        return quarantine
    fills: list[tuple[int, int, str]] = []
    for (file_idx,), part in missing.group_by(["__file_idx"], maintain_order=True):
        lines = part.get_column("source_line").to_list()
        found = reads[int(file_idx)].raw(lines)
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


def write_ingest(result: IngestResult, out: Path | str) -> None:
    """Write ``records.parquet``, ``quarantine.parquet`` and ``ingest.json`` into ``out``.

    Each file is written atomically (see :mod:`selfmodel.common.atomic`); ``out`` is created if
    needed. ``ingest.json`` (and ``result.summary``) gets ``records_sha256``, the SHA-256 of
    the ``records.parquet`` written: a later run that reads that file carries this accounting
    only while the file is unchanged (:mod:`selfmodel.records.ingest.carried`).

    Parameters
    ----------
    result
        What :func:`ingest` returned.
    out
        The output folder.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_parquet(out / "records.parquet", result.records)
    atomic.write_parquet(out / "quarantine.parquet", result.quarantine)
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
