"""Does the verdict survive other reasonable choices? Prior width and the scale variable.

Two refit families, each summarised with the same decision rule as the main fit
(:func:`selfmodel.decisions.hypotheses.decide`) and compared with the main fit's decision:

* :func:`prior_sensitivity`: every prior scale (``sigma``) of the model multiplied by a
  factor (default half and twice as wide, ``selfmodel.models.spec.scale_priors``), same data,
  sampler settings and seed (Gelman et al. 2013, *Bayesian Data Analysis*, 3rd ed.,
  sec. 6.3 and 17.1: check how inferences change under alternative reasonable priors;
  Depaoli & van de Schoot 2017, "Improving transparency and replication in Bayesian
  statistics: the WAMBS-checklist", *Psychological Methods* 22(2), point 8);
* :func:`scale_variable_sensitivity`: the scale predictor switched between total
  parameters, active parameters (mixture-of-experts) and the capability score. Slopes are
  in different units (logits per 10x parameters vs per capability unit), so only the
  decisions are compared, not the sizes; models lacking a variable drop out of that fit
  and are listed;
* :func:`effect_scale_variable_sensitivity`: the same scale-variable refits for a companion
  model's effects (for ``models/sdt.py`` the d' and criterion slopes), overall and per task,
  with each variable's ROPE in its own units and the direction compared.

A prior variant is the main fit's draws reweighted by the prior ratio (PSIS,
:mod:`selfmodel.fitting.reweight`) when the Pareto k allows, else a refit; ``reweighting`` of each
variant says which. Every refit goes through the run's :class:`~selfmodel.fitting.fitter.Fitter`
(:func:`selfmodel.fitting.sampling.fit`), so it has its own
cache entry (the cache key includes priors and data) and is reused by the next run. Each
refit costs a numba compile (~35 s here) plus sampling unless it is cached.

A prior variant "matches" when its decision equals the main fit's; a scale-variable variant
when the direction its decision asserts is the same (:func:`direction_of`: the slopes are in
other units, so the size part of the decision is not comparable); ``verdict_holds`` is true
when every estimable variant matches, and ``compared_on`` says which comparison it is. A variant whose fit failed its diagnostics still gets a
decision but is flagged (``diagnostics_passed = False``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.analyses.model_inputs import Tables, models_per_task
from selfmodel.common import arviz_ops
from selfmodel.common.progress import steps
from selfmodel.decisions.effects import SCALE_UNITS, rope_for, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule, decide, not_estimable
from selfmodel.fitting.fitpool import concurrently
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.reweight import prior_variant
from selfmodel.fitting.sampling import Fit
from selfmodel.models.spec import scale_priors
from selfmodel.records.cells import build_cells, derived_models
from selfmodel.records.contract import (
    SCALE_COLUMNS,
    SCALE_EXCLUSION_REASON,
    decision_word,
)
from selfmodel.robustness.effect_sensitivity import decisions_of

_KEEP = ("decision", "meaning", "mean", "sd", "hdi_low", "hdi_high", "hdi_prob", "prob_positive", "reason")


def summarise_fit(
    fitted: Fit,
    *,
    rule: DecisionRule,
    n_models: int,
    models_per_task: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Decision, mean and HDI of a fit's effect (overall and per task).

    Parameters
    ----------
    fitted
        A fit of a model with ``EFFECT`` and ``PER_TASK_EFFECT`` (``scale``, ``sdt``, ...).
    rule
        The decision rule.
    n_models, models_per_task
        Models carrying the scale variable, overall and per task.

    Returns
    -------
    dict
        ``parameter``, the :func:`~selfmodel.decisions.hypotheses.decide` fields, ``per_task``
        (task -> the same fields) and ``diagnostics_passed``.
    """
    module = model_registry.get(fitted.model)
    post = arviz_ops.posterior(fitted.idata)
    res = decide(post[module.EFFECT].values, rule, n_models=n_models)
    out: dict[str, Any] = {"parameter": module.EFFECT, **{k: res[k] for k in _KEEP}}
    per_task: dict[str, Any] = {}
    if module.PER_TASK_EFFECT and module.PER_TASK_EFFECT in post:
        da = post[module.PER_TASK_EFFECT]
        counts = dict(models_per_task or {})
        for t in da["task"].values:
            r = decide(da.sel(task=t).values, rule, n_models=counts.get(str(t), n_models))
            per_task[str(t)] = {k: r[k] for k in _KEEP}
    out["per_task"] = per_task
    out["diagnostics_passed"] = bool(fitted.diagnostics.get("passed"))
    out["max_rhat"] = fitted.diagnostics.get("max_rhat")
    out["divergences"] = fitted.diagnostics.get("divergences")
    out["cache_key"] = fitted.provenance.get("cache_key")
    return out


