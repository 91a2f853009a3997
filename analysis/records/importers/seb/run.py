"""``import_seb``: both experiments into canonical records and a registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.common import atomic
from selfmodel.records.contract import RECORD_SCHEMA, InputError
from selfmodel.records.importers.result import ImportResult
from selfmodel.records.importers.seb.layout import (
    EXP1_DIR,
    EXP1_RUNS,
    EXP2_DIR,
    EXP2_PREFIX,
    EXP2_RESULTS,
    LETTERS,
    RASCH_FILE,
    TABOO_FILE,
    TASK_REFUSAL,
    XSTEST_FILE,
    SebImport,
)
from selfmodel.records.importers.seb.model_names import Namer, no_models, read_models, registry_of
from selfmodel.records.importers.seb.refusal import Block, blocks_of, read_xstest
from selfmodel.records.importers.seb.word_association import (
    Exp1Stats,
    exp1_file,
    read_taboo,
    record_of,
)

# --------------------------------------------------------------------------------------------
# public API


def import_seb(src: Path | str, *, models: Path | str | None = None) -> SebImport:
    """Import a Self-Execution Benchmark clone as canonical self-prediction records.

    Parameters
    ----------
    src
        A clone of ``anon-researcher-2025/Self-Execution-Benchmark`` (folders
        ``experiment 1/results-04-05-25`` and ``experiment 2/results``).
    models
        Model table with canonical ids and ``|``-separated ``aliases`` (columns ``model,
        aliases, family, developer, params_b, active_params_b, open_weights, reasoning``).
        Default ``SRC/models.csv``; when absent, names are kept as spelled in the files and
        the registry has no covariates (both noted).

    Returns
    -------
    SebImport
        ``records`` (canonical columns), ``registry``, ``notes`` and ``counts``.

    Raises
    ------
    InputError
        When an expected folder or file is missing or a file cannot be read as documented.

    Examples
    --------
    >>> from pathlib import Path
    >>> src = Path("../shared/data/self-execution-benchmark")
    >>> if src.is_dir():  # doctest: +SKIP
    ...     result = import_seb(src)
    ...     result.records.group_by("task").len().sort("task")
    """
    root = Path(src)
    exp1, results2, xstest = _check_layout(root)
    notes: list[str] = []
    counts: dict[str, Any] = {}
    namer = _model_namer(root, models, notes)

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix()

    records: list[dict[str, Any]] = []
    stats = _import_exp1(exp1, namer, rel, records, notes, counts)
    _exp1_summary(stats, notes, counts)
    prompts = read_xstest(xstest)
    counts["refusal_prompts"] = len(prompts)
    chosen = _choose_exp2_runs(results2, namer, rel, notes, counts)
    _import_exp2(chosen, prompts, rel, records, notes, counts)
    return _assemble(records, namer, root, notes, counts)


# --------------------------------------------------------------------------------------------
# steps of import_seb


def _check_layout(root: Path) -> tuple[Path, Path, Path]:
    """``(experiment 1 folder, experiment 2 results folder, XSTest file)`` of a clone."""
    if not root.is_dir():
        raise InputError(
            f"{root}: no such folder; point the importer at a clone of "
            "anon-researcher-2025/Self-Execution-Benchmark."
        )
    exp1 = root / EXP1_DIR
    newest = exp1 / EXP1_RUNS[0]
    exp2 = root / EXP2_DIR
    results2 = exp2 / EXP2_RESULTS
    xstest = exp2 / XSTEST_FILE
    for folder in (newest, results2):
        if not folder.is_dir():
            raise InputError(
                f"{folder}: folder missing; SRC must be a full clone of "
                "anon-researcher-2025/Self-Execution-Benchmark (it has 'experiment 1/"
                f"{EXP1_RUNS[0]}' and 'experiment 2/{EXP2_RESULTS}')."
            )
    if not xstest.is_file():
        raise InputError(
            f"{xstest}: file missing; it lists the 450 XSTest prompts. Restore it from the "
            "repository."
        )
    return exp1, results2, xstest


def _model_namer(root: Path, models: Path | str | None, notes: list[str]) -> Namer:
    """The model-name mapper from ``models`` (default ``ROOT/models.csv``; absent: noted)."""
    models_path = Path(models) if models is not None else root / "models.csv"
    if models_path.is_file():
        model_table = read_models(models_path)
    elif models is not None:
        raise InputError(f"{models_path}: no such file; pass the model table with aliases.")
    else:
        model_table = no_models()
        notes.append(
            f"no models.csv in {root}: model names are kept as spelled in each file (the two "
            "experiments spell them differently) and the registry has no covariates; pass "
            "models=PATH to map them."
        )
    return Namer(model_table)


def _import_exp1(
    exp1: Path,
    namer: Namer,
    rel: Callable[[Path], str],
    records: list[dict[str, Any]],
    notes: list[str],
    counts: dict[str, Any],
) -> Exp1Stats:
    """Append experiment 1's records (newest run first, older runs only for new models)."""
    taboo = read_taboo(exp1 / TABOO_FILE)
    if taboo is None:
        notes.append(
            f"{EXP1_DIR}/{TABOO_FILE} missing: option words are not checked against "
            "the item set, and rows with unreadable predictions are skipped."
        )
    stats = Exp1Stats()
    exp1_models: dict[str, tuple[str, Path]] = {}  # canonical -> (run, file)
    for run in EXP1_RUNS:
        folder = exp1 / run
        if not folder.is_dir():
            notes.append(f"word_association: run folder '{rel(folder)}' absent; skipped.")
            continue
        files = sorted(folder.glob("*.csv"))
        superseded: list[str] = []
        added: list[str] = []
        for path in files:
            model = namer(path.stem, rel(path))
            if model in exp1_models:
                prev_run, prev = exp1_models[model]
                if prev_run == run:
                    notes.append(
                        f"word_association: '{rel(path)}' and '{rel(prev)}' are both {model}; "
                        f"kept '{rel(prev)}' (first in name order), skipped the other."
                    )
                else:
                    superseded.append(model)
                continue
            exp1_models[model] = (run, path)
            added.append(model)
            records.extend(
                exp1_file(path, rel=rel(path), model=model, run_id=run, taboo=taboo, stats=stats)
            )
        counts[f"word_association_files_{run}"] = len(files)
        if run != EXP1_RUNS[0]:
            counts["word_association_older_run_models_imported"] = sorted(added)
            counts["word_association_older_run_models_superseded"] = sorted(superseded)
            if superseded:
                notes.append(
                    f"word_association: {len(superseded)} model(s) of the older run '{run}' "
                    f"are also in '{EXP1_RUNS[0]}' and were not mixed in: "
                    f"{', '.join(sorted(superseded))}."
                )
            if added:
                notes.append(
                    f"word_association: {len(added)} model(s) appear only in the older run "
                    f"'{run}' and were imported with run_id='{run}': {', '.join(sorted(added))}."
                )
    return stats


