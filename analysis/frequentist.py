r"""Frequentist cross-checks of the scale effect (statsmodels), with models as the unit.

Every function takes the cells of :func:`analysis.cells.build_cells` (columns ``model``,
``family``, ``task``, ``n``, ``k``, ``x``) and uses the cells whose model has the scale
variable (``x`` not null) and at least one readable prediction, exactly as the Bayesian fit
does. All results are JSON-serialisable dicts (floats, ints, bools, strings, ``None``).

Estimands
---------
``slope`` is in logits of accuracy per unit of ``x`` (per 10x parameters for sizes), like
the Bayesian ``beta``. Two logistic designs, both with task intercepts
:math:`\alpha_t`:

*common slope*: :math:`\mathrm{logit}\,p_{mt} = \alpha_t + \beta x_m` — one pooled slope,
  weighted by the information in each cell;
*task slopes*: :math:`\mathrm{logit}\,p_{mt} = \alpha_t + (\beta + \delta_t) x_m` with
  :math:`\sum_t \delta_t = 0` (sum-to-zero coding), so :math:`\beta` is the **unweighted
  mean of the task slopes**: the same estimand as the Bayesian ``beta`` of
  ``models/scale.py`` and the per-task slopes are its ``slope_task``.

Methods
-------
GLM with cluster-robust SEs (:func:`glm_slope`)
    Binomial GLM on the cell counts (:math:`k` of :math:`n`), fitted by IRLS
    (``statsmodels.api.GLM``). Standard errors are CR1 sandwich estimates clustered by
    model (``cov_type="cluster"``, small-sample factor
    :math:`\frac{G}{G-1}\frac{N-1}{N-K}`); intervals and p-values use :math:`t_{G-1}`
    (Cameron & Miller 2015, *J. Human Resources* 50:317). The model-based ("naive") SE,
    which treats every record as independent, is reported beside it to show how much
    the clustering matters.
Wild cluster bootstrap (:func:`wild_bootstrap`)
    The restricted (null-imposed) wild cluster bootstrap of Cameron, Gelbach & Miller
    (2008, *REStat* 90:414) in its form for non-linear models, the *wild score
    bootstrap* (Kline & Santos 2012, *J. Econometric Methods* 1:23; Roodman et al. 2019,
    *Stata J.* 19:4, §3.4): fit the GLM with the slope fixed at :math:`\beta_0` (as an
    offset), form each cluster's contribution to the one-step slope update
    :math:`a_g = [H^{-1} \sum_{i\in g} s_i]_\beta` (scores :math:`s_i` and information
    :math:`H` of the full model at the restricted fit), and compare
    :math:`t = \sum_g a_g / \sqrt{\sum_g a_g^2}` with
    :math:`t^*_b = \sum_g v_{bg} a_g / \sqrt{\sum_g v_{bg}^2 a_g^2}` for weights
    :math:`v`. Symmetric p-value :math:`P(|t^*| \ge |t|)`. Weights: Rademacher
    (:math:`\pm 1`), all :math:`2^G` sign vectors enumerated when that is at most
    ``max(reps, 2**16)`` (an exact randomisation p-value), else ``reps`` random draws; or Webb's
    six-point weights, recommended with fewer than about 12 clusters, where Rademacher
    p-values are too coarse (MacKinnon & Webb 2017, *J. Applied Econometrics* 32:233).
    ``weights="auto"`` takes Webb below 12 clusters, Rademacher otherwise. Confidence
    intervals invert the test (the set of :math:`\beta_0` with :math:`p > 1 -` level;
    bisection to :math:`10^{-4}` SE), with the same weight draws at every
    :math:`\beta_0`.
Two-stage (:func:`two_stage`)
    Stage 1: each cell's empirical logit :math:`y_{mt} = \log\frac{k + 1/2}{n - k + 1/2}`
    with sampling variance :math:`v_{mt} = \frac{1}{k + 1/2} + \frac{1}{n - k + 1/2}`
    (Haldane-Anscombe). *Pooled*: a model's score is the unweighted mean over the tasks,
    :math:`\bar y_m`, variance :math:`\sum_t v_{mt} / T^2` (so its slope, like ``beta``,
    is the mean of the task slopes); with unbalanced data only models that have every
    task with an estimable slope enter (``models_dropped``). Stage 2: WLS of
    :math:`\bar y_m` on :math:`(1, x_m)` with weights :math:`1/(v_m + \hat\tau^2)`,
    :math:`\hat\tau^2` the DerSimonian-Laird method-of-moments between-model variance for
    meta-regression (Raudenbush 2009, in *Handbook of Research Synthesis*, ch. 16).
    Standard errors use the WLS residual scale (Knapp & Hartung 2003, *Stat. Med.*
    22:2693; not truncated at 1) with :math:`t_{G-2}`. *Per task*: the same on each
    task's cells.
Correlations (:func:`correlations`)
    Pearson :math:`r` and Spearman :math:`\rho` across models of accuracy (readable
    predictions pooled over tasks, and per task) with the scale variable (log10 size),
    as scaling papers report them; scipy p-values assume independent models.
Permutation test (:func:`permutation_test`)
    Statistic: the OLS slope of the model's mean empirical logit on :math:`x` (per task:
    the cell's). Sizes are permuted across models; exact enumeration of all
    :math:`G!` permutations when :math:`G \le` ``exact_max_models``, else ``permutations``
    seeded random ones with :math:`p = (1 + \#\{|b^*| \ge |b|\}) / (B + 1)`. Assumes models
    are exchangeable when size has no effect (family structure breaks this mildly).
Holm (:func:`holm`)
    Step-down family-wise correction across the per-task tests (Holm 1979,
    *Scand. J. Statist.* 6:65).

Smallest designs
----------------
Every method needs at least ``MIN_MODELS`` (3) models with the scale variable and two
distinct values of it (the Bayesian rule's minimum); a task's own slope needs as many on
that task. The wild cluster bootstrap needs ``MIN_CLUSTERS_WILD`` (6) models: with
:math:`G` clusters the :math:`2^G` Rademacher sign vectors give a smallest two-sided
p-value of :math:`2/2^G`, and 6 is the first :math:`G` for which that is below 0.05 (with
fewer, no interval can exclude anything and the test cannot reject). The two-stage WLS
needs 3 models (:math:`t_{G-2}` with at least one degree of freedom); the permutation
test with 3 models has :math:`3! = 6` permutations (p >= 1/3) and is reported as such.
Below these sizes, or when a fit fails numerically (a singular information matrix from
fitted probabilities of 0 or 1, a GLM that does not converge), the method is
``{"estimable": False, "reason": ...}`` and the other methods still run.

What none of these model
------------------------
Family effects (siblings share training data), partial pooling of task slopes, and
cell-level over-dispersion beyond what clustering by model absorbs. With 10-20 models,
cluster-robust SEs are biased downwards; the wild bootstrap is the check that is valid
with few clusters. See :func:`crosscheck_table` for the comparison with the Bayesian fit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any, Final, Literal

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import stats
from scipy.special import expit
from statsmodels.tools.sm_exceptions import PerfectSeparationError

#: Default confidence level of intervals.
DEFAULT_LEVEL: Final = 0.95
#: Fewest models with the scale variable for any slope estimate (as the Bayesian rule).
MIN_MODELS: Final = 3
#: Fewest clusters (models) for the wild cluster bootstrap (see "Smallest designs" above).
MIN_CLUSTERS_WILD: Final = 6
#: Numerical failures of one method that make it not estimable instead of stopping the run.
NUMERICAL_ERRORS: Final = (
    np.linalg.LinAlgError, PerfectSeparationError, FloatingPointError, ZeroDivisionError,
    ValueError, OverflowError,
)
#: Webb's six-point weights (MacKinnon & Webb 2017; Webb 2014, Queen's Econ. WP 1315).
WEBB_POINTS: Final = np.array(
    [-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)]
)

#: Rademacher sign vectors are enumerated (exact p-value) up to this many (2**16: G <= 16).
ENUMERATE_MAX: Final = 2**16

Weights = Literal["auto", "rademacher", "webb"]


# --------------------------------------------------------------------------- helpers


def _failure(what: str, exc: BaseException) -> dict[str, Any]:
    """``{"estimable": False, "reason": ...}`` for a method that failed numerically."""
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    return {"estimable": False,
            "reason": f"{what} failed numerically on this design ({type(exc).__name__}: {detail})"}


def _guarded(what: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``fn(*args, **kwargs)``, or :func:`_failure` when it fails numerically."""
    try:
        return fn(*args, **kwargs)
    except NUMERICAL_ERRORS as exc:
        return _failure(what, exc)


