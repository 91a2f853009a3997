"""Experiment 1 (word association): reading its run files into canonical records."""

from __future__ import annotations

import ast
import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from selfmodel.records.contract import InputError, parse_bool
from selfmodel.records.importers.seb.layout import TASK_ASSOCIATION

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
class Exp1Stats:
    """Counts of rows read and records made from the word-association files."""

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


def exp1_file(
    path: Path,
    *,
    rel: str,
    model: str,
    run_id: str,
    taboo: dict[str, set[str]] | None,
    stats: Exp1Stats,
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
                pred = _prediction_of(value, stats, predictions_read=preds is not None)
                outcome = _outcome_of(option_raw, option, generated, raw_generated, stats)
                out.append(
                    record_of(
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


def _prediction_of(value: Any, stats: Exp1Stats, *, predictions_read: bool) -> str | None:
    """An option's predicted value as ``"true"``/``"false"`` (``None``: unreadable)."""
    if value is _UNREADABLE:
        return None
    flag = parse_bool(value)
    if flag is not None and not isinstance(value, bool):
        stats.string_bools += 1
    if flag is None and predictions_read:
        stats.unreadable_values += 1
    return None if flag is None else ("true" if flag else "false")


def _outcome_of(
    option_raw: str,
    option: str,
    generated: set[str] | None,
    raw_generated: set[str] | None,
    stats: Exp1Stats,
) -> str | None:
    """Whether the model generated the option (``None`` when its words are unreadable)."""
    if generated is None or raw_generated is None:
        return None
    hit = option_raw.lower() in raw_generated
    stats.whitespace_changed += hit != (option in generated)
    return "true" if hit else "false"


def record_of(
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


def read_taboo(path: Path) -> dict[str, set[str]] | None:
    """The taboo words per item, or ``None`` when the file is missing."""
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
