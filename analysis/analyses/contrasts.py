"""Decided contrasts between conditions, models and tasks (``models/contrast.py``).

With two closed models nothing in the scale analysis can be fitted, yet a study still asks
"is gpt-5 better than gpt-4o at predicting itself?" and "does asking for confidence after
solving help?". :func:`contrast_section` fits the hierarchical contrast model to the
self-predictions per model x task x condition x item and decides every named contrast
(a pair of levels of one factor) with the declared rule of the scale verdict
(:func:`selfmodel.decisions.hypotheses.decide`: the same HDI, ROPE and decision words), in logits of
self-prediction accuracy. A decision is a ``finding`` only when the fit passed its
diagnostics (the gate of the verdict).

The rule's minimum number of models is a requirement of a *slope* across models; a
contrast of two named levels needs exactly those two levels, so it is not applied here.
A factor with one level has no contrast and is listed as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import polars as pl

from selfmodel.common.paths import PACKAGE_DATA, shipped_study
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit
from selfmodel.fitting.summaries import posterior_draws
from selfmodel.models import contrast as contrast_model
from selfmodel.records.cells import NO_CONDITION, to_condition_cells

#: What each factor's contrast is about, for the report.
FACTOR_WORDS: Final = {
    "condition": "between conditions",
    "model": "between models",
    "task": "between tasks",
}
#: Units of every contrast.
UNITS: Final = "logits of self-prediction accuracy (later level minus earlier level)"


def levels(table: pl.DataFrame) -> dict[str, list[str]]:
    """The sorted levels of each contrasted factor in a condition-cells table."""
    return {f: sorted(table[f].unique().to_list()) for f, _ in contrast_model.FACTORS}


def decide_contrasts(fitted: Fit, rule: DecisionRule) -> dict[str, dict[str, Any]]:
    """Every named contrast of a fitted contrast model, decided with ``rule``.

    Returns
    -------
    dict
        factor -> {"b - a": decision record (:func:`selfmodel.decisions.hypotheses.decide`) with
        ``finding``}; a factor with one level maps to ``{}``.
    """
    posterior_vars = set(fitted.idata["posterior"].data_vars)
    passed = bool(fitted.diagnostics["passed"])
    out: dict[str, dict[str, Any]] = {}
    for factor, _ in contrast_model.FACTORS:
        var = f"contrast_{factor}"
        out[factor] = {}
        if var not in posterior_vars:
            continue
        draws = posterior_draws(fitted, var)
        for label in draws[f"{factor}_pair"].values:
            values = draws.sel({f"{factor}_pair": label}).values
            # a contrast of two named levels: the rule's minimum-models count does not apply
            record = decide(values, rule, n_models=rule.min_models)
            out[factor][str(label)] = {**record, "finding": passed}
    return out


def contrast_section(
    records: pl.DataFrame,
    *,
    rule: DecisionRule,
    fitter: Fitter,
    priors: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``contrasts`` section of ``results.json``: the fit and every decided contrast.

    Parameters
    ----------
    records
        Canonical records (self-predictions are used; ``condition`` optional).
    rule
        The declared decision rule (``rope`` in logits of accuracy here).
    fitter
        The run's seed, sampler settings and fit cache (:class:`selfmodel.fitting.fitter.Fitter`).
    priors
        Overrides of ``models/contrast.py``'s ``DEFAULT_PRIORS``.

    Returns
    -------
    dict
        ``fit_model``, ``units``, ``rule``, ``levels`` (factor -> levels),
        ``n_rows``, ``diagnostics``, ``contrasts`` (factor -> pair -> decision) and
        ``reason`` (why nothing was fitted, else ``None``).
    """
    table = to_condition_cells(records)
    found = levels(table) if table.height else {f: [] for f, _ in contrast_model.FACTORS}
    base: dict[str, Any] = {
        "fit_model": contrast_model.NAME,
        "units": UNITS,
        "rope": rule.rope,
        "rule": rule.describe(),
        "levels": found,
        "no_condition_label": NO_CONDITION,
        "n_rows": table.height,
        "operating_characteristics": shipped_study(OPERATING_CHARACTERISTICS_DATA),
    }
    reason = unfit_reason(found)
    if reason is not None:
        return {**base, "diagnostics": None, "contrasts": {}, "reason": reason}
    fitted = fitter.fit(contrast_model.NAME, table, priors=priors,
                        why="contrasts: conditions, models and tasks (models/contrast.py)")
    return {**base, "diagnostics": fitted.diagnostics,
            "contrasts": decide_contrasts(fitted, rule), "reason": None,
            "finding": bool(fitted.diagnostics["passed"])}


def not_fitted_section(reason: str) -> dict[str, Any]:
    """The ``contrasts`` section of a run that did not fit the model, ``reason`` saying why."""
    return {"fit_model": contrast_model.NAME, "why_fitted": None, "diagnostics": None,
            "contrasts": {}, "reason": reason,
            "operating_characteristics": shipped_study(OPERATING_CHARACTERISTICS_DATA)}


#: The contrast study's summary (``validation/contrast_study.py --ship`` writes it: recovery,
#: null and misspecified arms on an independent generator); read with ``shipped_study``.
OPERATING_CHARACTERISTICS_DATA: Final = PACKAGE_DATA / "contrast_operating_characteristics.json"


def unfit_reason(found: Mapping[str, list[str]]) -> str | None:
    """Why no contrast can be fitted (no readable self-prediction, one level of everything)."""
    if not any(found.values()):
        return "no readable self-prediction"
    if all(len(v) < 2 for v in found.values()):
        return "one model, one task and one condition: there is nothing to contrast"
    return None


def contrast_sentences(section: Mapping[str, Any]) -> list[str]:
    """One sentence per decided contrast (the first screen and the report).

    Examples
    --------
    >>> s = {"reason": None, "finding": True, "contrasts": {"model": {"b - a": {
    ...     "decision": "improves", "mean": 0.61, "hdi_low": 0.3, "hdi_high": 0.9,
    ...     "hdi_prob": 0.94}}}}
    >>> contrast_sentences(s)
    ['Between models, b - a: improves (+0.61 logits, 94% HDI [+0.30, +0.90]).']
    """
    if section.get("reason"):
        return [f"No contrast was fitted: {section['reason']}."]
    out = []
    gate = "" if section.get("finding") else " (diagnostics failed: not a finding)"
    for factor, decided in section.get("contrasts", {}).items():
        for label, d in decided.items():
            out.append(
                f"{FACTOR_WORDS[factor].capitalize()}, {label}: {d['decision']} "
                f"({d['mean']:+.2f} logits, {d['hdi_prob']:.0%} HDI "
                f"[{d['hdi_low']:+.2f}, {d['hdi_high']:+.2f}]){gate}."
            )
    return out
