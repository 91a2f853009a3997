"""The cluster-robust binomial GLM of cell accuracy on scale (shared helpers: usable cells, design matrix)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import stats
from statsmodels.tools.sm_exceptions import PerfectSeparationError

#: Default confidence level of intervals.
DEFAULT_LEVEL: Final = 0.95
#: Fewest models with the scale variable for any slope estimate (as the Bayesian rule).
MIN_MODELS: Final = 3
#: Numerical failures of one method that make it not estimable instead of stopping the run.
NUMERICAL_ERRORS: Final = (
    np.linalg.LinAlgError, PerfectSeparationError, FloatingPointError, ZeroDivisionError,
    ValueError, OverflowError,
)


# --------------------------------------------------------------------------- helpers


def _failure(what: str, exc: BaseException) -> dict[str, Any]:
    """``{"estimable": False, "reason": ...}`` for a method that failed numerically."""
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    return {"estimable": False,
            "reason": f"{what} failed numerically on this design ({type(exc).__name__}: {detail})"}


def guarded(what: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``fn(*args, **kwargs)``, or :func:`_failure` when it fails numerically."""
    try:
        return fn(*args, **kwargs)
    except NUMERICAL_ERRORS as exc:
        return _failure(what, exc)


def finite_or_none(v: Any) -> float | None:
    """Float, or None when missing or not finite."""
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def usable_cells(cells: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Cells used for the slope (``x`` known, ``n > 0``) and the models left out."""
    use = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0)).sort(["model", "task"])
    left_out = sorted(set(cells["model"].to_list()) - set(use["model"].to_list()))
    return use, left_out


def not_estimable(use: pl.DataFrame) -> str | None:
    """Why the slope cannot be estimated from ``use`` (too few models or no variation), or ``None``."""
    g = use["model"].n_unique()
    if g < MIN_MODELS:
        return f"only {g} model(s) carry the scale variable; at least {MIN_MODELS} are needed"
    if use.select("model", "x").unique()["x"].n_unique() < 2:
        return "every model has the same value of the scale variable"
    return None


def slope_tasks(use: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Cells of tasks whose own slope is estimable (>= MIN_MODELS models, >= 2 values of x).

    A task seen by fewer models has a saturated (or undefined) slope of its own, so designs
    with task slopes leave it out and list it; the common-slope design keeps it.
    """
    stats_t = use.group_by("task").agg(
        pl.col("model").n_unique().alias("m"), pl.col("x").n_unique().alias("nx")
    )
    bad = sorted(stats_t.filter((pl.col("m") < MIN_MODELS) | (pl.col("nx") < 2))["task"].to_list())
    return use.filter(~pl.col("task").is_in(bad)), bad


def balanced_cells(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Cells for a per-model mean over tasks: every kept model must have every kept task.

    Keeps the tasks with an estimable slope (:func:`slope_tasks`) and drops models that
    miss one of them; if that leaves fewer than ``MIN_MODELS`` models, keeps every model and
    only the tasks all of them have. Returns the cells, the tasks used and the models dropped.
    """
    sub, _ = slope_tasks(frame)
    tasks = sorted(sub["task"].unique().to_list())
    per_model = sub.group_by("model").agg(pl.col("task").n_unique().alias("t"))
    full = per_model.filter(pl.col("t") == len(tasks))["model"].to_list()
    if tasks and len(full) >= MIN_MODELS:
        dropped = sorted(set(frame["model"].to_list()) - set(full))
        return sub.filter(pl.col("model").is_in(full)), tasks, dropped
    n_models = frame["model"].n_unique()
    counts = frame.group_by("task").agg(pl.col("model").n_unique().alias("m"))
    common = sorted(counts.filter(pl.col("m") == n_models)["task"].to_list())
    return frame.filter(pl.col("task").is_in(common)), common, []


def slope_cells(cells: pl.DataFrame, *, task_slopes: bool) -> tuple[pl.DataFrame, list[str], str | None]:
    """The cells the slope is fitted to, the tasks left out, and why it is not estimable.

    With ``task_slopes`` only the tasks whose own slope is estimable are kept
    (:func:`slope_tasks`); the reason is ``None`` when the slope is estimable.
    """
    use, _ = usable_cells(cells)
    excluded: list[str] = []
    if task_slopes:
        use, excluded = slope_tasks(use)
    return use, excluded, not_estimable(use)


def design_matrix(use: pl.DataFrame, *, task_slopes: bool) -> dict[str, Any]:
    """Design matrix with task intercepts and the slope column ``x`` (see module docstring)."""
    tasks = sorted(use["task"].unique().to_list())
    t_idx = np.array([tasks.index(t) for t in use["task"].to_list()])
    dummies = np.eye(len(tasks))[t_idx]
    x = use["x"].to_numpy().astype(float)
    cols = [dummies, x[:, None]]
    names = [f"alpha[{t}]" for t in tasks] + ["slope"]
    n_t = len(tasks)
    if task_slopes and n_t > 1:
        # delta_t for t < T-1; delta_{T-1} = -sum(delta): x * (d_t - d_{T-1})
        cols.append(x[:, None] * (dummies[:, :-1] - dummies[:, [-1]]))
        names += [f"delta[{t}]" for t in tasks[:-1]]
    design = np.column_stack(cols)
    models = sorted(use["model"].unique().to_list())
    groups = np.array([models.index(m) for m in use["model"].to_list()])
    # contrasts giving each task's slope beta + delta_t
    contrast = np.zeros((n_t, design.shape[1]))
    contrast[:, n_t] = 1.0
    if task_slopes and n_t > 1:
        contrast[: n_t - 1, n_t + 1 :] = np.eye(n_t - 1)
        contrast[n_t - 1, n_t + 1 :] = -1.0
    k = use["k"].to_numpy().astype(float)
    n = use["n"].to_numpy().astype(float)
    return {"X": design, "names": names, "j": n_t, "tasks": tasks, "groups": groups,
            "models": models, "k": k, "n": n, "contrast": contrast}


def estimate_of(
    est: float, se: float, *, df: float | None, level: float, method: str
) -> dict[str, Any]:
    """Estimate with a t (``df``) or normal (``df=None``) interval and two-sided p-value."""
    if not (math.isfinite(se) and se > 0):
        return {"estimate": finite_or_none(est), "se": None, "ci_low": None, "ci_high": None,
                "p_value": None, "df": finite_or_none(df) if df is not None else None, "method": method}
    dist = stats.t(df) if df is not None else stats.norm()
    q = float(dist.ppf(0.5 + level / 2))
    z = est / se
    return {
        "estimate": finite_or_none(est),
        "se": finite_or_none(se),
        "ci_low": finite_or_none(est - q * se),
        "ci_high": finite_or_none(est + q * se),
        "p_value": finite_or_none(2 * dist.sf(abs(z))),
        "df": finite_or_none(df) if df is not None else None,
        "method": method,
    }


# --------------------------------------------------------------------------- GLM


def glm(d: Mapping[str, Any]) -> Any:
    """The binomial GLM of a design (statsmodels), not yet fitted."""
    endog = np.column_stack([d["k"], d["n"] - d["k"]])
    return sm.GLM(endog, d["X"], family=sm.families.Binomial())


def glm_slope(
    cells: pl.DataFrame, *, task_slopes: bool = False, level: float = DEFAULT_LEVEL
) -> dict[str, Any]:
    """Binomial GLM of cell counts on task intercepts and ``x``, SEs clustered by model.

    Parameters
    ----------
    cells
        Cells of :func:`selfmodel.records.cells.build_cells`.
    task_slopes
        Task-specific slopes in sum-to-zero coding: ``slope`` is then the unweighted mean
        of the task slopes (the Bayesian ``beta``) and ``per_task`` the task slopes. Tasks
        with fewer than ``MIN_MODELS`` models are left out (``tasks_excluded``).
    level
        Confidence level of the intervals.

    Returns
    -------
    dict
        ``design`` (``"common_slope"`` or ``"task_slopes"``), ``n_models``, ``n_cells``,
        ``slope`` (cluster-robust CR1, :math:`t_{G-1}`), ``slope_naive`` (model-based SE,
        records independent, normal), ``per_task`` (task: cluster-robust estimate; with
        ``task_slopes`` only), ``deviance``, ``pearson_chi2``, ``df_resid``;
        or ``{"estimable": False, "reason": ...}``.
    """
    use, excluded, reason = slope_cells(cells, task_slopes=task_slopes)
    if reason:
        return {"estimable": False, "reason": reason}
    d = design_matrix(use, task_slopes=task_slopes)
    model = glm(d)
    naive = model.fit()
    clustered = model.fit(cov_type="cluster", cov_kwds={"groups": d["groups"]})
    g = len(d["models"])
    j = d["j"]
    cov = np.asarray(clustered.cov_params())
    params = np.asarray(clustered.params)
    out: dict[str, Any] = {
        "estimable": True,
        "design": "task_slopes" if task_slopes else "common_slope",
        "n_models": g,
        "n_cells": int(use.height),
        "tasks_excluded": excluded,
        "slope": estimate_of(params[j], math.sqrt(max(cov[j, j], 0.0)), df=g - 1, level=level,
                           method=f"binomial GLM, CR1 cluster-robust SE by model, t({g - 1})"),
        "slope_naive": estimate_of(
            params[j], float(naive.bse[j]), df=None, level=level,
            method="binomial GLM, model-based SE (records independent), normal",
        ),
        "deviance": finite_or_none(naive.deviance),
        "pearson_chi2": finite_or_none(naive.pearson_chi2),
        "df_resid": finite_or_none(naive.df_resid),
    }
    if task_slopes:
        c = d["contrast"]
        est = c @ params
        var = np.einsum("ij,jk,ik->i", c, cov, c)
        out["per_task"] = {
            t: estimate_of(
                est[i], math.sqrt(max(var[i], 0.0)), df=g - 1, level=level,
                method=f"binomial GLM task slope, CR1 cluster-robust SE by model, t({g - 1})",
            )
            for i, t in enumerate(d["tasks"])
        }
    return out
