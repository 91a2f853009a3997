"""Model-level permutation tests of the slope and rank/linear correlations of accuracy with scale."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from selfmodel.analyses.frequentist.glm import (
    MIN_MODELS,
    balanced_cells,
    finite_or_none,
    not_estimable,
    usable_cells,
)
from selfmodel.analyses.frequentist.two_stage import empirical_logit

# --------------------------------------------------------------------------- correlations


def _corr(acc: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    if len(acc) < MIN_MODELS or np.unique(x).size < 2 or np.unique(acc).size < 2:
        return {"n_models": len(acc), "pearson_r": None, "pearson_p": None,
                "spearman_rho": None, "spearman_p": None}
    pr = stats.pearsonr(x, acc)
    sr = stats.spearmanr(x, acc)
    return {
        "n_models": len(acc),
        "pearson_r": finite_or_none(pr.statistic),
        "pearson_p": finite_or_none(pr.pvalue),
        "spearman_rho": finite_or_none(sr.statistic),
        "spearman_p": finite_or_none(sr.pvalue),
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
    return {"statistic": finite_or_none(b), "p_value": finite_or_none(p), "exact": exact, "n_permutations": int(len(perms))}


def permutation_test(
    cells: pl.DataFrame, *, seed: int, permutations: int = 2000, exact_max_models: int = 8
) -> dict[str, Any]:
    """Permutation test of the slope, permuting the scale variable across models.

    The statistic is the OLS slope of the model's mean empirical logit over the common
    tasks (as :func:`two_stage`, unweighted) on ``x``; per task, of the cell's empirical
    logit.
    """
    use, _ = usable_cells(cells)
    reason = not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    y, _v = empirical_logit(use["k"].to_numpy().astype(float), use["n"].to_numpy().astype(float))
    frame = use.select("model", "task", "x").with_columns(pl.Series("y", y))
    balanced, common, dropped = balanced_cells(frame)
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
