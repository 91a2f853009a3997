"""The wild cluster bootstrap of the GLM slope (Webb weights, test inversion for the interval)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, Literal

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy.special import expit

from selfmodel.analyses.frequentist.glm import (
    DEFAULT_LEVEL,
    MIN_MODELS,
    NUMERICAL_ERRORS,
    design_matrix,
    finite_or_none,
    glm,
    guarded,
    slope_cells,
)

#: Webb's six-point weights (MacKinnon & Webb 2017; Webb 2014, Queen's Econ. WP 1315).
#: Fewest clusters (models) for the wild cluster bootstrap ("Smallest designs" in
#: docs/frequentist.md): 2 / 2**G, the smallest two-sided p-value with G clusters, is below 0.05 from 6.
MIN_CLUSTERS_WILD: Final = 6
WEBB_POINTS: Final = np.array(
    [-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)]
)

#: Rademacher sign vectors are enumerated (exact p-value) up to this many (2**16: G <= 16).
ENUMERATE_MAX: Final = 2**16

Weights = Literal["auto", "rademacher", "webb"]


# --------------------------------------------------------------------------- wild bootstrap


def _weight_matrix(
    n_clusters: int, *, weights: Weights, reps: int, rng: np.random.Generator
) -> tuple[np.ndarray, str, bool]:
    """Bootstrap weights (rows = replicates) and whether they enumerate every sign vector."""
    kind = weights
    if kind == "auto":
        kind = "webb" if n_clusters < 12 else "rademacher"
    if kind == "rademacher":
        if 2**n_clusters <= max(reps, ENUMERATE_MAX):
            codes = np.arange(2**n_clusters)[:, None] >> np.arange(n_clusters)[None, :]
            return (codes & 1) * 2.0 - 1.0, kind, True
        return rng.choice([-1.0, 1.0], size=(reps, n_clusters)), kind, False
    if kind == "webb":
        return rng.choice(WEBB_POINTS, size=(reps, n_clusters)), kind, False
    raise ValueError(f"unknown weights '{weights}': use auto, rademacher or webb")


def _cluster_contrib(d: Mapping[str, Any], beta0: float) -> np.ndarray:
    """Per-cluster one-step slope contributions a_g at the fit restricted to slope = beta0."""
    x_full, j = d["X"], d["j"]
    x_r = np.delete(x_full, j, axis=1)
    offset = beta0 * x_full[:, j]
    endog = np.column_stack([d["k"], d["n"] - d["k"]])
    res = sm.GLM(endog, x_r, family=sm.families.Binomial(), offset=offset).fit()
    p = expit(x_r @ np.asarray(res.params) + offset)
    score = x_full * (d["k"] - d["n"] * p)[:, None]
    info = x_full.T @ (x_full * (d["n"] * p * (1 - p))[:, None])
    row = np.linalg.solve(info, np.eye(x_full.shape[1])[j])  # row j of H^-1 (H symmetric)
    a_i = score @ row
    return np.bincount(d["groups"], weights=a_i, minlength=len(d["models"]))


def _wild_p(a_g: np.ndarray, v: np.ndarray, enumerated: bool) -> tuple[float, float]:
    """Score statistic and its symmetric wild-bootstrap p-value."""
    denom = math.sqrt(float(np.sum(a_g**2)))
    if denom == 0:
        return 0.0, 1.0
    t = float(a_g.sum()) / denom
    t_star = (v @ a_g) / np.sqrt((v**2) @ (a_g**2))
    hits = int(np.sum(np.abs(t_star) >= abs(t) * (1 - 1e-12)))
    if enumerated:
        return t, hits / v.shape[0]
    return t, (1 + hits) / (v.shape[0] + 1)


def _invert(
    d: Mapping[str, Any], v: np.ndarray, enumerated: bool, *, est: float, se: float, alpha: float
) -> tuple[float | None, float | None]:
    """Confidence interval {beta0 : p(beta0) > alpha} by bracketing and bisection."""

    def pval(b0: float) -> float:
        try:
            return _wild_p(_cluster_contrib(d, b0), v, enumerated)[1]
        except NUMERICAL_ERRORS:
            # The restricted fit is degenerate at b0 (fitted probabilities of 0 or 1 make
            # the information matrix singular): b0 is not rejected, so the interval stays
            # open on that side rather than claiming a bound the data cannot give.
            return 1.0

    if not (math.isfinite(se) and se > 0) or pval(est) <= alpha:
        return None, None
    tol = 1e-4 * se
    bounds: list[float | None] = []
    for sign in (-1.0, 1.0):
        step = 2.0 * se
        inside, outside = est, None
        for _ in range(12):
            cand = est + sign * step
            if pval(cand) <= alpha:
                outside = cand
                break
            inside, step = cand, step * 2
        if outside is None:
            bounds.append(None)  # interval unbounded on this side (too few clusters)
            continue
        while abs(outside - inside) > tol:
            mid = 0.5 * (inside + outside)
            if pval(mid) > alpha:
                inside = mid
            else:
                outside = mid
        bounds.append(0.5 * (inside + outside))
    return bounds[0], bounds[1]


def _wild_one(
    d: Mapping[str, Any], v: np.ndarray, enumerated: bool, *, est: float, se: float,
    level: float, beta0: float, ci: bool,
) -> dict[str, Any]:
    t, p = _wild_p(_cluster_contrib(d, beta0), v, enumerated)
    lo, hi = _invert(d, v, enumerated, est=est, se=se, alpha=1 - level) if ci else (None, None)
    return {"estimate": finite_or_none(est), "score_t": finite_or_none(t), "p_value": finite_or_none(p), "ci_low": finite_or_none(lo),
            "ci_high": finite_or_none(hi), "null": beta0}


def _too_few_clusters(g: int) -> str:
    return (f"only {g} model(s): the wild cluster bootstrap needs at least {MIN_CLUSTERS_WILD} "
            f"(with {g} clusters its smallest two-sided p-value is {2 / 2**g:.3g})")


def _wild_task(
    *, use: pl.DataFrame, d: Mapping[str, Any], v: np.ndarray, enumerated: bool, level: float,
    beta0: float, ci: bool,
) -> dict[str, Any]:
    dt = design_matrix(use, task_slopes=False)
    # same clusters in the same order: reuse the weight rows of these models
    vt = v[:, [d["models"].index(m) for m in dt["models"]]]
    ft = glm(dt).fit(cov_type="cluster", cov_kwds={"groups": dt["groups"]})
    # a column subset of a full enumeration repeats every sign vector equally often,
    # so the per-task p-value stays exact
    return _wild_one(dt, vt, enumerated, est=float(ft.params[dt["j"]]),
                     se=float(ft.bse[dt["j"]]), level=level, beta0=beta0, ci=ci)


def wild_bootstrap(
    cells: pl.DataFrame,
    *,
    seed: int,
    task_slopes: bool = True,
    weights: Weights = "auto",
    reps: int = 9999,
    level: float = DEFAULT_LEVEL,
    beta0: float = 0.0,
    per_task: bool = True,
    ci: bool = True,
) -> dict[str, Any]:
    r"""Restricted wild cluster (score) bootstrap test and CI of the slope, clusters = models.

    Parameters
    ----------
    cells
        Cells of :func:`selfmodel.records.cells.build_cells`.
    seed
        Seed of the weight draws (unused when every Rademacher sign vector is enumerated).
    task_slopes
        Test the mean of the task slopes (True, the Bayesian ``beta``) or the common slope.
    weights
        ``"rademacher"``, ``"webb"`` or ``"auto"`` (Webb below 12 clusters).
    reps
        Bootstrap replicates; Rademacher weights are enumerated when :math:`2^G \le`
        ``max(reps, 2**16)``.
    level
        Confidence level of the inverted interval.
    beta0
        Null value of the slope for ``p_value``.
    per_task
        Also test each task's slope (a separate GLM per task; clusters = models).
    ci
        Invert the test for a confidence interval (about 40 restricted fits per bound).

    Returns
    -------
    dict
        ``weights``, ``reps`` (replicates used), ``enumerated``, ``n_clusters``,
        ``slope`` (``estimate``, ``score_t``, ``p_value``, ``ci_low``, ``ci_high``; a
        ``None`` bound means the interval is unbounded on that side) and ``per_task``.
    """
    use, excluded, reason = slope_cells(cells, task_slopes=task_slopes)
    if reason:
        return {"estimable": False, "reason": reason}
    if use["model"].n_unique() < MIN_CLUSTERS_WILD:
        return {"estimable": False, "reason": _too_few_clusters(use["model"].n_unique())}
    rng = np.random.default_rng(seed)
    d = design_matrix(use, task_slopes=task_slopes)
    g = len(d["models"])
    v, kind, enumerated = _weight_matrix(g, weights=weights, reps=reps, rng=rng)
    fit = glm(d).fit(cov_type="cluster", cov_kwds={"groups": d["groups"]})
    j = d["j"]
    est, se = float(fit.params[j]), float(fit.bse[j])
    out: dict[str, Any] = {
        "estimable": True,
        "method": "restricted wild cluster score bootstrap (Kline & Santos 2012), "
                  "clusters = models",
        "design": "task_slopes" if task_slopes else "common_slope",
        "weights": kind,
        "reps": int(v.shape[0]),
        "enumerated": enumerated,
        "n_clusters": g,
        "tasks_excluded": excluded,
        "level": level,
        "slope": _wild_one(d, v, enumerated, est=est, se=se, level=level, beta0=beta0, ci=ci),
    }
    if per_task:
        res = {}
        for t in d["tasks"]:
            sub = use.filter(pl.col("task") == t)
            if sub["model"].n_unique() < MIN_MODELS or sub["x"].n_unique() < 2:
                res[t] = {"estimable": False, "reason": "too few models on this task"}
                continue
            if sub["model"].n_unique() < MIN_CLUSTERS_WILD:
                res[t] = {"estimable": False,
                          "reason": _too_few_clusters(sub["model"].n_unique()) + " on this task"}
                continue
            res[t] = guarded(f"the wild bootstrap of task '{t}'", _wild_task, use=sub, d=d, v=v,
                              enumerated=enumerated, level=level, beta0=beta0, ci=ci)
        out["per_task"] = res
    return out
