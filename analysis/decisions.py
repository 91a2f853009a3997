"""Decisions on fitted effects with the declared rule (no fitting here).

:func:`slope_decisions` decides one effect overall and per task (any model's declared
``Effect``); :func:`scale_effect` is the verdict section of ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis import _arviz
from analysis.contract import SCALE_COLUMNS
from analysis.fit import Fit
from analysis.hypotheses import DecisionRule, decide, not_estimable

#: Units of the slope per scale variable.
SCALE_UNITS = {
    "params": "logits per 10x total parameters",
    "active_params": "logits per 10x active parameters",
    "capability": "logits per unit of capability score",
}


def posterior_draws(fit: Fit, var: str) -> Any:
    """Draws of ``var`` with chains and draws stacked into one ``sample`` dimension."""
    return _arviz.posterior(fit.idata)[var].stack(sample=("chain", "draw"))


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
    verdict_name: str = "scale",
    effect_var: str = "beta",
    per_task_var: str | None = "slope_task",
) -> dict[str, Any]:
    """The ``scale_effect`` section: overall and per-task slope and decision."""
    base = {
        "scale_variable": scale,
        "registry_column": SCALE_COLUMNS[scale],
        "units": SCALE_UNITS[scale],
        "fit_model": fit.model if fit else verdict_name,
        "rope": rule.rope,
        "prob_threshold": rule.prob_threshold,
        "rule": rule.describe(),
        "n_models": n_models,
        "models_without_scale_variable": list(excluded_models),
    }
    body = slope_decisions(
        fit,
        effect_var=effect_var,
        per_task_var=per_task_var,
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
        absent = {t: not_estimable(why, rule) for t in tasks}
        return {**not_estimable(why, rule), "per_task": absent, "finding": False}
    overall = decide(posterior_draws(fit, effect_var).values, rule, n_models=n_models)
    per_task: dict[str, Any] = {}
    counts = dict(models_per_task or {})
    if per_task_var is not None:
        st = posterior_draws(fit, per_task_var)
        for t in st["task"].values:
            n_t = counts.get(str(t), n_models)
            per_task[str(t)] = {
                **decide(st.sel(task=t).values, rule, n_models=n_t),
                "n_models": n_t,
            }
    for t in tasks:
        per_task.setdefault(t, not_estimable("task has no model with the scale variable", rule))
    return {**overall, "per_task": per_task, "finding": bool(fit.diagnostics["passed"])}