def _exp1_summary(stats: Exp1Stats, notes: list[str], counts: dict[str, Any]) -> None:
    """Counts and notes of what experiment 1's reader met."""
    counts.update(
        word_association_rows=stats.rows,
        word_association_records=stats.records,
        word_association_unreadable_prediction_rows=stats.unreadable_predictions_rows,
        word_association_unreadable_generated_rows=stats.unreadable_generated_rows,
        word_association_unreadable_values=stats.unreadable_values,
        word_association_string_bools=stats.string_bools,
        word_association_options_not_in_item_set=stats.options_not_in_item_set,
        word_association_skipped_rows=len(stats.skipped_rows),
        word_association_whitespace_outcomes=stats.whitespace_changed,
    )
    if stats.whitespace_changed:
        notes.append(
            f"word_association: option and generated words are compared lower-cased but "
            f"otherwise exactly, as the authors did; for {stats.whitespace_changed} record(s) "
            "stripping surrounding whitespace would turn a miss into a hit (e.g. option "
            "' trunk ' vs generated 'trunk'); they are left as misses (item_id is stripped)."
        )
    if stats.string_bools:
        notes.append(
            f"word_association: {stats.string_bools} prediction(s) were strings such as 'true' "
            "rather than Python booleans; read with parse_bool (the authors' table counts them "
            "the same way)."
        )
    if stats.unreadable_predictions_rows or stats.unreadable_values:
        notes.append(
            f"word_association: {stats.unreadable_predictions_rows} row(s) with an unreadable "
            f"Predictions literal and {stats.unreadable_values} unreadable prediction value(s) "
            "became records with status 'unparsed' and a null prediction."
        )
    if stats.unreadable_generated_rows:
        notes.append(
            f"word_association: {stats.unreadable_generated_rows} row(s) with an unreadable "
            "Generated Words literal: outcome null, status 'unparsed'."
        )
    if stats.skipped_rows:
        notes.append(
            f"word_association: {len(stats.skipped_rows)} row(s) skipped (duplicate target or "
            "unreadable predictions for a target not in the item set); first data rows: "
            f"{stats.skipped_rows[:10]}."
        )
    if stats.options_not_in_item_set:
        notes.append(
            f"word_association: {stats.options_not_in_item_set} option word(s) answered by a "
            f"model are not in the target's item set ({TABOO_FILE}); kept as the model wrote "
            "them, as the authors do."
        )
    if stats.duplicate_options:
        notes.append(
            f"word_association: {stats.duplicate_options} option word(s) repeated within a "
            "row (case-insensitively); the first was kept."
        )


