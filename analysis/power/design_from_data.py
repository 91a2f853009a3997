"""Designs read from data: shaped like a data set (``--template``) or like a finished run's results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.power.design import Design, Task, default_design
from selfmodel.power.design_file import RULE_KEYS
from selfmodel.records.cells import build_cells, derived_models
from selfmodel.records.contract import NOT_SCORED_STATUSES, SCALE_COLUMNS, InputError
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry

# --------------------------------------------------------------------------- templates


def _left_off(models: list[str], derived: list[str]) -> str:
    """``source`` suffix naming the models left off the scale axis, and why."""
    parts = []
    drv = sorted(set(models) & set(derived))
    other = sorted(set(models) - set(drv))
    if other:
        parts.append(f"without the scale variable: {', '.join(other)}")
    if drv:
        parts.append(f"derived checkpoints (registry base_model): {', '.join(drv)}")
    return f"; left off the scale axis: {'; '.join(parts)}" if parts else ""


def _variance_from_results(results: Mapping[str, Any]) -> dict[str, float]:
    """Posterior means of the variance components saved in ``results.json``."""
    vc = results.get("variance_components") or {}
    names = {
        "sigma_family": "sigma_family",
        "sigma_model": "sigma_model",
        "sigma_cell": "sigma_cell",
        "sigma_task_slope": "sigma_delta",
    }
    out: dict[str, float] = {}
    if "sigma_delta" not in vc:  # task slopes with their own priors (models/scale.py)
        names["sigma_task_slope"] = "sd_task_slopes"
    for ours, theirs in names.items():
        entry = vc.get(theirs)
        value = entry.get("mean") if isinstance(entry, Mapping) else entry
        if isinstance(value, int | float) and math.isfinite(value):
            out[ours] = float(value)
    return out


def design_from_template(
    records: Sequence[Path | str],
    registry: Path | str,
    *,
    results: Path | str | Mapping[str, Any] | None = None,
    scale: str = "params",
) -> Design:
    """Take the design of an existing data set.

    Families, models and their scale values come from the registry (models without the
    scale variable are left out, as in the fit); tasks, items per task (distinct
    ``item_id``), repeats (answers per model and item), unreadable share and accuracy (pooled
    over the models in the slope) from the records. Variance components are the posterior
    means in ``results`` (a ``results.json`` of a fit to these data) when given, else the
    defaults of :func:`default_design`.

    Parameters
    ----------
    records
        Record files or folders (as for ``selfmodel run``).
    registry
        The model registry.
    results
        A ``results.json`` path or dict carrying ``variance_components``.
    scale
        The scale variable (``params``, ``active_params`` or ``capability``).

    Returns
    -------
    Design
    """
    res = ingest(list(records), registry=registry)
    reg = load_registry(registry)
    cells = build_cells(res.records, reg, scale=scale)
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    if usable["model"].n_unique() < 3:
        raise InputError(
            f"{registry}: only {usable['model'].n_unique()} model(s) have "
            f"'{SCALE_COLUMNS[scale]}'; "
            "a design needs at least 3 models with the scale variable. Add sizes to the registry."
        )
    per_model = (
        usable.group_by("model")
        .agg(pl.col("family").first(), pl.col("scale_raw").first())
        .sort("model")
    )
    log = scale in ("params", "active_params")
    models = tuple(
        (r["model"], r["family"], float(np.log10(r["scale_raw"]) if log else r["scale_raw"]))
        for r in per_model.iter_rows(named=True)
    )
    # rows with nothing to score (not_asked, unanswered) are no items or repeats of the design
    recs = res.records.filter(pl.col("model").is_in(per_model["model"].to_list())
                              & ~pl.col("status").is_in(list(NOT_SCORED_STATUSES)))
    per_task = (
        recs.group_by("task")
        .agg(
            pl.col("item_id").n_unique().alias("items"),
            pl.len().alias("records"),
            pl.struct("model", "item_id").n_unique().alias("model_items"),
        )
        .sort("task")
    )
    totals = usable.group_by("task").agg(
        pl.col("n").sum(), pl.col("k").sum(), pl.col("n_total").sum()
    )
    cell_tot = {r["task"]: r for r in totals.iter_rows(named=True)}
    tasks = []
    reps = []
    for r in per_task.iter_rows(named=True):
        c = cell_tot.get(r["task"])
        if c is None:  # no readable answer of a model with the scale variable
            continue
        acc = min(max(c["k"] / c["n"], 0.01), 0.99)
        tasks.append(
            Task(r["task"], int(r["items"]), round(acc, 4), round(1 - c["n"] / c["n_total"], 4))
        )
        reps.append(r["records"] / r["model_items"])
    repeats = max(1, int(round(float(np.mean(reps)))))
    sig = _fitted_variance(results) if results is not None else {}
    d = default_design()
    return Design(
        models=models,
        tasks=tuple(tasks),
        repeats=repeats,
        sigma_family=sig.get("sigma_family", d.sigma_family),
        sigma_model=sig.get("sigma_model", d.sigma_model),
        sigma_cell=sig.get("sigma_cell", d.sigma_cell),
        sigma_task_slope=sig.get("sigma_task_slope", d.sigma_task_slope),
        units=_units(scale),
        source=f"template: {', '.join(str(p) for p in records)} + {registry}"
        + (" + fitted variance components" if sig else " (default variance components)")
        + _left_off(
            sorted(set(cells["model"].to_list()) - set(per_model["model"].to_list())),
            derived_models(reg),
        ),
    )


def _fitted_variance(results: Path | str | Mapping[str, Any]) -> dict[str, float]:
    """The variance components of a ``results.json`` (a path or the loaded dict)."""
    import json

    if isinstance(results, Mapping):
        loaded = results
    else:
        try:
            loaded = json.loads(Path(results).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(
                f"{results}: no such results file. Give the results.json of a fit."
            ) from None
        except (OSError, ValueError) as e:
            raise InputError(f"{results}: not a readable results.json ({e}).") from None
    sig = _variance_from_results(loaded)
    if not sig:
        raise InputError(
            f"{results}: has no 'variance_components'. Rerun 'selfmodel run' with this "
            "version, or leave out --results to use the default variance components."
        )
    return sig


def _units(scale: str) -> str:
    return {
        "params": "logits per 10x total parameters",
        "active_params": "logits per 10x active parameters",
        "capability": "logits per unit of capability score",
    }.get(scale, "logits per unit of the scale variable")


def design_from_results(results: Mapping[str, Any]) -> Design:
    """The design a fitted ``results.json`` describes, with its fitted variance components.

    Models are those in the slope (``models[].in_scale_fit``), with their scale value;
    each task's cells get the mean readable ``n`` of its cells (``by_model_task``; these are
    the answers the fit saw, so ``repeats = 1``) and the pooled accuracy; the variance
    components are the posterior means in ``results["variance_components"]``; the rule is
    the one the verdict used (``settings.rule``).
    """
    settings = results.get("settings") or {}
    scale = settings.get("scale", "params")
    col = SCALE_COLUMNS.get(scale, "params_b")
    log = scale in ("params", "active_params")
    models, off = [], []
    for m in results.get("models", []):
        v = m.get(col)
        if m.get("in_scale_fit") and v is not None:
            models.append((m["model"], m["family"], float(np.log10(v)) if log else float(v)))
        else:
            off.append(m["model"])
    drv = ((results.get("scale_effect") or {}).get("excluded_derived_checkpoints") or {})
    names = {m for m, *_ in models}
    rows = [r for r in results.get("by_model_task", []) if r["model"] in names and r.get("n")]
    tasks = []
    for t in sorted({r["task"] for r in rows}):
        sub = [r for r in rows if r["task"] == t]
        n = float(np.mean([r["n"] for r in sub]))
        k = sum(r["n"] * r["accuracy"] for r in sub if r["accuracy"] is not None)
        acc = min(max(k / sum(r["n"] for r in sub), 0.01), 0.99)
        tasks.append(Task(t, max(1, int(round(n))), round(acc, 4), 0.0))
    sig = _variance_from_results(results)
    missing = [k for k in ("sigma_family", "sigma_model", "sigma_cell") if k not in sig]
    if missing:
        raise KeyError(
            f"results.json has no posterior mean for {', '.join(missing)} (variance_components)"
        )
    rule_d = settings.get("rule") or {}
    rule = DecisionRule(**{k: rule_d[k] for k in RULE_KEYS if k in rule_d})
    return Design(
        models=tuple(models),
        tasks=tuple(tasks),
        repeats=1,
        repeat_correlation=0.0,
        sigma_family=sig["sigma_family"],
        sigma_model=sig["sigma_model"],
        sigma_cell=sig["sigma_cell"],
        sigma_task_slope=sig.get("sigma_task_slope", 0.1),
        rule=rule,
        units=_units(scale),
        source="fitted design (results.json)" + _left_off(off, drv.get("models") or []),
    )
