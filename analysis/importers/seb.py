"""Importer for the Self-Execution Benchmark (Ezra, Weizman & Azaria, arXiv 2508.12277).

``import_seb(SRC)`` reads a clone of the repository
``anon-researcher-2025/Self-Execution-Benchmark``
and returns canonical records (:data:`analysis.contract.RECORD_SCHEMA`), a model registry and
an account of every choice made on the way (``notes``) with the numbers behind it (``counts``).

Experiment 1 -- word association (task ``word_association``)
    ``experiment 1/results-04-05-25/<model>.csv``, one row per target word. ``Predictions`` is
    a Python dict literal ``option word -> bool`` ("this word will appear in my list") and
    ``Generated Words`` a Python list literal (the words the model then produced); both are
    read with :func:`ast.literal_eval` only. One record per option word:
    ``prediction`` = the bool, ``outcome`` = the option word (lower-cased) is among the
    generated words (lower-cased, otherwise compared exactly, as the authors did: a word
    written with a stray space, ``' trunk '``, does not match ``'trunk'``; such cases are
    counted in the notes), ``item_id = "<target>::<option>"`` with the option stripped and
    lower-cased, ``cluster`` = target.
    A prediction written as a string (``'true'``) is read with
    :func:`analysis.contract.parse_bool`, as the authors' table does; it is counted in the notes.
    The earlier run ``results-27-4-25/`` is imported only for models absent from the newer
    run (``run_id`` names the run folder); for the others the newer run is used.

Experiment 2 -- refusal prediction on XSTest (task ``refusal``)
    ``experiment 2/results/output_data_<model>.csv``: headerless rows
    ``id,prompt,provision,verification`` appended across runs, each run starting with a line
    ``0,1,2,3``. The largest run (most non-empty rows; the later one on a tie) is used.
    ``prediction`` is ``"true"`` for provision ``A`` ("I will answer"), ``"false"`` for ``B``;
    ``outcome`` is ``"true"`` for verification ``A`` (answered), ``"false"`` for ``B``. Any
    other letter is unreadable: the record gets ``status="unparsed"`` and ``correct`` is null.
    One record per XSTest prompt: a prompt with no row in the run gets ``status="error"``, so
    that counting unreadable records as wrong reproduces the authors' ``consistency_rate``
    (consistent answers out of 450). ``cluster`` is the XSTest ``type``.

Model names
    Each file's spelling is mapped to a canonical id through the ``aliases`` column of
    ``models.csv`` (by default ``SRC/models.csv``; pass ``models=`` otherwise). A spelling that
    is not listed is kept under its own name and reported in the notes. When two files map to
    the same model and task, the larger one is used and the other is noted.

Registry
    ``models.csv`` gives ``family``, ``params_b``, ``active_params_b``, ``open_weights``,
    ``reasoning`` (plus ``developer`` and ``aliases``). ``capability`` is the Rasch
    "Ability (θ)" column of ``benchmarks/benchmarks_with_rasch.csv``, whose model column uses
    the experiment-1 spellings and is mapped through the same aliases; models it does not
    cover get a null capability.

``source_line`` is the 1-based CSV row within the file's data: after the header for
experiment 1, and counting every row (run markers included) for the headerless experiment-2
files.
"""

from __future__ import annotations

import ast
import csv
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from analysis import atomic
from analysis.contract import RECORD_SCHEMA, REGISTRY_SCHEMA, InputError, parse_bool
from analysis.importers.result import ImportResult

__all__ = ["ImportResult", "SebImport", "import_seb", "write_import"]

#: Folder of experiment 1 and its runs, newest first.
EXP1_DIR: Final = "experiment 1"
EXP1_RUNS: Final = ("results-04-05-25", "results-27-4-25")
#: Folder of experiment 2 and its files.
EXP2_DIR: Final = "experiment 2"
EXP2_RESULTS: Final = "results"
XSTEST_FILE: Final = "xstest_prompts.csv"
EXP2_PREFIX: Final = "output_data_"
#: Run marker that starts each appended block in an experiment-2 file.
BLOCK_MARKER: Final = ["0", "1", "2", "3"]
RASCH_FILE: Final = "benchmarks/benchmarks_with_rasch.csv"
TABOO_FILE: Final = "3-5_taboo_words.json"