def direction_of(decision: str) -> str:
    """The sign a decision asserts: ``positive``, ``negative``, ``null`` or ``unresolved``.

    >>> direction_of("credibly_positive"), direction_of("worsens"), direction_of("no_credible_effect")
    ('positive', 'negative', 'unresolved')
    """
    try:
        sign = decision_word(decision).sign
    except KeyError:
        return "unresolved"
    return {1: "positive", -1: "negative", 0: "null"}.get(sign, "unresolved") if sign is not None \
        else "unresolved"


def _same(a: str, b: str, by: str) -> bool:
    return a == b if by == "decision" else direction_of(a) == direction_of(b)


def _compare(entry: dict[str, Any], main: Mapping[str, Any], *, by: str = "decision") -> dict[str, Any]:
    """Add ``matches_main`` (overall and per task) to a variant summary.

    ``by="decision"`` compares the decisions (same units: the prior refits);
    ``by="direction"`` only the asserted sign (:func:`direction_of`), for refits whose
    slope is in other units, where the sizes (and so the ROPE part) are not comparable.
    """
    entry["compared_on"] = by
    est = entry["decision"] != "not_estimable" and main["decision"] != "not_estimable"
    entry["matches_main"] = _same(entry["decision"], main["decision"], by) if est else None
    for t, r in entry.get("per_task", {}).items():
        m = main.get("per_task", {}).get(t)
        ok = m is not None and r["decision"] != "not_estimable" and m["decision"] != "not_estimable"
        r["matches_main"] = _same(r["decision"], m["decision"], by) if ok and m is not None else None
    return entry


