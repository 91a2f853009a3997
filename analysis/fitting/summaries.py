"""Posterior summaries of fits for ``results.json``.

Curves, accuracy points, variance components, the diagnostics section and the comparison
with a simulation's truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit

from selfmodel.common import arviz_ops
from selfmodel.fitting.sampling import THRESHOLDS, Fit


def posterior_draws(fit: Fit, var: str) -> Any:
    """Draws of ``var`` with chains and draws stacked into one ``sample`` dimension."""
    return arviz_ops.posterior(fit.idata)[var].stack(sample=("chain", "draw"))


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
    x_min, x_max = float(cells["x"].min()), float(cells["x"].max())  # type: ignore[arg-type]
    center = float(cells["x_center"][0])
    grid = np.linspace(x_min, x_max + 1.0, points)
    alpha = posterior_draws(fit, intercept)
    beta = posterior_draws(fit, slope)
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
    alpha = posterior_draws(fit, "alpha")
    slope = posterior_draws(fit, "slope_task")
    out: dict[str, dict[str, Any]] = {}
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
    extra: Sequence[tuple[str, str, Mapping[str, Any] | None]] = (),
) -> dict[str, Any] | None:
    """Compare estimates with the simulation truth (default data only).

    ``extra`` rows come from the models' declared ``Effect.truth``: (row label, key of
    ``truth.json``, the effect's decision summary), e.g. the SDT model's d' slope against
    ``truth["beta_dprime_per_10x"]`` (the simulation's d' slope, the same in every task).
    """
    if "accuracy_slope" not in truth or effect.get("mean") is None:
        return None
    rows = [("overall", truth["accuracy_slope"], effect)]
    for t, v in truth.get("accuracy_slope_per_task", {}).items():
        if t in effect["per_task"] and effect["per_task"][t].get("mean") is not None:
            rows.append((t, v, effect["per_task"][t]))
    for label, key, summary in extra:
        if summary and summary.get("mean") is not None and key in truth:
            rows.append((label, truth[key], summary))
    return {
        "estimand": (
            "accuracy rows: least-squares slope of logit expected cell accuracy on x; d' row: the "
            "simulation's d' slope per unit of x (see analysis/records/simulate.py)"
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


def variance_components(fit: Fit) -> dict[str, Any]:
    """Posterior mean/sd/median of the scale model's standard deviations (read by selfmodel.power).

    With task slopes that have their own priors there is no spread parameter; then
    ``sd_task_slopes`` is the posterior of the standard deviation of the task slopes across
    tasks.
    """
    post = arviz_ops.posterior(fit.idata)
    out: dict[str, Any] = {}
    for name in ("sigma_family", "sigma_model", "sigma_cell", "sigma_delta", "sigma_family_slope"):
        if name in post:
            d = np.asarray(post[name].values, dtype=float).ravel()
            out[name] = {
                "mean": float(d.mean()),
                "sd": float(d.std(ddof=1)),
                "median": float(np.median(d)),
            }
    if "sigma_delta" not in post and "slope_task" in post and post["slope_task"].sizes.get("task", 0) >= 2:
        # task slopes with their own priors: the spread of the task slopes themselves (sd
        # across tasks in each draw), which the power stage simulates as the true spread
        s = post["slope_task"].stack(sample=("chain", "draw")).transpose("task", "sample").values
        d = np.asarray(s, dtype=float).std(axis=0, ddof=1)
        out["sd_task_slopes"] = {
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