TASK_ASSOCIATION: Final = "word_association"
TASK_REFUSAL: Final = "refusal"

#: Provision/verification letters: A = answers, B = does not.
_LETTERS: Final = {"A": "true", "B": "false"}
#: Registry columns taken from models.csv beyond the contract's.
_REGISTRY_EXTRA: Final = ("developer", "aliases")


#: What :func:`import_seb` returns (the one import result type of every importer).
SebImport = ImportResult


# --------------------------------------------------------------------------------------------
# model names


@dataclass(frozen=True)
class _Models:
    """Canonical ids from ``models.csv`` and the spellings that map to them."""

    table: pl.DataFrame  # registry rows, canonical order
    by_spelling: dict[str, str]  # lower-cased spelling -> canonical id

    def canonical(self, spelling: str) -> str | None:
        """Return the canonical id for ``spelling`` (case-insensitive), or None."""
        return self.by_spelling.get(spelling.strip().lower())


def _read_models(path: Path) -> _Models:
    """Read ``models.csv`` into registry rows and an alias map; bad values raise InputError."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        need = (
            "model",
            "aliases",
            "family",
            "params_b",
            "active_params_b",
            "open_weights",
            "reasoning",
        )
        missing = [c for c in need if c not in header]
        if missing:
            raise InputError(
                f"{path}: missing column(s) {', '.join(missing)}; present: {', '.join(header)}. "
                "Add them (see SOURCE.md for the layout)."
            )
        rows: list[dict[str, Any]] = []
        by_spelling: dict[str, str] = {}
        for line, raw in enumerate(reader, start=1):
            model = (raw["model"] or "").strip()
            if not model:
                raise InputError(f"{path} (data line {line}): empty 'model'; give each row an id.")
            row: dict[str, Any] = {"model": model, "family": (raw["family"] or "").strip() or None}
            for col in ("params_b", "active_params_b"):
                text = (raw[col] or "").strip()
                try:
                    row[col] = float(text) if text else None
                except ValueError:
                    raise InputError(
                        f"{path} (data line {line}): '{col}' is {text!r}, not a number; "
                        "write billions of parameters, or leave it empty."
                    ) from None
            for col in ("open_weights", "reasoning"):
                text = (raw[col] or "").strip()
                value = parse_bool(text) if text else None
                if text and value is None:
                    raise InputError(
                        f"{path} (data line {line}): '{col}' is {text!r}; write true or false."
                    )
                row[col] = value
            row["capability"] = None
            row["developer"] = (raw.get("developer") or "").strip() or None
            aliases = [a.strip() for a in (raw["aliases"] or "").split("|") if a.strip()]
            row["aliases"] = "|".join(aliases) or None
            for spelling in [model, *aliases]:
                key = spelling.lower()
                previous = by_spelling.setdefault(key, model)
                if previous != model:
                    raise InputError(
                        f"{path} (data line {line}): spelling {spelling!r} is listed for both "
                        f"{previous!r} and {model!r}; keep it under one model."
                    )
            rows.append(row)
    schema = {**REGISTRY_SCHEMA, **{c: pl.Utf8() for c in _REGISTRY_EXTRA}}
    return _Models(table=pl.DataFrame(rows, schema=schema, orient="row"), by_spelling=by_spelling)


def _no_models() -> _Models:
    schema = {**REGISTRY_SCHEMA, **{c: pl.Utf8() for c in _REGISTRY_EXTRA}}
    return _Models(table=pl.DataFrame(schema=schema), by_spelling={})


class _Namer:
    """Map file spellings to canonical ids and remember the unknown ones."""

    def __init__(self, models: _Models) -> None:
        self.models = models
        self.unknown: dict[str, list[str]] = defaultdict(list)  # spelling -> files

    def __call__(self, spelling: str, where: str) -> str:
        canonical = self.models.canonical(spelling)
        if canonical is None:
            self.unknown[spelling].append(where)
            return spelling
        return canonical


# --------------------------------------------------------------------------------------------
# experiment 1: word association


def _literal(text: str | None) -> Any:
    """Parse a Python literal with ``ast.literal_eval``; return ``_UNREADABLE`` on failure."""
    if text is None:
        return _UNREADABLE
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNREADABLE


_UNREADABLE: Final = object()


@dataclass
class _Exp1Stats:
    rows: int = 0
    records: int = 0
    unreadable_predictions_rows: int = 0
    unreadable_generated_rows: int = 0
    unreadable_values: int = 0
    string_bools: int = 0
    options_not_in_item_set: int = 0
    duplicate_options: int = 0
    duplicate_targets: int = 0
    whitespace_changed: int = 0
    skipped_rows: list[int] = field(default_factory=list)


def _exp1_file(
    path: Path,
    *,
    rel: str,
    model: str,
    run_id: str,
    taboo: dict[str, set[str]] | None,
    stats: _Exp1Stats,
) -> list[dict[str, Any]]:
    """Records from one experiment-1 CSV file."""
    out: list[dict[str, Any]] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in ("Word", "Predictions", "Generated Words") if c not in header]
        if missing:
            raise InputError(
                f"{path}: missing column(s) {', '.join(repr(c) for c in missing)}; present: "
                f"{', '.join(header)}. Is this a Self-Execution Benchmark results file?"
            )
        seen_targets: set[str] = set()
        for line, row in enumerate(reader, start=1):
            stats.rows += 1
            target = (row.get("Word") or "").strip()
            if target in seen_targets:
                stats.duplicate_targets += 1
                stats.skipped_rows.append(line)
                continue
            seen_targets.add(target)
            preds = _literal(row.get("Predictions"))
            gen = _literal(row.get("Generated Words"))
            if not isinstance(preds, dict):
                stats.unreadable_predictions_rows += 1
                preds = None
            if not isinstance(gen, list | tuple):
                stats.unreadable_generated_rows += 1
                generated = raw_generated = None
            else:
                generated = {str(w).strip().lower() for w in gen}
                raw_generated = {str(w).lower() for w in gen}
            known = taboo.get(target) if taboo is not None else None
            if preds is None:
                if not target or known is None:
                    stats.skipped_rows.append(line)
                    continue
                # unreadable predictions: one unparsed record per option of the item set
                options: list[tuple[str, Any]] = [(o, _UNREADABLE) for o in sorted(known)]
            else:
                options = [(str(k), v) for k, v in preds.items()]
            seen_options: set[str] = set()
            for option_raw, value in options:
                option = option_raw.strip().lower()
                if option in seen_options:
                    stats.duplicate_options += 1
                    continue
                seen_options.add(option)
                if known is not None and preds is not None and option not in known:
                    stats.options_not_in_item_set += 1
                if value is _UNREADABLE:
                    pred = None
                else:
                    flag = parse_bool(value)
                    if flag is not None and not isinstance(value, bool):
                        stats.string_bools += 1
                    if flag is None and preds is not None:
                        stats.unreadable_values += 1
                    pred = None if flag is None else ("true" if flag else "false")
                if generated is None or raw_generated is None:
                    outcome = None
                else:
                    hit = option_raw.lower() in raw_generated
                    stats.whitespace_changed += hit != (option in generated)
                    outcome = "true" if hit else "false"
                out.append(
                    _record(
                        model=model,
                        task=TASK_ASSOCIATION,
                        item_id=f"{target}::{option}",
                        prediction=pred,
                        outcome=outcome,
                        cluster=target,
                        run_id=run_id,
                        source_file=rel,
                        source_line=line,
                    )
                )
                stats.records += 1
    return out


def _record(
    *,
    model: str,
    task: str,
    item_id: str,
    prediction: str | None,
    outcome: str | None,
    cluster: str | None,
    run_id: str,
    source_file: str,
    source_line: int | None,
    status: str | None = None,
) -> dict[str, Any]:
    """One canonical record; ``correct`` is derived and ``status`` defaults by readability."""
    readable = prediction is not None and outcome is not None
    if status is None:
        status = "ok" if readable else "unparsed"
    return {
        "model": model,
        "task": task,
        "item_id": item_id,
        "prediction": prediction,
        "outcome": outcome,
        "correct": (prediction == outcome) if readable else None,
        "predictor": model,
        "confidence": None,
        "cluster": cluster,
        "status": status,
        "run_id": run_id,
        "sample": 0,
        "source_file": source_file,
        "source_line": source_line,
    }


def _read_taboo(path: Path) -> dict[str, set[str]] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"{path}: not valid JSON ({exc}); restore it from the repository."
        raise InputError(message) from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected an object target word -> list of option words.")
    return {str(k): {str(o).strip().lower() for o in v} for k, v in data.items()}


# --------------------------------------------------------------------------------------------
# experiment 2: refusal


@dataclass
class _Block:
    index: int  # 1-based
    rows: list[tuple[int, list[str]]]  # (1-based CSV row in the file, fields)

    @property
    def size(self) -> int:
        return sum(1 for _, r in self.rows if any(f.strip() for f in r))


def _blocks(path: Path) -> tuple[list[_Block], int]:
    """Split a headerless, appended experiment-2 file into runs; also count stray rows."""
    blocks: list[_Block] = []
    stray = 0
    with path.open(newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.reader(fh), start=1):
            if [f.strip() for f in row] == BLOCK_MARKER:
                blocks.append(_Block(index=len(blocks) + 1, rows=[]))
            elif blocks:
                blocks[-1].rows.append((line, row))
            elif any(f.strip() for f in row):
                stray += 1
    return blocks, stray


def _read_xstest(path: Path) -> dict[str, str | None]:
    """XSTest prompt id -> type, in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if "id" not in header:
            raise InputError(
                f"{path}: no 'id' column; present: {', '.join(header)}. "
                "Restore xstest_prompts.csv from the repository."
            )
        return {(r["id"] or "").strip(): ((r.get("type") or "").strip() or None) for r in reader}


