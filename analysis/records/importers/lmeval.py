"""Importer for lm-evaluation-harness per-sample logs (``--log_samples``).

The layout of a run's output, a sample line, the ``@`` metadata and the defaults:
``docs/mapping.md`` ("What each log format gives a mapping"). Which fields are the
self-prediction and the outcome depends on how the task was written, so a mapping
(:mod:`selfmodel.records.importers.mapping`) says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from selfmodel.records.contract import JSON_ERRORS, InputError, json_problem
from selfmodel.records.importers.mapping import (
    LogSample,
    MappedImport,
    Mapping,
    Samples,
    import_logs,
    source_name,
)
from selfmodel.records.ingest.discover import open_gzip_text

__all__ = ["import_lmeval", "read_lmeval_samples"]

#: ``samples_<task>_<date>.jsonl`` (date as lm-eval writes it: ISO with ``-`` for ``:``).
SAMPLES_RE: Final = re.compile(
    r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl(?:\.gz)?$"
)


def _model_from_args(model_args: Any) -> str | None:
    if isinstance(model_args, dict):
        for key in ("pretrained", "model", "model_name"):
            if isinstance(model_args.get(key), str):
                return str(model_args[key])
        return None
    if isinstance(model_args, str):
        for part in model_args.split(","):
            key, _, value = part.partition("=")
            if key.strip() in ("pretrained", "model", "model_name") and value.strip():
                return value.strip()
    return None


def _params_b(results: dict[str, Any]) -> float | None:
    """``config.model_num_parameters`` in billions (lm-eval records it for HF models), or None."""
    config = results.get("config")
    n = config.get("model_num_parameters") if isinstance(config, dict) else None
    if isinstance(n, int | float) and not isinstance(n, bool) and n > 0:
        return float(n) / 1e9
    return None


def _results_for(path: Path, date: str | None) -> tuple[dict[str, Any], Path | None]:
    candidates = []
    if date:
        candidates.append(path.parent / f"results_{date}.json")
    others = sorted(path.parent.glob("results_*.json"))
    if len(others) == 1:
        candidates.append(others[0])
    for c in candidates:
        if c.is_file():
            try:
                data = json.loads(c.read_text(encoding="utf-8"))
            except (*JSON_ERRORS, UnicodeDecodeError) as exc:
                raise InputError(f"{c}: not valid JSON ({json_problem(exc)}).") from None
            if isinstance(data, dict):
                return data, c
    return {}, None


def read_lmeval_samples(path: Path | str, *, root: Path | str | None = None) -> Samples:
    """Read one ``samples_<task>_<date>.jsonl`` file (``.jsonl.gz`` too).

    Parameters
    ----------
    path
        The samples file.
    root
        The folder ``source_file`` names the file from (default: the file's folder; see
        :func:`~selfmodel.records.importers.mapping.source_name`).

    Returns
    -------
    samples : list of LogSample
        One per JSON line, with the run's metadata.
    notes : list of str
        What was skipped (unreadable lines) or guessed (the model name).

    Raises
    ------
    InputError
        When the file cannot be opened or no line is valid JSON.
    """
    p = Path(path)
    rel = source_name(p, root)
    notes: list[str] = []
    match = SAMPLES_RE.match(p.name)
    task = match["task"] if match else p.stem.removeprefix("samples_")
    date = match["date"] if match else None
    results, _ = _results_for(p, date)
    model = results.get("model_name") if isinstance(results.get("model_name"), str) else None
    if model is None:
        config = results.get("config")
        model = _model_from_args(config.get("model_args")) if isinstance(config, dict) else None
    if model is None:
        model = p.parent.name.replace("__", "/")
        notes.append(
            f"{rel}: no results_*.json with the model name beside it; model taken from the "
            f"folder name: {model!r}."
        )
    meta = {
        "model": model,
        "task": task,
        "date": date,
        "results": results,
        "params_b": _params_b(results),
    }
    samples: list[LogSample] = []
    bad: list[int] = []
    try:
        with open_gzip_text(p) if p.suffix == ".gz" else p.open(encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except JSON_ERRORS:  # a syntax error, nesting too deep, a 5,000-digit number
                    bad.append(line_no)
                    continue
                samples.append(LogSample(data, meta, rel, line_no))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read ({exc}).") from None
    if bad and not samples:
        raise InputError(f"{p}: no line is valid JSON (first bad line {bad[0]}); is it JSONL?")
    if bad:
        notes.append(f"{rel}: {len(bad)} line(s) are not valid JSON and were skipped: {bad[:10]}.")
    if not samples:
        notes.append(f"{rel}: empty, no samples.")
    return samples, notes


def _find(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("samples_*.jsonl*") if p.name.endswith((".jsonl", ".jsonl.gz"))
    )


def import_lmeval(src: Path | str | None, *, mapping: Mapping | Path | str) -> MappedImport:
    """Import lm-evaluation-harness samples files through a mapping (``format = "lmeval"``).

    ``src`` is a ``samples_*.jsonl`` file or a folder searched recursively for them; the
    rest is as for :func:`selfmodel.records.importers.inspect_logs.import_inspect`: the
    mapping as an object or a TOML path, canonical records, notes and counts returned, and
    :class:`InputError` for missing files, a mapping for another format, or a path that
    resolves in no sample.
    """
    return import_logs(
        src,
        mapping=mapping,
        fmt="lmeval",
        find=_find,
        read=lambda path, root: read_lmeval_samples(path, root=root),
        what="lm-evaluation-harness samples_*.jsonl files",
    )