def _f(v: Any) -> float | None:
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


def _not_estimable(use: pl.DataFrame) -> str | None:
    g = use["model"].n_unique()
    if g < MIN_MODELS:
        return f"only {g} model(s) carry the scale variable; at least {MIN_MODELS} are needed"
    if use.select("model", "x").unique()["x"].n_unique() < 2:
        return "every model has the same value of the scale variable"
    return None


def _slope_tasks(use: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Cells of tasks whose own slope is estimable (>= MIN_MODELS models, >= 2 values of x).

    A task seen by fewer models has a saturated (or undefined) slope of its own, so designs
    with task slopes leave it out and list it; the common-slope design keeps it.
    """
    stats_t = use.group_by("task").agg(
        pl.col("model").n_unique().alias("m"), pl.col("x").n_unique().alias("nx")
    )
    bad = sorted(stats_t.filter((pl.col("m") < MIN_MODELS) | (pl.col("nx") < 2))["task"].to_list())
    return use.filter(~pl.col("task").is_in(bad)), bad


def _balanced(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Cells for a per-model mean over tasks: every kept model must have every kept task.

    Keeps the tasks with an estimable slope (:func:`_slope_tasks`) and drops models that
    miss one of them; if that leaves fewer than ``MIN_MODELS`` models, keeps every model and
    only the tasks all of them have. Returns the cells, the tasks used and the models dropped.
    """
    sub, _ = _slope_tasks(frame)
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


def _design(use: pl.DataFrame, *, task_slopes: bool) -> dict[str, Any]:
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


def _estimate(
    est: float, se: float, *, df: float | None, level: float, method: str
) -> dict[str, Any]:
    """Estimate with a t (``df``) or normal (``df=None``) interval and two-sided p-value."""
    if not (math.isfinite(se) and se > 0):
        return {"estimate": _f(est), "se": None, "ci_low": None, "ci_high": None,
                "p_value": None, "df": _f(df) if df is not None else None, "method": method}
    dist = stats.t(df) if df is not None else stats.norm()
    q = float(dist.ppf(0.5 + level / 2))
    z = est / se
    return {
        "estimate": _f(est),
        "se": _f(se),
        "ci_low": _f(est - q * se),
        "ci_high": _f(est + q * se),
        "p_value": _f(2 * dist.sf(abs(z))),
        "df": _f(df) if df is not None else None,
        "method": method,
    }


# --------------------------------------------------------------------------- GLM


def _glm(d: Mapping[str, Any]) -> Any:
    endog = np.column_stack([d["k"], d["n"] - d["k"]])
    return sm.GLM(endog, d["X"], family=sm.families.Binomial())


def glm_slope(
    cells: pl.DataFrame, *, task_slopes: bool = False, level: float = DEFAULT_LEVEL
) -> dict[str, Any]:
    """Binomial GLM of cell counts on task intercepts and ``x``, SEs clustered by model.

    Parameters
    ----------
    cells
        Cells of :func:`analysis.cells.build_cells`.
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
    use, _ = usable_cells(cells)
    excluded: list[str] = []
    if task_slopes:
        use, excluded = _slope_tasks(use)
    reason = _not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    d = _design(use, task_slopes=task_slopes)
    model = _glm(d)
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
        "slope": _estimate(params[j], math.sqrt(max(cov[j, j], 0.0)), df=g - 1, level=level,
                           method=f"binomial GLM, CR1 cluster-robust SE by model, t({g - 1})"),
        "slope_naive": _estimate(
            params[j], float(naive.bse[j]), df=None, level=level,
            method="binomial GLM, model-based SE (records independent), normal",
        ),
        "deviance": _f(naive.deviance),
        "pearson_chi2": _f(naive.pearson_chi2),
        "df_resid": _f(naive.df_resid),
    }
    if task_slopes:
        c = d["contrast"]
        est = c @ params
        var = np.einsum("ij,jk,ik->i", c, cov, c)
        out["per_task"] = {
            t: _estimate(
                est[i], math.sqrt(max(var[i], 0.0)), df=g - 1, level=level,
                method=f"binomial GLM task slope, CR1 cluster-robust SE by model, t({g - 1})",
            )
            for i, t in enumerate(d["tasks"])
        }
    return out


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
    return {"estimate": _f(est), "score_t": _f(t), "p_value": _f(p), "ci_low": _f(lo),
            "ci_high": _f(hi), "null": beta0}


def _too_few_clusters(g: int) -> str:
    return (f"only {g} model(s): the wild cluster bootstrap needs at least {MIN_CLUSTERS_WILD} "
            f"(with {g} clusters its smallest two-sided p-value is {2 / 2**g:.3g})")


def _wild_task(
    *, use: pl.DataFrame, d: Mapping[str, Any], v: np.ndarray, enumerated: bool, level: float,
    beta0: float, ci: bool,
) -> dict[str, Any]:
    dt = _design(use, task_slopes=False)
    # same clusters in the same order: reuse the weight rows of these models
    vt = v[:, [d["models"].index(m) for m in dt["models"]]]
    ft = _glm(dt).fit(cov_type="cluster", cov_kwds={"groups": dt["groups"]})
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
        Cells of :func:`analysis.cells.build_cells`.
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
    use, _ = usable_cells(cells)
    excluded: list[str] = []
    if task_slopes:
        use, excluded = _slope_tasks(use)
    reason = _not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    if use["model"].n_unique() < MIN_CLUSTERS_WILD:
        return {"estimable": False, "reason": _too_few_clusters(use["model"].n_unique())}
    rng = np.random.default_rng(seed)
    d = _design(use, task_slopes=task_slopes)
    g = len(d["models"])
    v, kind, enumerated = _weight_matrix(g, weights=weights, reps=reps, rng=rng)
    fit = _glm(d).fit(cov_type="cluster", cov_kwds={"groups": d["groups"]})
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
            res[t] = _guarded(f"the wild bootstrap of task '{t}'", _wild_task, use=sub, d=d, v=v,
                              enumerated=enumerated, level=level, beta0=beta0, ci=ci)
        out["per_task"] = res
    return out


# --------------------------------------------------------------------------- two-stage


def _empirical_logit(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.log((k + 0.5) / (n - k + 0.5))
    v = 1.0 / (k + 0.5) + 1.0 / (n - k + 0.5)
    return y, v


def _dl_tau2(y: np.ndarray, v: np.ndarray, design: np.ndarray) -> float:
    """DerSimonian-Laird residual heterogeneity of a meta-regression (metafor ``method="DL"``)."""
    w = 1.0 / v
    xtwx_inv = np.linalg.inv(design.T @ (design * w[:, None]))
    beta = xtwx_inv @ (design.T @ (w * y))
    q_e = float(np.sum(w * (y - design @ beta) ** 2))
    # tr(P) with P = W - W X (X'WX)^-1 X'W
    trace_p = float(np.sum(w) - np.trace(xtwx_inv @ (design.T @ (design * (w**2)[:, None]))))
    return max(0.0, (q_e - (len(y) - design.shape[1])) / trace_p)


def meta_regression(
    y: np.ndarray, v: np.ndarray, x: np.ndarray, *, level: float = DEFAULT_LEVEL,
    tau2: Literal["dl", "none"] = "dl",
) -> dict[str, Any]:
    """WLS of ``y`` on ``(1, x)`` with weights ``1/(v + tau2)``; Knapp-Hartung SE, t(G-2).

    Examples
    --------
    >>> r = meta_regression(np.array([0., 1., 2.1, 2.9]), np.full(4, 0.01), np.arange(4.))
    >>> round(r["slope"]["estimate"], 3)
    0.98
    """
    design = np.column_stack([np.ones_like(x), x])
    t2 = _dl_tau2(y, v, design) if tau2 == "dl" else 0.0
    res = sm.WLS(y, design, weights=1.0 / (v + t2)).fit()
    df = len(y) - 2
    slope = _estimate(float(res.params[1]), float(res.bse[1]), df=df, level=level,
                      method=f"two-stage WLS, weights 1/(v + tau2), Knapp-Hartung SE, t({df})")
    return {"slope": slope, "tau2": _f(t2), "n": len(y)}


def two_stage(
    cells: pl.DataFrame, *, level: float = DEFAULT_LEVEL, tau2: Literal["dl", "none"] = "dl"
) -> dict[str, Any]:
    r"""Per-model empirical logit accuracy, then WLS on ``x`` (see the module docstring).

    Parameters
    ----------
    cells
        Cells of :func:`analysis.cells.build_cells`.
    level
        Confidence level.
    tau2
        ``"dl"``: weights :math:`1/(v + \hat\tau^2_{DL})`; ``"none"``: plain inverse
        sampling variance (treats models as differing only by sampling noise).

    Returns
    -------
    dict
        ``pooled`` (models' mean over the tasks with an estimable slope, models lacking
        one of them dropped; ``tasks_used``, ``models_dropped``) and ``per_task``, each
        with ``slope``, ``tau2`` and ``n``.
    """
    use, _ = usable_cells(cells)
    reason = _not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    y, v = _empirical_logit(use["k"].to_numpy().astype(float), use["n"].to_numpy().astype(float))
    frame = use.select("model", "task", "x").with_columns(pl.Series("y", y), pl.Series("v", v))
    balanced, common, dropped = _balanced(frame)
    out: dict[str, Any] = {"estimable": True, "tau2_method": tau2, "per_task": {}}
    if common and balanced["model"].n_unique() >= MIN_MODELS:
        pooled = (
            balanced
            .group_by("model")
            .agg(pl.col("x").first(), pl.col("y").mean(), (pl.col("v").sum() / len(common) ** 2))
            .sort("model")
        )
        out["pooled"] = {
            **_guarded("the two-stage WLS", meta_regression, pooled["y"].to_numpy(),
                       pooled["v"].to_numpy(), pooled["x"].to_numpy(), level=level, tau2=tau2),
            "tasks_used": common,
            "models_dropped": dropped,
        }
    else:
        out["pooled"] = {"estimable": False, "reason": "no task is observed for every model"}
    for t in sorted(frame["task"].unique().to_list()):
        sub = frame.filter(pl.col("task") == t).sort("model")
        if sub.height < MIN_MODELS or sub["x"].n_unique() < 2:
            out["per_task"][t] = {"estimable": False, "reason": "too few models on this task"}
            continue
        out["per_task"][t] = _guarded(
            f"the two-stage WLS of task '{t}'", meta_regression, sub["y"].to_numpy(),
            sub["v"].to_numpy(), sub["x"].to_numpy(), level=level, tau2=tau2,
        )
    return out


# --------------------------------------------------------------------------- correlations


def _corr(acc: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    if len(acc) < MIN_MODELS or np.unique(x).size < 2 or np.unique(acc).size < 2:
        return {"n_models": len(acc), "pearson_r": None, "pearson_p": None,
                "spearman_rho": None, "spearman_p": None}
    pr = stats.pearsonr(x, acc)
    sr = stats.spearmanr(x, acc)
    return {
        "n_models": len(acc),
        "pearson_r": _f(pr.statistic),
        "pearson_p": _f(pr.pvalue),
        "spearman_rho": _f(sr.statistic),
        "spearman_p": _f(sr.pvalue),
    }


def correlations(cells: pl.DataFrame) -> dict[str, Any]:
    """Pearson and Spearman correlation across models of accuracy with the scale variable.

    Accuracy is readable-prediction accuracy; ``pooled`` sums ``k`` and ``n`` over tasks.
    ``x`` is the centred log10 size, which leaves both correlations unchanged.
    """
    use, _ = usable_cells(cells)
    pooled = use.group_by("model").agg(pl.col("x").first(), pl.col("k").sum(), pl.col("n").sum())
    pooled = pooled.sort("model").with_columns((pl.col("k") / pl.col("n")).alias("acc"))
    out: dict[str, Any] = {
        "variable": "accuracy (readable predictions) vs centred scale variable",
        "pooled": _corr(pooled["acc"].to_numpy(), pooled["x"].to_numpy()),
        "per_task": {},
    }
    for t in sorted(use["task"].unique().to_list()):
        sub = use.filter(pl.col("task") == t).sort("model")
        out["per_task"][t] = _corr((sub["k"] / sub["n"]).to_numpy(), sub["x"].to_numpy())
    return out


# --------------------------------------------------------------------------- permutation


def permutation_slope_test(
    y: np.ndarray, x: np.ndarray, *, seed: int, permutations: int = 2000, exact_max: int = 8
) -> dict[str, Any]:
    """Two-sided permutation test of the OLS slope of ``y`` on ``x`` (``x`` permuted).

    Parameters
    ----------
    y, x
        One value per model.
    seed
        Seed of the random permutations.
    permutations
        Random permutations when enumeration is too large.
    exact_max
        Enumerate all ``len(x)!`` permutations up to this many models.

    Returns
    -------
    dict
        ``statistic`` (slope), ``p_value``, ``exact``, ``n_permutations``.

    Examples
    --------
    Perfectly ordered data: only the identity and the reversal are as extreme.

    >>> r = permutation_slope_test(np.arange(4.0), np.arange(4.0), seed=0)
    >>> r["p_value"], r["n_permutations"], r["exact"]
    (0.08333333333333333, 24, True)
    """
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    g = len(x)
    xc = x - x.mean()
    sxx = float(np.sum(xc**2))
    yc = y - y.mean()
    b = float(xc @ yc / sxx)
    exact = g <= exact_max
    if exact:
        perms = np.array(list(itertools.permutations(range(g))))
    else:
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((permutations, g)), axis=1)
    b_star = (xc[perms] @ yc) / sxx  # centring is permutation-invariant
    hits = int(np.sum(np.abs(b_star) >= abs(b) * (1 - 1e-12) - 1e-15))
    p = hits / len(perms) if exact else (1 + hits) / (len(perms) + 1)
    return {"statistic": _f(b), "p_value": _f(p), "exact": exact, "n_permutations": int(len(perms))}


def permutation_test(
    cells: pl.DataFrame, *, seed: int, permutations: int = 2000, exact_max_models: int = 8
) -> dict[str, Any]:
    """Permutation test of the slope, permuting the scale variable across models.

    The statistic is the OLS slope of the model's mean empirical logit over the common
    tasks (as :func:`two_stage`, unweighted) on ``x``; per task, of the cell's empirical
    logit.
    """
    use, _ = usable_cells(cells)
    reason = _not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    y, _v = _empirical_logit(use["k"].to_numpy().astype(float), use["n"].to_numpy().astype(float))
    frame = use.select("model", "task", "x").with_columns(pl.Series("y", y))
    balanced, common, dropped = _balanced(frame)
    out: dict[str, Any] = {"estimable": True, "statistic": "OLS slope of empirical logit on x",
                           "per_task": {}}
    if common and balanced["model"].n_unique() >= MIN_MODELS:
        pooled = (balanced.group_by("model")
                  .agg(pl.col("x").first(), pl.col("y").mean()).sort("model"))
        out["pooled"] = permutation_slope_test(pooled["y"].to_numpy(), pooled["x"].to_numpy(),
                                               seed=seed, permutations=permutations,
                                               exact_max=exact_max_models)
        out["pooled"]["tasks_used"] = common
        out["pooled"]["models_dropped"] = dropped
    else:
        out["pooled"] = {"estimable": False, "reason": "no task is observed for every model"}
    for i, t in enumerate(sorted(frame["task"].unique().to_list())):
        sub = frame.filter(pl.col("task") == t).sort("model")
        if sub.height < MIN_MODELS or sub["x"].n_unique() < 2:
            out["per_task"][t] = {"estimable": False, "reason": "too few models on this task"}
            continue
        out["per_task"][t] = permutation_slope_test(
            sub["y"].to_numpy(), sub["x"].to_numpy(), seed=seed + 1 + i,
            permutations=permutations, exact_max=exact_max_models,
        )
    return out


# --------------------------------------------------------------------------- Holm


def holm(pvalues: Mapping[str, float | None]) -> dict[str, float | None]:
    """Holm step-down adjusted p-values; ``None`` entries stay ``None`` and do not count.

    Examples
    --------
    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": None})
    {'a': 0.03, 'b': 0.06, 'c': 0.06, 'd': None}
    """
    valid = sorted(((p, k) for k, p in pvalues.items() if p is not None), key=lambda pk: pk[0])
    m = len(valid)
    adjusted: dict[str, float | None] = {}
    running = 0.0
    for i, (p, key) in enumerate(valid):
        running = max(running, min(1.0, (m - i) * p))
        adjusted[key] = running
    return {k: (_f(adjusted[k]) if k in adjusted else None) for k in pvalues}


# --------------------------------------------------------------------------- entry point


def run_frequentist(
    cells: pl.DataFrame,
    *,
    seed: int,
    level: float = DEFAULT_LEVEL,
    weights: Weights = "auto",
    reps: int = 9999,
    permutations: int = 2000,
    exact_max_models: int = 8,
) -> dict[str, Any]:
    """All frequentist cross-checks of the scale effect.

    Parameters
    ----------
    cells
        Cells of :func:`analysis.cells.build_cells`.
    seed
        Seed of the bootstrap weights and permutations.
    level
        Confidence level of every interval.
    weights, reps
        Wild bootstrap weights and replicates (see :func:`wild_bootstrap`).
    permutations, exact_max_models
        Permutation test settings (see :func:`permutation_test`).

    Returns
    -------
    dict
        ``estimable``, ``level``, ``seed``, ``n_models``, ``n_cells``,
        ``models_without_scale_variable``, ``glm_common``, ``glm_task_slopes``,
        ``wild_bootstrap``, ``two_stage``, ``correlations``, ``permutation`` and ``holm``
        (Holm-adjusted per-task p-values of the cluster-robust GLM, the wild bootstrap and
        the permutation test).
    """
    use, left_out = usable_cells(cells)
    base: dict[str, Any] = {
        "level": level,
        "seed": seed,
        "n_models": int(use["model"].n_unique()),
        "n_cells": int(use.height),
        "models_without_scale_variable": left_out,
        "tasks": sorted(use["task"].unique().to_list()),
    }
    reason = _not_estimable(use)
    if reason:
        return {**base, "estimable": False, "reason": reason}
    glm_t = _guarded("the GLM with task slopes", glm_slope, use, task_slopes=True, level=level)
    wild = _guarded("the wild cluster bootstrap", wild_bootstrap, use, seed=seed,
                    task_slopes=True, weights=weights, reps=reps, level=level)
    perm = _guarded("the permutation test", permutation_test, use, seed=seed,
                    permutations=permutations, exact_max_models=exact_max_models)

    def task_p(section: Mapping[str, Any], key: str | None = None) -> dict[str, float | None]:
        per_task = section.get("per_task") or {}
        return {t: (r.get(key, {}) if key else r).get("p_value") for t, r in per_task.items()}

    return {
        **base,
        "estimable": True,
        "glm_common": _guarded("the GLM with a common slope", glm_slope, use, task_slopes=False,
                               level=level),
        "glm_task_slopes": glm_t,
        "wild_bootstrap": wild,
        "two_stage": _guarded("the two-stage WLS", two_stage, use, level=level),
        "correlations": _guarded("the correlations", correlations, use),
        "permutation": perm,
        "holm": {
            "family": "per-task slope tests (H0: slope_t = 0), one family per method",
            "glm_cluster": holm(task_p(glm_t)),
            "wild_bootstrap": holm(task_p(wild)),
            "permutation": holm(task_p(perm)),
        },
    }


# --------------------------------------------------------------------------- cross-check

#: CI width / HDI width outside this range counts as disagreement about the uncertainty.
WIDTH_RATIO_OK: Final = (0.5, 2.0)

_WHY: Final[dict[str, str]] = {
    "glm_naive": (
        "GLM without cluster effects treats every record as independent evidence about the "
        "slope, though the slope is learned from only {g} models."
    ),
    "glm_cluster": (
        "Cluster-robust (CR1) SEs with {g} clusters are biased downwards and ignore family "
        "grouping; the Bayesian model adds family, model and cell effects and priors."
    ),
    "glm_common": (
        "The common slope weights tasks by their information, whereas the Bayesian beta is the "
        "unweighted mean of the task slopes."
    ),
    "wild": (
        "The wild bootstrap clusters by model but does not model family effects or shrink the "
        "task slopes; with {g} clusters its interval is coarse."
    ),
    "two_stage": (
        "Two-stage treats each model's mean empirical logit as one point (DerSimonian-Laird "
        "between-model variance, Knapp-Hartung SE); no family effects, no partial pooling."
    ),
    "permutation": (
        "The permutation test assumes models are exchangeable under no effect and uses an "
        "unweighted OLS slope; family structure and unequal precision are ignored."
    ),
    "correlation": (
        "A correlation of raw accuracy with log size ignores each model's sampling error and "
        "mixes tasks with different base rates; its p-value is on a different scale."
    ),
    "per_task": (
        "The Bayesian task slopes are partially pooled toward the mean slope; a separate per-task "
        "estimate is not, so it is noisier and can sit far from the pooled value."
    ),
}


def _verdict(lo: float | None, hi: float | None, est: float | None, p: float | None,
             alpha: float) -> str | None:
    """'positive', 'negative' or 'unclear' from an interval (or a p-value and sign)."""
    if lo is not None and hi is not None:
        return "positive" if lo > 0 else "negative" if hi < 0 else "unclear"
    if p is not None and est is not None:
        if p < alpha:
            return "positive" if est > 0 else "negative"
        return "unclear"
    return None


def _row(
    effect: str, method: str, key: str, freq: Mapping[str, Any] | None, bayes: Mapping[str, Any],
    *, level: float, on_scale: bool, g: int, estimate_key: str = "estimate",
    p_key: str = "p_value", p_holm: float | None = None,
) -> dict[str, Any]:
    freq = freq or {}
    est = freq.get(estimate_key)
    lo, hi, p = freq.get("ci_low"), freq.get("ci_high"), freq.get(p_key)
    b_mean, b_lo, b_hi = bayes.get("mean"), bayes.get("hdi_low"), bayes.get("hdi_high")
    hdi_prob = bayes.get("hdi_prob")
    row: dict[str, Any] = {
        "effect": effect, "method": method,
        "scale": "slope (logits)" if on_scale else "correlation",
        "estimate": est, "ci_low": lo if on_scale else None, "ci_high": hi if on_scale else None,
        "p_value": p, "p_holm": p_holm, "level": level,
        "bayes_mean": b_mean, "bayes_hdi_low": b_lo, "bayes_hdi_high": b_hi,
        "bayes_hdi_prob": hdi_prob,
        "width_ratio": None, "agrees": None, "note": None,
    }
    if est is None:
        row["note"] = freq.get("reason") or "frequentist estimate not available"
        return row
    if b_mean is None or b_lo is None or b_hi is None:
        row["note"] = "Bayesian effect not estimable"
        return row
    alpha = 1 - level
    fv = _verdict(lo if on_scale else None, hi if on_scale else None, est, p, alpha)
    bv = "positive" if b_lo > 0 else "negative" if b_hi < 0 else "unclear"
    reasons = []
    if fv != bv:
        reasons.append(f"sign verdict differs (frequentist: {fv}; Bayesian: {bv})")
    if on_scale and not (b_lo <= est <= b_hi):
        reasons.append(f"estimate {est:.3f} lies outside the HDI [{b_lo:.3f}, {b_hi:.3f}]")
    ratio = None
    if on_scale and lo is not None and hi is not None and b_hi > b_lo:
        ratio = (hi - lo) / (b_hi - b_lo)
        row["width_ratio"] = ratio
    if ratio is not None and not WIDTH_RATIO_OK[0] <= ratio <= WIDTH_RATIO_OK[1]:
        rtxt = f"{1 / ratio:.1f}x narrower" if ratio < 1 else f"{ratio:.1f}x wider"
        reasons.append(f"{level:.0%} CI {rtxt} than the {hdi_prob:.0%} HDI")
    row["agrees"] = not reasons
    if reasons:
        row["note"] = "; ".join(reasons) + ". " + _WHY[key].format(g=g)
    return row


def _subset(section: Mapping[str, Any], freq: Mapping[str, Any]) -> str:
    """Method-name suffix when a pooled per-model analysis used fewer tasks or models."""
    parts = []
    used = section.get("tasks_used")
    if used is not None and list(used) != list(freq.get("tasks", used)):
        parts.append("tasks: " + ", ".join(used))
    if section.get("tasks_excluded"):
        parts.append("tasks left out: " + ", ".join(section["tasks_excluded"]))
    if section.get("models_dropped"):
        parts.append("models dropped: " + ", ".join(section["models_dropped"]))
    return f" [{'; '.join(parts)}]" if parts else ""


def crosscheck_table(
    freq: Mapping[str, Any], bayes_effect: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each frequentist estimate beside the Bayesian one, with ``agrees`` and a ``note``.

    Parameters
    ----------
    freq
        Output of :func:`run_frequentist`.
    bayes_effect
        ``results.json``'s ``scale_effect`` (``mean``, ``hdi_low``, ``hdi_high``,
        ``hdi_prob``, ``per_task``).

    Returns
    -------
    list of dict
        ``effect`` (``"overall"`` or a task), ``method``, ``scale``, ``estimate``,
        ``ci_low``, ``ci_high``, ``p_value``, ``p_holm`` (per-task rows), ``level``,
        ``bayes_mean``, ``bayes_hdi_low``, ``bayes_hdi_high``, ``bayes_hdi_prob``,
        ``width_ratio`` (CI width / HDI width), ``agrees`` and ``note``.

        ``agrees`` is True when (a) both reach the same sign verdict (interval above 0,
        below 0, or covering 0; for rows without an interval: ``p < 1 - level`` and the
        sign), (b) for slope rows, the frequentist estimate lies inside the HDI, and (c) the
        interval is neither more than 2x narrower nor 2x wider than the HDI
        (``WIDTH_RATIO_OK``). ``note`` (None when they agree) says which failed and the
        likely reason. The frequentist ``level`` and the HDI probability may differ (e.g.
        95% vs 94%); the width ratio is not adjusted for that.
    """
    if not freq.get("estimable", False):
        return [{"effect": "overall", "method": "all", "agrees": None,
                 "note": f"frequentist checks not run: {freq.get('reason', 'not estimable')}"}]
    level = float(freq["level"])
    g = int(freq["n_models"])
    b_all = dict(bayes_effect)
    b_tasks: Mapping[str, Any] = bayes_effect.get("per_task", {}) or {}
    glm_t, glm_c = freq["glm_task_slopes"], freq["glm_common"]
    wild, two = freq["wild_bootstrap"], freq["two_stage"]
    perm, corr = freq["permutation"], freq["correlations"]
    kw: dict[str, Any] = {"level": level, "g": g}

    def part(section: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        """``section[key]``, or the section's reason when it (or the part) is not estimable."""
        value = section.get(key)
        if isinstance(value, Mapping):
            return value
        return {"reason": section.get("reason") or "frequentist estimate not available"}

    two_pooled, perm_pooled = part(two, "pooled"), part(perm, "pooled")
    corr_pooled = part(corr, "pooled")
    wild_name = wild.get("weights") or "not run"
    rows = [
        _row("overall", "GLM task slopes (mean), cluster-robust SE" + _subset(glm_t, freq),
             "glm_cluster", part(glm_t, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "GLM task slopes (mean), model-based SE (records independent)"
             + _subset(glm_t, freq), "glm_naive", part(glm_t, "slope_naive"), b_all,
             on_scale=True, **kw),
        _row("overall", f"wild cluster score bootstrap ({wild_name})" + _subset(wild, freq),
             "wild", part(wild, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "GLM common slope, cluster-robust SE", "glm_common",
             part(glm_c, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "two-stage WLS (model mean logit on x)" + _subset(two_pooled, freq),
             "two_stage", part(two_pooled, "slope"), b_all, on_scale=True, **kw),
        _row("overall", "permutation test of OLS slope (sizes permuted)"
             + _subset(perm_pooled, freq), "permutation",
             {"estimate": perm_pooled.get("statistic"),
              "p_value": perm_pooled.get("p_value"), "reason": perm_pooled.get("reason")},
             b_all, on_scale=True, **kw),
        _row("overall", "Pearson r (accuracy vs log size)", "correlation",
             {"estimate": corr_pooled.get("pearson_r"), "p_value": corr_pooled.get("pearson_p"),
              "reason": corr_pooled.get("reason")},
             b_all, on_scale=False, **kw),
        _row("overall", "Spearman rho (accuracy vs log size)", "correlation",
             {"estimate": corr_pooled.get("spearman_rho"),
              "p_value": corr_pooled.get("spearman_p"), "reason": corr_pooled.get("reason")},
             b_all, on_scale=False, **kw),
    ]
    holm_adj = freq["holm"]
    tasks = sorted(glm_t.get("per_task") or {}) or list(freq.get("tasks") or [])
    for t in tasks:
        bt = dict(b_tasks.get(t, {}))
        rows.append(_row(t, "GLM task slope, cluster-robust SE", "per_task",
                         part(part(glm_t, "per_task"), t), bt, on_scale=True,
                         p_holm=holm_adj["glm_cluster"].get(t), **kw))
        rows.append(_row(t, f"wild cluster score bootstrap ({wild_name})", "per_task",
                         part(part(wild, "per_task"), t), bt, on_scale=True,
                         p_holm=holm_adj["wild_bootstrap"].get(t), **kw))
        two_t = part(part(two, "per_task"), t)
        rows.append(_row(t, "two-stage WLS (cell logit on x)", "per_task",
                         part(two_t, "slope"), bt, on_scale=True, **kw))
        pt = part(part(perm, "per_task"), t)
        rows.append(_row(t, "permutation test of OLS slope (sizes permuted)", "per_task",
                         {"estimate": pt.get("statistic"), "p_value": pt.get("p_value"),
                          "reason": pt.get("reason")}, bt,
                         on_scale=True, p_holm=holm_adj["permutation"].get(t), **kw))
    return rows
