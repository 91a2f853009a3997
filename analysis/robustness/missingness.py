"""Missing and unreadable predictions against scale, and a strict-accuracy sensitivity.

The models treat unreadable and absent predictions as missing at random; this module
counts them per model x task, tests whether the unusable share depends on scale, and refits
on strict accuracy (:func:`strict_accuracy_refit`). The counts and tests: ``docs/robustness.md``.
"""

from __future__ import annotations

import warnings
from typing import Any, Final

import polars as pl
from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

from selfmodel.analyses.frequentist.glm import NUMERICAL_ERRORS, glm_slope
from selfmodel.analyses.model_inputs import models_per_task
from selfmodel.decisions.effects import rope_for, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit
from selfmodel.records.contract import NOT_SCORED_STATUSES
from selfmodel.robustness.sensitivity import summarise_fit

#: Two-sided level below which the missingness slope is said to depend on scale.
ALPHA: Final = 0.05


def missingness_cells(records: pl.DataFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """One row per model x task of ``cells`` with the counts of ``docs/robustness.md``."""
    self_rows = records.filter(
        (pl.col("predictor").is_null() | (pl.col("predictor") == pl.col("model")))
        & ~pl.col("status").is_in(list(NOT_SCORED_STATUSES)).fill_null(False)
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
    """The ``missingness`` section of ``results.json`` (``docs/robustness.md``)."""
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


def strict_accuracy_refit(
    records: pl.DataFrame,
    usable: pl.DataFrame,
    main: Fit,
    *,
    scale: str,
    rule: DecisionRule,
    fitter: Fitter,
) -> dict[str, Any]:
    """The verdict model refitted on strict accuracy: every unusable prediction counted wrong.

    The cells are the main fit's (``usable``: same models, tasks and scale values) with
    ``n`` = records + absent items and ``k`` unchanged, so absent items and unreadable
    predictions count as wrong answers. Fitted by ``fitter`` with the main fit's sampler and
    seed (its own cache entry) and decided with the main fit's rule and ROPE, overall and per
    task.

    Returns
    -------
    dict
        ``model``, ``what``, ``n_missing``, ``n_unreadable``, ``main`` and ``strict``
        (:func:`selfmodel.robustness.sensitivity.summarise_fit` of each), ``same_decision``,
        ``same_per_task`` (task -> bool), ``changed`` (``"overall"`` and the tasks whose
        decision differs) and ``changes_answer``.
    """
    mc = missingness_cells(records, usable)
    strict = mc.with_columns(pl.col("n_possible").alias("n")).filter(pl.col("n") > 0)
    strict = strict.select(usable.columns)
    main_rule, _ = rope_for(rule, scale, x_by_model(usable))
    per_task = models_per_task(usable)
    n_models = usable["model"].n_unique()
    refit = fitter.fit(main.model, strict, why=(
        f"strict accuracy: refitting '{main.model}' with absent and unreadable predictions counted wrong"))
    a = summarise_fit(main, rule=main_rule, n_models=n_models, models_per_task=per_task)
    b = summarise_fit(refit, rule=main_rule, n_models=n_models, models_per_task=per_task)
    same_task = {t: r["decision"] == (b["per_task"].get(t) or {}).get("decision")
                 for t, r in a["per_task"].items()}
    changed = (["overall"] if a["decision"] != b["decision"] else []) + [
        t for t, ok in same_task.items() if not ok]
    return {
        "model": main.model,
        "what": ("the verdict model refitted on strict accuracy (absent items and unreadable "
                 "predictions counted as wrong), same sampler, seed, rule and ROPE"),
        "n_missing": int(mc["n_missing"].sum()),
        "n_unreadable": int(mc["n_unreadable"].sum()),
        "main": a,
        "strict": b,
        "same_decision": a["decision"] == b["decision"],
        "same_per_task": same_task,
        "changed": changed,
        "changes_answer": bool(changed),
    }
