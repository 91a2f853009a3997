"""Two-stage estimation: per-model empirical logits, then a DerSimonian-Laird meta-regression on scale."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl
import statsmodels.api as sm

from selfmodel.analyses.frequentist.glm import (
    DEFAULT_LEVEL,
    MIN_MODELS,
    balanced_cells,
    estimate_of,
    finite_or_none,
    guarded,
    not_estimable,
    usable_cells,
)

# --------------------------------------------------------------------------- two-stage


def empirical_logit(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empirical logits of ``k`` of ``n`` (0.5 added to each count) and their sampling variances."""
    y = np.log((k + 0.5) / (n - k + 0.5))
    v = 1.0 / (k + 0.5) + 1.0 / (n - k + 0.5)
    return y, v


def dl_tau2(y: np.ndarray, v: np.ndarray, design: np.ndarray) -> float:
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
    t2 = dl_tau2(y, v, design) if tau2 == "dl" else 0.0
    res = sm.WLS(y, design, weights=1.0 / (v + t2)).fit()
    df = len(y) - 2
    slope = estimate_of(float(res.params[1]), float(res.bse[1]), df=df, level=level,
                      method=f"two-stage WLS, weights 1/(v + tau2), Knapp-Hartung SE, t({df})")
    return {"slope": slope, "tau2": finite_or_none(t2), "n": len(y)}


def two_stage(
    cells: pl.DataFrame, *, level: float = DEFAULT_LEVEL, tau2: Literal["dl", "none"] = "dl"
) -> dict[str, Any]:
    r"""Per-model empirical logit accuracy, then WLS on ``x`` (see the module docstring).

    Parameters
    ----------
    cells
        Cells of :func:`selfmodel.records.cells.build_cells`.
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
    reason = not_estimable(use)
    if reason:
        return {"estimable": False, "reason": reason}
    y, v = empirical_logit(use["k"].to_numpy().astype(float), use["n"].to_numpy().astype(float))
    frame = use.select("model", "task", "x").with_columns(pl.Series("y", y), pl.Series("v", v))
    balanced, common, dropped = balanced_cells(frame)
    out: dict[str, Any] = {"estimable": True, "tau2_method": tau2, "per_task": {}}
    if common and balanced["model"].n_unique() >= MIN_MODELS:
        pooled = (
            balanced
            .group_by("model")
            .agg(pl.col("x").first(), pl.col("y").mean(), (pl.col("v").sum() / len(common) ** 2))
            .sort("model")
        )
        out["pooled"] = {
            **guarded("the two-stage WLS", meta_regression, pooled["y"].to_numpy(),
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
        out["per_task"][t] = guarded(
            f"the two-stage WLS of task '{t}'", meta_regression, sub["y"].to_numpy(),
            sub["v"].to_numpy(), sub["x"].to_numpy(), level=level, tau2=tau2,
        )
    return out