def _choose_exp2_runs(
    results2: Path,
    namer: Namer,
    rel: Callable[[Path], str],
    notes: list[str],
    counts: dict[str, Any],
) -> dict[str, tuple[Path, Block]]:
    """Model -> (file, run block) used for experiment 2: the largest run of each model."""
    chosen: dict[str, tuple[Path, Block]] = {}
    empty_files: list[str] = []
    for path in sorted(results2.glob("*.csv")):
        stem = path.stem
        spelling = stem[len(EXP2_PREFIX) :] if stem.startswith(EXP2_PREFIX) else stem
        model = namer(spelling, rel(path))
        blocks, stray = blocks_of(path)
        if stray:
            notes.append(
                f"refusal: '{rel(path)}' has {stray} row(s) before its first "
                "'0,1,2,3' marker; ignored."
            )
        nonempty = [b for b in blocks if b.size]
        if not nonempty:
            empty_files.append(rel(path))
            continue
        best = max(nonempty, key=lambda b: (b.size, b.index))
        others = [b for b in nonempty if b is not best]
        if others:
            notes.append(
                f"refusal: '{rel(path)}' holds {len(nonempty)} appended runs of "
                f"{[b.size for b in nonempty]} rows; used run {best.index} ({best.size} rows)."
            )
        if model in chosen:
            prev_path, prev_block = chosen[model]
            if (best.size, rel(path)) > (prev_block.size, rel(prev_path)):
                loser, chosen[model] = (prev_path, prev_block), (path, best)
            else:
                loser = (path, best)
            notes.append(
                f"refusal: '{rel(prev_path)}' and '{rel(path)}' are both {model}; used the "
                f"larger run '{rel(chosen[model][0])}' ({chosen[model][1].size} rows), not "
                f"'{rel(loser[0])}' ({loser[1].size} rows)."
            )
            continue
        chosen[model] = (path, best)
    if empty_files:
        notes.append(
            f"refusal: {len(empty_files)} empty file(s) skipped: {', '.join(empty_files)}."
        )
    counts["refusal_empty_files"] = len(empty_files)
    return chosen


def _import_exp2(
    chosen: dict[str, tuple[Path, Block]],
    prompts: dict[str, str | None],
    rel: Callable[[Path], str],
    records: list[dict[str, Any]],
    notes: list[str],
    counts: dict[str, Any],
) -> None:
    """Append experiment 2's records: one per model and XSTest prompt (absent ones 'error')."""
    unparsed_pred = unparsed_ver = missing = unknown_ids = duplicate_ids = 0
    missing_by_model: dict[str, int] = {}
    for model in sorted(chosen):
        path, block = chosen[model]
        run_id = f"{EXP2_RESULTS}#run{block.index}"
        got: dict[str, dict[str, Any]] = {}
        for line, row in block.rows:
            if not any(f.strip() for f in row):
                continue
            pid = row[0].strip()
            if pid in got:
                duplicate_ids += 1
                continue
            if pid not in prompts:
                unknown_ids += 1
            provision = LETTERS.get(row[2].strip()) if len(row) > 2 else None
            verification = LETTERS.get(row[3].strip()) if len(row) > 3 else None
            unparsed_pred += provision is None
            unparsed_ver += verification is None
            got[pid] = record_of(
                model=model,
                task=TASK_REFUSAL,
                item_id=pid,
                prediction=provision,
                outcome=verification,
                cluster=prompts.get(pid),
                run_id=run_id,
                source_file=rel(path),
                source_line=line,
            )
        absent = [pid for pid in prompts if pid not in got]
        missing_by_model[model] = len(absent)
        missing += len(absent)
        for pid in absent:
            got[pid] = record_of(
                model=model,
                task=TASK_REFUSAL,
                item_id=pid,
                prediction=None,
                outcome=None,
                cluster=prompts[pid],
                run_id=run_id,
                source_file=rel(path),
                source_line=None,
                status="error",
            )
        order = {pid: i for i, pid in enumerate(prompts)}
        records.extend(sorted(got.values(), key=lambda r: order.get(r["item_id"], len(order))))
    counts.update(
        refusal_models=len(chosen),
        refusal_unparsed_provision=unparsed_pred,
        refusal_unparsed_verification=unparsed_ver,
        refusal_missing_prompts=missing,
        refusal_missing_by_model=missing_by_model,
        refusal_unknown_ids=unknown_ids,
        refusal_duplicate_ids=duplicate_ids,
    )
    _exp2_notes(counts, notes)


