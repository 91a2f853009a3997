"""Prior sensitivity of every effect a companion model decides (e.g. d' and criterion).

``analysis/robustness/sensitivity.py`` refits the verdict model with every prior scale halved and
doubled and compares its one effect. Here the same is done for each model of the zoo that
decides effects beside the verdict (``SPEC.decides``; for ``sdt`` the sensitivity d' and the
criterion), overall and per task: same data, sampler and seed, every prior ``sigma``
multiplied by the factor (``selfmodel.models.spec.scale_priors``; by importance reweighting of the
main fit where its Pareto k allows, else a refit: ``analysis/fitting/reweight.py``), each effect with the ROPE of
``selfmodel.decisions.effects.rope_for`` in its own units. ``holds`` is true when every
decision of the effect is unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from selfmodel import models as model_registry
from selfmodel.common import arviz_ops
from selfmodel.common.progress import steps
from selfmodel.decisions.effects import rope_for, x_by_model
from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.fitting.fitpool import concurrently
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.reweight import prior_variant
from selfmodel.fitting.sampling import Fit
from selfmodel.models.spec import scale_priors


def decisions_of(f: Fit, effect: Any, rule: DecisionRule, n_models: int,
               per_task_models: Mapping[str, int]) -> dict[str, Any]:
    """Decisions of an effect's per-task and averaged slopes in one fit."""
    post = arviz_ops.posterior(f.idata)
    res = decide(post[effect.variable].values, rule, n_models=n_models)
    out = {"decision": res["decision"], "mean": res["mean"], "hdi": [res["hdi_low"], res["hdi_high"]],
           "per_task": {}}
    if effect.per_task and effect.per_task in post:
        da = post[effect.per_task]
        for t in da["task"].values:
            r = decide(da.sel(task=t).values, rule, n_models=per_task_models.get(str(t), n_models))
            out["per_task"][str(t)] = {"decision": r["decision"], "mean": r["mean"],
                                       "hdi": [r["hdi_low"], r["hdi_high"]]}
    return out


def effect_prior_sensitivity(
    name: str,
    main: Fit,
    data: pl.DataFrame,
    *,
    rule: DecisionRule,
    scale: str = "params",
    fitter: Fitter,
    factors: Sequence[float] = (0.5, 2.0),
) -> dict[str, Any]:
    """Prior x0.5 / x2 refits of model ``name`` and every effect it decides.

    ``fitter`` has the main fit's seed and sampler settings, the fit cache and the progress line.
    """
    module = model_registry.get(name)
    n_models = data["model"].n_unique()
    per_task = {t: data.filter(pl.col("task") == t)["model"].n_unique()
                for t in data["task"].unique().to_list()}
    effects = module.SPEC.decides
    rules = {e.key: rope_for(rule, scale, x_by_model(data), effect=e.key)[0] for e in effects}
    base = {e.key: decisions_of(main, e, rules[e.key], n_models, per_task) for e in effects}
    with steps(f"prior sensitivity ('{name}')", len(factors)) as st:

        def variant(fac: float) -> dict[str, Any]:
            fitter.progress(f"{st.next()}prior sensitivity: '{name}' with every prior scale x{fac:g}")
            refit = prior_variant(main, data, fitter=fitter,
                                  priors=scale_priors(module.DEFAULT_PRIORS, float(fac)))
            return {"factor": float(fac),
                    "diagnostics_passed": bool(refit.diagnostics.get("passed")),
                    "reweighting": refit.provenance.get("prior_variant"),
                    **{e.key: decisions_of(refit, e, rules[e.key], n_models, per_task)
                       for e in effects}}

        # refits (where reweighting fails) run at once with worker processes (selfmodel.fitting.fitpool)
        variants = concurrently(*[functools.partial(variant, fac) for fac in factors])
    out: dict[str, Any] = {"model": name, "main": base, "variants": variants, "holds": {}}
    for e in effects:
        main_e: dict[str, Any] = base[e.key]
        same = all(v[e.key]["decision"] == main_e["decision"]
                   and all(v[e.key]["per_task"].get(t, {}).get("decision") == d["decision"]
                           for t, d in main_e["per_task"].items())
                   for v in variants)
        out["holds"][e.key] = same
    return out
