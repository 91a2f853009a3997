"""Missing and unreadable predictions against scale, and a strict-accuracy sensitivity.

The models treat unreadable and absent predictions as missing at random: accuracy is
computed on the readable records. That is safe only if missingness does not depend on scale.
Per model x task this module counts

* ``n_expected``: the task's items (every item any model has a record for);
* ``n_missing``: expected items the model has no record of;
* ``n_unreadable``: records whose prediction could not be read (``status != "ok"``);
* ``unusable_share`` = (missing items + unreadable records) / (records + missing items),

and fits, per task, the cluster-robust binomial GLM of the unusable share on the scale
variable (``analysis.frequentist.glm.glm_slope``; log-odds per unit of ``x``, SEs clustered
by model). As a sensitivity the same GLM of accuracy is refitted on *strict* accuracy (every
unusable prediction, absent items included, counted as wrong) beside the GLM on readable
accuracy. ``depends_on_scale`` is true when a task's missingness slope has p < 0.05.
"""

from __future__ import annotations

import warnings
from typing import Any, Final

import polars as pl
from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

from analysis.frequentist.glm import NUMERICAL_ERRORS, glm_slope

#: Two-sided level below which the missingness slope is said to depend on scale.
ALPHA: Final = 0.05


def missingness_cells(records: pl.DataFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """One row per model x task of ``cells`` with the counts of the module docstring."""
    self_rows = records.filter(
        pl.col("predictor").is_null() | (pl.col("predictor") == pl.col("model"))
    )
    expected = self_rows.group_by("task").agg(pl.col("item_id").n_unique().alias("n_expected"))
    present = self_rows.group_by("model", "task").agg(
        pl.col("item_id").n_unique().alias("n_items_present")
    )
    out = (
        cells.join(present, on=["model", "task"], how="left")
        .join(expected, on="task", how="left")
        .with_columns(
            (pl.col("n_expected") - pl.col("n_items_present")).clip(0).alias("n_missing"),
        )
        .with_columns(
            (pl.col("n_total") + pl.col("n_missing")).alias("n_possible"),
            (pl.col("n_unreadable") + pl.col("n_missing")).alias("n_unusable"),
        )
        .with_columns((pl.col("n_unusable") / pl.col("n_possible")).alias("unusable_share"))
        .sort("model", "task")
    )
    return out


def _glm(cells: pl.DataFrame, *, task_slopes: bool) -> dict[str, Any]:
    """Fit :func:`glm_slope`, or return ``estimable: False`` with the reason.

    Perfect separation on a small design or a singular matrix is never a silent estimate.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        try:
            return glm_slope(cells, task_slopes=task_slopes)
        except PerfectSeparationWarning:
            return {"estimable": False, "reason": "perfect separation: the GLM slope is not identified"}
        except NUMERICAL_ERRORS as exc:
            return {"estimable": False, "reason": f"GLM failed ({type(exc).__name__}: {exc})"}


def _slope_summary(fit: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    if not fit.get("estimable"):
        return {"estimable": False, "reason": fit.get("reason")}
    per = fit.get("per_task") or {t: fit["slope"] for t in tasks[:1]}
    return {"estimable": True, "overall": fit["slope"], "per_task": per}


def missingness(records: pl.DataFrame, cells: pl.DataFrame) -> dict[str, Any]:
    """The ``missingness`` section of ``results.json`` (see the module docstring)."""
    mc = missingness_cells(records, cells)
    tasks = sorted(mc["task"].unique().to_list())
    per_model = [
        {
            "model": r["model"],
            "task": r["task"],
            "scale_raw": r["scale_raw"],
            "n_expected": int(r["n_expected"]),
            "n_records": int(r["n_total"]),
            "n_missing": int(r["n_missing"]),
            "n_unreadable": int(r["n_unreadable"]),
            "unusable_share": r["unusable_share"],
        }
        for r in mc.iter_rows(named=True)
    ]
    miss_cells = mc.with_columns(
        pl.col("n_unusable").alias("k"), pl.col("n_possible").alias("n")
    )
    miss_fit = _slope_summary(_glm(miss_cells, task_slopes=len(tasks) > 1), tasks)
    readable_fit = _glm(cells, task_slopes=len(tasks) > 1)
    strict_cells = mc.with_columns(pl.col("n_possible").alias("n"))
    strict_fit = _glm(strict_cells, task_slopes=len(tasks) > 1)
    depends: dict[str, bool | None] = {}
    for t in tasks:
        est = (miss_fit.get("per_task") or {}).get(t) if miss_fit.get("estimable") else None
        p = est.get("p_value") if est else None
        depends[t] = None if p is None else bool(p < ALPHA)
    return {
        "method": (
            "cluster-robust binomial GLM (SEs by model) of the unusable share (absent items + "
            "unreadable records) on the scale variable, per task; strict accuracy counts every "
            "unusable prediction as wrong"
        ),
        "alpha": ALPHA,
        "totals": {
            "missing": int(mc["n_missing"].sum()),
            "unreadable": int(mc["n_unreadable"].sum()),
            "possible": int(mc["n_possible"].sum()),
        },
        "per_model_task": per_model,
        "slope_of_missingness": miss_fit,
        "depends_on_scale": depends,
        "any_depends_on_scale": any(bool(v) for v in depends.values()),
        "strict_accuracy_sensitivity": {
            "readable": _slope_summary(readable_fit, tasks),
            "strict": _slope_summary(strict_fit, tasks),
        },
    }