def _exp2_notes(counts: dict[str, Any], notes: list[str]) -> None:
    """Notes of what experiment 2's reader met (from its counts)."""
    unparsed_pred = counts["refusal_unparsed_provision"]
    unparsed_ver = counts["refusal_unparsed_verification"]
    missing = counts["refusal_missing_prompts"]
    unknown_ids, duplicate_ids = counts["refusal_unknown_ids"], counts["refusal_duplicate_ids"]
    notes.append(
        f"refusal: {unparsed_pred} unreadable provision letter(s) and {unparsed_ver} unreadable "
        "verification letter(s) (anything but A/B, e.g. '\"B\"') became status 'unparsed' "
        "with correct null."
    )
    if missing:
        notes.append(
            f"refusal: {missing} XSTest prompt(s) have no row in their model's run (the "
            "authors count them as failures); each became a record with status 'error' and "
            "null prediction and outcome, so every model has one record per prompt."
        )
    if unknown_ids or duplicate_ids:
        notes.append(
            f"refusal: {unknown_ids} row(s) with an id not in {XSTEST_FILE} (kept, cluster "
            f"null) and {duplicate_ids} repeated id(s) within a run (first kept)."
        )


def _assemble(
    records: list[dict[str, Any]],
    namer: Namer,
    root: Path,
    notes: list[str],
    counts: dict[str, Any],
) -> SebImport:
    """The records frame, the registry and the final counts."""
    if namer.unknown and namer.models.by_spelling:
        listed = "; ".join(f"{s!r} ({', '.join(w)})" for s, w in sorted(namer.unknown.items()))
        notes.append(
            f"{len(namer.unknown)} model spelling(s) not in models.csv kept under their own "
            f"name: {listed}. Add them to the 'aliases' column to merge them."
        )
    counts["unknown_model_spellings"] = sorted(namer.unknown)

    frame = (
        pl.DataFrame(records, schema=RECORD_SCHEMA, orient="row")
        if records
        else (pl.DataFrame(schema=RECORD_SCHEMA))
    )
    registry = registry_of(frame, namer, root / RASCH_FILE, notes, counts)

    counts["records"] = frame.height
    counts["records_by_task"] = {
        t: n for t, n in frame.group_by("task").len().sort("task").iter_rows()
    }
    counts["records_by_status"] = {
        s: n for s, n in frame.group_by("status").len().sort("status").iter_rows()
    }
    counts["models"] = frame["model"].n_unique() if frame.height else 0
    return SebImport(records=frame, registry=registry, notes=notes, counts=counts)


def write_import(result: ImportResult, out: Path | str) -> None:
    """Write an import to ``OUT/records.parquet``, ``OUT/registry.csv`` and ``OUT/import.json``.

    Each file is written atomically (temporary file, then rename).

    Parameters
    ----------
    result
        What :func:`import_seb` or a mapped importer returned.
    out
        Output folder; created when missing.
    """
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: exists and is not a folder; choose another --out.")
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_parquet(folder / "records.parquet", result.records)
    atomic.write_csv(folder / "registry.csv", result.registry)  # formula cells neutralised
    atomic.write_json(folder / "import.json", {"notes": result.notes, "counts": result.counts})
