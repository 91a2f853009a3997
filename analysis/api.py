"""The Python API for notebooks: run the pipeline, load a results folder, read its tables.

Three entry points, documented with an executed example in ``docs/api.md``:

* :func:`run` runs ``selfmodel run`` (same options, same results) and returns :class:`Results`;
* :func:`load` reads a results folder written by ``selfmodel run``/``fit`` (or :func:`run`);
* :class:`Results` gives the tables of the folder as polars frames (``pandas=True``: pandas),
  and the whole ``results.json`` as :attr:`Results.data`.

The options of :func:`run` are the command line's, spelled as Python keywords: the option
without its dashes, ``-`` as ``_`` (``--no-power`` is ``no_power=True``, ``--draws 200`` is
``draws=200``, ``--map item_id=qid`` is ``map={"item_id": "qid"}``). They are read with the
command line's own parser, so every option (and its default) is the same in both.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from selfmodel.cli import build_parser, inputs_apart, run_config
from selfmodel.common import outputs, progress
from selfmodel.pipeline.stages import run as run_pipeline
from selfmodel.records.contract import InputError

#: Per table: where it comes from and what a row is.
TABLES: dict[str, str] = {
    "cells": "cells.parquet: one row per model x task cell (counts n, k, the scale value x ...)",
    "records": "records.parquet: the records used, one per logged prediction",
    "quarantine": "quarantine.parquet: the records set aside, with the reason",
    "by_model_task": "results.json by_model_task: accuracy, baselines and rates per model x task",
    "skill": "results.json skill: self-prediction skill per model x task (AUROC, d', Brier ...)",
    "models": "results.json models: one row per model (registry values, records, in the fit)",
    "tasks": "results.json tasks: one row per task (models, records, base rate, accuracy)",
    "hypotheses": "results.json hypotheses.rows: each declared hypothesis (and per task) "
                  "with its estimate, HDI, decision and Bayes factor",
    "decisions": "results.json scale_effect: the verdict's slope overall and per task "
                 "(mean, sd, HDI, probability in the ROPE, decision)",
    "crosscheck": "results.json crosscheck: Bayesian estimates beside the frequentist ones",
}

_PARQUET = {"cells", "records", "quarantine"}
_DECISION_COLUMNS = ("mean", "sd", "hdi_low", "hdi_high", "hdi_prob", "prob_in_rope",
                     "prob_positive", "n_models", "decision", "decision_if_passed", "meaning",
                     "reason")


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _frame(rows: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Rows as a frame of their scalar fields (nested fields stay in :attr:`Results.data`)."""
    rows = list(rows)
    columns = list(dict.fromkeys(k for r in rows for k, v in r.items() if _scalar(v)))
    nested = {k for r in rows for k, v in r.items() if not _scalar(v)}
    keep = [c for c in columns if c not in nested]
    return pl.from_dicts([{c: r.get(c) for c in keep} for r in rows], infer_schema_length=None)


@dataclass(frozen=True)
class Results:
    """A results folder: ``results.json`` (:attr:`data`) and the tables of :data:`TABLES`.

    Each table method returns a polars frame, or a pandas frame with ``pandas=True``. Tables
    built from ``results.json`` lists hold the scalar fields of each row; nested fields (a
    hypothesis's Bayes-factor details, for example) are in :attr:`data` under the same key.
    """

    folder: Path
    data: Mapping[str, Any] = field(repr=False)

    @property
    def decision(self) -> str:
        """The verdict: the decision on the scale slope (``scale_effect.decision``)."""
        return str(self.data["scale_effect"]["decision"])

    def table(self, name: str, *, pandas: bool = False) -> Any:
        """The table ``name`` (one of :data:`TABLES`)."""
        if name not in TABLES:
            raise KeyError(f"no table {name!r}; the tables are {', '.join(TABLES)}")
        frame = self._polars(name)
        return frame.to_pandas() if pandas else frame

    def _polars(self, name: str) -> pl.DataFrame:
        if name in _PARQUET:
            path = self.folder / f"{name}.parquet"
            if not path.is_file():
                raise InputError(f"{path}: not in this results folder (written by selfmodel run)")
            return pl.read_parquet(path)
        if name == "hypotheses":
            return _frame(self.data.get("hypotheses", {}).get("rows", []))
        if name == "decisions":
            return _frame(_decision_rows(self.data.get("scale_effect", {})))
        return _frame(self.data.get(name, []))

    def cells(self, *, pandas: bool = False) -> Any:
        """Model x task cells (``cells.parquet``)."""
        return self.table("cells", pandas=pandas)

    def skill(self, *, pandas: bool = False) -> Any:
        """Self-prediction skill per model x task."""
        return self.table("skill", pandas=pandas)

    def models(self, *, pandas: bool = False) -> Any:
        """One row per model."""
        return self.table("models", pandas=pandas)

    def hypotheses(self, *, pandas: bool = False) -> Any:
        """The declared hypotheses with their decisions."""
        return self.table("hypotheses", pandas=pandas)

    def decisions(self, *, pandas: bool = False) -> Any:
        """The verdict's slope overall and per task, with its decision."""
        return self.table("decisions", pandas=pandas)


