r"""Frequentist cross-check of the signal-detection slopes (d' and criterion) on scale.

The accuracy slope has its frequentist cross-checks in ``analysis/frequentist``; the d' and
criterion findings get theirs here, from the binary cells alone:

1. per model and task, d' and c with the log-linear correction (Hautus 1995) and their
   delta-method sampling variances, :math:`\mathrm{var}(z_H) \approx H(1-H) / ((S+1)
   \phi(z_H)^2)` (likewise for :math:`z_F`), :math:`\mathrm{var}(d') = \mathrm{var}(z_H) +
   \mathrm{var}(z_F)`, :math:`\mathrm{var}(c) = \mathrm{var}(d') / 4`;
2. per task, a random-effects meta-regression of those values on the scale variable
   (``selfmodel.analyses.frequentist.two_stage.meta_regression``: weights :math:`1/(v + \hat\tau^2)`,
   DerSimonian-Laird, Knapp-Hartung SE, :math:`t_{G-2}`); models are the units;
3. a wild bootstrap of that slope over models (Rademacher weights on the residuals of the
   null-restricted fit, Webb six-point weights below 12 models; Cameron, Gelbach & Miller
   2008), its p-value beside the t-test's;
4. Holm's adjustment over the tasks, per quantity.

``agrees`` compares the sign of a significant frequentist slope (p < 0.05) with the
Bayesian decision's direction; a non-significant slope agrees with a decision that does not
claim a direction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import polars as pl
from scipy.stats import norm

from selfmodel.analyses.frequentist.run import holm
from selfmodel.analyses.frequentist.two_stage import dl_tau2, meta_regression
from selfmodel.analyses.frequentist.wild_bootstrap import WEBB_POINTS
from selfmodel.analyses.skill import excluded_sdt_cells, sdt_arrays, sdt_cells
from selfmodel.records.contract import decision_word

N_BOOT: Final = 1999
ALPHA: Final = 0.05
MIN_MODELS: Final = 4


def sdt_values(cells: pl.DataFrame) -> pl.DataFrame:
    """Per binary cell with a scale value: d', c and their delta-method variances.

    The cells are those of the signal-detection model (``selfmodel.analyses.skill.sdt_cells``): both
    outcomes observed and not a constant responder, whose d' is 0 by definition and whose
    criterion and variances are not finite (``selfmodel.analyses.skill.sdt_note``).
    """
    use = sdt_cells(cells).filter(pl.col("x").is_not_null())
    s = use["n_signal"].to_numpy().astype(float)
    n = use["n_noise"].to_numpy().astype(float)
    d, c = sdt_arrays(use["hits"].to_numpy(), s, use["false_alarms"].to_numpy(), n)
    h = (use["hits"].to_numpy() + 0.5) / (s + 1)
    f = (use["false_alarms"].to_numpy() + 0.5) / (n + 1)
    zh, zf = norm.ppf(h), norm.ppf(f)
    vh = h * (1 - h) / ((s + 1) * norm.pdf(zh) ** 2)
    vf = f * (1 - f) / ((n + 1) * norm.pdf(zf) ** 2)
    return use.select("model", "family", "task", "x").with_columns(
        pl.Series("dprime", d), pl.Series("criterion", c),
        pl.Series("v_dprime", vh + vf), pl.Series("v_criterion", (vh + vf) / 4),
    )


def wild_p(y: np.ndarray, v: np.ndarray, x: np.ndarray, *, seed: int, reps: int = N_BOOT) -> float:
    """Wild bootstrap p-value of the WLS slope (null imposed), weights ``1/(v + tau2)``."""
    design = np.column_stack([np.ones_like(x), x])
    w = 1.0 / (v + dl_tau2(y, v, design))

    def slope_t(yy: np.ndarray) -> float:
        xtw = design.T * w
        cov = np.linalg.inv(xtw @ design)
        b = cov @ (xtw @ yy)
        r = yy - design @ b
        s2 = float(np.sum(w * r**2) / (len(yy) - 2))
        return float(b[1] / np.sqrt(max(s2 * cov[1, 1], 1e-300)))

    t_obs = slope_t(y)
    mu0 = float(np.sum(w * y) / np.sum(w))  # null fit: intercept only
    resid = y - mu0
    rng = np.random.default_rng(seed)
    points = WEBB_POINTS if len(y) < 12 else np.array([-1.0, 1.0])
    draws = rng.choice(points, size=(reps, len(y)))
    t_rep = np.array([slope_t(mu0 + resid * d) for d in draws])
    return float((1 + np.sum(np.abs(t_rep) >= abs(t_obs))) / (reps + 1))


def _agrees(p: float | None, est: float | None, decision: str | None) -> bool | None:
    if p is None or est is None or decision is None or decision == "not_estimable":
        return None
    d = decision_word(decision).sign or 0  # the credible sign the decision claims, 0 for none
    if p < ALPHA:
        return d == (1 if est > 0 else -1)
    return d == 0


def sdt_crosscheck(cells: pl.DataFrame, sdt_effect: Mapping[str, Any] | None, *,
                   seed: int) -> dict[str, Any]:
    """The ``sdt_crosscheck`` section (see the module docstring)."""
    vals = sdt_values(cells)
    keys = {"dprime": "sensitivity", "criterion": "bias"}
    out: dict[str, Any] = {"method": "per-model d' and c (log-linear, delta-method variances), "
                                     "random-effects meta-regression on scale per task "
                                     "(DL tau2, Knapp-Hartung), wild bootstrap over models, Holm "
                                     "over tasks", "per_task": {},
                                     "excluded_cells": excluded_sdt_cells(
                                         cells.filter(pl.col("x").is_not_null()))}
    pvals: dict[str, dict[str, float | None]] = {q: {} for q in keys}
    for t in sorted(vals["task"].unique().to_list()):
        sub = vals.filter(pl.col("task") == t).sort("model")
        row: dict[str, Any] = {"n_models": sub.height}
        for q, sec_key in keys.items():
            if sub.height < MIN_MODELS or sub["x"].n_unique() < 2:
                row[q] = {"estimable": False, "reason": f"fewer than {MIN_MODELS} models with a scale value"}
                pvals[q][t] = None
                continue
            y, v, x = (sub[q].to_numpy(), sub[f"v_{q}"].to_numpy(), sub["x"].to_numpy())
            mr = meta_regression(y, v, x)
            wp = wild_p(y, v, x, seed=seed)
            bayes = (((sdt_effect or {}).get(sec_key) or {}).get("per_task") or {}).get(t) or {}
            slope = mr["slope"]
            row[q] = {"estimable": True, **slope, "tau2": mr["tau2"], "wild_bootstrap_p": wp,
                      "bayes_decision": bayes.get("decision"),
                      "agrees": _agrees(slope.get("p_value"), slope.get("estimate"), bayes.get("decision"))}
            pvals[q][t] = slope.get("p_value")
        out["per_task"][t] = row
    out["holm"] = {q: holm(p) for q, p in pvals.items()}
    for t, row in out["per_task"].items():
        for q in keys:
            if row[q].get("estimable"):
                row[q]["p_holm"] = out["holm"][q].get(t)
    return out
