"""Assemble ``results.json`` from saved stage outputs.

The keys listed in DESIGN.md are a contract other tools read; they are never renamed.
Everything in ``results.json`` is a deterministic function of the inputs and the seed;
wall-clock facts (timestamps, durations, host) go to ``run.json`` instead, so a rerun gives
a byte-identical ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit

from analysis.contract import RESULTS_SCHEMA_VERSION, SCALE_COLUMNS
from analysis.fit import THRESHOLDS, Fit
from analysis.hypotheses import DecisionRule, decide, not_estimable

#: Units of the slope per scale variable.
SCALE_UNITS = {
    "params": "logits per 10x total parameters",
    "active_params": "logits per 10x active parameters",
    "capability": "logits per unit of capability score",
}


def rounded(obj: Any, digits: int = 6) -> Any:
    """Round floats recursively (6 significant decimals) so JSON is stable and readable."""
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return None if not np.isfinite(f) else round(f, digits)
    if isinstance(obj, Mapping):
        return {str(k): rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [rounded(v, digits) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _draws(fit: Fit, var: str) -> Any:
    return fit.idata.posterior[var].stack(sample=("chain", "draw"))


def scale_effect(
    fit: Fit | None,
    *,
    scale: str,
    rule: DecisionRule,
    n_models: int,
    tasks: Sequence[str],
    excluded_models: Sequence[str],
    reason: str | None = None,
    models_per_task: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The ``scale_effect`` section: overall and per-task slope and decision."""
    base = {
        "scale_variable": scale,
        "registry_column": SCALE_COLUMNS[scale],
        "units": SCALE_UNITS[scale],
        "fit_model": fit.model if fit else "scale",
        "rope": rule.rope,
        "prob_threshold": rule.prob_threshold,
        "rule": rule.describe(),
        "n_models": n_models,
        "models_without_scale_variable": list(excluded_models),
    }
    body = slope_decisions(
        fit,
        effect_var="beta",
        per_task_var="slope_task",
        rule=rule,
        n_models=n_models,
        tasks=tasks,
        reason=reason,
        models_per_task=models_per_task,
    )
    return {**base, **body}