def _holds(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    overall = [e["matches_main"] for e in entries if e["matches_main"] is not None]
    tasks = [r["matches_main"] for e in entries for r in e.get("per_task", {}).values()
             if r.get("matches_main") is not None]
    return {
        "verdict_holds": all(overall) if overall else None,
        "per_task_verdicts_hold": all(tasks) if tasks else None,
        "changed": [e["label"] for e in entries if e["matches_main"] is False],
    }


def prior_sensitivity(
    cells: pl.DataFrame,
    *,
    fitter: Fitter,
    factors: Sequence[float] = (0.5, 2.0),
    model: str = "scale",
    rule: DecisionRule | None = None,
    main: Fit | None = None,
    models_per_task: Mapping[str, int] | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Refit with every prior scale multiplied by each factor, and compare decisions.

    Parameters
    ----------
    cells
        The cells the main fit used (rows with the scale variable).
    fitter
        Seed, sampler settings and fit cache of every refit (use the main fit's); its
        progress line is told of each refit.
    options
        As for :func:`selfmodel.fitting.sampling.fit`; use the main fit's.
    factors
        Multipliers of every prior ``sigma`` (``0.5``: half as wide, ``2.0``: twice).
    model
        The model (``scale`` by default; any model with ``EFFECT``).
    rule
        The decision rule (default :class:`~selfmodel.decisions.hypotheses.DecisionRule`).
    main
        The main fit (default priors). Fitted here (or read from the cache) when ``None``.
    models_per_task
        Models per task, for the per-task decisions.

    Returns
    -------
    dict
        ``model``, ``parameter``, ``main`` (summary of the main fit), ``variants`` (one per
        factor: ``label``, ``factor``, ``priors``, the summary fields of
        :func:`summarise_fit` and ``matches_main``), ``verdict_holds``,
        ``per_task_verdicts_hold`` and ``changed`` (labels whose decision differs).
    """
    rule = rule or DecisionRule()
    module = model_registry.get(model)
    n_models = cells["model"].n_unique()
    if main is None:
        main = fitter.fit(model, cells, options=options,
                          why=f"prior sensitivity: fitting '{model}' with the default priors")
    main_sum = summarise_fit(main, rule=rule, n_models=n_models, models_per_task=models_per_task)
    with steps(f"prior sensitivity ('{model}')", len(factors)) as st:

        def variant(f: float) -> dict[str, Any]:
            priors = scale_priors(module.DEFAULT_PRIORS, float(f))
            fitter.progress(f"{st.next()}prior sensitivity: '{model}' with every prior scale x{f:g}")
            refit = prior_variant(main, cells, priors=priors, fitter=fitter, options=options)
            entry = {"label": f"priors x{f:g}", "factor": float(f),
                     "priors": {k: [v[0], v[1]] for k, v in sorted(priors.items())},
                     "reweighting": refit.provenance.get("prior_variant"),
                     **summarise_fit(refit, rule=rule, n_models=n_models,
                                     models_per_task=models_per_task)}
            return _compare(entry, main_sum)

        # refits (where reweighting fails) run at once with worker processes (selfmodel.fitting.fitpool)
        variants = concurrently(*[functools.partial(variant, f) for f in factors])
    return {
        "model": model,
        "parameter": module.EFFECT,
        "what": "every prior scale (sigma) multiplied by the factor; same data, sampler and seed",
        "main": {"label": "default priors", "factor": 1.0, **main_sum},
        "variants": variants,
        **_holds(variants),
    }


def scale_variable_sensitivity(
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    *,
    fitter: Fitter,
    variables: Sequence[str] = ("params", "active_params", "capability"),
    main_scale: str = "params",
    rule: DecisionRule | None = None,
    main: Fit | None = None,
) -> dict[str, Any]:
    """Refit the scale model with each scale variable, and compare decisions.

    Parameters
    ----------
    records
        Canonical records (``selfmodel.records.ingest`` output).
    registry
        The model registry.
    fitter
        Seed, sampler settings and fit cache of every refit (use the main fit's); its
        progress line is told of each refit.
    variables
        Scale variables (``--scale`` choices) to fit; ``main_scale`` is added if missing.
    main_scale
        The variable of the main fit: the reference decision.
    rule
        The decision rule (default :class:`~selfmodel.decisions.hypotheses.DecisionRule`).
    main
        The main fit (of ``main_scale``), reused instead of refitting.

    Returns
    -------
    dict
        ``main_scale``, ``variants`` (one per variable: ``label``, ``variable``,
        ``registry_column``, ``units``, ``n_models``, ``models_without_variable`` (derived
        checkpoints are listed apart, with the reason, in ``excluded_derived_checkpoints``),
        the summary fields of :func:`summarise_fit` or a ``not_estimable`` record, and
        ``matches_main``; the main variable's entry has ``matches_main = True``),
        ``verdict_holds``, ``per_task_verdicts_hold`` and ``changed``.
    """
    rule = rule or DecisionRule()
    order = [main_scale, *[v for v in variables if v != main_scale]]
    with steps("scale-variable sensitivity", len(order)) as st:

        def entry(var: str) -> dict[str, Any]:
            prefix = st.next()
            cells = build_cells(records, registry, scale=var)
            usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
            derived = set(derived_models(registry)) & set(cells["model"].to_list())
            without = sorted(set(cells["model"].to_list()) - set(usable["model"].to_list()) - derived)
            n_models = usable["model"].n_unique()
            var_rule, rope_meaning = rope_for(rule, var, x_by_model(usable))
            head = {"label": var, "variable": var, "registry_column": SCALE_COLUMNS[var],
                    "units": SCALE_UNITS[var], "n_models": n_models, "models_without_variable": without,
                    "rope": var_rule.rope, "rope_meaning": rope_meaning}
            if derived:
                head["excluded_derived_checkpoints"] = {"models": sorted(derived),
                                                        "reason": SCALE_EXCLUSION_REASON}
            reason = None
            if n_models < rule.min_models:
                reason = (f"only {n_models} model(s) have '{SCALE_COLUMNS[var]}'; "
                          f"at least {rule.min_models} are needed")
            elif usable["x"].n_unique() < 2:
                reason = f"every model has the same '{SCALE_COLUMNS[var]}'"
            if reason is not None:
                ne = not_estimable(reason, rule)
                return {**head, "parameter": model_registry.verdict().EFFECT,
                        **{k: ne[k] for k in _KEEP}, "per_task": {}, "diagnostics_passed": False}
            per_task = models_per_task(usable)
            if var == main_scale and main is not None:
                fitted = main
            else:
                name = model_registry.verdict().NAME
                fitted = fitter.fit(name, usable, why=(
                    f"{prefix}scale-variable sensitivity: fitting '{name}' on {var} ({n_models} models)"))
            return {**head, **summarise_fit(fitted, rule=var_rule, n_models=n_models,
                                            models_per_task=per_task)}

        # the refits run at once with worker processes (selfmodel.fitting.fitpool)
        entries = dict(zip(order, concurrently(*[functools.partial(entry, v) for v in order]),
                           strict=True))
    ref = entries[main_scale]
    variants = []
    for var in order:
        e = entries[var]
        if var == main_scale:
            e["matches_main"] = True if e["decision"] != "not_estimable" else None
            for r in e["per_task"].values():
                r["matches_main"] = True if r["decision"] != "not_estimable" else None
        else:
            _compare(e, ref, by="direction")
        variants.append(e)
    others = [e for e in variants if e["variable"] != main_scale]
    return {
        "main_scale": main_scale,
        "what": ("the scale model refitted with each scale variable; slopes are in different units "
                 "(each variable's ROPE in its own units), so only the direction each decision "
                 "asserts (positive, negative, null, unresolved) is compared, not the size"),
        "compared_on": "direction",
        "variants": variants,
        **_holds(others),
    }


# --------------------------------------------------------------------------- companion effects


def _effect_direction_match(main: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    """``matches_main`` (direction) of one effect's decisions, overall and per task."""

    def same(a: str | None, b: str | None) -> bool | None:
        if a in (None, "not_estimable") or b in (None, "not_estimable"):
            return None
        return direction_of(a) == direction_of(b)

    out = {**other, "matches_main": same(main.get("decision"), other.get("decision"))}
    out["per_task"] = {
        t: {**r, "matches_main": same((main.get("per_task") or {}).get(t, {}).get("decision"),
                                      r.get("decision"))}
        for t, r in (other.get("per_task") or {}).items()
    }
    return out


def effect_scale_variable_sensitivity(
    name: str,
    main: Fit,
    main_data: pl.DataFrame,
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    *,
    rule: DecisionRule,
    main_scale: str,
    fitter: Fitter,
    variables: Sequence[str] = ("params", "active_params", "capability"),
) -> dict[str, Any]:
    """Refit companion model ``name`` (e.g. ``sdt``) with each other scale variable.

    The same as :func:`scale_variable_sensitivity` for every effect the model decides
    (``SPEC.decides``; for ``sdt`` d' and the criterion): the model's table
    (``SPEC.table``) is rebuilt with the variable, refitted with the main fit's sampler and
    seed, and each effect decided overall and per task with that variable's ROPE in its own
    units (:func:`selfmodel.decisions.effects.rope_for`); only the *direction* of each decision is
    compared with the main fit's (the slopes are in other units). A variable that leaves the
    table exactly as the main fit's (no mixture-of-experts model, so active = total
    parameters) reuses the main fit (``same_data_as_main``) instead of a refit.

    Returns
    -------
    dict
        ``model``, ``main_scale``, ``compared_on = "direction"``, ``main`` (effect key ->
        decisions of the main fit), ``variants`` (per variable: ``variable``, ``units``,
        ``n_models``, ``models_without_variable``, ``same_data_as_main``,
        ``diagnostics_passed`` and, per effect key, the decisions with ``matches_main``, or
        ``decision = "not_estimable"`` with the ``reason``), ``holds`` (effect key -> every
        comparable decision, overall and per task, kept its direction; ``None`` when none
        was comparable) and ``changed`` (effect key -> variables whose direction changed).
    """
    module = model_registry.get(name)
    effects = module.SPEC.decides

    def decisions(f: Fit, data: pl.DataFrame, var: str) -> dict[str, Any]:
        per = {t: data.filter(pl.col("task") == t)["model"].n_unique()
               for t in data["task"].unique().to_list()}
        n = data["model"].n_unique()
        return {e.key: decisions_of(f, e, rope_for(rule, var, x_by_model(data), effect=e.key)[0], n, per)
                for e in effects}

    base = decisions(main, main_data, main_scale)

    def variant(var: str) -> dict[str, Any]:
        cells = build_cells(records, registry, scale=var)
        usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
        derived = set(derived_models(registry)) & set(cells["model"].to_list())
        table = Tables(usable, records, registry, var).get(module.SPEC.table)
        n_models = table["model"].n_unique()
        head: dict[str, Any] = {
            "variable": var, "registry_column": SCALE_COLUMNS[var], "units": SCALE_UNITS[var],
            "n_models": n_models,
            "models_without_variable": sorted(set(cells["model"].to_list())
                                              - set(usable["model"].to_list()) - derived)}
        reason = None
        if n_models < rule.min_models:
            reason = f"only {n_models} model(s) have '{SCALE_COLUMNS[var]}'; at least {rule.min_models} are needed"
        elif table["x"].n_unique() < 2:
            reason = f"every model has the same '{SCALE_COLUMNS[var]}'"
        if reason is not None:
            return {**head, "diagnostics_passed": False, "same_data_as_main": False,
                    **{e.key: {"decision": "not_estimable", "reason": reason, "per_task": {},
                               "matches_main": None} for e in effects}}
        cols = [c for c in module.REQUIRED_COLUMNS if c in table.columns]
        same = set(cols) <= set(main_data.columns) and main_data.select(cols).sort(
            "model", "task").equals(table.select(cols).sort("model", "task"))
        if same:
            f = main
        else:
            f = fitter.fit(name, table, why=(
                f"scale-variable sensitivity: fitting '{name}' on {var} ({n_models} models)"))
        got = decisions(f, table, var)
        return {**head, "same_data_as_main": bool(same),
                "diagnostics_passed": bool(f.diagnostics.get("passed")),
                **{k: _effect_direction_match(base[k], got[k]) for k in got}}

    # the refits run at once with worker processes (selfmodel.fitting.fitpool)
    variants = concurrently(*[functools.partial(variant, v) for v in variables if v != main_scale])
    holds: dict[str, bool | None] = {}
    changed: dict[str, list[str]] = {}
    for e in effects:
        flags = [v[e.key]["matches_main"] for v in variants]
        flags += [r["matches_main"] for v in variants for r in v[e.key].get("per_task", {}).values()]
        known = [f for f in flags if f is not None]
        holds[e.key] = all(known) if known else None
        changed[e.key] = [v["variable"] for v in variants
                          if v[e.key]["matches_main"] is False
                          or any(r["matches_main"] is False for r in v[e.key].get("per_task", {}).values())]
    return {"model": name, "main_scale": main_scale, "compared_on": "direction",
            "what": ("the model refitted with each other scale variable; only the direction of each "
                     "decision (positive, negative, null, unresolved) is compared, overall and per task"),
            "main": base, "variants": variants, "holds": holds, "changed": changed}


def companion_scale_variable_refits(
    fits: Mapping[str, Fit],
    data_for: Mapping[str, pl.DataFrame],
    *,
    verdict_model: str | None,
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    scale: str,
    rule: DecisionRule,
    fitter: Fitter,
) -> dict[str, Any]:
    """``sensitivity.effects_scale_variable``: :func:`effect_scale_variable_sensitivity` per companion.

    Companion models here are the fitted models other than the verdict model that decide
    effects and declare a headline section (``SPEC.decides`` and ``SPEC.headline``: the
    findings of the first screen; ``sdt``: d' and criterion). Models without a headline
    (``within_between``) keep their prior refits only, which keeps the added fits few.
    """
    out: dict[str, Any] = {}
    for name, f in sorted(fits.items()):
        spec = model_registry.get(name).SPEC
        if name == verdict_model or not spec.decides or spec.headline is None or name not in data_for:
            continue
        out[name] = effect_scale_variable_sensitivity(
            name, f, data_for[name], records, registry, rule=rule, main_scale=scale, fitter=fitter,
        )
    return out