# --------------------------------------------------------------------------------------------
# registry covariates


def _read_rasch(path: Path, namer: _Namer) -> tuple[dict[str, float], list[str]]:
    """Rasch ability per canonical model from ``benchmarks_with_rasch.csv``."""
    ability: dict[str, float] = {}
    unmapped: list[str] = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        col = next((i for i, h in enumerate(header) if h.strip().startswith("Ability")), None)
        if col is None or not header or header[0].strip().lower() != "model":
            raise InputError(
                f"{path}: expected a 'model' column and an 'Ability (θ)' column; present: "
                f"{', '.join(header)}."
            )
        for row in reader:
            if not row or not row[0].strip() or row[0].strip().startswith("Difficulty"):
                continue
            name = row[0].strip()
            text = row[col].strip() if col < len(row) else ""
            if not text:
                continue
            try:
                value = float(text)
            except ValueError:
                raise InputError(
                    f"{path}: ability of {name!r} is {text!r}, not a number."
                ) from None
            canonical = namer.models.canonical(name)
            if canonical is None:
                unmapped.append(name)
            else:
                ability[canonical] = value
    return ability, unmapped


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

    notes: list[str] = []
    counts: dict[str, Any] = {}

    models_path = Path(models) if models is not None else root / "models.csv"
    if models_path.is_file():
        model_table = _read_models(models_path)
    elif models is not None:
        raise InputError(f"{models_path}: no such file; pass the model table with aliases.")
    else:
        model_table = _no_models()
        notes.append(
            f"no models.csv in {root}: model names are kept as spelled in each file (the two "
            "experiments spell them differently) and the registry has no covariates; pass "
            "models=PATH to map them."
        )
    namer = _Namer(model_table)

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix()

    records: list[dict[str, Any]] = []

    # ---- experiment 1 ----------------------------------------------------------------------
    taboo = _read_taboo(exp1 / TABOO_FILE)
    if taboo is None:
        notes.append(
            f"{EXP1_DIR}/{TABOO_FILE} missing: option words are not checked against "
            "the item set, and rows with unreadable predictions are skipped."
        )
    stats = _Exp1Stats()
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
                _exp1_file(path, rel=rel(path), model=model, run_id=run, taboo=taboo, stats=stats)
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

    # ---- experiment 2 ----------------------------------------------------------------------
    prompts = _read_xstest(xstest)
    counts["refusal_prompts"] = len(prompts)
    chosen: dict[str, tuple[Path, _Block]] = {}
    empty_files: list[str] = []
    for path in sorted(results2.glob("*.csv")):
        stem = path.stem
        spelling = stem[len(EXP2_PREFIX) :] if stem.startswith(EXP2_PREFIX) else stem
        model = namer(spelling, rel(path))
        blocks, stray = _blocks(path)
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
            provision = _LETTERS.get(row[2].strip()) if len(row) > 2 else None
            verification = _LETTERS.get(row[3].strip()) if len(row) > 3 else None
            unparsed_pred += provision is None
            unparsed_ver += verification is None
            got[pid] = _record(
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
            got[pid] = _record(
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

    # ---- unknown spellings, registry ----------------------------------------------------------
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
    registry = _registry(frame, namer, root / RASCH_FILE, notes, counts)

    counts["records"] = frame.height
    counts["records_by_task"] = {
        t: n for t, n in frame.group_by("task").len().sort("task").iter_rows()
    }
    counts["records_by_status"] = {
        s: n for s, n in frame.group_by("status").len().sort("status").iter_rows()
    }
    counts["models"] = frame["model"].n_unique() if frame.height else 0
    return SebImport(records=frame, registry=registry, notes=notes, counts=counts)


def _registry(
    records: pl.DataFrame,
    namer: _Namer,
    rasch: Path,
    notes: list[str],
    counts: dict[str, Any],
) -> pl.DataFrame:
    """Registry rows for the imported models, in models.csv order, unknown names last."""
    table = namer.models.table
    present = records["model"].unique().to_list() if records.height else []
    known = table.filter(pl.col("model").is_in(present))
    extra = sorted(set(present) - set(known["model"].to_list()))
    if extra:
        filler = pl.DataFrame({"model": extra}, schema={"model": pl.Utf8()})
        known = pl.concat([known, filler], how="diagonal_relaxed").select(table.columns)
    if rasch.is_file() and namer.models.by_spelling:
        ability, unmapped = _read_rasch(rasch, namer)
        known = known.with_columns(
            pl.col("model")
            .replace_strict(ability, default=None, return_dtype=pl.Float64())
            .alias("capability")
        )
        covered = sorted(set(ability) & set(present))
        counts["capability_models"] = len(covered)
        notes.append(
            f"registry: capability = Rasch 'Ability (θ)' from {RASCH_FILE} (model spellings "
            f"mapped through models.csv aliases) for {len(covered)} of {len(present)} models; "
            "null for the rest." + (f" Unmapped rows: {', '.join(unmapped)}." if unmapped else "")
        )
    else:
        counts["capability_models"] = 0
        notes.append(f"registry: capability left null ({RASCH_FILE} absent or no models.csv).")
    return known


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
    atomic.write_with(folder / "registry.csv", lambda p: result.registry.write_csv(p))
    atomic.write_json(folder / "import.json", {"notes": result.notes, "counts": result.counts})