def slope_decisions(
    fit: Fit | None,
    *,
    effect_var: str,
    per_task_var: str | None,
    rule: DecisionRule,
    n_models: int,
    tasks: Sequence[str],
    reason: str | None = None,
    models_per_task: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Decision on a fitted slope overall and per task (any model's effect variables).

    A verdict is a ``finding`` only when the fit's diagnostics passed.
    """
    if fit is None:
        why = reason or "no fit"
        per_task = {t: not_estimable(why, rule) for t in tasks}
        return {**not_estimable(why, rule), "per_task": per_task, "finding": False}
    overall = decide(_draws(fit, effect_var).values, rule, n_models=n_models)
    per_task: dict[str, Any] = {}
    counts = dict(models_per_task or {})
    if per_task_var is not None:
        st = _draws(fit, per_task_var)
        for t in st["task"].values:
            n_t = counts.get(str(t), n_models)
            per_task[str(t)] = {
                **decide(st.sel(task=t).values, rule, n_models=n_t),
                "n_models": n_t,
            }
    for t in tasks:
        per_task.setdefault(t, not_estimable("task has no model with the scale variable", rule))
    return {**overall, "per_task": per_task, "finding": bool(fit.diagnostics["passed"])}


def population_curves(
    fit: Fit,
    cells: pl.DataFrame,
    *,
    hdi_prob: float,
    points: int = 25,
    intercept: str = "alpha",
    slope: str = "slope_task",
    link: str = "logit",
) -> dict[str, Any]:
    """Posterior curve of an average model (family and model effects at 0) along x, per task.

    ``intercept + slope * x`` per task, through the inverse link (``"logit"``: accuracy of
    the scale model; ``"identity"``: e.g. d' of the SDT model with
    ``intercept="alpha_dprime", slope="dprime_slope_task"``). Also the prediction for an
    unseen size one decade beyond the largest model (flagged as extrapolation).
    """
    x_min, x_max = float(cells["x"].min()), float(cells["x"].max())
    center = float(cells["x_center"][0])
    grid = np.linspace(x_min, x_max + 1.0, points)
    alpha = _draws(fit, intercept)
    beta = _draws(fit, slope)
    lo_q, hi_q = (1 - hdi_prob) / 2, 1 - (1 - hdi_prob) / 2
    inverse = {"logit": expit, "identity": lambda v: v}[link]
    out: dict[str, Any] = {}
    for t in alpha["task"].values:
        a = alpha.sel(task=t).values[:, None]
        b = beta.sel(task=t).values[:, None]
        p = inverse(a + b * grid[None, :])
        out[str(t)] = {
            "x": grid.tolist(),
            "scale_value": (grid + center).tolist(),
            "mean": p.mean(axis=0).tolist(),
            "low": np.quantile(p, lo_q, axis=0).tolist(),
            "high": np.quantile(p, hi_q, axis=0).tolist(),
            "extrapolated": (grid > x_max).tolist(),
        }
    return {
        "quantity": f"{link}^-1({intercept} + {slope} * x)",
        "x_center": center,
        "x_observed_max": x_max,
        "interval": f"{hdi_prob:.0%} equal-tailed",
        "tasks": out,
    }


def accuracy_points(fit: Fit, cells: pl.DataFrame) -> dict[str, Any]:
    """Translate the slope into accuracy points: average model at the median size vs 10x it.

    Per task, and ``overall``: the gain averaged over tasks (draw by draw), the accuracy
    counterpart of the mean slope. ``scale_at_median`` is the median model's value of the
    scale variable on the log10 (or capability) scale the model uses.
    """
    x_med = float(np.median(cells.select("model", "x").unique()["x"].to_numpy()))
    center = float(cells["x_center"][0]) if "x_center" in cells.columns else None
    alpha = _draws(fit, "alpha")
    slope = _draws(fit, "slope_task")
    out = {}
    gains, levels = [], []
    for t in alpha["task"].values:
        a = alpha.sel(task=t).values
        b = slope.sel(task=t).values
        gain = expit(a + b * (x_med + 1)) - expit(a + b * x_med)
        gains.append(gain)
        levels.append(expit(a + b * x_med))
        out[str(t)] = {
            "at_x": x_med,
            "accuracy_at_median": float(np.mean(levels[-1])),
            "gain_per_10x_points": float(100 * np.mean(gain)),
            "gain_low": float(100 * np.quantile(gain, 0.03)),
            "gain_high": float(100 * np.quantile(gain, 0.97)),
        }
    if gains:
        g = np.mean(gains, axis=0)
        out["overall"] = {
            "at_x": x_med,
            "accuracy_at_median": float(np.mean(np.mean(levels, axis=0))),
            "gain_per_10x_points": float(100 * np.mean(g)),
            "gain_low": float(100 * np.quantile(g, 0.03)),
            "gain_high": float(100 * np.quantile(g, 0.97)),
        }
    for v in out.values():
        v["scale_at_median"] = None if center is None else x_med + center
    return out


def truth_comparison(
    truth: Mapping[str, Any],
    effect: Mapping[str, Any],
    dprime: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Compare estimates with the simulation truth (default data only).

    ``dprime`` is the SDT model's sensitivity slope summary (``sdt_effect.sensitivity``);
    with it, the d' slope is compared with ``truth["beta_dprime_per_10x"]`` (the
    simulation's d' slope, the same in every task).
    """
    if "accuracy_slope" not in truth or effect.get("mean") is None:
        return None
    rows = [("overall", truth["accuracy_slope"], effect)]
    for t, v in truth.get("accuracy_slope_per_task", {}).items():
        if t in effect["per_task"] and effect["per_task"][t].get("mean") is not None:
            rows.append((t, v, effect["per_task"][t]))
    if dprime and dprime.get("mean") is not None and "beta_dprime_per_10x" in truth:
        rows.append(("d' overall", truth["beta_dprime_per_10x"], dprime))
    return {
        "estimand": (
            "accuracy rows: least-squares slope of logit expected cell accuracy on x; d' row: the "
            "simulation's d' slope per unit of x (see analysis/simulate.py)"
        ),
        "rows": [
            {
                "effect": name,
                "true": float(tv),
                "estimate": e["mean"],
                "hdi_low": e["hdi_low"],
                "hdi_high": e["hdi_high"],
                "covered": bool(e["hdi_low"] <= tv <= e["hdi_high"]),
            }
            for name, tv, e in rows
        ],
        "true_dprime_slope": truth.get("beta_dprime_per_10x"),
    }


def _sdt_effect(zoo: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``sdt_effect`` section: sensitivity (d') and bias (criterion) slopes."""
    sdt = (zoo or {}).get("sdt")
    if not sdt or not sdt.get("fitted"):
        return None
    return {
        "fit_model": "sdt",
        "units": "d' (criterion) units per unit of the scale variable",
        "sensitivity": sdt["sensitivity"],
        "bias": sdt["bias"],
        "finding": bool(sdt["diagnostics"]["passed"]),
    }


def variance_components(fit: Fit) -> dict[str, Any]:
    """Posterior mean/sd/median of the scale model's standard deviations (read by analysis.power)."""
    post = fit.idata.posterior
    out: dict[str, Any] = {}
    for name in ("sigma_family", "sigma_model", "sigma_cell", "sigma_delta", "sigma_family_slope"):
        if name in post:
            d = np.asarray(post[name].values, dtype=float).ravel()
            out[name] = {
                "mean": float(d.mean()),
                "sd": float(d.std(ddof=1)),
                "median": float(np.median(d)),
            }
    return out


def diagnostics_section(fit: Fit | None) -> dict[str, Any]:
    """The ``diagnostics`` section (DESIGN keys plus the named checks)."""
    if fit is None:
        return {
            "max_rhat": None,
            "min_ess_bulk": None,
            "divergences": None,
            "passed": False,
            "checks": [],
            "thresholds": THRESHOLDS,
            "note": "no model was fitted",
        }
    d = dict(fit.diagnostics)
    d["thresholds"] = THRESHOLDS
    return d


def assemble(
    *,
    ingest_summary: Mapping[str, Any],
    models: list[dict[str, Any]],
    tasks: list[dict[str, Any]],
    by_model_task: list[dict[str, Any]],
    effect: dict[str, Any],
    diagnostics: dict[str, Any],
    fit_info: dict[str, Any] | None,
    curves: dict[str, Any] | None,
    points: dict[str, Any] | None,
    truth: dict[str, Any] | None,
    settings: dict[str, Any],
    skill: list[dict[str, Any]] | None = None,
    calibration: dict[str, Any] | None = None,
    frequentist: dict[str, Any] | None = None,
    crosscheck: list[dict[str, Any]] | None = None,
    zoo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build the ``results.json`` dict (DESIGN keys first)."""
    data = {
        "sha256": ingest_summary.get("sha256"),
        "records_read": ingest_summary.get("records_read"),
        "records_used": ingest_summary.get("records_used"),
        "records_quarantined": ingest_summary.get("records_quarantined"),
        "records_duplicate": ingest_summary.get("records_duplicate"),
        "unreadable_predictions": ingest_summary.get("unreadable_predictions"),
        "models": ingest_summary.get("models"),
        "tasks": ingest_summary.get("tasks"),
        "files": ingest_summary.get("files"),
        "quarantine_reasons": ingest_summary.get("quarantine_reasons"),
        "registry": ingest_summary.get("registry_report"),
    }
    return rounded(
        {
            "schema_version": RESULTS_SCHEMA_VERSION,
            "data": data,
            "models": models,
            "tasks": tasks,
            "by_model_task": by_model_task,
            "scale_effect": effect,
            "diagnostics": diagnostics,
            "fit": fit_info,
            "curves": curves,
            "accuracy_points": points,
            "truth_comparison": truth,
            "skill": skill,
            "calibration": calibration,
            "frequentist": frequentist,
            "crosscheck": crosscheck,
            "sdt_effect": _sdt_effect(zoo),
            "model_zoo": zoo,
            "settings": settings,
        }
    )