def _decision_rows(effect: Mapping[str, Any]) -> list[dict[str, Any]]:
    if not effect:
        return []
    head = {"effect": "scale slope", "units": effect.get("units")}
    rows = [{**head, "task": None, **{c: effect.get(c) for c in _DECISION_COLUMNS}}]
    for task, r in sorted((effect.get("per_task") or {}).items()):
        rows.append({**head, "task": task, **{c: r.get(c) for c in _DECISION_COLUMNS}})
    return rows


def load(folder: Path | str) -> Results:
    """Read a results folder (``OUT`` of ``selfmodel run``); never refits."""
    folder = Path(folder)
    path = folder / "results.json"
    if not path.is_file():
        raise InputError(f"{path}: no results. Run 'selfmodel run --out {folder}' first.")
    return Results(folder, json.loads(path.read_text()))


def _namespace(paths: Sequence[Path | str], out: Path | str, options: Mapping[str, Any]) -> Any:
    ns = build_parser().parse_args(["run", "--out", str(out)])
    allowed = sorted(k for k in vars(ns) if k not in ("command", "paths", "out"))
    for key, value in options.items():
        if key not in allowed:
            raise TypeError(f"run() got an unknown option {key!r}; the options are "
                            f"{', '.join(allowed)} (the command line's, as keywords)")
        if key == "map" and isinstance(value, Mapping):
            value = [f"{k}={v}" for k, v in value.items()]
        setattr(ns, key, Path(value) if key in ("registry", "config", "hypotheses")
                and value is not None else value)
    ns.paths = [Path(p) for p in paths]
    return ns


def run(paths: Sequence[Path | str] = (), *, out: Path | str = "build",
        say: Callable[[str], None] | None = None, **options: Any) -> Results:
    """Run the whole pipeline, as ``selfmodel run PATHS --out OUT [options]``; returns its results.

    Parameters
    ----------
    paths
        Record files or folders (default: the checkout's ``data_raw/``).
    out
        The output folder (``results.json``, the fits, ``report.html``).
    say
        Where the step lines go (default: stderr, as on the command line; ``quiet=True``
        silences them and the sampling progress).
    **options
        The ``run`` options as keywords (module docstring), e.g. ``draws=200``,
        ``no_power=True``, ``models="scale,sdt"``.
    """
    ns = _namespace(paths, out, options)
    cfg = run_config(ns, report=not ns.no_report)
    quiet = bool(ns.quiet)
    lines = say if say is not None else (_silent if quiet else _stderr_line)
    target = Path(out)
    outputs.check_out(target, outputs.RUN)  # as on the command line: before any work
    inputs_apart(ns)
    # as on the command line: built beside ``out`` and swapped in whole, one writer at a time
    with progress.reporting(progress.make_reporter(quiet=quiet)), \
            outputs.staged(target, lines) as cfg.out:
        run_pipeline(cfg, progress=outputs.relabel(lines, cfg.out, target), argv=None)
    return load(target)


def _silent(_message: str) -> None:
    return None


def _stderr_line(message: str) -> None:
    rep = progress.current()
    if rep is not None:
        rep.end_line()
    sys.stderr.write(f"selfmodel {message}\n")
