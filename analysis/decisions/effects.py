"""Decisions on fitted effects with the declared rule (no fitting here).

:func:`slope_decisions` decides one effect overall and per task (any model's declared
``Effect``); :func:`scale_effect` is the verdict section of ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from selfmodel.decisions.hypotheses import DecisionRule, decide, not_estimable
from selfmodel.fitting.sampling import Fit
from selfmodel.fitting.summaries import posterior_draws
from selfmodel.records.contract import SCALE_COLUMNS

#: Units of the slope per scale variable.
SCALE_UNITS = {
    "params": "logits per 10x total parameters",
    "active_params": "logits per 10x active parameters",
    "capability": "logits per unit of capability score",
}


#: What one unit of each scale variable's ROPE is: sizes per 10x, a score per SD across models.
ROPE_BASIS = {
    "params": "per 10x total parameters",
    "active_params": "per 10x active parameters",
    "capability": "per standard deviation of the capability score across the models",
}

#: The quantity each decided effect changes (the ROPE's numerator).
EFFECT_QUANTITY = {
    "scale_effect": "logits of accuracy",
    "sensitivity": "d' units",
    "bias": "criterion units",
}


def rope_for(
    rule: DecisionRule, scale: str, x_by_model: Sequence[float] | None, *, effect: str = "scale_effect"
) -> tuple[DecisionRule, dict[str, Any]]:
    """The rule with its ROPE in the slope's own units, and what the ROPE means.

    ``rule.rope`` is declared in the effect's quantity (logits, d', criterion) per unit of
    :data:`ROPE_BASIS`: per 10x for sizes (the slope's own unit, unchanged), per standard
    deviation across the models for the capability score (the slope is per score point, so
    the half-width is ``rule.rope / sd``). With fewer than two distinct scores the ROPE is
    left as declared and the meaning says so.

    Examples
    --------
    >>> r, m = rope_for(DecisionRule(rope=0.1), "capability", [0.0, 10.0, 20.0])
    >>> round(r.rope, 4), m["sd_of_scale_variable"]
    (0.01, 10.0)
    >>> rope_for(DecisionRule(rope=0.1), "params", [0.0, 1.0])[0].rope
    0.1
    """
    quantity = EFFECT_QUANTITY.get(effect, "units of the effect")
    meaning: dict[str, Any] = {
        "declared": rule.rope,
        "basis": ROPE_BASIS[scale],
        "quantity": quantity,
        "sd_of_scale_variable": None,
    }
    out = rule
    if scale == "capability":
        xs = np.asarray([v for v in (x_by_model or []) if v is not None], dtype=float)
        sd = float(np.std(xs, ddof=1)) if np.unique(xs).size >= 2 else None
        meaning["sd_of_scale_variable"] = sd
        if sd is not None and sd > 0:
            out = replace(rule, rope=rule.rope / sd)
    meaning["half_width"] = out.rope
    unit = SCALE_UNITS[scale].split(" ", 1)[1] if " " in SCALE_UNITS[scale] else SCALE_UNITS[scale]
    if scale == "capability" and meaning["sd_of_scale_variable"]:
        meaning["text"] = (
            f"±{rule.rope:g} {quantity} per SD of the capability score across the models "
            f"(SD {meaning['sd_of_scale_variable']:.3g}), i.e. ±{out.rope:.3g} {quantity} {unit}"
        )
    else:
        meaning["text"] = f"±{out.rope:g} {quantity} {ROPE_BASIS[scale]}"
    return out, meaning


def x_by_model(data: Any) -> list[float]:
    """One scale value per model of a cells table (for :func:`rope_for`)."""
    if data is None or "x" not in data.columns:
        return []
    return [float(v) for v in data.unique(subset=["model"])["x"].to_list() if v is not None]


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
    fit_data: Any = None,
) -> dict[str, Any]:
    """The ``scale_effect`` section: overall and per-task slope and decision.

    ``rule.rope`` is the declared ROPE; it is put in the slope's units with
    :func:`rope_for` on ``fit_data`` (the fitted cells, one ``x`` per model).
    """
    base = {
        "scale_variable": scale,
        "registry_column": SCALE_COLUMNS[scale],
        "units": SCALE_UNITS[scale],
        "fit_model": fit.model if fit else verdict_name,
        "rope": rule.rope,
        "rule": rule.describe(),
        "n_models": n_models,
        "models_without_scale_variable": list(excluded_models),
    }
    rope_meaning = None
    if fit is not None:
        rule, rope_meaning = rope_for(rule, scale, x_by_model(fit_data), effect="scale_effect")
    base["rope"] = rule.rope
    base["rope_meaning"] = rope_meaning
    base["rule"] = rule.describe()
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
    absent_reasons: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Decision on a fitted slope overall and per task (any model's effect variables).

    A verdict is a ``finding`` only when the fit's diagnostics passed. A task of ``tasks``
    that the fit does not have is ``not_estimable`` with its reason from ``absent_reasons``
    (default: no model with the scale variable).
    """
    why_absent = dict(absent_reasons or {})
    if fit is None:
        why = reason or "no fit"
        absent = {t: not_estimable(why_absent.get(t, why), rule) for t in tasks}
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
        per_task.setdefault(t, not_estimable(
            why_absent.get(t, "task has no model with the scale variable"), rule))
    return {**overall, "per_task": per_task, "finding": bool(fit.diagnostics["passed"])}

